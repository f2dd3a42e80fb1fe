// A small stand-in for LibTorch 1.13's <torch/torch.h>, for fast analyzer
// fixtures. The declarations the checks look at copy the real ones: namespaces
// (c10 / at / torch), class names and bases (Tensor : TensorBase), overload
// sets and parameter names (`non_blocking`, `copy`), implicit conversions
// (DeviceType -> Device -> TensorOptions, ScalarType -> TensorOptions) and
// factory signatures. Nothing is defined: fixtures are only parsed.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace c10 {
struct nullopt_t {
  constexpr explicit nullopt_t(int) {}
};
inline constexpr nullopt_t nullopt{0};
template <typename T> class optional {
public:
  optional();
  optional(nullopt_t);
  optional(T v); // implicit, as in c10
  const T &operator*() const;
};

enum class DeviceType : int8_t { CPU = 0, CUDA = 1, HIP = 6, Meta = 9, MPS = 13 };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;
constexpr DeviceType kMPS = DeviceType::MPS;

struct Device {
  /* implicit */ Device(DeviceType type, int8_t index = -1);
  /* implicit */ Device(const std::string &device_string);
  bool is_cuda() const;
  bool is_cpu() const;
  DeviceType type() const;
};

enum class ScalarType : int8_t { Byte, Char, Short, Int, Long, Half, Float, Double, Bool, BFloat16 };
constexpr auto kByte = ScalarType::Byte;
constexpr auto kInt = ScalarType::Int;
constexpr auto kLong = ScalarType::Long;
constexpr auto kHalf = ScalarType::Half;
constexpr auto kFloat = ScalarType::Float;
constexpr auto kDouble = ScalarType::Double;
constexpr auto kBFloat16 = ScalarType::BFloat16;
constexpr auto kBool = ScalarType::Bool;
enum class Layout : int8_t { Strided, Sparse };
enum class MemoryFormat : int8_t { Contiguous, Preserve };

struct TensorOptions {
  TensorOptions();
  /* implicit */ TensorOptions(Layout layout);
  template <typename T, typename = decltype(Device(std::declval<T &&>()))>
  /* implicit */ TensorOptions(T &&device);
  /* implicit */ TensorOptions(ScalarType dtype);
  /* implicit */ TensorOptions(MemoryFormat memory_format);
  template <typename... Args> TensorOptions device(Args &&...args) const noexcept;
  TensorOptions dtype(ScalarType dtype) const noexcept;
  TensorOptions requires_grad(bool requires_grad) const noexcept;
  TensorOptions pinned_memory(bool pinned_memory) const noexcept;
  Device device() const noexcept;
};
inline TensorOptions device(Device device);
inline TensorOptions dtype(ScalarType dtype);
inline TensorOptions requires_grad(bool requires_grad = true);

using IntArrayRef = std::vector<int64_t>;
struct Scalar {
  Scalar(double);
  Scalar(int);
  template <typename T> T to() const;
  int toInt() const;
  int64_t toLong() const;
  float toFloat() const;
  double toDouble() const;
};
} // namespace c10

