#include "CallSyncs.h"
#include "FunctionFlow.h"
#include "LoopFacts.h"
#include "SyncElements.h"
#include "TorchMatchers.h"
#include "Unevaluated.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/StmtCXX.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/ADT/MapVector.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

std::string describeSync(llvm::StringRef Method, const std::string &Name) {
  if (Method == "<<")
    return "printing '" + Name + "' copies it to the host";
  if (Method == "=")
    return "writing '" + Name + "' into a host tensor copies it to the host";
  if (Method == "nonzero" || Method == "masked_select")
    return "'" + Name + "." + Method.str() + "()' sizes its result on the host";
  if (Method == "cpu" || Method == "to")
    return "'" + Name + "' is copied to the host";
  return "reading '" + Name + "' with " + Method.str() +
         "() copies it to the host";
}

const FunctionDecl *CallSyncs::userDefinition(const FunctionDecl *FD,
                                              const ASTContext &Ctx) {
  const FunctionDecl *Def = FD ? FD->getDefinition() : nullptr;
  if (!Def || !Def->hasBody() || inLibrary(Def) ||
      Ctx.getSourceManager().isInSystemHeader(Def->getLocation()))
    return nullptr;
  return Def;
}

std::optional<CallSync> CallSyncs::of(const FunctionDecl *FD, ASTContext &Ctx) {
  FD = userDefinition(FD, Ctx);
  if (!FD)
    return std::nullopt;
  auto It = Map.find(FD);
  if (It != Map.end())
    return It->second;
  Map[FD] = std::nullopt; // while in progress: a recursive call ends the chain
  std::optional<CallSync> S = summarize(*FD, Ctx);
  Map[FD] = S;
  return S;
}

std::optional<CallSync> CallSyncs::summarize(const FunctionDecl &FD,
                                             ASTContext &Ctx) {
  const Stmt *Body = FD.getBody();
  if (!Body)
    return std::nullopt;
  auto Read = matchers::tensorMethodCall({"item", "cpu", "to"}, "sync");
  auto Call = callExpr(unless(cxxMemberCallExpr(callee(
                           cxxMethodDecl(ofClass(matchers::tensorRecord()))))))
                  .bind("call");
  // Every call: no branch around it (runsOnEveryCall), and no early return
  // before it (post-dominance in the function's CFG).
  FunctionFlow &Flow = Flows.of({&FD, Body}, Ctx);
  auto EveryCall = [&](const Stmt &S) {
    return runsOnEveryCall(S, *Body, Ctx) && Flow.runsWheneverCalled(S);
  };
  if (std::optional<CallSync> Elements = elementReads(*Body, Flow, Ctx))
    return Elements;
  LoopInvariance Inv(*Body, Ctx);
  SyncUses Uses(*Body, Inv, Ctx);
  // Statements in source order: the first sync or syncing call met is the
  // one reported.
  for (const auto &M :
       match(findAll(expr(anyOf(Read, Call), unless(matchers::unevaluated()))),
             *Body, Ctx)) {
    if (const auto *Sync = M.getNodeAs<CXXMemberCallExpr>("sync")) {
      llvm::StringRef Method = Sync->getMethodDecl()->getName();
      if (Method == "to" && describeCopy(*Sync, Ctx).Device != DeviceKind::CPU)
        continue;
      if (!EveryCall(*Sync))
        continue;
      ValueUse U = Uses.classify(Sync);
      if (U.Kind == UseKind::Needed && !U.Returned)
        continue;
      return CallSync{
          Sync,
          describeSync(Method,
                       receiverName(M.getNodeAs<Expr>("sync.recv"), Ctx)),
          U.Kind, U.Returned};
    }
    const auto *C = M.getNodeAs<CallExpr>("call");
    if (!C || !EveryCall(*C))
      continue;
    if (std::optional<CallSync> Inner = of(C->getDirectCallee(), Ctx)) {
      if (!Inner->Returned)
        return Inner;
      // The callee returns what it read: how this function uses it decides.
      ValueUse U = Uses.classify(C);
      if (U.Kind == UseKind::Needed && !U.Returned)
        continue;
      Inner->Kind = U.Kind;
      Inner->Returned = U.Returned;
      return Inner;
    }
  }
  return std::nullopt;
}

/// Several elements of one local tensor read with item() on every call, the
/// tensor unchanged between them: each read waits for the device.
std::optional<CallSync>
CallSyncs::elementReads(const Stmt &Body, FunctionFlow &Flow, ASTContext &Ctx) {
  auto Read = matchers::tensorMethodCall({"item"}, "sync");
  llvm::MapVector<const VarDecl *, CallSync> Reads; // in source order
  for (const auto &M :
       match(findAll(expr(Read, unless(matchers::unevaluated()))), Body, Ctx)) {
    const auto *Sync = M.getNodeAs<CXXMemberCallExpr>("sync");
    const Expr *Recv = ignoreConversions(M.getNodeAs<Expr>("sync.recv"));
    const Expr *Base = ignoreConversions(subscriptBase(Recv));
    const auto *Ref = llvm::dyn_cast_or_null<DeclRefExpr>(Base);
    const auto *VD = Ref ? llvm::dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
    if (Base == Recv || !VD || !VD->hasLocalStorage() ||
        !runsOnEveryCall(*Sync, Body, Ctx) || !Flow.runsWheneverCalled(*Sync))
      continue;
    CallSync &S = Reads[VD];
    if (!S.Sync || Ctx.getSourceManager().isBeforeInTranslationUnit(
                       Sync->getExprLoc(), S.Sync->getExprLoc())) {
      S.Sync = Sync;
      S.Tensor = Ref;
      S.What = "'" + VD->getNameAsString() +
               "' is read with item() one element at a time";
    }
    ++S.ElementReads;
  }
  // A tensor rebound between the reads is another tensor each time.
  for (auto &[VD, S] : Reads) {
    auto Assign =
        cxxOperatorCallExpr(hasOverloadedOperatorName("="),
                            hasArgument(0, ignoringParenImpCasts(declRefExpr(
                                               to(varDecl(equalsNode(VD)))))));
    if (S.ElementReads >= 2 && match(findAll(Assign), Body, Ctx).empty())
      return S;
  }
  return std::nullopt;
}

} // namespace clang::tidy::devcopy
