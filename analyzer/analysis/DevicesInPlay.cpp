// Whether an accelerator is in play around code whose tensor's place is
// unknown (DevicesInPlay.h).
#include "analysis/DevicesInPlay.h"
#include "analysis/Parents.h"
#include "analysis/TorchMatchers.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "llvm/ADT/StringSwitch.h"

namespace clang::tidy::devcopy {

namespace {

bool isAcceleratorName(llvm::StringRef Name) {
  // c10::DeviceType enumerators and their kX constants, CPU and Meta aside.
  return llvm::StringSwitch<bool>(Name)
      .Cases("kCUDA", "kHIP", "kMPS", "kXPU", "kXLA", "kHPU", "kIPU", "kVulkan",
             true)
      .Cases("CUDA", "HIP", "MPS", "XPU", "XLA", "HPU", "IPU", "Vulkan", true)
      .Default(false);
}

bool isAcceleratorString(llvm::StringRef S) {
  for (llvm::StringRef Prefix : {"cuda", "hip", "mps", "xpu", "xla"})
    if (S == Prefix || S.starts_with((Prefix + ":").str()))
      return true;
  return false;
}

/// In namespace torch::cuda, at::cuda or c10::cuda (is_available,
/// device_count).
bool isCudaNamespaceFunction(const FunctionDecl *FD) {
  for (const DeclContext *DC = FD ? FD->getDeclContext() : nullptr; DC;
       DC = DC->getParent())
    if (const auto *NS = llvm::dyn_cast<NamespaceDecl>(DC);
        NS && NS->getIdentifier() && NS->getName() == "cuda")
      return true;
  return false;
}

/// c10::Device, c10::DeviceType or c10::TensorOptions (TorchMatchers).
bool isDeviceValueType(QualType T) {
  return isDeviceType(T) || isTensorOptionsType(T);
}

/// Collects the facts of DevicesInPlay::Use from one declaration.
class DeviceUseVisitor : public RecursiveASTVisitor<DeviceUseVisitor> {
public:
  explicit DeviceUseVisitor(TensorPlaces &Places) : Places(Places) {}
  bool NamesAccelerator = false;
  bool UsesDevice = false;

  bool VisitDeclRefExpr(DeclRefExpr *E) {
    const ValueDecl *D = E->getDecl();
    if (D->getIdentifier() && isAcceleratorName(D->getName()) &&
        (llvm::isa<EnumConstantDecl>(D) ||
         (llvm::isa<VarDecl>(D) && !llvm::cast<VarDecl>(D)->hasLocalStorage())))
      NamesAccelerator = true;
    noteDeviceValue(E);
    return !NamesAccelerator;
  }
  bool VisitMemberExpr(MemberExpr *E) {
    noteDeviceValue(E);
    return true;
  }
  bool VisitCXXConstructExpr(CXXConstructExpr *E) {
    // torch::Device(name): a device made here (a copy of a variable is seen
    // at the variable).
    if (isDeviceType(E->getType()) &&
        !E->getConstructor()->isCopyOrMoveConstructor())
      noteDeviceValue(E);
    return true;
  }
  bool VisitStringLiteral(StringLiteral *S) {
    if (S->isOrdinary() && isAcceleratorString(S->getString()))
      NamesAccelerator = true;
    return !NamesAccelerator;
  }
  bool VisitCallExpr(CallExpr *E) {
    const FunctionDecl *FD = E->getDirectCallee();
    if (!FD || !FD->getIdentifier())
      return true;
    if (isCudaNamespaceFunction(FD) ||
        (FD->getName() == "cuda" && llvm::isa<CXXMemberCallExpr>(E)))
      NamesAccelerator = true;
    else if (FD->getName() == "device" || FD->getName() == "options")
      UsesDevice |=
          llvm::isa<CXXMemberCallExpr>(E) && isDeviceValueType(E->getType());
    return !NamesAccelerator;
  }

private:
  /// A Device, or TensorOptions that carry one (not `TensorOptions().dtype(
  /// kInt64)` alone), whose place is not the host.
  void noteDeviceValue(const Expr *E) {
    if (UsesDevice || !isDeviceValueType(E->getType()))
      return;
    std::optional<Place> P = Places.deviceNamedBy(E);
    UsesDevice = P && *P != Place::Host;
  }
  TensorPlaces &Places;
};

} // namespace

DevicesInPlay::Use DevicesInPlay::inFunction(const Decl *Fn) {
  auto It = Functions.find(Fn);
  if (It != Functions.end())
    return It->second;
  DeviceUseVisitor V(Places);
  V.TraverseDecl(const_cast<Decl *>(Fn));
  Use U{V.NamesAccelerator, V.UsesDevice};
  Functions[Fn] = U;
  return U;
}

bool DevicesInPlay::inFile(ASTContext &Ctx) {
  if (File)
    return *File;
  const SourceManager &SM = Ctx.getSourceManager();
  DeviceUseVisitor V(Places);
  // The project's own code: the main file and the headers it includes from
  // the project (a trainer's header that holds the device, for the loop in
  // a metrics file); not the system's or LibTorch's, which name CUDA
  // everywhere.
  for (Decl *D : Ctx.getTranslationUnitDecl()->decls()) {
    SourceLocation Loc = SM.getExpansionLoc(D->getLocation());
    if (D->isImplicit() || Loc.isInvalid() || SM.isInSystemHeader(Loc) ||
        (!SM.isInMainFile(Loc) && isLibraryNamespace(D)))
      continue;
    V.TraverseDecl(D);
    if (V.NamesAccelerator || V.UsesDevice)
      break;
  }
  File = V.NamesAccelerator || V.UsesDevice;
  return *File;
}

bool DevicesInPlay::around(const Stmt &S, ASTContext &Ctx) {
  // Code that moves its data to a device chosen at run time hands the
  // tensors of its helpers that device too.
  if (inFile(Ctx))
    return true;
  // The outermost function around S (a lambda belongs to its caller).
  const Decl *Fn = enclosingFunction(S, Ctx, Lambdas::OfCaller).Fn;
  if (!Fn)
    return false;
  // A device that arrives from outside (a parameter, a member) is chosen by
  // the caller: real code passes the GPU in, so it counts as one.
  Use U = inFunction(Fn);
  return U.NamesAccelerator || U.UsesDevice;
}

} // namespace clang::tidy::devcopy
