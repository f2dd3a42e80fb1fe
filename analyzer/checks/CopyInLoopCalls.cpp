// devcopy-copy-in-loop through calls: a helper of this translation unit that
// copies one of its parameters (`anchors.to(device)`) on every call, called
// from a loop with the same tensor and target on every iteration. Reported
// at the call in the loop, with a note at the copy. The
// rest of the check is CopyInLoopCheck.cpp.
#include "CopyInLoopCheck.h"
#include "analysis/FunctionFlow.h"
#include "analysis/Mutations.h"
#include "analysis/Parents.h"
#include "analysis/TorchMatchers.h"
#include "analysis/Unevaluated.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/StringSwitch.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {

/// The parameters of \p Fn that \p E reads; false when it reads anything else
/// that may change between calls (a local, a global, a call).
bool readsOnlyParams(const Expr *E, const FunctionDecl &Fn,
                     llvm::SmallVectorImpl<const ParmVarDecl *> &Params,
                     ASTContext &Ctx) {
  if (!match(expr(hasDescendant(callExpr(unless(cxxMemberCallExpr()),
                                         unless(cxxOperatorCallExpr())))),
             *E, Ctx)
           .empty())
    return false;
  for (const BoundNodes &N : match(
           expr(anyOf(declRefExpr(to(varDecl().bind("v"))),
                      forEachDescendant(declRefExpr(to(varDecl().bind("v")))))),
           *E, Ctx)) {
    const auto *V = N.getNodeAs<VarDecl>("v");
    if (const auto *P = llvm::dyn_cast<ParmVarDecl>(V);
        P && P->getDeclContext() == &Fn) {
      Params.push_back(P);
      continue;
    }
    if (V->hasLocalStorage() ||
        !(V->getType().isConstQualified() || V->isConstexpr()))
      return false;
  }
  return true;
}
/// One spelling per dtype: "Float" for kFloat32, torch::kFloat,
/// at::ScalarType::Float.
std::string canonicalDType(llvm::StringRef DType) {
  DType = DType.rsplit(':').second.empty() ? DType : DType.rsplit(':').second;
  DType.consume_front("k");
  return llvm::StringSwitch<llvm::StringRef>(DType)
      .Case("Float32", "Float")
      .Case("Float64", "Double")
      .Case("Float16", "Half")
      .Case("Int64", "Long")
      .Case("Int32", "Int")
      .Case("UInt8", "Byte")
      .Default(DType)
      .str();
}

/// \p Arg is a local tensor made by a factory with dtype \p DType (the
/// options', else float) and never rebound: converting it to \p DType
/// returns it as it is, copying nothing. In-place ops and element writes
/// keep its dtype.
bool alreadyOfDType(const Expr *Arg, llvm::StringRef DType, ASTContext &Ctx) {
  const auto *Ref = llvm::dyn_cast<DeclRefExpr>(ignoreConversions(Arg));
  const auto *VD = Ref ? llvm::dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  const auto *FD =
      VD ? llvm::dyn_cast_or_null<FunctionDecl>(VD->getParentFunctionOrMethod())
         : nullptr;
  const auto *Init =
      VD && VD->hasLocalStorage() && !VD->getType()->isReferenceType()
          ? llvm::dyn_cast_or_null<CallExpr>(ignoreConversions(VD->getInit()))
          : nullptr;
  const FunctionDecl *Factory = Init ? Init->getDirectCallee() : nullptr;
  if (!FD || !FD->getBody() || !isTensorFactory(Factory) ||
      !Factory->getIdentifier() ||
      !llvm::is_contained({"zeros", "ones", "empty", "rand", "randn"},
                          Factory->getName()))
    return false;
  std::string Made = "Float";
  for (const Expr *A : Init->arguments())
    if (!llvm::isa<CXXDefaultArgExpr>(A) && isTensorOptionsType(A->getType()))
      if (CopyTarget O = describeOptions(A, Ctx); O.changesDType())
        Made = canonicalDType(O.DTypeText);
  if (Made != canonicalDType(DType))
    return false;
  auto Var = ignoringParenImpCasts(declRefExpr(to(varDecl(equalsNode(VD)))));
  auto Rebinds = expr(anyOf(
      cxxOperatorCallExpr(hasOverloadedOperatorName("="), hasArgument(0, Var)),
      callExpr(forEachArgumentWithParam(
          Var, parmVarDecl(
                   hasType(references(qualType(unless(isConstQualified()))))))),
      unaryOperator(hasOperatorName("&"), hasUnaryOperand(Var))));
  return match(findAll(Rebinds), *FD->getBody(), Ctx).empty();
}
} // namespace

