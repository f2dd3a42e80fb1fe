#include "collect.h"

#include <torch/optim.h>

#include <algorithm>
#include <sstream>
#include <unordered_map>

namespace devcopy::detail {

std::string device_name(const c10::Device &device) { return device.str(); }

const char *category_name(Category c) {
  switch (c) {
  case Category::parameter:
    return "parameters";
  case Category::buffer:
    return "buffers";
  case Category::root:
    return "roots";
  case Category::gradient:
    return "gradients";
  case Category::optimizer_state:
    return "optimizer state";
  }
  return "?";
}

namespace {

enum class Role { compared, reachable };

class Collector {
public:
  void add(const std::string &name, const at::Tensor &t, Role role,
           Category cat) {
    try {
      add_checked(name, t, role, cat);
    } catch (const std::exception &e) {
      // LibTorch throws c10::Error with a multi-line backtrace: keep line one.
      std::string what = e.what();
      out_.skipped.push_back(
          {name, "cannot read: " + what.substr(0, what.find('\n'))});
    }
  }

  void add_module(const std::string &prefix, const torch::nn::Module &m,
                  bool grads) {
    for (const auto &item : m.named_parameters(/*recurse=*/true)) {
      add(prefix + item.key(), item.value(), Role::compared,
          Category::parameter);
      if (grads && item.value().defined() && item.value().grad().defined())
        add(prefix + item.key() + ".grad", item.value().grad(), Role::reachable,
            Category::gradient);
    }
    for (const auto &item : m.named_buffers(/*recurse=*/true))
      add(prefix + item.key(), item.value(), Role::compared, Category::buffer);
  }

  Collected take() { return std::move(out_); }

private:
  void skip(const std::string &name, std::string why) {
    out_.skipped.push_back({name, std::move(why)});
  }

  void add_checked(const std::string &name, const at::Tensor &t, Role role,
                   Category cat) {
    if (!t.defined())
      return skip(name, "undefined tensor");
    if (t.is_meta())
      return skip(name, "meta tensor: it holds no data");
    if (t.layout() != c10::kStrided) {
      std::ostringstream layout;
      layout << t.layout();
      return skip(name, "layout " + layout.str() +
                            ": its indices and values are not inspected");
    }
    if (!t.has_storage())
      return skip(name, "tensor without storage (" + t.toString() + ")");
    const c10::Device dev = t.device();
    if (!dev.is_cpu() && !dev.is_cuda())
      return skip(name, "device " + dev.str() + " is not readable by devcopy");
    if (dev.is_cuda() && !cuda_compiled())
      return skip(name, "devcopy was built without CUDA");
    const c10::Storage &st = t.storage();
    const void *key = st.unsafeGetStorageImpl();
    const std::int64_t nbytes = static_cast<std::int64_t>(st.nbytes());
    const void *data = st.data();
    if (data == nullptr && nbytes > 0)
      return skip(name, "storage without data");

    auto [it, fresh] = index_.emplace(key, out_.storages.size());
    if (fresh) {
      Storage s;
      s.key = key;
      s.device = dev;
      s.span = {static_cast<const unsigned char *>(data), nbytes,
                static_cast<std::uint32_t>(t.element_size())};
      s.dtype = t.scalar_type();
      s.category = cat;
      out_.storages.push_back(std::move(s));
    }
    Storage &s = out_.storages[it->second];
    s.category = std::min(s.category, cat);
    if (role == Role::compared && !t.is_quantized()) {
      s.names.push_back(name);
      // A storage read as two dtypes has no single element type to compare.
      s.comparable = s.names.size() == 1
                         ? true
                         : s.comparable && s.dtype == t.scalar_type();
    } else {
      s.others.push_back(name);
      if (t.is_quantized())
        skip(name, "quantized tensor: counted as reachable, not compared "
                   "(its scale and zero point are not part of its bytes)");
    }
  }

