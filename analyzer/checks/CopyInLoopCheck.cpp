#include "CopyInLoopCheck.h"
#include "TorchMatchers.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {
/// " of its 32.0 KiB" when the tensor is a local made by a factory of literal
/// sizes (see factoryBytes), else "".
std::string knownSize(const Expr *Recv, const ASTContext &Ctx) {
  const auto *Ref = llvm::dyn_cast_or_null<DeclRefExpr>(ignoreConversions(Recv));
  const auto *Var = Ref ? llvm::dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  const auto *Init = Var && Var->getInit()
                         ? llvm::dyn_cast<CallExpr>(ignoreConversions(Var->getInit()))
                         : nullptr;
  if (std::optional<uint64_t> Bytes = Init ? factoryBytes(*Init, Ctx) : std::nullopt)
    return " of its " + formatBytes(*Bytes);
  return "";
}
} // namespace

void CopyInLoopCheck::registerCheckMatchers(MatchFinder *Finder) {
  // Device and dtype conversions only: clone() and contiguous() are asked for
  // by name, and a loop often needs a fresh copy each time.
  Finder->addMatcher(
      expr(matchers::isInMainFileCode(),
           matchers::tensorMethodCall({"to", "cpu", "cuda", "toType", "type_as"}, "copy")),
      this);
}

bool CopyInLoopCheck::resultMutated(const Expr &Call, LoopInvariance &Inv, ASTContext &Ctx) {
  DynTypedNode Cur = DynTypedNode::create(Call);
  for (int Depth = 0; Depth < 6; ++Depth) {
    auto Parents = Ctx.getParents(Cur);
    if (Parents.empty())
      return false;
    if (const auto *VD = Parents[0].get<VarDecl>())
      return Inv.isMutatedInLoop(VD);
    const auto *E = Parents[0].get<Expr>();
    if (!E || !llvm::isa<ImplicitCastExpr, MaterializeTemporaryExpr, CXXBindTemporaryExpr,
                         ExprWithCleanups, CXXConstructExpr>(E))
      return false;
    Cur = Parents[0];
  }
  return false;
}

void CopyInLoopCheck::checkMatch(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CXXMemberCallExpr>("copy");
  const auto *Recv = Result.Nodes.getNodeAs<Expr>("copy.recv");
  if (!Call || !Recv)
    return;
  ASTContext &Ctx = *Result.Context;
  std::optional<EnclosingLoop> L = Loops.enclosingLoop(*Call, Ctx);
  if (!L)
    return;
  LoopInvariance &Inv = Loops.get(*L->Loop, Ctx);
  // The tensor must be a named local or parameter (members may be updated in
  // place by an optimizer step), and neither it nor the target may change.
  if (!LoopInvariance::namesLocal(Recv) || !Inv.isInvariant(Recv))
    return;
  for (const Expr *Arg : Call->arguments())
    if (!Inv.isInvariant(Arg))
      return;
  if (!Inv.runsEveryIteration(*L) || resultMutated(*Call, Inv, Ctx))
    return;

  CopyTarget T = describeCopy(*Call, Ctx);
  if (!T.changesDevice() && !T.changesDType() && !T.LikeOther)
    return; // to(options) with neither: returns self, copies nothing
  diag(Call->getExprLoc(),
       "'%0' is copied %1 on every iteration of this loop, yet neither it nor the "
       "target changes in the loop: every byte%2 is copied again each time; hoist the "
       "copy before the loop and reuse the result")
      << receiverName(Recv, Ctx) << describeDestination(T) << knownSize(Recv, Ctx);
  diag(L->Loop->getBeginLoc(), "loop starts here", DiagnosticIDs::Note);
}

} // namespace clang::tidy::devcopy
