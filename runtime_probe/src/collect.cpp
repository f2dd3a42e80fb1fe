#include "collect.h"

#include <torch/optim.h>

#include <sstream>
#include <unordered_map>

namespace devcopy::detail {

std::string device_name(const c10::Device& device) { return device.str(); }

namespace {

enum class Role { compared, reachable };

class Collector {
 public:
  void add(const std::string& name, const at::Tensor& t, Role role) {
    try {
      add_checked(name, t, role);
    } catch (const std::exception& e) {
      // LibTorch throws c10::Error with a multi-line backtrace: keep line one.
      std::string what = e.what();
      out_.skipped.push_back({name, "cannot read: " + what.substr(0, what.find('\n'))});
    }
  }

  void add_module(const std::string& prefix, const torch::nn::Module& m, bool grads) {
    for (const auto& item : m.named_parameters(/*recurse=*/true)) {
      add(prefix + item.key(), item.value(), Role::compared);
      if (grads && item.value().defined() && item.value().grad().defined())
        add(prefix + item.key() + ".grad", item.value().grad(), Role::reachable);
    }
    for (const auto& item : m.named_buffers(/*recurse=*/true))
      add(prefix + item.key(), item.value(), Role::compared);
  }

  Collected take() { return std::move(out_); }

 private:
  void skip(const std::string& name, std::string why) { out_.skipped.push_back({name, std::move(why)}); }

  void add_checked(const std::string& name, const at::Tensor& t, Role role) {
    if (!t.defined()) return skip(name, "undefined tensor");
    if (t.is_meta()) return skip(name, "meta tensor: it holds no data");
    if (t.layout() != c10::kStrided) {
      std::ostringstream layout;
      layout << t.layout();
      return skip(name, "layout " + layout.str() + ": its indices and values are not inspected");
    }
    if (!t.has_storage()) return skip(name, "tensor without storage (" + t.toString() + ")");
    const c10::Device dev = t.device();
    if (!dev.is_cpu() && !dev.is_cuda())
      return skip(name, "device " + dev.str() + " is not readable by devcopy");
    if (dev.is_cuda() && !cuda_compiled())
      return skip(name, "devcopy was built without CUDA");
    const c10::Storage& st = t.storage();
    const void* key = st.unsafeGetStorageImpl();
    const std::int64_t nbytes = static_cast<std::int64_t>(st.nbytes());
    const void* data = st.data();
    if (data == nullptr && nbytes > 0) return skip(name, "storage without data");

    auto [it, fresh] = index_.emplace(key, out_.storages.size());
    if (fresh) {
      Storage s;
      s.key = key;
      s.device = dev;
      s.span = {static_cast<const unsigned char*>(data), nbytes,
                static_cast<std::uint32_t>(t.element_size())};
      s.dtype = t.scalar_type();
      out_.storages.push_back(std::move(s));
    }
    Storage& s = out_.storages[it->second];
    if (role == Role::compared && !t.is_quantized()) {
      s.names.push_back(name);
      // A storage read as two dtypes has no single element type to compare.
      s.comparable = s.names.size() == 1 ? true : s.comparable && s.dtype == t.scalar_type();
    } else {
      s.others.push_back(name);
      if (t.is_quantized())
        skip(name, "quantized tensor: counted as reachable, not compared "
                   "(its scale and zero point are not part of its bytes)");
    }
  }

  Collected out_;
  std::unordered_map<const void*, std::size_t> index_;
};

// The optimizers in LibTorch keep their state in per-algorithm structs with
// no common tensor accessor: read the ones LibTorch ships.
void add_optimizer(Collector& c, const std::string& prefix, const torch::optim::Optimizer& opt) {
  using namespace torch::optim;
  std::size_t g = 0;
  for (const auto& group : opt.param_groups()) {
    std::size_t p = 0;
    for (const auto& param : group.params())
      c.add(prefix + "param_groups." + std::to_string(g) + "." + std::to_string(p++), param,
            Role::reachable);
    ++g;
  }
  std::size_t i = 0;
  for (const auto& entry : opt.state()) {
    const std::string at = prefix + "state." + std::to_string(i++) + ".";
    const OptimizerParamState* s = entry.second.get();
    // Undefined optional state (max_exp_avg_sq without amsgrad) is normal,
    // not worth a "skipped" line.
    auto add = [&](const char* field, const at::Tensor& t) {
      if (t.defined()) c.add(at + field, t, Role::reachable);
    };
    if (auto* a = dynamic_cast<const AdamParamState*>(s)) {
      add("exp_avg", a->exp_avg());
      add("exp_avg_sq", a->exp_avg_sq());
      add("max_exp_avg_sq", a->max_exp_avg_sq());
    } else if (auto* w = dynamic_cast<const AdamWParamState*>(s)) {
      add("exp_avg", w->exp_avg());
      add("exp_avg_sq", w->exp_avg_sq());
      add("max_exp_avg_sq", w->max_exp_avg_sq());
    } else if (auto* sg = dynamic_cast<const SGDParamState*>(s)) {
      add("momentum_buffer", sg->momentum_buffer());
    } else if (auto* r = dynamic_cast<const RMSpropParamState*>(s)) {
      add("square_avg", r->square_avg());
      add("momentum_buffer", r->momentum_buffer());
      add("grad_avg", r->grad_avg());
    } else if (auto* ag = dynamic_cast<const AdagradParamState*>(s)) {
      add("sum", ag->sum());
    }
  }
}

}  // namespace

Collected collect(const torch::nn::Module& module, const InspectOptions& options) {
  Collector c;
  c.add_module("", module, options.gradients);
  for (const auto& [name, m] : options.modules)
    if (m != nullptr) c.add_module(name + ".", *m, options.gradients);
  for (const auto& [name, t] : options.tensors) c.add(name, t, Role::compared);
  for (const auto& [name, opt] : options.optimizers)
    if (opt != nullptr) add_optimizer(c, name + ".", *opt);
  for (const auto& [name, t] : options.held) c.add(name, t, Role::reachable);
  return c.take();
}

}  // namespace devcopy::detail
