#include "HostSyncInLoopCheck.h"
#include "TorchMatchers.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "llvm/ADT/StringSwitch.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {

bool isAcceleratorName(llvm::StringRef Name) {
  // c10::DeviceType enumerators and their kX constants, CPU and Meta aside.
  return llvm::StringSwitch<bool>(Name)
      .Cases("kCUDA", "kHIP", "kMPS", "kXPU", "kXLA", "kHPU", "kIPU", "kVulkan", true)
      .Cases("CUDA", "HIP", "MPS", "XPU", "XLA", "HPU", "IPU", "Vulkan", true)
      .Default(false);
}

bool isAcceleratorString(llvm::StringRef S) {
  for (llvm::StringRef Prefix : {"cuda", "hip", "mps", "xpu", "xla"})
    if (S == Prefix || S.starts_with((Prefix + ":").str()))
      return true;
  return false;
}

/// In namespace torch::cuda, at::cuda or c10::cuda (is_available, device_count).
bool isCudaNamespaceFunction(const FunctionDecl *FD) {
  for (const DeclContext *DC = FD ? FD->getDeclContext() : nullptr; DC; DC = DC->getParent())
    if (const auto *NS = llvm::dyn_cast<NamespaceDecl>(DC);
        NS && NS->getIdentifier() && NS->getName() == "cuda")
      return true;
  return false;
}

bool isDeviceValueType(QualType T) {
  const auto *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  return RD && RD->getIdentifier() &&
         (RD->getName() == "Device" || RD->getName() == "TensorOptions");
}

/// Collects the facts of HostSyncInLoopCheck::DeviceUse from one declaration.
class DeviceUseVisitor : public RecursiveASTVisitor<DeviceUseVisitor> {
public:
  bool NamesAccelerator = false;
  bool UsesDevice = false;

  bool VisitDeclRefExpr(DeclRefExpr *E) {
    const ValueDecl *D = E->getDecl();
    if (D->getIdentifier() && isAcceleratorName(D->getName()) &&
        (llvm::isa<EnumConstantDecl>(D) ||
         (llvm::isa<VarDecl>(D) && !llvm::cast<VarDecl>(D)->hasLocalStorage())))
      NamesAccelerator = true;
    if (isDeviceValueType(E->getType()))
      UsesDevice = true;
    return !NamesAccelerator;
  }
  bool VisitMemberExpr(MemberExpr *E) {
    if (isDeviceValueType(E->getType()))
      UsesDevice = true;
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
      UsesDevice |= llvm::isa<CXXMemberCallExpr>(E) && isDeviceValueType(E->getType());
    return !NamesAccelerator;
  }
};

/// What the sync does, for the message.
std::string describeSync(llvm::StringRef Method, const std::string &Name) {
  if (Method == "<<")
    return "printing '" + Name + "' copies it to the host";
  if (Method == "nonzero" || Method == "masked_select")
    return "'" + Name + "." + Method.str() + "()' sizes its result on the host";
  if (Method == "cpu" || Method == "to")
    return "'" + Name + "' is copied to the host";
  return "reading '" + Name + "' with " + Method.str() + "() copies it to the host";
}

} // namespace

void HostSyncInLoopCheck::registerCheckMatchers(MatchFinder *Finder) {
  auto Main = allOf(matchers::isInMainFileCode(), unless(isInTemplateInstantiation()));
  Finder->addMatcher(
      expr(Main, matchers::tensorMethodCall({"item", "is_nonzero", "equal",
                                             "allclose", "nonzero", "masked_select", "cpu",
                                             "to"},
                                            "sync")),
      this);
  Finder->addMatcher(cxxOperatorCallExpr(Main, hasOverloadedOperatorName("<<"),
                                         hasArgument(1, matchers::tensorExpr()))
                         .bind("print"),
                     this);
}

