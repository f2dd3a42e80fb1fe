#include "SyncElements.h"
#include "TorchMatchers.h"
#include "clang/AST/ExprCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/STLExtras.h"

namespace clang::tidy::devcopy {

/// \p E is a tensor copied to the host in its own chain: `x.cpu()`,
/// `x.to(kCPU).data()`, `x.detach().cpu()`.
bool copiedToHost(const Expr *E, const ASTContext &Ctx) {
  for (int Depth = 0; E && Depth < 16; ++Depth) {
    const auto *Call = llvm::dyn_cast<CXXMemberCallExpr>(ignoreConversions(E));
    if (!Call || !Call->getMethodDecl() || !isTensorType(Call->getType()))
      return false;
    llvm::StringRef Name = Call->getMethodDecl()->getName();
    if (Name == "cpu" ||
        (Name == "to" && describeCopy(*Call, Ctx).Device == DeviceKind::CPU))
      return true;
    E = Call->getImplicitObjectArgument();
  }
  return false;
}

/// The tensor \p E picks elements of (`b` for `b[0][1]`), else \p E itself.
const Expr *subscriptBase(const Expr *E) {
  E = ignoreConversions(E);
  for (int Depth = 0; E && Depth < 16; ++Depth) {
    if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(E)) {
      if (Op->getOperator() != OO_Subscript ||
          !isTensorType(Op->getArg(0)->getType()))
        break;
      E = ignoreConversions(Op->getArg(0));
      continue;
    }
    const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E);
    const Expr *Obj = MC ? MC->getImplicitObjectArgument() : nullptr;
    if (!Obj || !isTensorType(Obj->getType()) ||
        !MC->getMethodDecl()->getIdentifier() ||
        !llvm::is_contained({"index", "select"},
                            MC->getMethodDecl()->getName()))
      break;
    E = ignoreConversions(Obj);
  }
  return E;
}

namespace {

/// \p E picks part of a tensor: `t[i]`, `t.index({b, i})`, `t.select(0, i)`.
/// Returns the tensor picked from and sets \p Varies when the pick changes
/// in the loop; null otherwise.
const Expr *pickedFrom(const Expr *E, LoopInvariance &Inv, bool &Varies) {
  if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(E)) {
    if (Op->getOperator() != OO_Subscript ||
        !isTensorType(Op->getArg(0)->getType()))
      return nullptr;
    Varies |= !Inv.isInvariant(Op->getArg(1));
    return ignoreConversions(Op->getArg(0));
  }
  const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E);
  const Expr *Obj = MC ? MC->getImplicitObjectArgument() : nullptr;
  if (!Obj || !isTensorType(Obj->getType()) ||
      !MC->getMethodDecl()->getIdentifier() ||
      !llvm::is_contained({"index", "select"}, MC->getMethodDecl()->getName()))
    return nullptr;
  for (const Expr *A : MC->arguments())
    Varies |= !Inv.isInvariant(A);
  return ignoreConversions(Obj);
}

/// \p E computes a tensor on the device from one operand (`torch::argmax(
/// p[r])`, `b[i].sum()`, `x.flatten()`) with arguments that do not change in
/// the loop: that operand, else null.
const Expr *pureOperand(const Expr *E, LoopInvariance &Inv) {
  const auto *Call = llvm::dyn_cast<CallExpr>(E);
  if (!Call || !isTensorType(Call->getType()) ||
      llvm::isa<CXXOperatorCallExpr>(Call))
    return nullptr;
  const Expr *Operand = nullptr;
  llvm::ArrayRef<const Expr *> Rest;
  if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(Call)) {
    Operand = MC->getImplicitObjectArgument();
    Rest = llvm::ArrayRef(MC->getArgs(), MC->getNumArgs());
    llvm::StringRef Name = MC->getMethodDecl()->getIdentifier()
                               ? MC->getMethodDecl()->getName()
                               : "";
    // A cast stays where it is (`gis[i].to(torch::kLong)`); a move does not.
    if (Name == "index" || Name == "select" || Name == "cpu" ||
        (Name == "to" &&
         (describeCopy(*MC, MC->getMethodDecl()->getASTContext()).Device !=
              DeviceKind::None ||
          describeCopy(*MC, MC->getMethodDecl()->getASTContext()).LikeOther)))
      return nullptr;
  } else if (isTorchFunction(Call->getDirectCallee()) &&
             Call->getNumArgs() > 0) {
    Operand = Call->getArg(0);
    Rest = llvm::ArrayRef(Call->getArgs() + 1, Call->getNumArgs() - 1);
  }
  if (!Operand || !isTensorType(Operand->getType()) ||
      !llvm::all_of(Rest, [&](const Expr *A) { return Inv.isInvariant(A); }))
    return nullptr;
  return ignoreConversions(Operand);
}

} // namespace

const Expr *elementOfInvariant(const Expr *Recv, LoopInvariance &Inv,
                               bool &WholeInvariant) {
  const Expr *E = ignoreConversions(Recv);
  bool Computed = false;
  for (int Depth = 0; Depth < 8; ++Depth) {
    const Expr *Operand = pureOperand(E, Inv);
    if (!Operand)
      break;
    E = Operand;
    Computed = true;
  }
  bool Varies = false, Picked = false;
  for (int Depth = 0; Depth < 8; ++Depth) {
    const Expr *From = pickedFrom(E, Inv, Varies);
    if (!From)
      break;
    E = From;
    Picked = true;
  }
  // Nothing picked per iteration: only a value computed afresh from a tensor
  // that does not change (`torch::multinomial(p, 1)`, `w.sum()`) counts.
  WholeInvariant = !Varies;
  if (!(Picked ? Varies : Computed) || !LoopInvariance::namesLocal(E) ||
      !Inv.isInvariant(E))
    return nullptr;
  // A tensor copied to the host before the loop is read without a sync.
  if (const auto *Ref = llvm::dyn_cast<DeclRefExpr>(E))
    if (const auto *VD = llvm::dyn_cast<VarDecl>(Ref->getDecl());
        VD && VD->getInit() && copiedToHost(VD->getInit(), VD->getASTContext()))
      return nullptr;
  return E;
}

} // namespace clang::tidy::devcopy

namespace clang::tidy::devcopy {

const ParmVarDecl *rootParameter(const Expr *E) {
  for (int Depth = 0; E && Depth < 12; ++Depth) {
    E = ignoreConversions(E);
    if (const auto *Ref = llvm::dyn_cast<DeclRefExpr>(E)) {
      if (const auto *P = llvm::dyn_cast<ParmVarDecl>(Ref->getDecl()))
        return P;
      const auto *VD = llvm::dyn_cast<VarDecl>(Ref->getDecl());
      if (!VD || !VD->hasLocalStorage() || !VD->getInit())
        return nullptr;
      E = VD->getInit();
    } else if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E)) {
      const Expr *Obj = MC->getImplicitObjectArgument();
      if (!Obj || !isTensorType(Obj->getType()) || !isTensorType(MC->getType()))
        return nullptr;
      E = Obj;
    } else if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(E)) {
      if (Op->getOperator() != OO_Subscript ||
          !isTensorType(Op->getArg(0)->getType()))
        return nullptr;
      E = Op->getArg(0);
    } else {
      return nullptr;
    }
  }
  return nullptr;
}

} // namespace clang::tidy::devcopy