void CopyInLoopCheck::checkCallInLoop(const CallExpr &Call, ASTContext &Ctx) {
  const FunctionDecl *Callee = Call.getDirectCallee();
  const FunctionDecl *Def = Callee ? Callee->getDefinition() : nullptr;
  const SourceManager &SM = Ctx.getSourceManager();
  if (!Def || !Def->getBody() || !Def->getIdentifier() ||
      llvm::isa<CXXOperatorCallExpr>(Call) ||
      !SM.isInMainFile(SM.getExpansionLoc(Def->getLocation())))
    return;
  std::optional<EnclosingLoop> L = Loops.enclosingLoop(Call, Ctx);
  if (!L)
    return;
  LoopInvariance &Inv = Loops.get(*L->Loop, Ctx);
  if (!Inv.runsEveryIteration(*L))
    return;
  ExprMutationAnalyzer Mutations(*Def->getBody(), Ctx);
  // Some reference to \p V in the body passes \p Test (Mutations.h: what
  // ExprMutationAnalyzer gets wrong for devices and in-place methods).
  auto AnyRef = [&](const VarDecl *V, auto Test) {
    return llvm::any_of(
        match(findAll(declRefExpr(to(varDecl(equalsNode(V)))).bind("ref")),
              *Def->getBody(), Ctx),
        [&](const BoundNodes &N) {
          return Test(*N.getNodeAs<DeclRefExpr>("ref"));
        });
  };
  auto Changed = [&](const ParmVarDecl *P) {
    if (!isDeviceType(P->getType()) && !isTensorOptionsType(P->getType()))
      return Mutations.isMutated(P);
    return AnyRef(
        P, [&](const DeclRefExpr &R) { return changesDeviceValue(R, Ctx); });
  };
  // The argument the call passes for \p P is the same on every iteration.
  auto SameArgument = [&](const ParmVarDecl *P) {
    const unsigned I = P->getFunctionScopeIndex();
    if (I >= Call.getNumArgs() || Changed(P))
      return false;
    const Expr *A = ignoreConversions(Call.getArg(I));
    return sameEachIteration(A, *L->Loop, Inv, Ctx) ||
           (!isTensorType(A->getType()) && Inv.isInvariant(A));
  };
  auto Copies =
      findAll(expr(matchers::tensorMethodCall(
                       {"to", "cpu", "cuda", "toType", "type_as"}, "copy"),
                   unless(matchers::unevaluated())));
  for (const BoundNodes &N : match(Copies, *Def->getBody(), Ctx)) {
    const auto *Copy = N.getNodeAs<CXXMemberCallExpr>("copy");
    const auto *Ref = llvm::dyn_cast<DeclRefExpr>(
        ignoreConversions(N.getNodeAs<Expr>("copy.recv")));
    const auto *Tensor =
        Ref ? llvm::dyn_cast<ParmVarDecl>(Ref->getDecl()) : nullptr;
    if (!Tensor || Tensor->getDeclContext() != Def ||
        !runsOnEveryCall(*Copy, *Def->getBody(), Ctx) ||
        !Loops.flows().of({Def, Def->getBody()}, Ctx).runsWheneverCalled(*Copy))
      continue;
    llvm::SmallVector<const ParmVarDecl *, 4> Params{Tensor};
    if (!llvm::all_of(Copy->arguments(),
                      [&](const Expr *A) {
                        return readsOnlyParams(A, *Def, Params, Ctx);
                      }) ||
        !llvm::all_of(Params, SameArgument))
      continue;
    // A copy changed in place afterwards needs a fresh buffer each call.
    DynTypedNode Parent = parentOf(*Copy, Ctx);
    for (int Depth = 0; Depth < 6 && Parent.get<Expr>(); ++Depth)
      Parent = parentOf(Parent, Ctx);
    if (const auto *Holder = Parent.get<VarDecl>()) {
      if (Mutations.isMutated(Holder) ||
          AnyRef(Holder,
                 [&](const DeclRefExpr &R) { return changedInPlace(&R, Ctx); }))
        continue;
    }
    CopyTarget T = describeCopy(*Copy, Ctx);
    if (!T.changesDevice() && !T.changesDType() && !T.LikeOther)
      continue;
    // A conversion to the dtype the argument already has copies nothing.
    if (!T.changesDevice() && !T.LikeOther &&
        Tensor->getFunctionScopeIndex() < Call.getNumArgs() &&
        alreadyOfDType(Call.getArg(Tensor->getFunctionScopeIndex()),
                       T.DTypeText, Ctx))
      continue;
    diag(Call.getBeginLoc(),
         "'%0()' copies its parameter '%1' %2 on every call, and this loop "
         "calls it with "
         "the same tensor and target on every iteration: every byte is copied "
         "again each "
         "time; copy once before the loop and pass the copy in")
        << Def->getName() << Tensor->getName() << describeDestination(T);
    diag(Copy->getExprLoc(), "the copy is here, in '%0()'", DiagnosticIDs::Note)
        << Def->getName();
    diag(L->Loop->getBeginLoc(), "loop starts here", DiagnosticIDs::Note);
    return;
  }
}

} // namespace clang::tidy::devcopy
