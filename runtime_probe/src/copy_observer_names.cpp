// Names of watched tensors ("layers.3.weight") in findings: given at once
// (watch) or by a namer run when a finding first needs one (watch_lazily),
// so an observer whose copies are all used or kept walks no model.
#include <torch/nn/module.h>

#include <algorithm>

#include "copy_observer_hub.h"

namespace devcopy {
namespace observer {

namespace {

// Callers hold the hub's lock.
void add_names(CopyObserver::State &state,
               std::vector<std::pair<WeakTensor, std::string>> &names) {
  for (auto &[impl, name] : names) {
    const c10::TensorImpl *key = impl._unsafe_get_target();
    state.names.insert_or_assign(
        key, std::make_pair(std::move(impl), std::move(name)));
  }
}

} // namespace

void Hub::watch(CopyObserver::State *state,
                std::vector<std::pair<WeakTensor, std::string>> names) {
  std::lock_guard<std::mutex> lock(mu_);
  add_names(*state, names);
}

void Hub::watch_lazily(CopyObserver::State *state, CopyObserver::Namer namer) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!state->namer) {
    lazy_.fetch_add(1, std::memory_order_relaxed);
    state->namer =
        std::make_shared<const CopyObserver::Namer>(std::move(namer));
    return;
  }
  // A second model before the first was named: both, as watch() adds.
  state->namer = std::make_shared<const CopyObserver::Namer>(
      [first = state->namer, second = std::move(namer)] {
        auto named = (*first)();
        auto more = second();
        named.insert(named.end(), std::make_move_iterator(more.begin()),
                     std::make_move_iterator(more.end()));
        return named;
      });
}

void Hub::name_lazily() {
  std::vector<std::pair<CopyObserver::State *,
                        std::shared_ptr<const CopyObserver::Namer>>>
      waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (CopyObserver::State *s : observers_)
      if (s->namer)
        waiting.emplace_back(s, s->namer);
  }
  // Threads copying at once may each run a namer; the first to finish
  // installs its names, the others find the namer gone.
  for (auto &[state, namer] : waiting) {
    std::vector<std::pair<WeakTensor, std::string>> names;
    std::string error;
    try {
      for (auto &[name, tensor] : (*namer)())
        names.emplace_back(WeakTensor(tensor.getIntrusivePtr()),
                           std::move(name));
    } catch (const std::exception &e) {
      error = e.what();
    }
    std::shared_ptr<const CopyObserver::Namer> done; // released unlocked
    std::lock_guard<std::mutex> lock(mu_);
    // Gone, or named by another thread (a new observer at the same address
    // has a namer of its own).
    if (std::find(observers_.begin(), observers_.end(), state) ==
            observers_.end() ||
        state->namer != namer)
      continue;
    done = std::move(state->namer);
    lazy_.fetch_sub(1, std::memory_order_relaxed);
    state->naming_error = std::move(error);
    add_names(*state, names);
  }
}

// Callers hold mu_. The weak reference in `names` keeps the TensorImpl's
// memory, so an address match is the same tensor, never a reused one.
std::string Hub::name_of(const c10::TensorImpl *impl) const {
  for (const CopyObserver::State *s : observers_) {
    auto it = s->names.find(impl);
    if (it != s->names.end())
      return it->second.second;
  }
  return {};
}

} // namespace observer

void CopyObserver::watch(const torch::nn::Module &module,
                         const std::string &prefix) {
  std::vector<std::pair<observer::WeakTensor, std::string>> names;
  const std::string dot = prefix.empty() ? "" : prefix + ".";
  for (const auto &item : module.named_parameters(/*recurse=*/true))
    names.emplace_back(observer::WeakTensor(item.value().getIntrusivePtr()),
                       dot + item.key());
  for (const auto &item : module.named_buffers(/*recurse=*/true))
    names.emplace_back(observer::WeakTensor(item.value().getIntrusivePtr()),
                       dot + item.key());
  observer::Hub::get().watch(state_.get(), std::move(names));
}

void CopyObserver::watch(
    const std::vector<std::pair<std::string, at::Tensor>> &named) {
  std::vector<std::pair<observer::WeakTensor, std::string>> names;
  names.reserve(named.size());
  for (const auto &[name, tensor] : named)
    names.emplace_back(observer::WeakTensor(tensor.getIntrusivePtr()), name);
  observer::Hub::get().watch(state_.get(), std::move(names));
}

void CopyObserver::watch_lazily(Namer namer) {
  observer::Hub::get().watch_lazily(state_.get(), std::move(namer));
}

} // namespace devcopy
