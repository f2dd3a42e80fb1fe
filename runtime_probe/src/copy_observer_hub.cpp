// The hub's bookkeeping and the CopyObserver members. Copies are judged when
// their storage is freed (tracked_deleter), findings are merged by call site
// (copy_observer_sites.h), and the stacks of a report's sites are symbolized
// outside the hub's lock, so copying threads wait only for a snapshot.
#include "copy_observer_hub.h"

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace devcopy {
namespace observer {
namespace {

// Past this many live unread copies, new ones are counted but not tracked
// (the report says so): memory stays bounded in programs that keep copies.
constexpr std::size_t kMaxUnread = 1 << 16;
// Moves kept before expired ones are pruned.
constexpr std::size_t kPruneMoves = 4096;
// Host-to-device results remembered before dead ones are judged; past
// kMaxStaged live ones, new ones are not remembered.
constexpr std::size_t kSettleStaged = 4096;
constexpr std::size_t kMaxStaged = 1 << 16;

} // namespace

std::atomic<bool> Hub::active_{false};
std::atomic<std::size_t> Hub::unread_{0};
std::atomic<bool> Hub::stacks_{false};
std::atomic<std::size_t> Hub::staged_count_{0};
std::atomic<StatementProvider> Hub::statements{nullptr};
std::atomic<std::size_t> Hub::lazy_{0};
void Hub::attach(CopyObserver::State *state) {
  std::lock_guard<std::mutex> lock(mu_);
  if (observers_.empty()) {
    stacks_.store(stacks_supported(), std::memory_order_relaxed);
    handle_ = add_callback();
    active_.store(true, std::memory_order_relaxed);
    start_timeline();
  }
  state->since = ++seq_;
  state->copies = copies_;
  observers_.push_back(state);
}

void Hub::detach(CopyObserver::State *state) {
  std::vector<c10::intrusive_ptr<c10::StorageImpl>>
      alive; // released unlocked: a free calls back
  std::shared_ptr<const CopyObserver::Namer> namer; // released unlocked too
  {
    std::lock_guard<std::mutex> lock(mu_);
    observers_.erase(std::remove(observers_.begin(), observers_.end(), state),
                     observers_.end());
    if (state->namer) {
      namer = std::move(state->namer);
      lazy_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (!observers_.empty())
      return;
    // The last one: LibTorch runs as before. Live tracked copies get their
    // allocator's deleter back; one being freed right now (no longer
    // lockable) keeps its entry until tracked_deleter runs.
    active_.store(false, std::memory_order_relaxed);
    stop_timeline();
    remove_callback(handle_);
    for (auto it = tracked_.begin(); it != tracked_.end();) {
      auto storage = it->second.dst.lock();
      if (!storage) {
        ++it;
        continue;
      }
      (void)mutable_data_ptr(*storage).compare_exchange_deleter(
          &tracked_deleter, it->second.deleter);
      alive.push_back(std::move(storage));
      it = tracked_.erase(it);
    }
    overflow_ = false;
    moves_.clear();
    staged_.clear();
    staged_count_.store(0, std::memory_order_relaxed);
    publish();
  }
}

void Hub::copied(CopyEvent event, CopyFacts facts) {
  // A tracked copy's source is named when the copy becomes a finding
  // (freed()); these findings are made now.
  const bool lazy = lazy_.load(std::memory_order_relaxed) != 0;
  if (lazy && (facts.pageable_non_blocking || facts.into_impl))
    name_lazily();
  std::lock_guard<std::mutex> lock(mu_);
  if (observers_.empty())
    return; // a callback already running when the last one left
  const std::uint64_t seq = ++seq_;
  const std::uint64_t ordinal = ++copies_;
  if (facts.src_impl)
    event.tensor = name_of(facts.src_impl);
  for (CopyObserver::State *s : observers_) {
    CopyRoute &r = s->routes[{event.src_device, event.dst_device, event.dtype}];
    if (r.count == 0) {
      r.src_device = event.src_device;
      r.dst_device = event.dst_device;
      r.dtype = event.dtype;
    }
    ++r.count;
    r.bytes += event.bytes;
    if (facts.sync)
      ++s->host_syncs;
    if (facts.pageable_non_blocking)
      s->sites.add(Verdict::pageable_non_blocking, event, facts.stack,
                   ordinal - s->copies);
  }
  if (facts.dst_data)
    facts.block = owned(event.dst_device, facts.dst_data, "copies");
  // A large copy is a mark on its accelerator's timeline (either side).
  if (recording() && event.bytes >= kLocatedBytes &&
      (event.dst_device != "cpu" || event.src_device != "cpu")) {
    std::lock_guard<std::mutex> tl(tl_mu_);
    timeline_.mark(
        event.dst_device != "cpu" ? event.dst_device : event.src_device,
        TimelineMark{now_ns() - start_ns_, static_cast<std::int64_t>(ordinal),
                     event.bytes, event.src_device + " -> " + event.dst_device,
                     event.where});
  }
  if (facts.from || facts.staged)
    stage(event, facts, seq, ordinal);
  if (!facts.dst)
    return;
  if (tracked_.size() >= kMaxUnread) {
    overflow_ = true;
    return;
  }
  at::DataPtr &data = mutable_data_ptr(*facts.dst);
  void *context = data.get_context();
  const c10::DeleterFnPtr deleter = data.get_deleter();
  // Without a context or a deleter of its own the free cannot be told apart.
  if (!context || !deleter || deleter == &tracked_deleter ||
      tracked_.count(context))
    return;
  if (!data.compare_exchange_deleter(deleter, &tracked_deleter))
    return;
  Tracked t{deleter,
            std::move(facts.dst_weak),
            std::move(facts.src),
            seq,
            ordinal,
            std::move(event),
            {},
            std::this_thread::get_id(),
            facts.statement};
  if (facts.stack)
    t.stack = *facts.stack;
  if (lazy && facts.src_impl && t.event.tensor.empty())
    t.unnamed_src.emplace(
        c10::intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>::
            unsafe_reclaim_from_nonowning(
                const_cast<c10::TensorImpl *>(facts.src_impl)));
  tracked_.emplace(context, std::move(t));
  publish();
}

void Hub::stage(const CopyEvent &event, CopyFacts &facts, std::uint64_t seq,
                std::uint64_t ordinal) {
  if (facts.from) {
    auto it = staged_.find(facts.from);
    // The first copy reading it decides what it was for.
    if (it != staged_.end() && it->second.into.expired() &&
        !it->second.storage.expired()) {
      std::string name =
          facts.into_impl ? name_of(facts.into_impl) : std::string();
      it->second.into = std::move(facts.into);
      it->second.event.into =
          name.empty() ? std::move(facts.into_what) : std::move(name);
    }
  }
  if (!facts.staged)
    return;
  if (staged_.size() >= kSettleStaged)
    settle();
  if (staged_.size() >= kMaxStaged)
    return;
  Staged s{std::move(facts.staged_weak),
           seq,
           ordinal,
           event,
           {},
           no_storage(),
           facts.block};
  if (facts.stack)
    s.stack = *facts.stack;
  staged_.insert_or_assign(facts.staged, std::move(s));
  staged_count_.store(staged_.size(), std::memory_order_relaxed);
}

void Hub::settle() {
  for (auto it = staged_.begin(); it != staged_.end();) {
    const Staged &s = it->second;
    if (!s.storage.expired()) {
      ++it;
      continue;
    }
    if (!s.into.expired()) {
      if (s.block) {
        std::lock_guard<std::mutex> tl(tl_mu_);
        timeline_.own(s.block, "checkpoint temporaries");
      }
      for (CopyObserver::State *o : observers_) {
        if (s.seq <= o->since)
          continue;
        o->sites.add(Verdict::transient, s.event,
                     s.stack.size ? &s.stack : nullptr, s.ordinal - o->copies);
      }
    }
    it = staged_.erase(it);
  }
  staged_count_.store(staged_.size(), std::memory_order_relaxed);
}

void Hub::moved(MoveEvent event, WeakStorage old_storage,
                const c10::TensorImpl *self) {
  if (lazy_.load(std::memory_order_relaxed))
    name_lazily();
  std::lock_guard<std::mutex> lock(mu_);
  if (observers_.empty())
    return;
  event.tensor = name_of(self);
  if (moves_.size() >= kPruneMoves) {
    moves_.erase(
        std::remove_if(moves_.begin(), moves_.end(),
                       [](const Move &m) { return m.old_storage.expired(); }),
        moves_.end());
  }
  moves_.push_back(Move{std::move(old_storage), ++seq_, std::move(event)});
}

void Hub::synced() {
  std::lock_guard<std::mutex> lock(mu_);
  for (CopyObserver::State *s : observers_)
    ++s->host_syncs;
}

void Hub::read(c10::StorageImpl *storage) {
  std::optional<Tracked> gone; // destroyed unlocked
  {
    std::lock_guard<std::mutex> lock(mu_);
    at::DataPtr &data = mutable_data_ptr(*storage);
    auto it = tracked_.find(data.get_context());
    if (it == tracked_.end())
      return;
    (void)data.compare_exchange_deleter(&tracked_deleter, it->second.deleter);
    gone.emplace(std::move(it->second));
    tracked_.erase(it);
    publish();
  }
}

c10::DeleterFnPtr Hub::freed(void *context) {
  std::optional<Tracked> t; // destroyed unlocked
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tracked_.find(context);
    if (it == tracked_.end()) {
      // Cannot happen: every exchange adds an entry, only a restore or this
      // free removes it. Leaking beats calling a wrong deleter.
      std::fprintf(
          stderr,
          "devcopy: internal error: a tracked copy's deleter is unknown\n");
      return nullptr;
    }
    t.emplace(std::move(it->second));
    tracked_.erase(it);
    publish();
    // Freed unread. Only a copy whose source is still alive freed nothing;
    // a copy outliving its source was a move.
    if (observers_.empty() || t->src.expired())
      return t->deleter;
  }
  // Outside the lock: a front end may be asked where this thread stands,
  // and a lazy watch() names its model for the finding.
  if (!in_statement(*t)) {
    static const bool debug = std::getenv("DEVCOPY_STACK_DEBUG") != nullptr;
    if (debug)
      std::fprintf(stderr, "devcopy: a copy freed outside its statement\n");
    return t->deleter;
  }
  if (t->unnamed_src && lazy_.load(std::memory_order_relaxed))
    name_lazily();
  std::lock_guard<std::mutex> lock(mu_);
  if (t->unnamed_src)
    t->event.tensor = name_of(t->unnamed_src->_unsafe_get_target());
  for (CopyObserver::State *s : observers_) {
    if (t->seq <= s->since)
      continue;
    const std::uint64_t ordinal = t->ordinal - s->copies;
    const Stack *stack = t->stack.size ? &t->stack : nullptr;
    s->sites.add(Verdict::discarded, t->event, stack, ordinal);
    if (t->event.non_blocking && t->event.dst_pinned)
      s->sites.add(Verdict::pinned_block_held, t->event, stack, ordinal);
  }
  return t->deleter;
}

bool Hub::in_statement(Tracked &t) {
  if (t.thread != std::this_thread::get_id())
    return false; // handed to another thread: it outlived its statement
  if (t.statement.size > 0) {
    const StatementProvider provider =
        statements.load(std::memory_order_acquire);
    StatementFrame now[Statement::kMax];
    const int n = provider ? provider(now, Statement::kMax, false) : -1;
    for (int i = 0; i < t.statement.size; ++i)
      for (int j = 0; j < n; ++j)
        if (now[j].frame == t.statement.frames[i].frame)
          return now[j].line == t.statement.frames[i].line;
    return false; // the frames that made it have all returned
  }
  if (t.stack.size > 0) {
    Stack now;
    capture(now);
    return shared_frame(t.stack, now, t.event.made_at, t.event.freed_at);
  }
  return true; // nothing tells: unread is discarded
}

Report Hub::report(const CopyObserver::State &state) {
  Report r;
  std::vector<Site> sites;
  std::vector<c10::intrusive_ptr<c10::StorageImpl>> held; // released unlocked
  {
    std::lock_guard<std::mutex> lock(mu_);
    settle();
    sites = state.sites.snapshot();
    for (const Move &m : moves_) {
      if (m.seq <= state.since)
        continue;
      auto old = m.old_storage.lock();
      if (!old)
        continue;
      r.add(
          stale_after_move(m.event, static_cast<std::int64_t>(old->nbytes())));
      held.push_back(std::move(old));
    }
    for (const auto &[key, route] : state.routes)
      r.add(route);
    r.set_host_syncs(state.host_syncs);
    if (overflow_)
      r.add(Skipped{"", "more than " + std::to_string(kMaxUnread) +
                            " copies were alive and unread at once: later "
                            "copies were counted "
                            "but not checked for discarded results"});
    if (!state.naming_error.empty())
      r.add(Skipped{"", "the model's tensors are not named in findings: " +
                            state.naming_error});
    if (state.sites.overflowed())
      r.add(Skipped{
          "",
          "findings at more than " + std::to_string(Sites::kMax) +
              " distinct call sites: later sites are merged into one finding "
              "per kind, without a location"});
  }
  Report out;
  for (Finding &f : site_findings(sites, symbols_))
    out.add(std::move(f));
  out.merge(r);
  if (recording()) {
    std::lock_guard<std::mutex> tl(tl_mu_);
    for (DeviceTimeline &t : timeline_.summary(out.findings()))
      out.add(std::move(t));
  }
  return out;
}

} // namespace observer

bool locates_copies() { return observer::stacks_supported(); }

void set_statement_provider(StatementProvider provider) {
  observer::Hub::statements.store(provider, std::memory_order_release);
}

CopyObserver::CopyObserver() : state_(std::make_unique<State>()) {
  observer::Hub::get().attach(state_.get());
}

CopyObserver::~CopyObserver() { observer::Hub::get().detach(state_.get()); }

Report CopyObserver::report() const {
  return observer::Hub::get().report(*state_);
}

} // namespace devcopy
