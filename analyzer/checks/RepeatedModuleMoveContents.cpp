// devcopy-repeated-module-move: what a module-valued expression holds.
//
// A module moved in its constructor reaches its owner in many ways besides a
// registered member of its own class: pushed into a Sequential or ModuleList
// (`seq->push_back(block)`), passed to `Sequential(...)` or
// `register_module("x", X(...))`, returned by a builder function
// (`gen = make_generator()`), or handed to a function taking a
// `torch::nn::Module&`. movedInside follows those stores, within this
// translation unit, to a constructor's move. The rest of the check is
// RepeatedModuleMoveCheck.cpp.
#include "RepeatedModuleMoveCheck.h"
#include "analysis/TorchModules.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {
/// The variable, parameter or member \p E names, through `->`, `*` and
/// `.get()`.
const ValueDecl *storage(const Expr *E) {
  for (int Depth = 0; E && Depth < 8; ++Depth) {
    E = E->IgnoreImplicit()->IgnoreParens();
    if (const auto *DRE = llvm::dyn_cast<DeclRefExpr>(E))
      return llvm::dyn_cast<VarDecl>(DRE->getDecl());
    if (const auto *ME = llvm::dyn_cast<MemberExpr>(E))
      return llvm::dyn_cast<FieldDecl>(ME->getMemberDecl());
    if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(E)) {
      if ((Op->getOperator() != OO_Arrow && Op->getOperator() != OO_Star) ||
          Op->getNumArgs() != 1)
        return nullptr;
      E = Op->getArg(0);
      continue;
    }
    if (const auto *UO = llvm::dyn_cast<UnaryOperator>(E);
        UO && UO->getOpcode() == UO_Deref) {
      E = UO->getSubExpr();
      continue;
    }
    if (const auto *MC = llvm::dyn_cast<CXXMemberCallExpr>(E)) {
      const CXXMethodDecl *MD = MC->getMethodDecl();
      if (MD && MD->getIdentifier() &&
          (MD->getName() == "get" || MD->getName() == "ptr")) {
        E = MC->getImplicitObjectArgument();
        continue;
      }
    }
    return nullptr;
  }
  return nullptr;
}

/// The bodies where \p D gets its contents: the function of a local, every
/// method and constructor of a member's class.
void scopesOf(const ValueDecl *D, llvm::SmallVectorImpl<const Stmt *> &Out) {
  if (const auto *FD = llvm::dyn_cast<FieldDecl>(D)) {
    const auto *RD = llvm::dyn_cast<CXXRecordDecl>(FD->getParent());
    if (!RD || !RD->hasDefinition())
      return;
    for (const CXXMethodDecl *MD : RD->getDefinition()->methods()) {
      const FunctionDecl *Def = nullptr;
      if (MD->hasBody(Def) && Def->getBody())
        Out.push_back(Def->getBody());
      if (const auto *Ctor = llvm::dyn_cast_or_null<CXXConstructorDecl>(Def))
        for (const CXXCtorInitializer *Init : Ctor->inits())
          if (Init->getMember() == FD && Init->getInit())
            Out.push_back(Init->getInit());
    }
    return;
  }
  if (const auto *VD = llvm::dyn_cast<VarDecl>(D); VD && VD->hasLocalStorage())
    if (const auto *Fn = llvm::dyn_cast<FunctionDecl>(VD->getDeclContext()))
      if (Fn->getBody())
        Out.push_back(Fn->getBody());
}
} // namespace

const RepeatedModuleMoveCheck::Move *RepeatedModuleMoveCheck::movedInside(
    const Expr *E, unsigned Depth, llvm::SmallPtrSetImpl<const void *> &Seen) {
  if (!E || Depth > 8)
    return nullptr;
  E = E->IgnoreImplicit()->IgnoreParens();
  // Its own class, moved in its constructor or through a registered member.
  if (const CXXRecordDecl *C = moduleClassOf(E->getType());
      C && Seen.insert(C).second) {
    // `this->to(d)` in a method: its own constructor's move is no evidence
    // that both run (the method may choose another device); its parts' are.
    const bool Own = Depth == 0 && llvm::isa<CXXThisExpr>(E);
    if (const Move *M = Own ? nullptr : ConstructorMoves.lookup(C))
      return M;
    llvm::SmallVector<const FieldDecl *, 2> Via;
    llvm::SmallPtrSet<const CXXRecordDecl *, 8> Classes;
    if (const Move *M = findConstructorMove(C, Via, Classes))
      return M;
    // What its registered members hold (a ModuleList filled later), and what
    // its constructors register without keeping a member of that class.
    const CXXRecordDecl *Def = C->getDefinition();
    if (Def && !inLibrary(Def))
      for (const FieldDecl *FD : Def->fields())
        if (Registered.contains(FD->getCanonicalDecl()))
          if (const Move *M = storedIn(*FD, Depth + 1, Seen))
            return M;
    if (Def && !inLibrary(Def))
      for (const CXXConstructorDecl *Ctor : Def->ctors()) {
        const FunctionDecl *Body = nullptr;
        if (!Ctor->hasBody(Body) || !Body->getBody())
          continue;
        for (const BoundNodes &N :
             match(findAll(callExpr(
                               callee(functionDecl(hasName("register_module"))),
                               argumentCountIs(2))
                               .bind("reg")),
                   *Body->getBody(), *Ctx))
          if (const Move *M = movedInside(
                  N.getNodeAs<CallExpr>("reg")->getArg(1), Depth + 1, Seen))
            return M;
      }
  }
  // Built from parts: Sequential(a, b), make_shared<X>(...), a holder of an
  // impl.
  if (const auto *CE = llvm::dyn_cast<CXXConstructExpr>(E)) {
    for (const Expr *A : CE->arguments())
      if (const Move *M = movedInside(A, Depth + 1, Seen))
        return M;
    return nullptr;
  }
  if (const auto *Call = llvm::dyn_cast<CallExpr>(E); Call && !storage(E)) {
    const FunctionDecl *F = Call->getDirectCallee();
    if (!F)
      return nullptr;
    if (inLibrary(F) ||
        (F->getIdentifier() && F->getName() == "register_module")) {
      for (const Expr *A : Call->arguments())
        if (const Move *M = movedInside(A, Depth + 1, Seen))
          return M;
      return nullptr;
    }
    // A builder of this unit: what it returns.
    const FunctionDecl *Def = nullptr;
    if (!F->hasBody(Def) || !Def->getBody() || !Seen.insert(Def).second)
      return nullptr;
    for (const BoundNodes &N :
         match(findAll(returnStmt().bind("ret")), *Def->getBody(), *Ctx))
      if (const Move *M = movedInside(
              N.getNodeAs<ReturnStmt>("ret")->getRetValue(), Depth + 1, Seen))
        return M;
    return nullptr;
  }
  // A variable or member: what was stored in it.
  const ValueDecl *D = storage(E);
  return D ? storedIn(*D, Depth, Seen) : nullptr;
}

