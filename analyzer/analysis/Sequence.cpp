#include "Sequence.h"
#include "Parents.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/AST/StmtCXX.h"

namespace clang::tidy::devcopy {

SequenceIndex::SequenceIndex(const CFG *TheCFG, const Stmt *Root,
                             ASTContext *Ctx)
    : Ctx(Ctx), Root(Root) {
  for (const auto &[S, Source] : TheCFG->synthetic_stmts())
    Synthetic[S] = Source;
}

const Stmt *SequenceIndex::resolve(const Stmt *S) const {
  auto It = Synthetic.find(S);
  return It == Synthetic.end() ? S : It->second;
}

llvm::SmallVector<const Stmt *, 1> SequenceIndex::parents(const Stmt *S) {
  return parentStmts(*S, *Ctx);
}

bool SequenceIndex::inRoot(const Stmt *S) {
  if (S == Root)
    return true;
  if (auto It = InRoot.find(S); It != InRoot.end())
    return It->second;
  InRoot[S] = false; // while in progress
  bool Result =
      llvm::any_of(parents(S), [&](const Stmt *P) { return inRoot(P); });
  return InRoot[S] = Result;
}

const SequenceIndex::Compound &SequenceIndex::indexOf(const CompoundStmt *C) {
  std::unique_ptr<Compound> &Slot = Compounds[C];
  if (Slot)
    return *Slot;
  Slot = std::make_unique<Compound>();
  Slot->Clean = inRoot(C);
  unsigned I = 0;
  for (const Stmt *Child : C->body()) {
    auto Up = parents(Child);
    if (!Slot->Position.try_emplace(Child, I++).second || Up.size() != 1 ||
        Up[0] != C)
      Slot->Clean = false;
  }
  return *Slot;
}

const SequenceIndex::Compound *SequenceIndex::compoundOf(const Stmt *S,
                                                         unsigned &Position) {
  auto Up = parents(S);
  const auto *C =
      Up.size() == 1 ? llvm::dyn_cast<CompoundStmt>(Up[0]) : nullptr;
  if (!C)
    return nullptr;
  const Compound &Index = indexOf(C);
  if (!Index.Clean)
    return nullptr;
  Position = Index.Position.lookup(S);
  return &Index;
}

const Stmt *SequenceIndex::successor(const Stmt *S) {
  // ExprSequence::getSequenceSuccessor, case by case.
  for (const Stmt *Parent : parents(S)) {
    if (!inRoot(Parent))
      continue;
    if (const auto *BO = llvm::dyn_cast<BinaryOperator>(Parent)) {
      if (BO->getLHS() == S && BO->getOpcode() == BO_Comma)
        return BO->getRHS();
    } else if (const auto *List = llvm::dyn_cast<InitListExpr>(Parent)) {
      for (unsigned I = 1; I < List->getNumInits(); ++I)
        if (List->getInit(I - 1) == S)
          return List->getInit(I);
    } else if (const auto *C = llvm::dyn_cast<CompoundStmt>(Parent)) {
      const Compound &Index = indexOf(C);
      auto It = Index.Position.find(S);
      if (It != Index.Position.end() && It->second + 1 < C->size())
        return C->body_begin()[It->second + 1];
    } else if (const auto *DS = llvm::dyn_cast<DeclStmt>(Parent)) {
      const Expr *PreviousInit = nullptr;
      for (const Decl *D : DS->decls())
        if (const auto *VD = llvm::dyn_cast<VarDecl>(D))
          if (const Expr *Init = VD->getInit()) {
            if (PreviousInit == S)
              return Init;
            PreviousInit = Init;
          }
    } else if (const auto *Range = llvm::dyn_cast<CXXForRangeStmt>(Parent)) {
      if (S == Range->getLoopVarStmt())
        return Range->getBody();
    } else if (const auto *If = llvm::dyn_cast<IfStmt>(Parent)) {
      if (S == If->getInit()) {
        if (const Stmt *Var = If->getConditionVariableDeclStmt())
          return Var;
        return If->getCond();
      }
      if (S == If->getConditionVariableDeclStmt())
        return If->getCond();
    } else if (const auto *Sw = llvm::dyn_cast<SwitchStmt>(Parent)) {
      if (S == Sw->getInit()) {
        if (const Stmt *Var = Sw->getConditionVariableDeclStmt())
          return Var;
        return Sw->getCond();
      }
      if (S == Sw->getConditionVariableDeclStmt())
        return Sw->getCond();
    } else if (const auto *W = llvm::dyn_cast<WhileStmt>(Parent)) {
      if (S == W->getConditionVariableDeclStmt())
        return W->getCond();
    }
  }
  return nullptr;
}

bool SequenceIndex::inSequence(const Stmt *Before, const Stmt *After) {
  Before = resolve(Before);
  After = resolve(After);
  // After's ancestors: "After is in the subtree of S" is "S is one of them".
  llvm::DenseSet<const Stmt *> Above;
  llvm::DenseMap<const Compound *, unsigned> Last;
  llvm::SmallVector<const Stmt *, 16> Work{After};
  while (!Work.empty()) {
    const Stmt *S = Work.pop_back_val();
    if (!Above.insert(S).second)
      continue;
    unsigned Position = 0;
    if (const Compound *C = compoundOf(S, Position)) {
      unsigned &L = Last.try_emplace(C, Position).first->second;
      L = std::max(L, Position);
    }
    llvm::append_range(Work, parents(S));
  }
  llvm::DenseSet<const Stmt *> Refuted;
  return follows(Before, After, Above, Last, Refuted);
}

bool SequenceIndex::follows(
    const Stmt *Before, const Stmt *After,
    const llvm::DenseSet<const Stmt *> &Above,
    const llvm::DenseMap<const Compound *, unsigned> &Last,
    llvm::DenseSet<const Stmt *> &Refuted) {
  if (Refuted.contains(Before))
    return false;
  // The chain of successors: in a clean compound statement it runs through
  // the later children, so one lookup answers for all of them.
  for (const Stmt *S = Before; S;) {
    unsigned Position = 0;
    if (const Compound *C = compoundOf(S, Position)) {
      auto It = Last.find(C);
      if (It != Last.end() && It->second > Position)
        return true;
      break;
    }
    S = successor(S);
    if (S && Above.contains(S))
      return true;
  }
  for (const Stmt *Parent : parents(Before))
    if (Parent == After || follows(Parent, After, Above, Last, Refuted))
      return true;
  Refuted.insert(Before);
  return false;
}

} // namespace clang::tidy::devcopy
