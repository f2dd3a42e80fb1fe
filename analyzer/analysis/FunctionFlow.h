// The control flow of one function body, for the loop checks: clang's CFG and
// the sequencing of clang-tidy's ExprSequence (as bugprone-use-after-move uses
// them), built
// once per function and kept for the translation unit.
#pragma once

#include "Parents.h"
#include "Sequence.h"
#include "clang-tidy/utils/ExprSequence.h"
#include "clang/AST/ASTContext.h"
#include "clang/Analysis/Analyses/Dominators.h"
#include "clang/Analysis/CFG.h"
#include "llvm/ADT/DenseMap.h"
#include <memory>

namespace clang::tidy::devcopy {

/// \p S runs on every call of the function whose body is \p Body: no branch,
/// loop, handler or lambda between them (the condition of an `if` and the
/// left side of `&&` do run).
bool runsOnEveryCall(const Stmt &S, const Stmt &Body, ASTContext &Ctx);

/// CFG and sequencing facts of one function body.
class FunctionFlow {
public:
  FunctionFlow(const FunctionBody &F, ASTContext &Ctx);

  /// The loop can start a second iteration: its back edge is reachable in the
  /// CFG (trivially false edges pruned). `do { ... } while (0)` and
  /// `while (true) { ...; break; }` run once.
  bool loopRepeats(const Stmt &Loop);
  /// \p Before is sequenced before \p After (SequenceIndex); false
  /// without a CFG.
  bool inSequence(const Stmt *Before, const Stmt *After) const;
  const CFG *cfg() const { return TheCFG.get(); }
  /// \p S runs whenever the function does: its CFG block post-dominates the
  /// entry. After `if (!log) return 0;` the rest of the body runs only on
  /// the calls that pass the guard. True without a CFG (the parent chain,
  /// runsOnEveryCall, decides alone).
  bool runsWheneverCalled(const Stmt &S);

private:
  bool shiftSequenced(const Stmt *Before, const Stmt *After) const;
  bool conditionSequenced(const Stmt *Before, const Stmt *After) const;
  ASTContext *Ctx = nullptr;
  std::unique_ptr<CFG> TheCFG;
  std::unique_ptr<SequenceIndex> Sequence;
  std::unique_ptr<utils::StmtToBlockMap> Blocks;
  std::unique_ptr<CFGPostDomTree> PostDominators;
  llvm::DenseMap<const Stmt *, bool> Repeats;
};

/// One FunctionFlow per function body, kept for one translation unit.
class FunctionFlowCache {
public:
  /// The flow of the function around \p S, or null outside any function.
  FunctionFlow *around(const Stmt &S, ASTContext &Ctx);
  FunctionFlow &of(const FunctionBody &F, ASTContext &Ctx);
  void clear() { Map.clear(); }

private:
  llvm::DenseMap<const Stmt *, std::unique_ptr<FunctionFlow>> Map;
};

} // namespace clang::tidy::devcopy
