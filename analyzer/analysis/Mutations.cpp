#include "Mutations.h"
#include "Parents.h"
#include "TorchMatchers.h"
#include "clang/AST/ExprCXX.h"

namespace clang::tidy::devcopy {

bool isInPlaceName(const NamedDecl *D) {
  return D && D->getIdentifier() && D->getName().size() > 1 &&
         D->getName().ends_with("_");
}

bool isDeviceValue(QualType T) {
  const auto *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  return RD && RD->getIdentifier() &&
         (RD->getName() == "Device" || RD->getName() == "TensorOptions");
}

bool changesDeviceValue(const DeclRefExpr &Ref, ASTContext &Ctx) {
  const Expr *P = parentExpr(&Ref, Ctx);
  while (P && llvm::isa<ImplicitCastExpr, ParenExpr>(P))
    P = parentExpr(P, Ctx);
  if (const auto *Op = llvm::dyn_cast_or_null<CXXOperatorCallExpr>(P))
    return Op->isAssignmentOp() && Op->getArg(0)->IgnoreParenImpCasts() == &Ref;
  if (const auto *ME = llvm::dyn_cast_or_null<MemberExpr>(P))
    if (const auto *MD = llvm::dyn_cast<CXXMethodDecl>(ME->getMemberDecl()))
      return !MD->isConst() && !MD->isStatic();
  return false;
}

bool changedInPlace(const Expr *Ref, ASTContext &Ctx) {
  const Expr *Cur = Ref;
  for (int Depth = 0; Cur && Depth < 16; ++Depth) {
    const Expr *P = parentExpr(Cur, Ctx);
    if (!P)
      return false;
    if (llvm::isa<ImplicitCastExpr, ParenExpr, MaterializeTemporaryExpr,
                  CXXBindTemporaryExpr>(P)) {
      Cur = P;
      continue;
    }
    if (const auto *ME = llvm::dyn_cast<MemberExpr>(P)) {
      const auto *Call =
          llvm::dyn_cast_or_null<CXXMemberCallExpr>(parentExpr(ME, Ctx));
      if (!Call || Call->getCallee() != ME)
        return false;
      if (isInPlaceName(ME->getMemberDecl()))
        return true;
      if (!isTensorType(Call->getType()))
        return false;
      Cur = Call;
      continue;
    }
    if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(P)) {
      if (Op->getNumArgs() == 0 ||
          Op->getArg(0)->IgnoreParenImpCasts() != Cur->IgnoreParenImpCasts())
        return false;
      if (Op->isAssignmentOp())
        return true;
      if (Op->getOperator() == OO_Subscript && isTensorType(Op->getType())) {
        Cur = Op;
        continue;
      }
    }
    return false;
  }
  return false;
}

} // namespace clang::tidy::devcopy