  Collected out_;
  std::unordered_map<const void *, std::size_t> index_;
};

// The optimizers in LibTorch keep their state in per-algorithm structs with
// no common tensor accessor: read the ones LibTorch ships.
void add_optimizer(Collector &c, const std::string &prefix,
                   const torch::optim::Optimizer &opt) {
  using namespace torch::optim;
  std::size_t g = 0;
  for (const auto &group : opt.param_groups()) {
    std::size_t p = 0;
    for (const auto &param : group.params())
      c.add(prefix + "param_groups." + std::to_string(g) + "." +
                std::to_string(p++),
            param, Role::reachable, Category::parameter);
    ++g;
  }
  std::size_t i = 0;
  for (const auto &entry : opt.state()) {
    const std::string at = prefix + "state." + std::to_string(i++) + ".";
    const OptimizerParamState *s = entry.second.get();
    // Undefined optional state (max_exp_avg_sq without amsgrad) is normal,
    // not worth a "skipped" line.
    auto add = [&](const char *field, const at::Tensor &t) {
      if (t.defined())
        c.add(at + field, t, Role::reachable, Category::optimizer_state);
    };
    if (auto *a = dynamic_cast<const AdamParamState *>(s)) {
      add("exp_avg", a->exp_avg());
      add("exp_avg_sq", a->exp_avg_sq());
      add("max_exp_avg_sq", a->max_exp_avg_sq());
    } else if (auto *w = dynamic_cast<const AdamWParamState *>(s)) {
      add("exp_avg", w->exp_avg());
      add("exp_avg_sq", w->exp_avg_sq());
      add("max_exp_avg_sq", w->max_exp_avg_sq());
    } else if (auto *sg = dynamic_cast<const SGDParamState *>(s)) {
      add("momentum_buffer", sg->momentum_buffer());
    } else if (auto *r = dynamic_cast<const RMSpropParamState *>(s)) {
      add("square_avg", r->square_avg());
      add("momentum_buffer", r->momentum_buffer());
      add("grad_avg", r->grad_avg());
    } else if (auto *ag = dynamic_cast<const AdagradParamState *>(s)) {
      add("sum", ag->sum());
    }
  }
}

// Two StorageImpls over the same memory (at::from_blob over a parameter's
// data, a tensor wrapping another's pointer) are one storage with two names:
// shared, never a copy. Overlapping spans on a device merge into the first.
void merge_aliases(Collected &c) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < c.storages.size(); ++i)
    if (c.storages[i].span.data != nullptr && c.storages[i].span.nbytes > 0)
      order.push_back(i);
  auto begin = [&](std::size_t i) { return c.storages[i].span.data; };
  auto end = [&](std::size_t i) {
    return c.storages[i].span.data + c.storages[i].span.nbytes;
  };
  auto dev = [&](std::size_t i) { return c.storages[i].device.str(); };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::make_pair(dev(a), begin(a)) < std::make_pair(dev(b), begin(b));
  });
  std::vector<bool> gone(c.storages.size(), false);
  for (std::size_t k = 0; k < order.size();) {
    std::size_t head = order[k];
    const unsigned char *reach = end(head);
    for (++k; k < order.size() && dev(order[k]) == dev(head) &&
              begin(order[k]) < reach;
         ++k) {
      Storage &into =
          c.storages[head]; // the lowest address: `from` starts inside it
      Storage &from = c.storages[order[k]];
      reach = std::max(reach, end(order[k]));
      if (end(order[k]) <= end(head) && from.span.nbytes < into.span.nbytes) {
        // A part of `into` (a blob over half a weight): `into` still stands for
        // the memory.
      } else if (from.span.nbytes == into.span.nbytes &&
                 begin(order[k]) == begin(head)) {
        into.comparable =
            into.comparable && from.comparable && from.dtype == into.dtype;
      } else {
        // Reaching past `into`: one span over both, no single element type.
        into.span.nbytes = reach - begin(head);
        into.comparable = false;
      }
      into.category = std::min(into.category, from.category);
      into.names.insert(into.names.end(), from.names.begin(), from.names.end());
      into.others.insert(into.others.end(), from.others.begin(),
                         from.others.end());
      gone[order[k]] = true;
    }
  }
  std::vector<Storage> kept;
  for (std::size_t i = 0; i < c.storages.size(); ++i)
    if (!gone[i])
      kept.push_back(std::move(c.storages[i]));
  c.storages = std::move(kept);
}

} // namespace

Collected collect(const torch::nn::Module &module,
                  const InspectOptions &options) {
  Collector c;
  c.add_module("", module, options.gradients);
  const InspectOptions::ModuleTensors &flat = options.module_tensors;
  for (const auto &[name, t] : flat.parameters)
    c.add(name, t, Role::compared, Category::parameter);
  for (const auto &[name, t] : flat.gradients)
    c.add(name, t, Role::reachable, Category::gradient);
  for (const auto &[name, t] : flat.buffers)
    c.add(name, t, Role::compared, Category::buffer);
  for (const auto &[name, m] : options.modules)
    if (m != nullptr)
      c.add_module(name + ".", *m, options.gradients);
  for (const auto &[name, t] : options.tensors)
    c.add(name, t, Role::compared, Category::root);
  for (const auto &[name, opt] : options.optimizers)
    if (opt != nullptr)
      add_optimizer(c, name + ".", *opt);
  for (const auto &[name, t] : options.held)
    c.add(name, t, Role::reachable, Category::root);
  for (const auto &[name, t] : options.state)
    c.add(name, t, Role::reachable, Category::optimizer_state);
  Collected out = c.take();
  merge_aliases(out);
  return out;
}

} // namespace devcopy::detail
