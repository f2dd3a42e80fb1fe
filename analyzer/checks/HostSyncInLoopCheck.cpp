#include "HostSyncInLoopCheck.h"
#include "analysis/DiscardedValue.h"
#include "analysis/SyncElements.h"
#include "analysis/TorchMatchers.h"
#include "clang-tidy/utils/ASTUtils.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

void HostSyncInLoopCheck::registerCheckMatchers(MatchFinder *Finder) {
  auto Main = matchers::isInMainFileCode();
  Finder->addMatcher(expr(Main, matchers::tensorMethodCall(
                                    {"item", "is_nonzero", "equal", "allclose",
                                     "nonzero", "masked_select", "cpu", "to"},
                                    "sync")),
                     this);
  // Calls of the user's functions: a sync inside runs on every iteration too.
  Finder->addMatcher(
      callExpr(Main, unless(cxxMemberCallExpr(callee(
                         cxxMethodDecl(ofClass(matchers::tensorRecord()))))))
          .bind("call"),
      this);
  Finder->addMatcher(cxxOperatorCallExpr(Main, hasOverloadedOperatorName("<<"),
                                         hasArgument(1, matchers::tensorExpr()))
                         .bind("print"),
                     this);
  // `host[i][k] = dev[i][j]`: a tensor written into elements of another
  // (Tensor::operator= on a view copies; on a variable it rebinds).
  Finder->addMatcher(cxxOperatorCallExpr(Main, hasOverloadedOperatorName("="),
                                         hasArgument(0, matchers::tensorExpr()),
                                         hasArgument(1, matchers::tensorExpr()))
                         .bind("assign"),
                     this);
}

