// Which iterations of a loop run a statement under a branch: the guard
// rules of LoopInvariance::runsOnTypicalIteration (see LoopFacts.h).
#include "LoopFacts.h"
#include "Parents.h"
#include "TorchMatchers.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/StmtCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::devcopy {

namespace {
/// \p Branch leaves the loop whenever it runs: it is, or its block holds as
/// a statement of its own, a break, return, throw or goto.
bool leavesLoop(const Stmt *Branch) {
  auto Leaves = [](const Stmt *S) {
    if (const auto *E = llvm::dyn_cast_or_null<ExprWithCleanups>(S))
      S = E->getSubExpr();
    return llvm::isa_and_nonnull<BreakStmt, ReturnStmt, CXXThrowExpr, GotoStmt>(
        S);
  };
  if (const auto *CS = llvm::dyn_cast_or_null<CompoundStmt>(Branch))
    return llvm::any_of(CS->body(), Leaves);
  return Leaves(Branch);
}
} // namespace

bool LoopInvariance::isDataFilter(const Expr *G) {
  bool NamesData = false;
  return G && testsIterationData(G, 0, NamesData) && NamesData;
}

bool LoopInvariance::testsIterationData(const Expr *E, unsigned Depth,
                                        bool &NamesData) {
  using namespace ast_matchers;
  if (Depth > 4)
    return false;
  auto State =
      stmt(anyOf(binaryOperator(hasAnyOperatorName("%", "%=")),
                 cxxOperatorCallExpr(hasAnyOverloadedOperatorName("%", "%=")),
                 cxxThisExpr(), memberExpr(member(fieldDecl()))));
  if (!match(findAll(State), *E, Ctx).empty())
    return false;
  for (const auto &M :
       match(findAll(declRefExpr(to(varDecl())).bind("r")), *E, Ctx)) {
    const auto *VD =
        llvm::cast<VarDecl>(M.getNodeAs<DeclRefExpr>("r")->getDecl());
    if (isInvariant(VD))
      continue;
    // Made afresh on each iteration (in the body, a range-for's element), or
    // carried from one iteration to the next (a counter, a flag, a for
    // loop's own index): only the first is this iteration's data, and only
    // when it is not computed from what the loop carries
    // (`bool last = i + 1 == n`).
    // A constant (`torch::indexing::Ellipsis`, `torch::kFloat32`) says
    // nothing either way; other globals are state the loop may carry.
    if (!VD->hasLocalStorage()) {
      if (VD->getType().isConstQualified() || VD->isConstexpr() ||
          inLibrary(VD))
        continue;
      return false;
    }
    if (!declaredPerIteration(VD)) {
      // A counter that only picks this iteration's element of data that does
      // not change (`if (!done[i])`) tests that element, not the count.
      if (!indexesInvariant(M.getNodeAs<DeclRefExpr>("r")))
        return false;
      NamesData = true;
      continue;
    }
    const auto *Range = llvm::dyn_cast<CXXForRangeStmt>(&Loop);
    bool Element = Range && Range->getLoopVariable() == VD;
    if (const Expr *Init = VD->getInit();
        Init && !Element && !testsIterationData(Init, Depth + 1, NamesData))
      return false;
    NamesData = true;
  }
  return true;
}

bool LoopInvariance::indexesInvariant(const DeclRefExpr *Ref) {
  const Expr *Cur = Ref;
  for (const Expr *P = parentExpr(Cur, Ctx); P; P = parentExpr(Cur, Ctx)) {
    // Through conversions and braced lists: `t.index({Ellipsis, i})`.
    if (llvm::isa<ImplicitCastExpr, ParenExpr, MaterializeTemporaryExpr,
                  CXXBindTemporaryExpr, InitListExpr,
                  CXXStdInitializerListExpr>(P) ||
        (llvm::isa<CXXConstructExpr>(P) &&
         llvm::cast<CXXConstructExpr>(P)->getNumArgs() == 1)) {
      Cur = P;
      continue;
    }
    // t.index({..., i}), t.select(0, i), t.narrow(0, i, 1): an element of t.
    if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(P)) {
      const CXXMethodDecl *MD = MC->getMethodDecl();
      const Expr *Obj = MC->getImplicitObjectArgument();
      return MD && MD->getIdentifier() && Obj && Obj != Cur &&
             isTensorType(Obj->getType()) &&
             llvm::is_contained({"index", "select", "narrow"}, MD->getName()) &&
             isInvariant(Obj);
    }
    if (const auto *AS = llvm::dyn_cast<ArraySubscriptExpr>(P))
      return AS->getIdx() == Cur && isInvariant(AS->getBase());
    if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(P))
      return Op->getOperator() == OO_Subscript && Op->getNumArgs() == 2 &&
             Op->getArg(1) == Cur && isInvariant(Op->getArg(0));
    return false;
  }
  return false;
}

bool LoopInvariance::declaredPerIteration(const VarDecl *VD) {
  const SourceManager &SM = Ctx.getSourceManager();
  auto Within = [&](const Stmt *S) {
    return S && encloses(SM, S->getSourceRange(), VD->getLocation());
  };
  if (const auto *F = llvm::dyn_cast<ForStmt>(&Loop))
    return Within(F->getBody());
  if (const auto *R = llvm::dyn_cast<CXXForRangeStmt>(&Loop))
    return Within(R->getBody()) || Within(R->getLoopVarStmt());
  if (const auto *W = llvm::dyn_cast<WhileStmt>(&Loop))
    return Within(W->getBody());
  if (const auto *D = llvm::dyn_cast<DoStmt>(&Loop))
    return Within(D->getBody());
  return false;
}

bool LoopInvariance::runsOnTypicalIteration(const EnclosingLoop &L) {
  for (size_t I = 0; I < L.Guards.size(); ++I) {
    const Expr *G = L.Guards[I];
    const Stmt *Branch = I < L.Branches.size() ? L.Branches[I] : nullptr;
    if (Branch && leavesLoop(Branch))
      return false;
    if (!G ||
        !(isInvariant(G) || isDataFilter(G) || takesCommonSide(G, Branch)))
      return false;
  }
  return true;
}

bool LoopInvariance::staysInLoop(const EnclosingLoop &L) {
  return llvm::none_of(L.Branches, leavesLoop);
}

bool LoopInvariance::takesCommonSide(const Expr *G, const Stmt *Branch) {
  // An equality holds on few iterations (`step % N == 0`, `i == 0`,
  // `out.size(0) == 0`): its else branch, or the then branch of the
  // inequality, runs on the others.
  if (!Branch)
    return false;
  const auto *If = parentOf(*Branch, Ctx).get<IfStmt>();
  if (!If || If->getCond() != G)
    return false;
  bool Else = If->getElse() == Branch;
  G = G->IgnoreParenImpCasts();
  BinaryOperatorKind Op = BO_Comma;
  if (const auto *BO = llvm::dyn_cast<BinaryOperator>(G))
    Op = BO->getOpcode();
  else if (const auto *CO = llvm::dyn_cast<CXXOperatorCallExpr>(G))
    Op = CO->getOperator() == OO_EqualEqual     ? BO_EQ
         : CO->getOperator() == OO_ExclaimEqual ? BO_NE
                                                : BO_Comma;
  return (Op == BO_EQ && Else) || (Op == BO_NE && !Else);
}

} // namespace clang::tidy::devcopy
