#include "DiscardedValue.h"
#include "Parents.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"

namespace clang::tidy::devcopy {

namespace {
/// \p C in \p P is a statement whose value is dropped.
bool discardedIn(const Stmt &P, const Stmt *C, ASTContext &Ctx) {
  if (const auto *CS = dyn_cast<CompoundStmt>(&P)) {
    bool Shared = false;
    const auto *SE = parentOf(P, Ctx, &Shared).get<StmtExpr>();
    return !(SE && !Shared && CS->body_back() == C);
  }
  if (const auto *If = dyn_cast<IfStmt>(&P))
    return C == If->getThen() || C == If->getElse() || C == If->getInit();
  if (const auto *For = dyn_cast<ForStmt>(&P))
    return C == For->getBody() || C == For->getInit() || C == For->getInc();
  if (const auto *RF = dyn_cast<CXXForRangeStmt>(&P))
    return C == RF->getBody() || C == RF->getInit();
  if (const auto *W = dyn_cast<WhileStmt>(&P))
    return C == W->getBody();
  if (const auto *Do = dyn_cast<DoStmt>(&P))
    return C == Do->getBody();
  if (const auto *Sw = dyn_cast<SwitchStmt>(&P))
    return C == Sw->getBody() || C == Sw->getInit();
  if (const auto *SC = dyn_cast<SwitchCase>(&P))
    return C == SC->getSubStmt();
  if (const auto *L = dyn_cast<LabelStmt>(&P))
    return C == L->getSubStmt();
  return false;
}
} // namespace

bool isDiscardedValue(const Expr &E, ASTContext &Ctx) {
  const Stmt *Cur = &E;
  for (int Depth = 0; Depth < 64; ++Depth) {
    bool Shared = false;
    const Stmt *P = parentOf(*Cur, Ctx, &Shared).get<Stmt>();
    if (!P || Shared)
      return false;
    // What stands for the expression itself: `((x.cpu()));`, `[[likely]]`.
    if (isa<ParenExpr, ImplicitCastExpr, FullExpr, CXXBindTemporaryExpr,
            MaterializeTemporaryExpr, AttributedStmt>(P)) {
      Cur = P;
      continue;
    }
    return discardedIn(*P, Cur, Ctx);
  }
  return false;
}

} // namespace clang::tidy::devcopy
