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
  if (!(Typical || Inv.staysInLoop(*L)) ||
      !acceleratorInPlay(*L->Loop, Recv, Ctx))
    return;
  PendingRead Read{Sync, Recv, Method, Typical, L->Guards};
  // Copies of data are judged with every other read of the same value in
  // the iteration, once all are known (the other syncs compute something
  // new: nonzero(), equal(), ...).
  if (Method == "item" || Method == "cpu" || Method == "to" || Method == "<<" ||
      Method == "=") {
    ReadsCtx = &Ctx;
    Reads[L->Loop][readKey(*Recv, Ctx)].push_back(std::move(Read));
    return;
  }
  if (Typical)
    judgeRead(*L->Loop, Read, {}, 1, Ctx);
}

void HostSyncInLoopCheck::judgeReads(const Stmt &Loop,
                                     llvm::ArrayRef<PendingRead> All,
                                     ASTContext &Ctx) {
  LoopInvariance &Inv = Loops.get(Loop, Ctx);
  FunctionFlow *Flow = Loops.flows().around(Loop, Ctx);
  // All[I] runs first, on a typical iteration, and All[J] reads its value
  // again (Want: the same value, or another element of its tensor); J may
  // be in a rare branch only when its guard is that first read.
  auto Again = [&](unsigned I, unsigned J, Relation Want) {
    const PendingRead &A = All[I], &B = All[J];
    if (!A.Typical || !(B.Typical || llvm::any_of(B.Guards, [&](const Expr *G) {
                          return G && encloses(Ctx.getSourceManager(),
                                               G->getSourceRange(),
                                               A.Sync->getSourceRange());
                        })))
      return false;
    return relation(Loop, A, B, Inv, Ctx, Want) == Want;
  };
  // The first read of each value in the iteration, with the others. Reads
  // are met in about the order they run; one met later may run first
  // (`std::cout << a.item() << a.item()` is matched outside in).
  struct Value {
    unsigned First;
    llvm::SmallVector<unsigned, 2> Others;
  };
  llvm::SmallVector<Value, 4> Values;
  for (unsigned J = 0; J < All.size(); ++J) {
    auto It = llvm::find_if(Values, [&](Value &V) {
      if (Again(V.First, J, Relation::SameValue)) {
        V.Others.push_back(J);
        return true;
      }
      if (!Again(J, V.First, Relation::SameValue))
        return false;
      V.Others.push_back(V.First);
      V.First = J;
      return true;
    });
    if (It == Values.end())
      Values.push_back({J, {}});
  }

  for (const Value &V : Values) {
    const PendingRead &R = All[V.First];
    llvm::SmallVector<const PendingRead *, 2> Others;
    for (unsigned J : V.Others)
      Others.push_back(&All[J]);
    // The most reads of the value on one path through the iteration (the
    // branches of an `else if` chain each read it once more); long runs of
    // reads in generated code are counted as they stand.
    unsigned Times = V.Others.size() + 1;
    if (Flow && Times <= 16) {
      llvm::SmallVector<unsigned, 16> Group{V.First}, Depth(Times, 1);
      Group.append(V.Others.begin(), V.Others.end());
      for (unsigned Round = 0; Round < Times; ++Round)
        for (unsigned A = 0; A < Times; ++A)
          for (unsigned B = 0; B < Times; ++B)
            if (A != B &&
                Flow->inSequence(All[Group[A]].Sync, All[Group[B]].Sync))
              Depth[B] = std::max(Depth[B], Depth[A] + 1);
      Times = *llvm::max_element(Depth);
    }
    // Another element of a tensor already read in the iteration: one copy
    // of the tensor would serve both.
    const Value *Other = llvm::find_if(Values, [&](const Value &E) {
      return &E != &V && Again(E.First, V.First, Relation::SameTensor);
    });
    // One element per iteration of a tensor complete before the loop is
    // judged as such: one copy before the loop serves every iteration.
    bool WholeInvariant = false;
    if (Other == Values.end() ||
        (R.Typical && elementOfInvariant(R.Recv, Inv, WholeInvariant))) {
      // A read in a rare branch counts only as a second read of what its
      // guard read.
      if (R.Typical)
        judgeRead(Loop, R, Others, Times, Ctx);
      continue;
    }
    const PendingRead &Earlier = All[Other->First];
    unsigned Line = Ctx.getSourceManager().getExpansionLineNumber(
        Earlier.Sync->getExprLoc());
    diag(R.Sync->getExprLoc(),
         "%0, waiting for the device again in this iteration; another "
         "element of '%1' was read at line %2: copy '%1' to the host "
         "once and read its elements there")
        << describeSync(R.Method, receiverName(R.Recv, Ctx))
        << receiverName(subscriptBase(R.Recv), Ctx) << Line;
    diag(Earlier.Sync->getExprLoc(), "first read here", DiagnosticIDs::Note);
    for (const PendingRead *A : Others)
      diag(A->Sync->getExprLoc(), "read again here", DiagnosticIDs::Note);
    noteLoop(Loop);
  }
}

