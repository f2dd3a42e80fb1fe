// The hub's bookkeeping and the CopyObserver members. Unread copies live in a
// vector (swap-remove) indexed by destination storage; each visit from the
// callback (an op that may read one, or every kPollEvery-th op) checks four
// of them for death, round robin, so a dropped copy is found within a few
// ops, and a long-lived unread copy costs an op O(1), not O(pending).
#include "copy_observer_hub.h"

#include <torch/nn/module.h>

namespace devcopy {
namespace observer {
namespace {

// Past this many live unread copies, new ones are counted but not tracked
// (the report says so): memory stays bounded in programs that keep copies.
constexpr std::size_t kMaxUnread = 1 << 16;
// Moves kept before expired ones are pruned.
constexpr std::size_t kPruneMoves = 4096;

}  // namespace

std::atomic<bool> Hub::active_{false};
std::atomic<std::size_t> Hub::unread_{0};
std::atomic<std::uint64_t> Hub::filter_{0};

Hub& Hub::get() {
  static Hub* hub = new Hub;  // intentionally leaked, see the header
  return *hub;
}

void Hub::attach(CopyObserver::State* state) {
  std::lock_guard<std::mutex> lock(mu_);
  if (observers_.empty()) {
    handle_ = add_callback();
    active_.store(true, std::memory_order_relaxed);
  }
  state->since = ++seq_;
  observers_.push_back(state);
}

void Hub::detach(CopyObserver::State* state) {
  std::lock_guard<std::mutex> lock(mu_);
  observers_.erase(std::remove(observers_.begin(), observers_.end(), state), observers_.end());
  if (!observers_.empty()) return;
  // The last one: LibTorch runs as before, and no weak reference survives.
  active_.store(false, std::memory_order_relaxed);
  remove_callback(handle_);
  unread_list_.clear();
  unread_index_.clear();
  cursor_ = 0;
  overflow_ = false;
  moves_.clear();
  publish();
}

void Hub::watch(CopyObserver::State* state,
                std::vector<std::pair<WeakTensor, std::string>> names) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [impl, name] : names) {
    const c10::TensorImpl* key = impl._unsafe_get_target();
    state->names.insert_or_assign(key, std::make_pair(std::move(impl), std::move(name)));
  }
}

// Callers hold mu_. The weak reference in `names` keeps the TensorImpl's
// memory, so an address match is the same tensor, never a reused one.
std::string Hub::name_of(const c10::TensorImpl* impl) const {
  for (const CopyObserver::State* s : observers_) {
    auto it = s->names.find(impl);
    if (it != s->names.end()) return it->second.second;
  }
  return {};
}

void Hub::copied(CopyEvent event, CopyFacts facts) {
  std::lock_guard<std::mutex> lock(mu_);
  if (observers_.empty()) return;  // a callback already running when the last one left
  const std::uint64_t seq = ++seq_;
  for (CopyObserver::State* s : observers_) {
    CopyRoute& r = s->routes[{event.src_device, event.dst_device, event.dtype}];
    if (r.count == 0) {
      r.src_device = event.src_device;
      r.dst_device = event.dst_device;
      r.dtype = event.dtype;
    }
    ++r.count;
    r.bytes += event.bytes;
    if (facts.sync) ++s->host_syncs;
    if (facts.pageable_non_blocking) s->findings.push_back(pageable_non_blocking(event));
  }
  if (!facts.track) return;
  if (unread_list_.size() >= kMaxUnread) {
    overflow_ = true;
    return;
  }
  if (facts.src_impl) event.tensor = name_of(facts.src_impl);
  const c10::StorageImpl* key = facts.dst._unsafe_get_target();
  if (unread_index_.count(key)) return;  // already watched (cannot happen for a fresh result)
  unread_index_[key] = unread_list_.size();
  unread_list_.push_back(Unread{std::move(facts.dst), std::move(facts.src), seq, std::move(event)});
  filter_.fetch_or(bit(key), std::memory_order_relaxed);
  publish();
}

