// TensorPlaces for conditions that never change: a local flag initialised to
// a constant and never assigned again is a constant, and the branch it rules
// out never runs (`bool cpu_only = true; ... if (!cpu_only) device = kCUDA;`
// leaves the device on the CPU). Split from TensorPlace.cpp (tensors).
#include "Parents.h"
#include "TensorPlace.h"
#include "TensorPlaceDefinitions.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

namespace clang::tidy::devcopy {

namespace {
/// `++flag`, `flag--`: changes the variable without a definition.
bool incremented(const VarDecl *VD, ASTContext &Ctx) {
  using namespace ast_matchers;
  const auto *FD =
      llvm::dyn_cast_or_null<FunctionDecl>(VD->getParentFunctionOrMethod());
  if (!FD || !FD->getBody())
    return true;
  auto Ref = ignoringParenImpCasts(declRefExpr(to(varDecl(equalsNode(VD)))));
  return !match(findAll(unaryOperator(hasAnyOperatorName("++", "--"),
                                      hasUnaryOperand(Ref))),
                *FD->getBody(), Ctx)
              .empty();
}
} // namespace

std::optional<bool> TensorPlaces::constantCondition(const Expr *Cond) {
  if (!Cond || Cond->isValueDependent())
    return std::nullopt;
  Cond = Cond->IgnoreParenImpCasts();
  bool Value = false;
  if (Cond->EvaluateAsBooleanCondition(Value, Ctx))
    return Value;
  if (const auto *U = llvm::dyn_cast<UnaryOperator>(Cond);
      U && U->getOpcode() == UO_LNot) {
    std::optional<bool> V = constantCondition(U->getSubExpr());
    return V ? std::optional(!*V) : std::nullopt;
  }
  if (const auto *B = llvm::dyn_cast<BinaryOperator>(Cond);
      B && B->isLogicalOp()) {
    std::optional<bool> L = constantCondition(B->getLHS());
    std::optional<bool> R = constantCondition(B->getRHS());
    bool And = B->getOpcode() == BO_LAnd;
    if (L && *L != And)
      return !And; // false && ..., true || ...
    if (L && R)
      return *R;
    if (R && *R != And)
      return !And;
    return std::nullopt;
  }
  const auto *Ref = llvm::dyn_cast<DeclRefExpr>(Cond);
  const auto *VD = Ref ? llvm::dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  if (!VD || !VD->hasLocalStorage() || llvm::isa<ParmVarDecl>(VD) ||
      VD->getType()->isReferenceType() || !VD->getInit() ||
      !VD->getType()->isScalarType())
    return std::nullopt;
  llvm::ArrayRef<Definition> Defs = definitionsOf(VD);
  if (Defs.size() != 1 || Defs[0].At != VD->getInit() || incremented(VD, Ctx) ||
      !VD->getInit()->EvaluateAsBooleanCondition(Value, Ctx))
    return std::nullopt;
  return Value;
}

bool TensorPlaces::inBranchNeverTaken(const Stmt &S) {
  DynTypedNode Cur = DynTypedNode::create(S);
  for (int Depth = 0; Depth < 256; ++Depth) {
    DynTypedNode P = parentOf(Cur, Ctx);
    if (P.getNodeKind().isNone() || P.get<FunctionDecl>())
      return false;
    if (const auto *If = P.get<IfStmt>()) {
      const Stmt *C = Cur.get<Stmt>();
      if (C && (C == If->getThen() || C == If->getElse()))
        if (std::optional<bool> V = constantCondition(If->getCond());
            V && C == (*V ? If->getElse() : If->getThen()))
          return true;
    }
    Cur = P;
  }
  return false;
}

} // namespace clang::tidy::devcopy