void HostSyncInLoopCheck::judgeRead(const Stmt &Loop, const PendingRead &R,
                                    llvm::ArrayRef<const PendingRead *> Again,
                                    unsigned Times, ASTContext &Ctx) {
  LoopInvariance &Inv = Loops.get(Loop, Ctx);
  const SourceLocation Loc = R.Sync->getExprLoc();
  const std::string What = describeSync(R.Method, receiverName(R.Recv, Ctx));
  auto Notes = [&] {
    for (const PendingRead *A : Again)
      diag(A->Sync->getExprLoc(), "read again here", DiagnosticIDs::Note);
    noteLoop(Loop);
  };

  // One element per iteration of a tensor that does not change in the loop,
  // or a value computed afresh from one.
  bool WholeInvariant = false;
  if (const Expr *Whole = elementOfInvariant(R.Recv, Inv, WholeInvariant)) {
    if (WholeInvariant)
      diag(Loc, "%0 and waits for the device on every iteration "
                "of this loop, although '%1' does "
                "not change in it; compute it once before the "
                "loop (all the samples in one call) "
                "and read the result there")
          << What << receiverName(Whole, Ctx);
    else
      diag(Loc, "%0 and waits for the device on every iteration "
                "of this loop, one element at a "
                "time; copy '%1' to the host once before the "
                "loop and read its elements there")
          << What << receiverName(Whole, Ctx);
    Notes();
    return;
  }

  // How the host uses the value, over all its reads in the iteration.
  // Printing is output itself, and a copy into a host tensor builds host
  // results; other reads are followed to their use (for nonzero() and
  // masked_select(), the use of their result: its size read on the host to
  // drive the loop is the price of the algorithm).
  SyncUses &U = usesIn(Loop, Inv, Ctx);
  auto UseOf = [&](const PendingRead &P) {
    if (P.Method == "=")
      return ValueUse{UseKind::Needed, ""};
    return P.Method == "<<" ? ValueUse{UseKind::Output, ""}
                            : U.classify(P.Sync);
  };
  ValueUse Use = UseOf(R);
  for (const PendingRead *A : Again)
    Use = combine(Use, UseOf(*A));
  // The host needs the value on every iteration: its first read is the
  // price, and every other read of it waits again for nothing.
  if (Use.Kind == UseKind::Needed ||
      (Use.Kind == UseKind::Output && !U.isTrainingLoop())) {
    if (Again.empty())
      return;
    QualType T = R.Sync->getType().getUnqualifiedType();
    bool Item = R.Method == "item";
    diag(Loc, "'%0' is %1 %2 times in each iteration of this loop, each "
              "time waiting for the device; %3")
        << receiverName(R.Recv, Ctx) << (Item ? "read" : "copied to the host")
        << Times
        << (!Item ? std::string("copy it once and reuse that copy")
                  : "read it once into a " +
                        (T->isBuiltinType()
                             ? T.getAsString(Ctx.getPrintingPolicy())
                             : std::string("variable")) +
                        " and reuse it");
    Notes();
    return;
  }
  if (Use.Kind == UseKind::Accumulated && Use.Kept)
    diag(Loc,
         "%0 and waits for the device on every iteration of this loop, only "
         "to keep it in '%1' for after the loop; keep the tensors and copy "
         "them to the host once after the loop (torch::stack(...).cpu())")
        << What << Use.Into;
  else if (Use.Kind == UseKind::Accumulated)
    diag(
        Loc,
        "%0 and waits for the device on every iteration of this loop, only to "
        "add it to "
        "'%1'; accumulate on the device and read the total once after the loop")
        << What << Use.Into;
  else if (Use.Kind == UseKind::Output)
    diag(Loc, "%0 and waits for the device on every training "
              "step, stalling the GPU queue each "
              "time, to report it; report every N steps, or "
              "accumulate on the device and read "
              "once after the loop")
        << What;
  else
    diag(Loc, "%0 and waits for the device on every iteration "
              "of this loop, stalling the GPU "
              "queue each time; accumulate on the device and "
              "read once after the loop, or every "
              "N steps")
        << What;
  Notes();
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

HostSyncInLoopCheck::Relation
HostSyncInLoopCheck::relation(const Stmt &Loop, const PendingRead &A,
                              const PendingRead &B, LoopInvariance &Inv,
                              ASTContext &Ctx, Relation Want) {
  const Expr *Value = ignoreConversions(B.Recv);
  const Expr *Base = subscriptBase(B.Recv);
  Relation Rel = Relation::None;
  if (utils::areStatementsIdentical(ignoreConversions(A.Recv), Value, Ctx))
    Rel = Relation::SameValue;
  // Two elements of one tensor (`b[0].item()`, `b[1].item()`) are two
  // copies where one would do.
  else if (Want != Relation::SameValue && Base != Value &&
           utils::areStatementsIdentical(subscriptBase(A.Recv), Base, Ctx))
    Rel = Relation::SameTensor;
  FunctionFlow *Flow = Loops.flows().around(Loop, Ctx);
  if (Rel == Relation::None || (Want != Relation::None && Rel != Want) ||
      !Flow || !Flow->inSequence(A.Sync, B.Sync))
    return Relation::None;
  // The variables the value is read from must not change between the reads.
  // A for loop's increment runs between iterations, not between two reads
  // of one iteration (`best_ns[i].item()` twice in the body of `for (...;
  // i++)`).
  const auto *For = llvm::dyn_cast<ForStmt>(&Loop);
  const Stmt *Inc = For ? For->getInc() : nullptr;
  auto Refs = ast_matchers::match(
      ast_matchers::findAll(ast_matchers::declRefExpr().bind("r")), *Value,
      Ctx);
  bool Changed = llvm::any_of(Refs, [&](const ast_matchers::BoundNodes &M) {
    const auto *VD =
        llvm::dyn_cast<VarDecl>(M.getNodeAs<DeclRefExpr>("r")->getDecl());
    if (!VD || !Inv.isMutatedInLoop(VD))
      return false;
    return llvm::any_of(Inv.mutatingRefsTo(VD), [&](const DeclRefExpr *Ref) {
      if (Inc && encloses(Ctx.getSourceManager(), Inc->getSourceRange(),
                          Ref->getSourceRange()))
        return false;
      return !Flow->inSequence(Ref, A.Sync) && !Flow->inSequence(B.Sync, Ref);
    });
  });
  return Changed ? Relation::None : Rel;
}

unsigned HostSyncInLoopCheck::readKey(const Expr &Recv, ASTContext &Ctx) {
  // Equal for two reads of one value or of two elements of one tensor (the
  // comparison relation makes), so a read meets only those.
  llvm::FoldingSetNodeID ID;
  subscriptBase(&Recv)->Profile(ID, Ctx, /*Canonical=*/false);
  return ID.ComputeHash();
}

void HostSyncInLoopCheck::onEndOfTranslationUnit() {
  if (ReadsCtx)
    for (const auto &[Loop, ByTensor] : Reads)
      for (const auto &[Key, List] : ByTensor)
        judgeReads(*Loop, List, *ReadsCtx);
  ReadsCtx = nullptr;
  Loops.clear();
  Reads.clear();
  Uses.clear();
  Trains.clear();
  Calls.clear();
}

} // namespace clang::tidy::devcopy
