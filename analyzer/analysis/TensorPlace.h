// Where a tensor lives: on the host, on an accelerator, or unknown.
//
// Shared by the devcopy checks so that transfer and sync rules agree on one
// answer. The reasoning follows the source, as far as it says:
//
//  * Device expressions: torch::kCPU / "cpu" are the host; kCUDA, kMPS,
//    "cuda:1"... an accelerator; a conditional whose condition folds to a
//    constant (`cpu_only ? kCPU : kCUDA` with `const bool cpu_only = true`)
//    takes that branch; a choice made at run time
//    (`cuda::is_available() ? kCUDA : kCPU`) counts as an accelerator. A
//    device variable is what its initialiser and every assignment to it say
//    (any accelerator among them: an accelerator). A device parameter with
//    a default (`Device device = kCPU`) is what the main file's calls pass,
//    the default where they leave it out; with no call in the file, the
//    default. One without a default is unknown. `t.device()` and
//    `t.options()` are where `t` lives.
//  * Tensors: a factory makes its tensor where its options say (the host by
//    default); `*_like(t)` where `t` lives; `cpu()`, `cuda()`, `to(d)`,
//    `to(other)` where they send it; every other LibTorch op (methods,
//    operators, torch:: functions, a module's forward) leaves its result on
//    the device of its first tensor operand. A local tensor variable is where
//    the definitions that reach the use (its CFG: initialiser and
//    assignments, dominance and reachability) put it; they must agree. An
//    element of a local container of tensors (`dets[0]`, a range-for over
//    it) is where everything put into the container is.
//  * A program fixed to the CPU (its main file chooses a host device itself,
//    no device expression evaluates to an accelerator, no `.cuda()`) runs on
//    the host: every device and tensor expression of it is Host. A file whose
//    device only arrives from outside (a parameter) is not fixed.
//
// One TensorPlaces per translation unit (DevcopyCheck::places() holds it);
// answers are cached. Only main-file code is examined.
#pragma once

#include "clang/AST/Expr.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <memory>
#include <optional>
#include <vector>

namespace clang {
class ASTContext;
class CallExpr;
class FunctionDecl;
class ParmVarDecl;
class VarDecl;
namespace tidy::devcopy {
struct Definition;

enum class Place { Unknown, Host, Accelerator };

/// "host", "accelerator", "unknown".
llvm::StringRef placeName(Place P);

class TensorPlaces {
public:
  explicit TensorPlaces(ASTContext &Ctx);
  ~TensorPlaces();
  TensorPlaces(const TensorPlaces &) = delete;
  TensorPlaces &operator=(const TensorPlaces &) = delete;

  /// Where a device-valued expression points: a c10::Device, DeviceType,
  /// device string or TensorOptions (its .device(...)). Unknown when it names
  /// no device or cannot be resolved, unless the program runs on the host.
  Place ofDevice(const Expr *E);

  /// Like ofDevice, but nullopt when \p E names no device at all (a
  /// TensorOptions with only a dtype, `.to(opts)` keeping the device).
  std::optional<Place> deviceNamedBy(const Expr *E);

  /// Where the tensor \p E evaluates to lives, at the point \p E is evaluated.
  Place ofTensor(const Expr *E);

  /// Where a parameter's tensor lives: on the host when every call of its
  /// function in the main file passes a host tensor (`nms(preds.cpu())`; a
  /// method, constructor or lambda alike; for a pointer, the address of a
  /// host tensor), else unknown (a function called from another file, or
  /// not at all).
  Place ofParameter(const ParmVarDecl *P);

  /// The value of a condition that never changes: a constant, or a local
  /// whose only definition is a constant initialiser (`bool cpu_only =
  /// true;`, never assigned, incremented or passed by reference), through
  /// `!`, `&&`, `||` and comparisons with constants. nullopt otherwise.
  std::optional<bool> constantCondition(const Expr *Cond);
  /// \p S is in a branch of an `if` whose constantCondition never takes it.
  bool inBranchNeverTaken(const Stmt &S);