void Hub::moved(MoveEvent event, WeakStorage old_storage, const c10::TensorImpl* self) {
  std::lock_guard<std::mutex> lock(mu_);
  if (observers_.empty()) return;
  event.tensor = name_of(self);
  if (moves_.size() >= kPruneMoves) {
    moves_.erase(std::remove_if(moves_.begin(), moves_.end(),
                                [](const Move& m) { return m.old_storage.expired(); }),
                 moves_.end());
  }
  moves_.push_back(Move{std::move(old_storage), ++seq_, std::move(event)});
}

void Hub::synced() {
  std::lock_guard<std::mutex> lock(mu_);
  for (CopyObserver::State* s : observers_) ++s->host_syncs;
}

void Hub::read(const c10::StorageImpl* const* storages, std::size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  for (std::size_t i = 0; i < n; ++i) {
    auto it = unread_index_.find(storages[i]);
    if (it != unread_index_.end()) forget(it->second);
  }
  poll(4);
  publish();
}

// Callers hold mu_. Rebuilding the filter is O(unread); past 64 entries it
// is nearly all ones anyway, so it is only rebuilt below that.
void Hub::publish() {
  unread_.store(unread_list_.size(), std::memory_order_relaxed);
  if (unread_list_.size() > 64) return;
  std::uint64_t bits = 0;
  for (const Unread& u : unread_list_) bits |= bit(u.dst._unsafe_get_target());
  filter_.store(bits, std::memory_order_relaxed);
}

void Hub::forget(std::size_t i) {
  unread_index_.erase(unread_list_[i].dst._unsafe_get_target());
  if (i + 1 != unread_list_.size()) {
    unread_list_[i] = std::move(unread_list_.back());
    unread_index_[unread_list_[i].dst._unsafe_get_target()] = i;
  }
  unread_list_.pop_back();
}

void Hub::poll(std::size_t budget) {
  for (std::size_t k = 0; k < budget && !unread_list_.empty(); ++k) {
    if (cursor_ >= unread_list_.size()) cursor_ = 0;
    Unread& u = unread_list_[cursor_];
    if (!u.dst.expired()) {
      ++cursor_;
      continue;
    }
    // Freed unread. Only a copy whose source is still alive freed nothing;
    // a copy outliving its source was a move.
    if (!u.src.expired()) {
      for (CopyObserver::State* s : observers_) {
        if (u.seq <= s->since) continue;
        s->findings.push_back(discarded_copy(u.event));
        if (u.event.non_blocking && u.event.dst_pinned)
          s->findings.push_back(pinned_block_held(u.event));
      }
    }
    forget(cursor_);
  }
}

Report Hub::report(const CopyObserver::State& state) {
  std::lock_guard<std::mutex> lock(mu_);
  poll(unread_list_.size());
  publish();
  Report r;
  for (const Finding& f : state.findings) r.add(f);
  for (const Move& m : moves_) {
    if (m.seq <= state.since) continue;
    auto old = m.old_storage.lock();
    if (old) r.add(stale_after_move(m.event, static_cast<std::int64_t>(old->nbytes())));
  }
  for (const auto& [key, route] : state.routes) r.add(route);
  r.set_host_syncs(state.host_syncs);
  if (overflow_)
    r.add(Skipped{"", "more than " + std::to_string(kMaxUnread) +
                          " copies were alive and unread at once: later copies were counted "
                          "but not checked for discarded results"});
  return r;
}

}  // namespace observer

CopyObserver::CopyObserver() : state_(std::make_unique<State>()) {
  observer::Hub::get().attach(state_.get());
}

CopyObserver::~CopyObserver() { observer::Hub::get().detach(state_.get()); }

Report CopyObserver::report() const { return observer::Hub::get().report(*state_); }

void CopyObserver::watch(const torch::nn::Module& module, const std::string& prefix) {
  std::vector<std::pair<observer::WeakTensor, std::string>> names;
  const std::string dot = prefix.empty() ? "" : prefix + ".";
  for (const auto& item : module.named_parameters(/*recurse=*/true))
    names.emplace_back(observer::WeakTensor(item.value().getIntrusivePtr()), dot + item.key());
  for (const auto& item : module.named_buffers(/*recurse=*/true))
    names.emplace_back(observer::WeakTensor(item.value().getIntrusivePtr()), dot + item.key());
  observer::Hub::get().watch(state_.get(), std::move(names));
}

}  // namespace devcopy