namespace at {
using namespace c10; // at::Device, at::kCUDA, at::TensorOptions... as in ATen
class Tensor;
namespace indexing { // t.index({Ellipsis, i}), as in LibTorch
struct EllipsisIndexType {};
extern const EllipsisIndexType Ellipsis;
struct TensorIndex {
  TensorIndex(int64_t i);
  TensorIndex(EllipsisIndexType);
  TensorIndex(const Tensor &t);
};
} // namespace indexing

class TensorBase {
public:
  TensorBase();
  TensorBase(const TensorBase &);
  ~TensorBase();
  TensorBase contiguous(MemoryFormat memory_format = MemoryFormat::Contiguous) const;
  TensorBase to(TensorOptions options = {}, bool non_blocking = false, bool copy = false,
                optional<MemoryFormat> memory_format = nullopt) const;
  int64_t numel() const;
  int64_t dim() const;
  int64_t size(int64_t dim) const;
  size_t nbytes() const;
  Device device() const;
  TensorOptions options() const;
  bool is_cuda() const;
  bool defined() const;
};

class Tensor : public TensorBase {
public:
  Tensor();
  Tensor(const Tensor &);
  Tensor &operator=(const Tensor &) &;
  Tensor &operator=(Tensor &&) &;
  Tensor contiguous(MemoryFormat memory_format = MemoryFormat::Contiguous) const;
  Tensor cpu() const;
  Tensor cuda() const;
  Tensor toType(ScalarType t) const;
  Tensor to(TensorOptions options = {}, bool non_blocking = false, bool copy = false,
            optional<MemoryFormat> memory_format = nullopt) const;
  Tensor to(optional<ScalarType> dtype, optional<Layout> layout, optional<Device> device,
            optional<bool> pin_memory, bool non_blocking, bool copy,
            optional<MemoryFormat> memory_format) const;
  Tensor to(Device device, ScalarType dtype, bool non_blocking = false, bool copy = false,
            optional<MemoryFormat> memory_format = nullopt) const;
  Tensor to(ScalarType dtype, bool non_blocking = false, bool copy = false,
            optional<MemoryFormat> memory_format = nullopt) const;
  Tensor to(const Tensor &other, bool non_blocking = false, bool copy = false,
            optional<MemoryFormat> memory_format = nullopt) const;
  Tensor clone(optional<MemoryFormat> memory_format = nullopt) const;
  Tensor pin_memory(optional<Device> device = nullopt) const;
  Tensor type_as(const Tensor &other) const;
  Tensor &copy_(const Tensor &src, bool non_blocking = false) const;
  Tensor detach() const;
  Scalar item() const;
  template <typename T> T item() const;
  Tensor sum() const;
  Tensor mean() const;
  Tensor view(IntArrayRef size) const;
  Tensor matmul(const Tensor &other) const;
  Tensor relu() const;
  // Casts, views and ops the placement-aware checks read (create-then-move,
  // redundant-chain, discarded-copy), with their in-place forms.
  Tensor unsqueeze(int64_t dim) const;
  Tensor repeat(IntArrayRef repeats) const;
  Tensor reshape(IntArrayRef shape) const;
  Tensor clamp(const Scalar &min, const Scalar &max) const;
  Tensor &clamp_(const Scalar &min, const Scalar &max) const;
  Tensor add(const Tensor &other, const Scalar &alpha = 1) const;
  Tensor sub(const Tensor &other, const Scalar &alpha = 1) const;
  Tensor &sub_(const Tensor &other, const Scalar &alpha = 1) const;
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor slice(int64_t dim = 0, int64_t start = 0, int64_t end = 0, int64_t step = 1) const;
  Tensor eq(const Scalar &other) const;
  Tensor eq(const Tensor &other) const;
  Tensor argmax(int64_t dim) const;
  Tensor &zero_() const;
  Tensor &fill_(const Scalar &value) const;
  Tensor &requires_grad_(bool requires_grad = true) const;
  void record_stream(int stream) const;
  Tensor operator==(const Scalar &other) const;
  Tensor operator==(const Tensor &other) const;
  Tensor operator>(const Scalar &other) const;
  Tensor squeeze() const;
  Tensor &add_(const Tensor &other) const;
  Tensor operator+(const Tensor &other) const;
  Tensor operator+(const Scalar &other) const;
  Tensor operator*(const Tensor &other) const;
  Tensor operator[](int64_t index) const;
  Tensor &operator=(const Scalar &v) &&;
  Tensor &operator=(const Tensor &v) &&; // copies into the view
  void backward() const;
  // Reads that wait for the device (host syncs).
  bool is_nonzero() const;
  bool equal(const Tensor &other) const;
  bool allclose(const Tensor &other, double rtol = 1e-05, double atol = 1e-08,
                bool equal_nan = false) const;
  Tensor nonzero() const;
  Tensor masked_select(const Tensor &mask) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor t() const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  // Containers of tensors (TensorPlaces' element places).
  Tensor select(int64_t dim, int64_t index) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
};
std::ostream &operator<<(std::ostream &out, const Tensor &t);

// Factories (at:: and torch:: carry the same set).
Tensor zeros(IntArrayRef size, TensorOptions options = {});
Tensor ones(IntArrayRef size, TensorOptions options = {});
Tensor empty(IntArrayRef size, TensorOptions options = {}, optional<MemoryFormat> memory_format = nullopt);
Tensor full(IntArrayRef size, const Scalar &fill_value, TensorOptions options = {});
Tensor rand(IntArrayRef size, TensorOptions options = {});
Tensor randn(IntArrayRef size, TensorOptions options = {});
Tensor arange(const Scalar &end, TensorOptions options = {});
Tensor eye(int64_t n, TensorOptions options = {});
Tensor zeros_like(const Tensor &self, TensorOptions options = {}, optional<MemoryFormat> memory_format = nullopt);
Tensor from_blob(void *data, IntArrayRef sizes, const TensorOptions &options = TensorOptions());
Tensor cat(const std::vector<Tensor> &tensors, int64_t dim = 0);
std::tuple<Tensor, Tensor> sort(const Tensor &self, int64_t dim = -1, bool descending = false);
Tensor index_select(const Tensor &self, int64_t dim, const Tensor &index);
std::vector<Tensor> split(const Tensor &self, int64_t split_size, int64_t dim = 0);
} // namespace at