  /// True when the main file is fixed to the CPU: it chooses a host device
  /// itself (`torch::Device device(torch::kCPU)`, a constant `cpu_only` flag
  /// choosing kCPU), no device expression of it evaluates to an accelerator
  /// and nothing calls `.cuda()`. Every tensor of such a program is on the
  /// host: it has no transfers and no host syncs. A file that names no device
  /// (its device arrives as a parameter) is not fixed to the CPU.
  bool programOnHost();

private:
  struct FunctionFlow;
  /// nullopt: the expression names no device (TensorOptions with a dtype only).
  std::optional<Place> deviceOf(const Expr *E, unsigned Depth);
  Place tensorOf(const Expr *E, unsigned Depth);
  std::optional<Place> variableDevice(const VarDecl *VD, unsigned Depth);
  /// A device parameter with a default argument: what the calls of its
  /// function in the main file pass (the default where a call leaves it
  /// out); with no call in the file, the default. Unknown without a default
  /// or when the function assigns to it.
  std::optional<Place> parameterDevice(const ParmVarDecl *P, unsigned Depth);
  Place variableTensor(const VarDecl *VD, const Expr *Use, unsigned Depth);
  // TensorPlaceCalls.cpp
  /// What each call of P's function in the main file's declarations passes
  /// for P (calls, method calls, constructions, `f(x)` of a lambda or
  /// functor); nullptr where a call leaves it to the default.
  llvm::SmallVector<const Expr *, 4> argumentsFor(const ParmVarDecl *P);
  void indexCalls();
  /// The function assigns to \p P (or passes it on by non-const reference).
  bool rebound(const ParmVarDecl *P);
  /// ofParameter, unless the function assigns to the parameter.
  Place parameterTensor(const ParmVarDecl *P);
  /// Where the tensor a pointer points at lives: `&x`, or a parameter
  /// pointing to a const tensor.
  Place pointeeOf(const Expr *Pointer, unsigned Depth);
  // TensorPlaceGuards.cpp
  /// \p Def (a definition of \p VD of unknown place) reaches a use only on
  /// the host: another definition among \p Live downloads in the
  /// accelerator branch of an `if` on where the code runs
  /// (`if (!device.is_cpu()) x = x.cpu();`), and \p Def lies in the host
  /// branch, or comes before the `if` and the download moves VD itself. A
  /// \p Def without a statement is the value a parameter came with.
  bool hostByGuard(const VarDecl *VD, const Definition &Def,
                   llvm::ArrayRef<const Definition *> Live, unsigned Depth);
  FunctionFlow *flowOf(const FunctionDecl *FD);
  /// definitions(VD), collected once per variable: a query per read would
  /// walk the function again for each (quadratic in a long loop).
  llvm::ArrayRef<Definition> definitionsOf(const VarDecl *VD);
  // TensorPlaceElements.cpp
  /// Where the tensors a container holds live (`dets` in `dets[0].item()`,
  /// a `std::vector<Tensor>` or another standard sequence of tensors): where
  /// everything put into a local container is (its initialiser, push_back,
  /// `v[i] = t`), or what the function of this file that made it returns.
  /// Unknown when anything else may write to it (a non-const reference to
  /// it or to an element, a parameter, a member).
  Place elementsOf(const Expr *E, unsigned Depth);
  Place variableElements(const VarDecl *VD, unsigned Depth);
  std::optional<Place> writtenElements(const VarDecl *VD, const Expr *Ref,
                                       unsigned Depth);
  std::optional<Place> writtenElement(const Expr *Access, unsigned Depth);
  std::optional<Place> writtenThrough(const VarDecl *Element, unsigned Depth);
  Place returnedElements(const FunctionDecl *FD, unsigned Depth);
  Place orProgram(Place P);

  ASTContext &Ctx;
  std::optional<bool> OnHost;
  bool ComputingOnHost = false;
  llvm::DenseMap<const VarDecl *, std::optional<Place>> DeviceVars;
  llvm::DenseMap<const ParmVarDecl *, Place> Params;
  llvm::SmallPtrSet<const VarDecl *, 8> InProgress;
  /// Variables whose definition reached a use of themselves (InProgress).
  llvm::SmallPtrSet<const VarDecl *, 8> Cycles;
  /// The read of such a variable that found it in progress, and the
  /// variables whose value before `x = op(x)` is being asked for.
  llvm::DenseMap<const VarDecl *, const Expr *> CycleUse;
  llvm::SmallPtrSet<const VarDecl *, 8> Reentered;
  llvm::DenseMap<const FunctionDecl *, std::unique_ptr<FunctionFlow>> Flows;
  llvm::DenseMap<const VarDecl *, std::vector<Definition>> Definitions;
  /// Containers and functions returning containers: their elements' place
  /// (Unknown while in progress, so recursion ends).
  llvm::DenseMap<const VarDecl *, Place> ElementVars;
  llvm::DenseMap<const FunctionDecl *, Place> Returned;
  /// The main file's call sites of each function, by canonical declaration.
  struct CallSite {
    llvm::ArrayRef<const Expr *> Args;
  };
  llvm::DenseMap<const FunctionDecl *, llvm::SmallVector<CallSite, 2>> Calls;
  bool CallsIndexed = false;
};

} // namespace tidy::devcopy
} // namespace clang
