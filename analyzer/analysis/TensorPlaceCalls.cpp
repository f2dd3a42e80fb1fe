// TensorPlaces for parameters: a tensor parameter holds what the calls of
// its function in the main file pass. A call is any way the source calls a
// function of its own: by name, a method, a constructor (`Net net(x.cpu())`,
// a temporary), a lambda or functor called as `f(x)`. A pointer parameter
// points at what the calls pass by address (`show(&host)`). Split from
// TensorPlace.cpp (tensors).
#include "TensorPlace.h"
#include "TensorPlaceDefinitions.h"
#include "TorchMatchers.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {
bool isTensorPointer(QualType T) {
  return T->isPointerType() && isTensorType(T->getPointeeType());
}
} // namespace

void TensorPlaces::indexCalls() {
  CallsIndexed = true;
  auto Sites = expr(
      anyOf(callExpr().bind("call"), cxxConstructExpr().bind("construct")));
  const SourceManager &SM = Ctx.getSourceManager();
  for (const Decl *D : Ctx.getTranslationUnitDecl()->decls()) {
    if (D->isImplicit() ||
        !SM.isInMainFile(SM.getExpansionLoc(D->getLocation())))
      continue;
    for (const BoundNodes &N : match(decl(forEachDescendant(Sites)), *D, Ctx)) {
      if (const auto *Call = N.getNodeAs<CallExpr>("call")) {
        const FunctionDecl *Callee = Call->getDirectCallee();
        if (!Callee)
          continue;
        // `f(x)` of a lambda or functor: argument 0 is the object.
        unsigned Skip = llvm::isa<CXXOperatorCallExpr>(Call) &&
                                llvm::isa<CXXMethodDecl>(Callee) &&
                                !llvm::cast<CXXMethodDecl>(Callee)->isStatic()
                            ? 1
                            : 0;
        Calls[Callee->getCanonicalDecl()].push_back({llvm::ArrayRef(
            Call->getArgs() + Skip, Call->getNumArgs() - Skip)});
      } else if (const auto *Ctor =
                     N.getNodeAs<CXXConstructExpr>("construct")) {
        Calls[Ctor->getConstructor()->getCanonicalDecl()].push_back(
            {llvm::ArrayRef(Ctor->getArgs(), Ctor->getNumArgs())});
      }
    }
  }
}

llvm::SmallVector<const Expr *, 4>
TensorPlaces::argumentsFor(const ParmVarDecl *P) {
  llvm::SmallVector<const Expr *, 4> Out;
  const auto *FD = llvm::dyn_cast_or_null<FunctionDecl>(P->getDeclContext());
  if (!FD)
    return Out;
  if (!CallsIndexed)
    indexCalls();
  auto It = Calls.find(FD->getCanonicalDecl());
  if (It == Calls.end())
    return Out;
  const unsigned Index = P->getFunctionScopeIndex();
  for (const CallSite &Site : It->second) {
    const Expr *Arg = Index < Site.Args.size() ? Site.Args[Index] : nullptr;
    Out.push_back(Arg && !llvm::isa<CXXDefaultArgExpr>(Arg) ? Arg : nullptr);
  }
  return Out;
}

Place TensorPlaces::ofParameter(const ParmVarDecl *P) {
  auto [It, New] = Params.try_emplace(P, Place::Unknown);
  if (!New)
    return It->second; // known, or in progress (a recursive call)
  const bool Pointer = isTensorPointer(P->getType());
  if (P->getType()->isPointerType() && !Pointer)
    return Place::Unknown;
  bool Any = false;
  for (const Expr *Arg : argumentsFor(P)) {
    // A pointer: where the tensor whose address is passed lives.
    const auto *Address =
        Pointer && Arg
            ? llvm::dyn_cast<UnaryOperator>(Arg->IgnoreParenImpCasts())
            : nullptr;
    if (Pointer && (!Address || Address->getOpcode() != UO_AddrOf))
      return Params[P] = Place::Unknown;
    if (!Arg ||
        tensorOf(Pointer ? Address->getSubExpr() : Arg, 0) != Place::Host)
      return Params[P] = Place::Unknown;
    Any = true;
  }
  return Params[P] = Any ? Place::Host : Place::Unknown;
}

bool isDefaultArgument(const ParmVarDecl *P, const Definition &D) {
  return D.At == P->getDefaultArg() || D.At == P->getUninstantiatedDefaultArg();
}

bool TensorPlaces::rebound(const ParmVarDecl *P) {
  const auto *FD = llvm::dyn_cast_or_null<FunctionDecl>(P->getDeclContext());
  return FD && FD->getBody() &&
         llvm::any_of(definitionsOf(P), [&](const Definition &D) {
           return !isDefaultArgument(P, D);
         });
}

Place TensorPlaces::parameterTensor(const ParmVarDecl *P) {
  // A parameter the function never rebinds holds what its callers pass.
  return rebound(P) ? Place::Unknown : ofParameter(P);
}

Place TensorPlaces::pointeeOf(const Expr *Pointer, unsigned Depth) {
  Pointer = Pointer->IgnoreParenImpCasts();
  if (const auto *U = llvm::dyn_cast<UnaryOperator>(Pointer);
      U && U->getOpcode() == UO_AddrOf)
    return tensorOf(U->getSubExpr(), Depth + 1);
  const auto *Ref = llvm::dyn_cast<DeclRefExpr>(Pointer);
  const auto *P = Ref ? llvm::dyn_cast<ParmVarDecl>(Ref->getDecl()) : nullptr;
  // Only a pointer to a const tensor: through any other, the function may
  // store another tensor where it points.
  if (!P || !isTensorPointer(P->getType()) ||
      !P->getType()->getPointeeType().isConstQualified())
    return Place::Unknown;
  return parameterTensor(P);
}

} // namespace clang::tidy::devcopy
