// TensorPlaces for downloads made only where the code runs on an
// accelerator: `if (!device.is_cpu()) x = x.cpu();` leaves x on the host on
// both paths, since the path that skips the download is the one where the
// code runs on the host. Split from TensorPlace.cpp (tensors).
#include "Parents.h"
#include "TensorPlace.h"
#include "TensorPlaceDefinitions.h"
#include "TorchMatchers.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

namespace clang::tidy::devcopy {

namespace {

/// A device type spelled as a constant: false for kCPU, true for kCUDA.
std::optional<bool> constantDeviceType(const Expr *E) {
  const auto *Ref = llvm::dyn_cast<DeclRefExpr>(ignoreConversions(E));
  if (!Ref || !Ref->getDecl()->getIdentifier())
    return std::nullopt;
  llvm::StringRef Name = Ref->getDecl()->getName();
  if (Name == "kCPU" || Name == "CPU")
    return false;
  if (Name == "kCUDA" || Name == "CUDA")
    return true;
  return std::nullopt;
}

/// What a condition's truth says of where the code runs: true when it holds
/// only on an accelerator (`d.is_cuda()`, `!d.is_cpu()`, `d.type() !=
/// kCPU`, `torch::cuda::is_available()`), false when only on the host.
std::optional<bool> acceleratorWhen(const Expr *E, unsigned Depth = 0) {
  if (!E || Depth > 4)
    return std::nullopt;
  E = E->IgnoreParenImpCasts();
  if (const auto *U = llvm::dyn_cast<UnaryOperator>(E);
      U && U->getOpcode() == UO_LNot) {
    std::optional<bool> V = acceleratorWhen(U->getSubExpr(), Depth + 1);
    return V ? std::optional(!*V) : std::nullopt;
  }
  if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E)) {
    const Expr *Recv = MC->getImplicitObjectArgument();
    const CXXMethodDecl *MD = MC->getMethodDecl();
    if (!Recv || !MD || !MD->getIdentifier() ||
        !(isDeviceType(Recv->getType()) || isTensorType(Recv->getType())))
      return std::nullopt;
    llvm::StringRef Name = MD->getName();
    if (Name == "is_cpu")
      return false;
    if (llvm::is_contained({"is_cuda", "is_mps", "is_xpu", "is_hip"}, Name))
      return true;
    return std::nullopt;
  }
  const Expr *L = nullptr, *R = nullptr;
  bool Equal = false;
  if (const auto *B = llvm::dyn_cast<BinaryOperator>(E);
      B && B->isEqualityOp()) {
    L = B->getLHS(), R = B->getRHS(), Equal = B->getOpcode() == BO_EQ;
  } else if (const auto *OC = llvm::dyn_cast<CXXOperatorCallExpr>(E);
             OC && OC->getNumArgs() == 2 &&
             (OC->getOperator() == OO_EqualEqual ||
              OC->getOperator() == OO_ExclaimEqual)) {
    L = OC->getArg(0), R = OC->getArg(1);
    Equal = OC->getOperator() == OO_EqualEqual;
  } else if (const auto *C = llvm::dyn_cast<CallExpr>(E)) {
    const FunctionDecl *FD = C->getDirectCallee();
    if (FD && FD->getQualifiedNameAsString() == "torch::cuda::is_available")
      return true;
    return std::nullopt;
  }
  if (!L)
    return std::nullopt;
  std::optional<bool> Constant = constantDeviceType(R);
  if (!Constant)
    Constant = constantDeviceType(L);
  if (!Constant)
    return std::nullopt;
  return Equal ? *Constant : !*Constant;
}

/// The innermost `if` on where the code runs whose accelerator branch holds
/// \p S, or null.
const IfStmt *acceleratorIf(const Stmt &S, ASTContext &Ctx) {
  DynTypedNode Cur = DynTypedNode::create(S);
  for (int Depth = 0; Depth < 64; ++Depth) {
    DynTypedNode P = parentOf(Cur, Ctx);
    if (P.getNodeKind().isNone() || P.get<FunctionDecl>() ||
        P.get<LambdaExpr>())
      return nullptr;
    if (const auto *If = P.get<IfStmt>()) {
      const Stmt *C = Cur.get<Stmt>();
      if (std::optional<bool> A = acceleratorWhen(If->getCond());
          A && C && C == (*A ? If->getThen() : If->getElse()))
        return If;
    }
    Cur = P;
  }
  return nullptr;
}

bool reads(const Expr *E, const VarDecl *VD, ASTContext &Ctx) {
  using namespace ast_matchers;
  auto Ref = declRefExpr(to(varDecl(equalsNode(VD))));
  return !match(expr(anyOf(Ref, hasDescendant(Ref))), *E, Ctx).empty();
}
} // namespace

bool TensorPlaces::hostByGuard(const VarDecl *VD, const Definition &Def,
                               llvm::ArrayRef<const Definition *> Live,
                               unsigned Depth) {
  const SourceManager &SM = Ctx.getSourceManager();
  auto Within = [&](const Stmt *Outer, const Stmt *Inner) {
    return Outer &&
           encloses(SM, Outer->getSourceRange(), Inner->getSourceRange());
  };
  for (const Definition *Other : Live) {
    const IfStmt *If = Other == &Def || !Other->Value
                           ? nullptr
                           : acceleratorIf(*Other->At, Ctx);
    if (!If)
      continue;
    const Stmt *HostBranch =
        Within(If->getThen(), Other->At) ? If->getElse() : If->getThen();
    // Before the `if`: the download must move that very value.
    bool Before = (!Def.At || (!Within(If, Def.At) &&
                               SM.isBeforeInTranslationUnit(
                                   Def.At->getEndLoc(), If->getBeginLoc()))) &&
                  reads(Other->Value, VD, Ctx);
    if ((Before || (Def.At && Within(HostBranch, Def.At))) &&
        tensorOf(Other->Value, Depth + 1) == Place::Host)
      return true;
  }
  return false;
}

} // namespace clang::tidy::devcopy
