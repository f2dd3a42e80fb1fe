#include "FunctionFlow.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/StmtCXX.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::devcopy {

FunctionFlow::FunctionFlow(const FunctionBody &F, ASTContext &Ctx) {
  if (!F.Body)
    return;
  CFG::BuildOptions Options;
  Options.AddImplicitDtors = true;
  Options.AddTemporaryDtors = true;
  Options.PruneTriviallyFalseEdges = true;
  TheCFG = CFG::buildCFG(F.Fn, const_cast<Stmt *>(F.Body), &Ctx, Options);
  this->Ctx = &Ctx;
  if (TheCFG)
    Sequence = std::make_unique<SequenceIndex>(TheCFG.get(), F.Body, &Ctx);
}

bool FunctionFlow::loopRepeats(const Stmt &Loop) {
  if (!TheCFG)
    return true;
  auto It = Repeats.find(&Loop);
  if (It != Repeats.end())
    return It->second;
  // The blocks that jump back to the loop carry it as their loop target. One
  // pass over the blocks reachable from the entry answers every loop of the
  // function at once.
  llvm::BitVector Seen(TheCFG->getNumBlockIDs());
  llvm::SmallVector<const CFGBlock *, 32> Work{&TheCFG->getEntry()};
  Seen.set(TheCFG->getEntry().getBlockID());
  while (!Work.empty()) {
    const CFGBlock *B = Work.pop_back_val();
    if (const Stmt *Target = B->getLoopTarget())
      Repeats[Target] = true;
    for (const CFGBlock::AdjacentBlock &Succ : B->succs())
      if (const CFGBlock *R = Succ.getReachableBlock();
          R && !Seen.test(R->getBlockID())) {
        Seen.set(R->getBlockID());
        Work.push_back(R);
      }
  }
  return Repeats.try_emplace(&Loop, false).first->second;
}

bool FunctionFlow::inSequence(const Stmt *Before, const Stmt *After) const {
  if (!Sequence)
    return false;
  return Sequence->inSequence(Before, After) || shiftSequenced(Before, After) ||
         conditionSequenced(Before, After);
}

bool FunctionFlow::conditionSequenced(const Stmt *Before,
                                      const Stmt *After) const {
  // An if's condition runs before either branch (`if (v.item() < 0) ...
  // else if (v.item() < 1)`); ExprSequence only orders siblings.
  if (!Ctx)
    return false;
  DynTypedNode Cur = DynTypedNode::create(*Before);
  const IfStmt *If = nullptr;
  for (int Depth = 0; Depth < 64 && !If; ++Depth) {
    DynTypedNode P = parentOf(Cur, *Ctx);
    if (P.getNodeKind().isNone())
      return false;
    if (const auto *I = P.get<IfStmt>())
      If = I->getCond() == Cur.get<Stmt>() ? I : nullptr;
    if (!P.get<Expr>() && !If)
      return false;
    Cur = P;
  }
  if (!If)
    return false;
  Cur = DynTypedNode::create(*After);
  for (int Depth = 0; Depth < 256; ++Depth) {
    DynTypedNode P = parentOf(Cur, *Ctx);
    if (P.getNodeKind().isNone())
      return false;
    if (P.get<IfStmt>() == If)
      return Cur.get<Stmt>() == If->getThen() ||
             Cur.get<Stmt>() == If->getElse();
    Cur = P;
  }
  return false;
}

bool FunctionFlow::shiftSequenced(const Stmt *Before, const Stmt *After) const {
  // Since C++17 the left operand of << and >> is sequenced before the right
  // (`std::cout << a.item() << b.item()`); ExprSequence does not know it.
  if (!Ctx || !Ctx->getLangOpts().CPlusPlus17)
    return false;
  llvm::SmallPtrSet<const Stmt *, 16> Above;
  DynTypedNode Cur = DynTypedNode::create(*Before);
  for (int Depth = 0; Depth < 64; ++Depth) {
    DynTypedNode P = parentOf(Cur, *Ctx);
    if (!P.get<Expr>())
      break;
    Cur = P;
    Above.insert(Cur.get<Stmt>());
  }
  const Stmt *Child = After;
  Cur = DynTypedNode::create(*After);
  for (int Depth = 0; Depth < 64; ++Depth) {
    DynTypedNode P = parentOf(Cur, *Ctx);
    if (!P.get<Expr>())
      return false;
    Cur = P;
    const auto *Op = Cur.get<CXXOperatorCallExpr>();
    if (Op && Above.count(Op))
      return (Op->getOperator() == OO_LessLess ||
              Op->getOperator() == OO_GreaterGreater) &&
             Op->getNumArgs() == 2 && Op->getArg(1) == Child;
    if (Above.count(Cur.get<Stmt>()))
      return false;
    Child = Cur.get<Stmt>();
  }
  return false;
}

FunctionFlow *FunctionFlowCache::around(const Stmt &S, ASTContext &Ctx) {
  FunctionBody F = enclosingFunction(S, Ctx);
  return F.Body ? &of(F, Ctx) : nullptr;
}

FunctionFlow &FunctionFlowCache::of(const FunctionBody &F, ASTContext &Ctx) {
  std::unique_ptr<FunctionFlow> &Slot = Map[F.Body];
  if (!Slot)
    Slot = std::make_unique<FunctionFlow>(F, Ctx);
  return *Slot;
}

bool FunctionFlow::runsWheneverCalled(const Stmt &S) {
  if (!TheCFG)
    return true;
  if (!PostDominators) {
    Blocks = std::make_unique<utils::StmtToBlockMap>(TheCFG.get(), Ctx);
    PostDominators = std::make_unique<CFGPostDomTree>(TheCFG.get());
  }
  const CFGBlock *B = Blocks->blockContainingStmt(&S);
  return !B || PostDominators->dominates(B, &TheCFG->getEntry());
}

/// \p S runs on every call of the function whose body is \p Body: no branch,
/// loop, handler or lambda between them.
bool runsOnEveryCall(const Stmt &S, const Stmt &Body, ASTContext &Ctx) {
  DynTypedNode Cur = DynTypedNode::create(S);
  for (int Depth = 0; Depth < 256; ++Depth) {
    DynTypedNode P = parentOf(Cur, Ctx);
    if (P.getNodeKind().isNone())
      return false;
    const Stmt *PS = P.get<Stmt>();
    if (PS == &Body)
      return true;
    const Stmt *C = Cur.get<Stmt>();
    if (const auto *If = llvm::dyn_cast_or_null<IfStmt>(PS);
        If && C != If->getCond())
      return false;
    if (const auto *CO =
            llvm::dyn_cast_or_null<AbstractConditionalOperator>(PS);
        CO && C != CO->getCond())
      return false;
    if (const auto *BO = llvm::dyn_cast_or_null<BinaryOperator>(PS);
        BO && BO->isLogicalOp() && C == BO->getRHS())
      return false;
    if (PS && llvm::isa<SwitchStmt, CXXCatchStmt, LambdaExpr, ForStmt,
                        WhileStmt, DoStmt, CXXForRangeStmt>(PS))
      return false;
    if (P.get<FunctionDecl>() || P.get<CXXRecordDecl>())
      return false;
    Cur = P;
  }
  return false;
}

} // namespace clang::tidy::devcopy
