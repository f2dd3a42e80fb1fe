// Type-aware matchers and helpers shared by every devcopy check.
//
// Only calls on LibTorch's own types count: at::TensorBase and everything
// derived from it (at::Tensor, its aliases torch::Tensor and
// torch::autograd::Variable), and torch::nn::Module and its subclasses,
// reached directly, through ModuleHolder's operator-> or through `this`. A user
// class with methods named `to`, `cpu` or `clone` never matches.
//
// The helpers read the arguments of a copying call to say where it copies
// (CPU, CUDA, a runtime device) and whether it converts the dtype, so messages
// can name the target and checks can compare two calls' targets.
#pragma once

#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchers.h"
#include <cstdint>
#include <optional>
#include <string>

namespace clang::tidy::devcopy {

// ---- Types ------------------------------------------------------------------

/// at::TensorBase or a class derived from it (at::Tensor, through any alias).
bool isTensorRecord(const CXXRecordDecl *RD);
/// torch::nn::Module or a class derived from it.
bool isModuleRecord(const CXXRecordDecl *RD);
/// A tensor by value, reference or pointer, through typedefs and aliases.
bool isTensorType(QualType T);
/// A standard sequence of tensors (std::vector, deque, list or array of
/// at::Tensor), by value or reference.
bool isTensorContainerType(QualType T);
/// A module by value, reference or pointer (not the ModuleHolder itself).
bool isModuleType(QualType T);
/// c10::Device or c10::DeviceType (also through c10::optional and aliases
/// such as torch::Device).
bool isDeviceType(QualType T);
/// c10::TensorOptions (also through c10::optional, references and aliases).
bool isTensorOptionsType(QualType T);
/// c10::ScalarType or caffe2::TypeMeta: a dtype.
bool isDTypeType(QualType T);
/// A function in namespace torch or at (any nested namespace, e.g.
/// torch::nn::functional): LibTorch's own operators and factories.
bool isTorchFunction(const FunctionDecl *FD);
/// A tensor factory in namespace torch or at (zeros, ones, empty, full, rand,
/// randn, randint, randperm, arange, linspace, logspace, eye, tensor, range,
/// empty_strided, and every `*_like`). Not from_blob: that wraps host data.
bool isTensorFactory(const FunctionDecl *FD);

/// A top-level namespace of LibTorch, the standard library or another
/// library a LibTorch project includes (torch, at, c10, caffe2, std, cv,
/// Eigen, boost, pybind11): never walked for user code, even when its headers
/// are reached through -I rather than -isystem.
bool isLibraryNamespace(const Decl *D);
/// \p D is declared in such a namespace (at any depth).
bool inLibrary(const Decl *D);

/// c10's TensorOptions shorthands (`torch::device(d)`, `torch::dtype(t)`,
/// `torch::requires_grad()`), which torch:: re-exports.
bool isTensorOptionsShorthand(const FunctionDecl *FD);

// ---- Matchers ---------------------------------------------------------------
namespace matchers {
using namespace ast_matchers;

/// Names of the Tensor methods that may copy data (to another device, dtype or
/// layout): to, cpu, cuda, clone, contiguous, pin_memory, toType, type_as.
extern const char *const CopyingMethods[];

/// A CXXRecordDecl that is at::TensorBase or derives from it.
ast_matchers::internal::Matcher<CXXRecordDecl> tensorRecord();
/// A CXXRecordDecl that is torch::nn::Module or derives from it.
ast_matchers::internal::Matcher<CXXRecordDecl> moduleRecord();
/// An expression whose type is a tensor (value, reference or pointer).
ast_matchers::internal::Matcher<Expr> tensorExpr();

/// A call to one of CopyingMethods on a tensor. The call is bound to \p Id;
/// its receiver (implicit object argument) to Id + ".recv".
ast_matchers::internal::Matcher<Expr> copyCall(llvm::StringRef Id = "copy");
/// Like copyCall, restricted to the given method names (e.g. {"to", "cpu"}).
ast_matchers::internal::Matcher<Expr>
tensorMethodCall(llvm::ArrayRef<llvm::StringRef> Names, llvm::StringRef Id);
/// nn::Module::to (in place, void) on a module: `m->to(d)`, `m.to(d)`,
/// `this->to(d)`, `to(d)` in a member function. Bound to \p Id; the module
/// expression (or CXXThisExpr) to Id + ".recv".
ast_matchers::internal::Matcher<Expr> moduleToCall(llvm::StringRef Id = "move");
/// A call to a tensor factory in namespace torch or at (zeros, ones, empty,
/// full, rand, randn, randint, randperm, arange, linspace, logspace, eye,
/// tensor, and every `*_like`). Not from_blob: that wraps host data.
ast_matchers::internal::Matcher<Expr>
factoryCall(llvm::StringRef Id = "factory");

/// True when the node's location (after macro expansion) is in the main file.
/// Per-function work is restricted to these: <torch/torch.h> alone holds
/// hundreds of copying calls.
AST_MATCHER(Stmt, isInMainFileCode) {
  return Finder->getASTContext().getSourceManager().isInMainFile(
      Finder->getASTContext().getSourceManager().getExpansionLoc(
          Node.getBeginLoc()));
}
} // namespace matchers

// ---- Reading a copying call -------------------------------------------------

/// Where a device argument points.
enum class DeviceKind {
  None, ///< the call does not name a device (clone, to(kHalf), ...)
  CPU,
  CUDA,
  Other,   ///< another known backend (mps, meta, ...)
  Runtime, ///< a variable or expression: known only at run time
};

/// What one copying call does, as far as the source says.
struct CopyTarget {
  std::string Method; ///< "to", "cpu", "clone", ...
  DeviceKind Device = DeviceKind::None;
  std::string DeviceText; ///< spelling of the device argument ("torch::kCUDA",
                          ///< "device")
  std::string DTypeText;  ///< spelling of the dtype argument, if any
  bool AlwaysCopies = false; ///< clone(), or to(..., copy=true)
  bool NonBlocking = false;  ///< to(..., /*non_blocking=*/true)
  bool LikeOther =
      false; ///< to(other) / type_as(other): device of another tensor
  std::string OtherText; ///< spelling of that other tensor
  /// A key equal for two calls that target the same place: "cpu", "cuda",
  /// or the device argument's spelling for a runtime device.
  std::string deviceKey() const;
  bool changesDevice() const { return Device != DeviceKind::None; }
  bool changesDType() const { return !DTypeText.empty(); }
};

/// Reads the arguments of a copying call (see matchers::copyCall).
CopyTarget describeCopy(const CXXMemberCallExpr &Call, const ASTContext &Ctx);

/// Reads a TensorOptions expression (`torch::kHalf`, `torch::kCUDA`,
/// `TensorOptions().device(d).dtype(t)`): fills Device/DTypeText only.
CopyTarget describeOptions(const Expr *Options, const ASTContext &Ctx);

/// Classifies one expression used as a device: torch::kCPU, at::kCUDA,
/// c10::DeviceType::CUDA, torch::Device(torch::kCUDA, 0), "cuda:1", a
/// TensorOptions built with .device(...), or a runtime value.
DeviceKind classifyDevice(const Expr *E);

/// "the CPU", "CUDA", "'device'" for messages.
std::string describeDevice(const CopyTarget &T);
/// "to the CPU", "to CUDA as kHalf", "to 'device'", "into a new tensor".
std::string describeDestination(const CopyTarget &T);

/// Strips parentheses, implicit casts, temporaries and converting
/// constructors (Device from DeviceType, TensorOptions from Device...), so the
/// expression the user wrote is left.
const Expr *ignoreConversions(const Expr *E);

/// \p Outer's source range holds all of \p Inner (both valid): a statement
/// inside another, a declaration inside a loop.
bool encloses(const SourceManager &SM, SourceRange Outer, SourceRange Inner);

/// The source text of \p E as written (expanded through macros), or "".
std::string sourceText(const Expr *E, const ASTContext &Ctx);

/// Short name of the tensor a receiver refers to, for messages: "x" for `x`,
/// `this->x` or `obj.x`; otherwise the receiver's text, elided past 40 chars.
std::string receiverName(const Expr *Recv, const ASTContext &Ctx);

/// The receiver as a modifiable lvalue the result can be assigned back to
/// (a non-const local, parameter, global or data member of tensor type), or
/// nullptr.
const Expr *assignableReceiver(const Expr *Recv, const ASTContext &Ctx);

/// Size in bytes of the tensor a factory call creates, when the source says:
/// literal sizes (`torch::zeros({64, 128})`, `torch::eye(8)`) and a known
/// dtype (the options' dtype, else float). Only for zeros, ones, empty, rand,
/// randn and eye, whose default dtype is float.
std::optional<uint64_t> factoryBytes(const CallExpr &Factory,
                                     const ASTContext &Ctx);

/// Bytes per element of a dtype spelled kHalf, torch::kFloat32,
/// at::ScalarType::Long..., or nullopt.
std::optional<uint64_t> dtypeSize(llvm::StringRef DType);

/// "512 B", "32.0 KiB", "1.5 MiB": sizes for messages.
std::string formatBytes(uint64_t Bytes);

/// Number of arguments written at the call (default arguments not counted).
unsigned writtenArgs(const CallExpr &Call);

} // namespace clang::tidy::devcopy
