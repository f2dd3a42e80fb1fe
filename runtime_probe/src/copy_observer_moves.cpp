// The hub's moves: a conversion (`to`) is remembered while its tensor and
// result live; it became a move once the tensor's storage is the result's
// (set_data, as Module::to and Python's `param.data = ...` do), and a stale
// one while the old storage lives on. Judged when a report asks, so no op
// but the conversion itself pays for it.
#include "copy_observer_hub.h"

namespace devcopy {
namespace observer {

void Hub::remember_move(CopyEvent &event, CopyFacts &facts, std::uint64_t seq) {
  if (moves_.size() >= kPruneMoves) {
    moves_.erase(std::remove_if(moves_.begin(), moves_.end(),
                                [](const Move &m) {
                                  return m.tensor.expired() ||
                                         m.new_storage.expired();
                                }),
                 moves_.end());
  }
  if (moves_.size() >= kMaxMoves) {
    moves_overflow_ = true;
    return;
  }
  facts.move.module = event.module;
  moves_.push_back(Move{std::move(facts.moved), std::move(facts.move_old),
                        std::move(facts.move_new), seq, facts.block,
                        std::move(facts.move)});
}

// Callers hold mu_. A conversion became a move when its tensor's storage is
// now the result's (set_data swapped it); the result's block is then a
// parameter's, once.
bool Hub::moved(Move &m) {
  auto tensor = m.tensor.lock();
  auto now = m.new_storage.lock();
  if (!tensor || !now || !tensor->has_storage() ||
      tensor->storage().unsafeGetStorageImpl() != now.get())
    return false;
  if (m.block) {
    std::lock_guard<std::mutex> tl(tl_mu_);
    timeline_.own(m.block, "parameters");
    m.block = 0;
  }
  return true;
}

bool Hub::has_stale_move(const CopyObserver::State &state) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Move &m : moves_)
    if (m.seq > state.since && moved(m) && !m.old_storage.expired())
      return true;
  return false;
}

} // namespace observer
} // namespace devcopy
