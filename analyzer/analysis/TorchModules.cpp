#include "TorchModules.h"
#include "TorchMatchers.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/STLExtras.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

std::string objectPathName(llvm::ArrayRef<const ValueDecl *> Path) {
  std::string S;
  for (const ValueDecl *D : Path)
    S += (S.empty() ? "" : ".") + D->getNameAsString();
  return S;
}

bool objectPath(const Expr *E, llvm::SmallVectorImpl<const ValueDecl *> &Path,
                int Depth) {
  if (!E || Depth > 8)
    return false;
  E = E->IgnoreParenImpCasts();
  if (llvm::isa<CXXThisExpr>(E))
    return true;
  if (const auto *DRE = llvm::dyn_cast<DeclRefExpr>(E)) {
    const auto *VD = llvm::dyn_cast<VarDecl>(DRE->getDecl());
    if (!VD)
      return false;
    Path.push_back(VD->getCanonicalDecl());
    return true;
  }
  if (const auto *ME = llvm::dyn_cast<MemberExpr>(E)) {
    const auto *FD = llvm::dyn_cast<FieldDecl>(ME->getMemberDecl());
    if (!FD || !objectPath(ME->getBase(), Path, Depth + 1))
      return false;
    Path.push_back(FD->getCanonicalDecl());
    return true;
  }
  // Through ModuleHolder's and shared_ptr's operator-> / operator*, `*p`,
  // holder.get() and holder.ptr(): the same module.
  if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(E)) {
    if ((Op->getOperator() == OO_Arrow || Op->getOperator() == OO_Star) &&
        Op->getNumArgs() == 1)
      return objectPath(Op->getArg(0), Path, Depth + 1);
    return false;
  }
  if (const auto *UO = llvm::dyn_cast<UnaryOperator>(E))
    return UO->getOpcode() == UO_Deref &&
           objectPath(UO->getSubExpr(), Path, Depth + 1);
  if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E)) {
    const auto *MD = MC->getMethodDecl();
    if (MD && MD->getIdentifier() &&
        (MD->getName() == "get" || MD->getName() == "ptr"))
      return objectPath(MC->getImplicitObjectArgument(), Path, Depth + 1);
  }
  return false;
}

const CXXRecordDecl *moduleClassOf(QualType T, int Depth) {
  if (T.isNull() || Depth > 8)
    return nullptr;
  T = T.getNonReferenceType();
  if (const auto *PT = T->getAs<PointerType>())
    T = PT->getPointeeType();
  const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
  if (!RD)
    return nullptr;
  if (isModuleRecord(RD))
    return RD->getCanonicalDecl();
  if (const auto *Spec = llvm::dyn_cast<ClassTemplateSpecializationDecl>(RD)) {
    llvm::StringRef Name = Spec->getName();
    const TemplateArgumentList &Args = Spec->getTemplateArgs();
    if ((Name == "ModuleHolder" || Name == "shared_ptr") && Args.size() >= 1 &&
        Args[0].getKind() == TemplateArgument::Type)
      return moduleClassOf(Args[0].getAsType(), Depth + 1);
  }
  if (const CXXRecordDecl *Def = RD->getDefinition())
    for (const CXXBaseSpecifier &B : Def->bases())
      if (const CXXRecordDecl *M = moduleClassOf(B.getType(), Depth + 1))
        return M;
  return nullptr;
}

// How a submodule gets registered, written so that no parent map is needed
// (headers outside the traversal scope have none): `f = register_module(...)`,
// `: f(register_module(...))`, and `register_module("f", f)`.
static auto registerCall() {
  return callExpr(callee(functionDecl(hasName("register_module"))));
}
static auto thisMember() {
  return memberExpr(hasObjectExpression(ignoringParenImpCasts(cxxThisExpr())),
                    member(fieldDecl().bind("registered")));
}
StatementMatcher assignedRegistration() {
  return cxxOperatorCallExpr(
      isAssignmentOperator(),
      hasArgument(0, ignoringParenImpCasts(thisMember())),
      hasArgument(1, hasDescendant(registerCall())));
}
DeclarationMatcher initializedRegistration() {
  return cxxConstructorDecl(forEachConstructorInitializer(
      cxxCtorInitializer(forField(fieldDecl().bind("registered")),
                         withInitializer(hasDescendant(registerCall())))));
}
StatementMatcher passedRegistration() {
  auto Member = ignoringImplicit(thisMember());
  return callExpr(registerCall(),
                  hasAnyArgument(ignoringImplicit(anyOf(
                      Member, cxxConstructExpr(hasArgument(0, Member))))));
}
DeclarationMatcher registeredLocal() {
  auto Local = declRefExpr(to(varDecl(hasLocalStorage()).bind("regvar")));
  auto Call = callExpr(
      registerCall(),
      hasArgument(
          1, ignoringImplicit(anyOf(Local, cxxConstructExpr(hasArgument(
                                               0, ignoringImplicit(Local)))))));
  auto Field =
      memberExpr(hasObjectExpression(ignoringParenImpCasts(cxxThisExpr())),
                 member(fieldDecl().bind("regfield")));
  return cxxConstructorDecl(
             isDefinition(),
             forEachDescendant(
                 stmt(anyOf(cxxOperatorCallExpr(
                                isAssignmentOperator(),
                                hasArgument(0, ignoringParenImpCasts(Field)),
                                hasArgument(1, hasDescendant(Call))),
                            Call))))
      .bind("regctor");
}

} // namespace clang::tidy::devcopy