namespace torch {
using namespace at; // torch::Tensor, torch::kCUDA, torch::Device ... as in LibTorch
using Dtype = at::ScalarType;
constexpr auto kU8 = at::kByte; // torch/types.h's short names
constexpr auto kF32 = at::kFloat;

namespace autograd {
using Variable = at::Tensor;
} // namespace autograd

// torch:: factories wrap the at:: ones and add autograd (variable_factories.h).
inline at::Tensor zeros(at::IntArrayRef size, const at::TensorOptions &options = {});
inline at::Tensor ones(at::IntArrayRef size, const at::TensorOptions &options = {});
inline at::Tensor empty(at::IntArrayRef size, at::TensorOptions options = {},
                        c10::optional<at::MemoryFormat> memory_format = c10::nullopt);
inline at::Tensor full(at::IntArrayRef size, const at::Scalar &fill_value,
                       const at::TensorOptions &options = {});
inline at::Tensor rand(at::IntArrayRef size, const at::TensorOptions &options = {});
inline at::Tensor randn(at::IntArrayRef size, const at::TensorOptions &options = {});
inline at::Tensor randint(int64_t high, at::IntArrayRef size, const at::TensorOptions &options = {});
inline at::Tensor arange(const at::Scalar &end, const at::TensorOptions &options = {});
inline at::Tensor arange(const at::Scalar &start, const at::Scalar &end,
                         const at::TensorOptions &options = {});
inline at::Tensor eye(int64_t n, const at::TensorOptions &options = {});
inline at::Tensor zeros_like(const at::Tensor &self, const at::TensorOptions &options = {},
                             c10::optional<at::MemoryFormat> memory_format = c10::nullopt);
inline at::Tensor ones_like(const at::Tensor &self, const at::TensorOptions &options = {},
                            c10::optional<at::MemoryFormat> memory_format = c10::nullopt);
inline at::Tensor linspace(const at::Scalar &start, const at::Scalar &end, int64_t steps,
                           const at::TensorOptions &options = {});
inline at::Tensor randn_like(const at::Tensor &self, const at::TensorOptions &options = {},
                             c10::optional<at::MemoryFormat> memory_format = c10::nullopt);
inline at::Tensor one_hot(const at::Tensor &self, int64_t num_classes = -1);
inline at::Tensor relu(const at::Tensor &self);
inline at::Tensor argmax(const at::Tensor &self);
inline at::Tensor multinomial(const at::Tensor &self, int64_t num_samples);
inline at::Tensor &relu_(at::Tensor &self);
inline at::Tensor from_blob(void *data, at::IntArrayRef sizes,
                            const at::TensorOptions &options = at::TensorOptions());
namespace detail {
struct TensorDataContainer {
  TensorDataContainer(double);
  TensorDataContainer(std::initializer_list<TensorDataContainer>);
  template <typename T> TensorDataContainer(const std::vector<T> &);
};
} // namespace detail
inline at::Tensor tensor(detail::TensorDataContainer data, const at::TensorOptions &options = {});

struct NoGradGuard {
  NoGradGuard();
  ~NoGradGuard();
};

namespace cuda {
bool is_available();
}

namespace nn {
template <typename Contained> class ModuleHolder;
class Module : public std::enable_shared_from_this<Module> {
public:
  Module();
  virtual ~Module();
  virtual void to(Device device, Dtype dtype, bool non_blocking = false);
  virtual void to(Dtype dtype, bool non_blocking = false);
  virtual void to(Device device, bool non_blocking = false);
  std::vector<Tensor> parameters(bool recurse = true) const;
  void train(bool on = true);
  void eval();
  template <typename ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, std::shared_ptr<ModuleType> module);
  template <typename ModuleType>
  std::shared_ptr<ModuleType> register_module(std::string name, ModuleHolder<ModuleType> module_holder);
  Tensor &register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor &register_buffer(std::string name, Tensor tensor);
};

template <typename Derived> class Cloneable : public Module {};

namespace detail {
struct ModuleHolderIndicator {};
} // namespace detail

template <typename Contained> class ModuleHolder : detail::ModuleHolderIndicator {
protected:
  std::shared_ptr<Contained> impl_;

public:
  ModuleHolder();
  ModuleHolder(std::nullptr_t);
  /* implicit */ ModuleHolder(std::shared_ptr<Contained> module);
  template <typename Head, typename... Tail> explicit ModuleHolder(Head &&head, Tail &&...tail);
  Contained *operator->();
  const Contained *operator->() const;
  Contained &operator*();
  const std::shared_ptr<Contained> &ptr() const;
  template <typename... Args> auto operator()(Args &&...args) -> decltype((*impl_)(args...));
};

struct LinearOptions {
  LinearOptions(int64_t in_features, int64_t out_features);
};
class LinearImpl : public Cloneable<LinearImpl> {
public:
  LinearImpl(int64_t in_features, int64_t out_features);
  explicit LinearImpl(const LinearOptions &options);
  Tensor forward(const Tensor &input);
  Tensor operator()(const Tensor &input);
  Tensor weight;
  Tensor bias;
};
class Linear : public ModuleHolder<LinearImpl> {
public:
  using ModuleHolder<LinearImpl>::ModuleHolder;
};
// Containers: every module pushed or passed in is registered.
class SequentialImpl : public Cloneable<SequentialImpl> {
public:
  SequentialImpl();
  template <typename... Modules> explicit SequentialImpl(Modules &&...modules);
  template <typename M> void push_back(M &&module);
  template <typename M> void push_back(std::string name, M &&module);
};
class Sequential : public ModuleHolder<SequentialImpl> {
public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  Sequential();
};
class ModuleListImpl : public Cloneable<ModuleListImpl> {
public:
  ModuleListImpl();
  template <typename M> void push_back(M &&module);
};
class ModuleList : public ModuleHolder<ModuleListImpl> {
public:
  using ModuleHolder<ModuleListImpl>::ModuleHolder;
  ModuleList();
};
} // namespace nn

#define TORCH_MODULE(Name)                                                                         \
  class Name : public ::torch::nn::ModuleHolder<Name##Impl> {                                     \
  public:                                                                                          \
    using ::torch::nn::ModuleHolder<Name##Impl>::ModuleHolder;                                    \
  }
} // namespace torch
