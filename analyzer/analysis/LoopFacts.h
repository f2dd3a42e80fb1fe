// What a statement's enclosing loop says about it: shared by
// devcopy-copy-in-loop and devcopy-host-sync-in-loop.
//
// Both checks ask the same two questions about a call: does it run on every
// iteration of a loop, and does the data it reads change in that loop? The
// first is a walk up the parent map (collecting the branch conditions passed on
// the way); the second combines clang's ExprMutationAnalyzer with a walk for
// LibTorch's in-place methods, which are `const` member functions and so
// invisible to the analyzer (`x.add_(1)`, `x[0] = 1`, `x.narrow(0, 0,
// 1).copy_(y)`).
#pragma once

#include "FunctionFlow.h"
#include "clang/AST/ASTContext.h"
#include "clang/Analysis/Analyses/ExprMutationAnalyzer.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include <memory>
#include <optional>

namespace clang::tidy::devcopy {

/// The innermost loop running a statement on each iteration, and the
/// conditions of the branches between the two.
struct EnclosingLoop {
  const Stmt *Loop = nullptr;
  /// Conditions guarding the statement inside the loop body. A null entry
  /// stands for a guard that is never every-iteration (a catch handler).
  llvm::SmallVector<const Expr *, 2> Guards;
  /// Per guard, the branch holding the statement (an if's then or else), or
  /// null for the other kinds of guard.
  llvm::SmallVector<const Stmt *, 2> Branches;
};

/// The innermost for / range-for / while / do loop whose body, condition or
/// increment contains \p S, stopping at function and lambda boundaries (a
/// lambda's body runs when called, not where it is written). The init of a
/// for loop and the range of a range-for run once: for them the walk goes on
/// to an outer loop, as does the initializer of a `static` local. With
/// \p Flows, a loop that cannot start a second iteration (`do { ... } while
/// (0)`, `while (true) { ...; break; }`) is not a loop either.
std::optional<EnclosingLoop>
findEnclosingLoop(const Stmt &S, ASTContext &Ctx,
                  FunctionFlowCache *Flows = nullptr);

/// Answers "does this change in the loop?" for one loop; memoised.
class LoopInvariance {
public:
  LoopInvariance(const Stmt &Loop, ASTContext &Ctx);

  /// A local variable or parameter declared outside the loop and not modified
  /// in it (assigned, passed by non-const reference, changed in place).
  bool isInvariant(const VarDecl *VD);
  /// Every variable \p E names is invariant (constants and enumerators are),
  /// and it calls nothing but methods and operators of tensors, devices and
  /// tensor options (values that depend only on their operands). `this` and
  /// free function calls are taken as changing.
  bool isInvariant(const Expr *E);
  /// \p E names at least one local variable or parameter.
  static bool namesLocal(const Expr *E);
  /// All guards of \p L are invariant: the statement runs on every iteration
  /// (or never, when the invariant condition is false).
  bool runsEveryIteration(const EnclosingLoop &L);
  /// Like runsEveryIteration, but a guard that only filters this iteration's
  /// data (`if (gj < h && gi < w)` on values computed in the body) is taken
  /// as passed on a typical iteration. A guard is not passed on a typical
  /// iteration when it uses `%`, names a variable the loop carries from one
  /// iteration to the next (a counter, a flag, `order` in greedy NMS) or a
  /// field, calls a function on no data of this iteration, or its branch
  /// leaves the loop (break, return, throw, goto: it runs at most once).
  /// The else of an equality test (`if (i % N == 0) ... else ...`) and the
  /// then of an inequality are taken on a typical iteration.
  bool runsOnTypicalIteration(const EnclosingLoop &L);
  /// No branch around the statement leaves the loop: whenever it runs, the
  /// loop goes on (it may run on many iterations, not at most once).
  bool staysInLoop(const EnclosingLoop &L);
  /// \p VD is modified inside the loop (see isInvariant(VarDecl)).
  bool isMutatedInLoop(const VarDecl *VD);

  /// The references to local variables inside the loop, per variable.
  llvm::ArrayRef<const DeclRefExpr *> refsTo(const VarDecl *VD);
  /// \p Ref (a reference inside the loop) changes its variable there.
  bool refMutates(const DeclRefExpr *Ref);
  /// The references of refsTo(VD) that change it (refMutates), once.
  llvm::ArrayRef<const DeclRefExpr *> mutatingRefsTo(const VarDecl *VD);

private:
  bool isInvariantStmt(const Stmt *S, unsigned Depth);
  /// \p G tests only data of this iteration (and invariants); see
  /// runsOnTypicalIteration.
  bool isDataFilter(const Expr *G);
  /// \p Branch is the side of `if (G)` taken on most iterations when \p G
  /// is an equality (its else) or an inequality (its then).
  bool takesCommonSide(const Expr *G, const Stmt *Branch);
  bool testsIterationData(const Expr *E, unsigned Depth, bool &NamesData);
  /// \p VD is declared in the loop's body (or is a range-for's element):
  /// a new variable on every iteration.
  bool declaredPerIteration(const VarDecl *VD);
  /// \p Ref is the index of a subscript of something invariant (`done[i]`).
  bool indexesInvariant(const DeclRefExpr *Ref);
  const Stmt &scopeOf(const Expr *Ref);

  const Stmt &Loop;
  ASTContext &Ctx;
  ExprMutationAnalyzer::Memoized Memo;
  std::optional<llvm::DenseMap<const VarDecl *,
                               llvm::SmallVector<const DeclRefExpr *, 4>>>
      Refs;
  llvm::DenseMap<const VarDecl *, bool> Cache;
  llvm::DenseMap<const VarDecl *, bool> Mutated;
  llvm::DenseMap<const VarDecl *, llvm::SmallVector<const DeclRefExpr *, 2>>
      Mutating;
};

/// One LoopInvariance per loop and one FunctionFlow per function, kept for
/// one translation unit.
class LoopInvarianceCache {
public:
  LoopInvariance &get(const Stmt &Loop, ASTContext &Ctx);
  /// findEnclosingLoop, skipping loops that run once.
  std::optional<EnclosingLoop> enclosingLoop(const Stmt &S, ASTContext &Ctx) {
    return findEnclosingLoop(S, Ctx, &Flows);
  }
  FunctionFlowCache &flows() { return Flows; }
  void clear() {
    Map.clear();
    Flows.clear();
  }

private:
  FunctionFlowCache Flows;
  llvm::DenseMap<const Stmt *, std::unique_ptr<LoopInvariance>> Map;
};

} // namespace clang::tidy::devcopy