void HostSyncInLoopCheck::checkMatch(const MatchFinder::MatchResult &Result) {
  ASTContext &Ctx = *Result.Context;
  if (const auto *Call = Result.Nodes.getNodeAs<CallExpr>("call")) {
    checkCall(*Call, Ctx);
    return;
  }
  const Expr *Sync = nullptr;
  const Expr *Recv = nullptr;
  std::string Method;
  if (const auto *Call = Result.Nodes.getNodeAs<CXXMemberCallExpr>("sync")) {
    Method = Call->getMethodDecl()->getName().str();
    if (Method == "to" && describeCopy(*Call, Ctx).Device != DeviceKind::CPU)
      return;
    // `prev.to(kCPU);`, `prev.cpu();` or `loss.item<float>();` as a
    // statement: the value is dropped, and devcopy-discarded-copy reports the
    // line (remove the call, and the sync goes with it). One finding for one
    // mistake; a dropped `equal()` (a bool, not a copy) stays ours.
    if ((Method == "item" || Method == "cpu" || Method == "to") &&
        isDiscardedValue(*Call, Ctx))
      return;
    Sync = Call;
    Recv = Result.Nodes.getNodeAs<Expr>("sync.recv");
    // Reading a tensor already copied to the host in the same chain
    // (`loss.cpu().item<float>()`): the copy is the sync, reported there.
    if (Method != "cpu" && Method != "to" && copiedToHost(Recv, Ctx))
      return;
  } else if (const auto *Print =
                 Result.Nodes.getNodeAs<CXXOperatorCallExpr>("print")) {
    if (isTensorType(Print->getArg(0)->getType()))
      return; // a tensor's own operator<< (a shift), not printing
    // Printing the result of cpu() / to(kCPU): that copy is the sync, and is
    // reported on its own.
    if (copiedToHost(Print->getArg(1), Ctx))
      return;
    Method = "<<";
    Sync = Print;
    Recv = Print->getArg(1);
  } else if (const auto *Assign =
                 Result.Nodes.getNodeAs<CXXOperatorCallExpr>("assign")) {
    // Only a copy from the device into a host tensor's elements syncs.
    if (Assign->getArg(0)->isLValue() ||
        places(Ctx).ofTensor(Assign->getArg(0)) != Place::Host ||
        places(Ctx).ofTensor(Assign->getArg(1)) == Place::Host)
      return;
    Method = "=";
    Sync = Assign;
    Recv = Assign->getArg(1);
  }
  if (!Sync)
    return;
  std::optional<EnclosingLoop> L = Loops.enclosingLoop(*Sync, Ctx);
  if (!L)
    return;
  LoopInvariance &Inv = Loops.get(*L->Loop, Ctx);
  // A read in a branch taken on few iterations is still judged against a
  // read in the condition that guards it (`if (v.item() < 0) ... else if
  // (v.item() < 1)`): whenever it runs, it copies the same value again.
  const bool Typical = Inv.runsOnTypicalIteration(*L);
  auto InGuard = [&](const Expr *E) {
    return llvm::any_of(L->Guards, [&](const Expr *G) {
      return G && encloses(Ctx.getSourceManager(), G->getSourceRange(),
                           E->getSourceRange());
    });
  };
  if (!(Typical || Inv.staysInLoop(*L)) ||
      !acceleratorInPlay(*L->Loop, Recv, Ctx))
    return;
  std::string What = describeSync(Method, receiverName(Recv, Ctx));

  // The same data copied to the host a second time in one iteration (the
  // other syncs compute something new: nonzero(), equal(), ...).
  bool CopiesData = Method == "item" || Method == "cpu" || Method == "to" ||
                    Method == "<<" || Method == "=";
  bool SameValue = false;
  for (bool Later : {false, true}) {
    if (Later && !Typical)
      break;
    const Expr *OtherRecv = nullptr;
    const Expr *Other = CopiesData
                            ? earlierRead(*L->Loop, *Sync, *Recv, Inv, Ctx,
                                          SameValue, Later, &OtherRecv)
                            : nullptr;
    if (!Other || (!Typical && !InGuard(Other)))
      continue;
    // Described as the second read: the other one when it runs later.
    std::string SecondWhat =
        Later ? describeSync(Method, receiverName(OtherRecv, Ctx)) : What;
    const Expr *First = Later ? Sync : Other, *Second = Later ? Other : Sync;
    unsigned Line =
        Ctx.getSourceManager().getExpansionLineNumber(First->getExprLoc());
    if (SameValue)
      diag(Second->getExprLoc(),
           "%0 again in this iteration, waiting for the device a second "
           "time; it was already read at line %1: keep that value and "
           "reuse it")
          << SecondWhat << Line;
    else
      diag(Second->getExprLoc(),
           "%0, waiting for the device again in this iteration; another "
           "element of '%1' was read at line %2: copy '%1' to the host "
           "once and read its elements there")
          << SecondWhat << receiverName(subscriptBase(Recv), Ctx) << Line;
    diag(First->getExprLoc(), "first read here", DiagnosticIDs::Note);
    noteLoop(*L->Loop);
    if (!Later)
      return;
    break; // this read is the first: it is judged on its own below
  }
  if (!Typical)
    return;
  if (CopiesData)
    Reads[L->Loop][readKey(*Recv, Ctx)].push_back({Sync, Recv});

  // One element per iteration of a tensor that does not change in the loop,
  // or a value computed afresh from one.
  bool WholeInvariant = false;
  if (const Expr *Whole = elementOfInvariant(Recv, Inv, WholeInvariant)) {
    if (WholeInvariant)
      diag(Sync->getExprLoc(), "%0 and waits for the device on every iteration "
                               "of this loop, although '%1' does "
                               "not change in it; compute it once before the "
                               "loop (all the samples in one call) "
                               "and read the result there")
          << What << receiverName(Whole, Ctx);
    else
      diag(Sync->getExprLoc(), "%0 and waits for the device on every iteration "
                               "of this loop, one element at a "
                               "time; copy '%1' to the host once before the "
                               "loop and read its elements there")
          << What << receiverName(Whole, Ctx);
    noteLoop(*L->Loop);
    return;
  }

  SyncUses &U = usesIn(*L->Loop, Inv, Ctx);
  // Printing is output itself; other reads are followed to their use (for
  // nonzero() and masked_select(), the use of their result: its size read
  // on the host to drive the loop is the price of the algorithm).
  // A copy into a host tensor builds host results.
  if (Method == "=")
    return;
  ValueUse Use =
      Method == "<<" ? ValueUse{UseKind::Output, ""} : U.classify(Sync);
  // The host needs the value on every iteration: the read is the price.
  if (Use.Kind == UseKind::Needed ||
      (Use.Kind == UseKind::Output && !U.isTrainingLoop()))
    return;
  if (Use.Kind == UseKind::Accumulated && Use.Kept)
    diag(Sync->getExprLoc(),
         "%0 and waits for the device on every iteration of this loop, only "
         "to keep it in '%1' for after the loop; keep the tensors and copy "
         "them to the host once after the loop (torch::stack(...).cpu())")
        << What << Use.Into;
  else if (Use.Kind == UseKind::Accumulated)
    diag(
        Sync->getExprLoc(),
        "%0 and waits for the device on every iteration of this loop, only to "
        "add it to "
        "'%1'; accumulate on the device and read the total once after the loop")
        << What << Use.Into;
  else if (Use.Kind == UseKind::Output)
    diag(Sync->getExprLoc(), "%0 and waits for the device on every training "
                             "step, stalling the GPU queue each "
                             "time, to report it; report every N steps, or "
                             "accumulate on the device and read "
                             "once after the loop")
        << What;
  else
    diag(Sync->getExprLoc(), "%0 and waits for the device on every iteration "
                             "of this loop, stalling the GPU "
                             "queue each time; accumulate on the device and "
                             "read once after the loop, or every "
                             "N steps")
        << What;
  noteLoop(*L->Loop);
}