const RepeatedModuleMoveCheck::Move *
RepeatedModuleMoveCheck::storedIn(const ValueDecl &Decl, unsigned Depth,
                                  llvm::SmallPtrSetImpl<const void *> &Seen) {
  const ValueDecl *D = &Decl;
  if (!Seen.insert(D).second)
    return nullptr;
  if (const auto *VD = llvm::dyn_cast<VarDecl>(D); VD && VD->getInit())
    if (const Move *M = movedInside(VD->getInit(), Depth + 1, Seen))
      return M;
  if (const auto *P = llvm::dyn_cast<ParmVarDecl>(D))
    return passedTo(*P, Depth, Seen);
  llvm::SmallVector<const Stmt *, 4> Scopes;
  scopesOf(D, Scopes);
  auto Named = expr(
      ignoringParenImpCasts(anyOf(declRefExpr(to(valueDecl(equalsNode(D)))),
                                  memberExpr(member(equalsNode(D))))));
  auto Holder = expr(anyOf(Named, cxxOperatorCallExpr(hasArgument(0, Named))));
  auto Stores = expr(
      anyOf(cxxOperatorCallExpr(isAssignmentOperator(), hasArgument(0, Named),
                                hasArgument(1, expr().bind("stored"))),
            binaryOperator(isAssignmentOperator(), hasLHS(Named),
                           hasRHS(expr().bind("stored"))),
            cxxMemberCallExpr(on(Holder), callee(cxxMethodDecl(hasAnyName(
                                              "push_back", "extend", "insert",
                                              "emplace_back", "append"))))
                .bind("add")));
  for (const Stmt *S : Scopes) {
    if (const auto *Init = llvm::dyn_cast<Expr>(S))
      if (const Move *M = movedInside(Init, Depth + 1, Seen))
        return M;
    for (const BoundNodes &N : match(findAll(Stores), *S, *Ctx)) {
      if (const auto *Add = N.getNodeAs<CXXMemberCallExpr>("add")) {
        for (const Expr *A : Add->arguments())
          if (const Move *M = movedInside(A, Depth + 1, Seen))
            return M;
      } else if (const Move *M = movedInside(N.getNodeAs<Expr>("stored"),
                                             Depth + 1, Seen)) {
        return M;
      }
    }
  }
  return nullptr;
}

const RepeatedModuleMoveCheck::Move *
RepeatedModuleMoveCheck::passedTo(const ParmVarDecl &P, unsigned Depth,
                                  llvm::SmallPtrSetImpl<const void *> &Seen) {
  const auto *Fn = llvm::dyn_cast<FunctionDecl>(P.getDeclContext());
  if (!Fn || !Fn->getIdentifier())
    return nullptr;
  const unsigned Index = P.getFunctionScopeIndex();
  // Call sites in the main file (LibTorch's headers are never searched).
  const SourceManager &SM = Ctx->getSourceManager();
  auto Calls =
      callExpr(callee(functionDecl(hasName(Fn->getName())))).bind("call");
  for (Decl *D : Ctx->getTranslationUnitDecl()->decls()) {
    if (!SM.isInMainFile(SM.getExpansionLoc(D->getLocation())))
      continue;
    for (const BoundNodes &N :
         match(decl(forEachDescendant(Calls)), *D, *Ctx)) {
      const auto *Call = N.getNodeAs<CallExpr>("call");
      const FunctionDecl *Callee = Call->getDirectCallee();
      if (!Callee || Callee->getCanonicalDecl() != Fn->getCanonicalDecl())
        continue;
      const unsigned Shift = llvm::isa<CXXOperatorCallExpr>(Call) ? 1 : 0;
      if (Index + Shift < Call->getNumArgs())
        if (const Move *M =
                movedInside(Call->getArg(Index + Shift), Depth + 1, Seen))
          return M;
    }
  }
  return nullptr;
}

} // namespace clang::tidy::devcopy