void HostSyncInLoopCheck::checkMatch(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  const Expr *Sync = nullptr;
  std::string Method, Name;
  if (const auto *Call = Result.Nodes.getNodeAs<CXXMemberCallExpr>("sync")) {
    Method = Call->getMethodDecl()->getName().str();
    if (Method == "to" && describeCopy(*Call, Ctx).Device != DeviceKind::CPU)
      return;
    Sync = Call;
    Name = receiverName(Result.Nodes.getNodeAs<Expr>("sync.recv"), Ctx);
  } else if (const auto *Print = Result.Nodes.getNodeAs<CXXOperatorCallExpr>("print")) {
    if (isTensorType(Print->getArg(0)->getType()))
      return; // a tensor's own operator<< (a shift), not printing
    // Printing the result of cpu() / to(kCPU): that copy is the sync, and is
    // reported on its own.
    if (const auto *Inner = llvm::dyn_cast<CXXMemberCallExpr>(ignoreConversions(Print->getArg(1)));
        Inner && Inner->getMethodDecl() && isTensorType(Inner->getType()) &&
        describeCopy(*Inner, Ctx).Device == DeviceKind::CPU)
      return;
    Method = "<<";
    Sync = Print;
    Name = receiverName(Print->getArg(1), Ctx);
  }
  if (!Sync)
    return;
  std::optional<EnclosingLoop> L = Loops.enclosingLoop(*Sync, Ctx);
  if (!L || !Loops.get(*L->Loop, Ctx).runsEveryIteration(*L) ||
      !acceleratorInPlay(*L->Loop, Ctx))
    return;
  diag(Sync->getExprLoc(),
       "%0 and waits for the device on every iteration of this loop, stalling the "
       "GPU queue each time; accumulate on the device and read once after the loop, "
       "or every N steps")
      << describeSync(Method, Name);
}

HostSyncInLoopCheck::DeviceUse HostSyncInLoopCheck::functionDeviceUse(const Decl *Fn) {
  auto It = Functions.find(Fn);
  if (It != Functions.end())
    return It->second;
  DeviceUseVisitor V;
  V.TraverseDecl(const_cast<Decl *>(Fn));
  DeviceUse U{V.NamesAccelerator, V.UsesDevice};
  Functions[Fn] = U;
  return U;
}

bool HostSyncInLoopCheck::fileNamesAccelerator(ASTContext &Ctx) {
  if (FileHasAccelerator)
    return *FileHasAccelerator;
  const SourceManager &SM = Ctx.getSourceManager();
  DeviceUseVisitor V;
  // Only the main file's own declarations: the LibTorch headers name CUDA
  // everywhere.
  for (Decl *D : Ctx.getTranslationUnitDecl()->decls()) {
    if (!SM.isInMainFile(SM.getExpansionLoc(D->getLocation())))
      continue;
    V.TraverseDecl(D);
    if (V.NamesAccelerator)
      break;
  }
  FileHasAccelerator = V.NamesAccelerator;
  return V.NamesAccelerator;
}

bool HostSyncInLoopCheck::acceleratorInPlay(const Stmt &Loop, ASTContext &Ctx) {
  // The outermost function around the loop (a lambda belongs to its caller).
  const Decl *Fn = nullptr;
  DynTypedNode Cur = DynTypedNode::create(Loop);
  for (int Depth = 0; Depth < 512; ++Depth) {
    auto Parents = Ctx.getParents(Cur);
    if (Parents.empty())
      break;
    Cur = Parents[0];
    if (const auto *FD = Cur.get<FunctionDecl>()) {
      Fn = FD;
      break;
    }
  }
  if (!Fn)
    return fileNamesAccelerator(Ctx);
  DeviceUse U = functionDeviceUse(Fn);
  return U.NamesAccelerator || (U.UsesDevice && fileNamesAccelerator(Ctx));
}

void HostSyncInLoopCheck::onEndOfTranslationUnit() {
  Loops.clear();
  Functions.clear();
  FileHasAccelerator.reset();
}

} // namespace clang::tidy::devcopy
