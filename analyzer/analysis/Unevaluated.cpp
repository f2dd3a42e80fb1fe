#include "Unevaluated.h"
#include "Parents.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ExprConcepts.h"

namespace clang::tidy::devcopy {

namespace {
/// \p Child, a child of \p P, is never evaluated.
bool unevaluatedIn(const DynTypedNode &P, const DynTypedNode &Child,
                   ASTContext &Ctx) {
  // The expressions of a type are decltype/typeof operands or constants.
  if (P.get<TypeLoc>() || P.get<StaticAssertDecl>())
    return true;
  const Stmt *S = P.get<Stmt>();
  if (!S)
    return false;
  if (isa<UnaryExprOrTypeTraitExpr, CXXNoexceptExpr, RequiresExpr,
          ConceptSpecializationExpr>(S))
    return true;
  if (const auto *Typeid = dyn_cast<CXXTypeidExpr>(S))
    return !Typeid->isPotentiallyEvaluated();
  if (const auto *If = dyn_cast<IfStmt>(S); If && If->isConstexpr()) {
    const Stmt *C = Child.get<Stmt>();
    std::optional<const Stmt *> Taken = If->getNondiscardedCase(Ctx);
    return Taken && C && C != *Taken &&
           (C == If->getThen() || C == If->getElse());
  }
  return false;
}
} // namespace

bool isUnevaluated(const DynTypedNode &Node, ASTContext &Ctx) {
  DynTypedNode Cur = Node;
  for (int Depth = 0; Depth < 512; ++Depth) {
    DynTypedNode P = parentOf(Cur, Ctx);
    if (P.getNodeKind().isNone())
      return false;
    if (unevaluatedIn(P, Cur, Ctx))
      return true;
    // A function's body ends the walk (a lambda's goes on to its context).
    if (const auto *FD = P.get<FunctionDecl>()) {
      const auto *MD = dyn_cast<CXXMethodDecl>(FD);
      if (!MD || !MD->getParent()->isLambda())
        return false;
    }
    Cur = P;
  }
  return false;
}

} // namespace clang::tidy::devcopy