SyncUses &HostSyncInLoopCheck::usesIn(const Stmt &Loop, LoopInvariance &Inv,
                                      ASTContext &Ctx) {
  std::unique_ptr<SyncUses> &U = Uses[&Loop];
  if (!U)
    U = std::make_unique<SyncUses>(Loop, Inv, Ctx, &places(Ctx), &Trains);
  return *U;
}

namespace {
/// The name a call uses for its callee: a lambda's variable (`output(...)`)
/// rather than its `operator()`.
std::string calleeName(const CallExpr &Call, const FunctionDecl &FD,
                       const ASTContext &Ctx) {
  const auto *MD = llvm::dyn_cast<CXXMethodDecl>(&FD);
  if (const auto *Op = llvm::dyn_cast<CXXOperatorCallExpr>(&Call);
      Op && MD && MD->getParent()->isLambda() && Op->getNumArgs() > 0)
    return receiverName(Op->getArg(0), Ctx);
  return FD.getNameAsString();
}
} // namespace

void HostSyncInLoopCheck::checkCall(const CallExpr &Call, ASTContext &Ctx) {
  const FunctionDecl *FD =
      CallSyncs::userDefinition(Call.getDirectCallee(), Ctx);
  if (!FD)
    return;
  std::optional<EnclosingLoop> L = Loops.enclosingLoop(Call, Ctx);
  if (!L)
    return;
  LoopInvariance &Inv = Loops.get(*L->Loop, Ctx);
  if (!Inv.runsOnTypicalIteration(*L) ||
      !acceleratorInPlay(*L->Loop, nullptr, Ctx))
    return;
  std::optional<CallSync> S = Calls.of(FD, Ctx);
  if (!S)
    return;
  SyncUses &U = usesIn(*L->Loop, Inv, Ctx);
  if (S->ElementReads) {
    // However the values are used, one copy would do for all of them.
    if (places(Ctx).ofTensor(S->Tensor) == Place::Host)
      return;
    diag(Call.getExprLoc(),
         "calling '%0' syncs with the device %1 times on every iteration of "
         "this loop: inside it, %2, each read waiting for the device; copy "
         "'%3' to the host once there and read its elements from that copy")
        << calleeName(Call, *FD, Ctx) << S->ElementReads << S->What
        << receiverName(S->Tensor, Ctx);
    diag(S->Sync->getExprLoc(), "the first read is here", DiagnosticIDs::Note);
    noteLoop(*L->Loop);
    return;
  }
  UseKind Kind = S->Kind;
  if (S->Returned) // the function returns what it read: its use here decides
    Kind = U.classify(&Call).Kind;
  if (Kind == UseKind::Needed ||
      (Kind == UseKind::Output && !U.isTrainingLoop()))
    return;
  diag(Call.getExprLoc(),
       "calling '%0' syncs with the device on every iteration of this "
       "loop: inside it, %1 and waits for the device; read it every N steps, "
       "or keep the value on the device and read it once after the loop")
      << calleeName(Call, *FD, Ctx) << S->What;
  diag(S->Sync->getExprLoc(), "the read is here", DiagnosticIDs::Note);
  noteLoop(*L->Loop);
}

void HostSyncInLoopCheck::noteLoop(const Stmt &Loop) {
  // SARIF's relatedLocations and editors show where the loop is.
  diag(Loop.getBeginLoc(), "loop starts here", DiagnosticIDs::Note);
}

const Expr *HostSyncInLoopCheck::earlierRead(
    const Stmt &Loop, const Expr &Sync, const Expr &Recv, LoopInvariance &Inv,
    ASTContext &Ctx, bool &SameValue, bool Later, const Expr **OtherRecv) {
  auto It = Reads.find(&Loop);
  if (It == Reads.end())
    return nullptr;
  auto Same = It->second.find(readKey(Recv, Ctx));
  if (Same == It->second.end())
    return nullptr;
  FunctionFlow *Flow = Loops.flows().around(Loop, Ctx);
  if (!Flow)
    return nullptr;
  const Expr *Value = ignoreConversions(&Recv);
  const Expr *Base = subscriptBase(&Recv);
  // The variables the value is read from must not change between the reads.
  auto Refs = ast_matchers::match(
      ast_matchers::findAll(ast_matchers::declRefExpr().bind("r")), *Value,
      Ctx);
  for (const auto &[First, FirstRecv] : Same->second) {
    SameValue =
        utils::areStatementsIdentical(ignoreConversions(FirstRecv), Value, Ctx);
    // Two elements of one tensor (`b[0].item()`, `b[1].item()`) are two
    // copies where one would do.
    bool SameTensor =
        !SameValue && Base != Value &&
        utils::areStatementsIdentical(subscriptBase(FirstRecv), Base, Ctx);
    // The two reads in the order they run (the matcher may meet them in the
    // other order: `std::cout << a[0].item() << a[1].item()`).
    const Stmt *A = Later ? static_cast<const Stmt *>(&Sync) : First;
    const Stmt *B = Later ? First : static_cast<const Stmt *>(&Sync);
    if (!(SameValue || SameTensor) || !Flow->inSequence(A, B))
      continue;
    bool Changed = llvm::any_of(Refs, [&](const ast_matchers::BoundNodes &N) {
      const auto *VD =
          llvm::dyn_cast<VarDecl>(N.getNodeAs<DeclRefExpr>("r")->getDecl());
      if (!VD || !Inv.isMutatedInLoop(VD))
        return false;
      return llvm::any_of(Inv.mutatingRefsTo(VD), [&](const DeclRefExpr *Ref) {
        return !Flow->inSequence(Ref, A) && !Flow->inSequence(B, Ref);
      });
    });
    if (!Changed) {
      if (OtherRecv)
        *OtherRecv = FirstRecv;
      return First;
    }
  }
  return nullptr;
}

unsigned HostSyncInLoopCheck::readKey(const Expr &Recv, ASTContext &Ctx) {
  // Equal for two reads of one value or of two elements of one tensor (the
  // comparison earlierRead makes), so a read meets only those.
  llvm::FoldingSetNodeID ID;
  subscriptBase(&Recv)->Profile(ID, Ctx, /*Canonical=*/false);
  return ID.ComputeHash();
}

void HostSyncInLoopCheck::onEndOfTranslationUnit() {
  Loops.clear();
  Reads.clear();
  Uses.clear();
  Trains.clear();
  Calls.clear();
  Functions.clear();
  FileUsesDevice.reset();
}

} // namespace clang::tidy::devcopy
