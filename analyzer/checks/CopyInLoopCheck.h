// devcopy-copy-in-loop: a device or dtype copy of a loop-invariant tensor,
// repeated on every iteration of a loop.
#pragma once

#include "DevcopyCheck.h"
#include "analysis/LoopFacts.h"

namespace clang::tidy::devcopy {

/// Flags `mask.to(device)` inside a loop when neither `mask` nor `device`
/// changes in the loop and the copy runs on every iteration: hoist it. The
/// tensor may be a local, a member of `this` that the loop never changes, or
/// their elements walked again by an inner loop (`anchors_[i]` in a per-batch
/// loop). Only main-file code is analysed. See rules/devcopy-copy-in-loop.md.
class CopyInLoopCheck : public DevcopyCheck {
public:
  using DevcopyCheck::DevcopyCheck;
  void onEndOfTranslationUnit() override { Loops.clear(); }

protected:
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void
  checkMatch(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  /// The copy's result is bound to a local of the loop that is then changed
  /// in place: each iteration needs a fresh buffer, hoisting would share one.
  bool resultMutated(const Expr &Call, LoopInvariance &Inv, ASTContext &Ctx);
  bool sameEachIteration(const Expr *E, const Stmt &Loop, LoopInvariance &Inv,
                         ASTContext &Ctx);
  bool memberUnchanged(const FieldDecl &F, const Stmt &Loop, ASTContext &Ctx);
  /// A helper of this unit called in the loop copies its parameter on every
  /// call, given the same tensor each iteration (CopyInLoopCalls.cpp).
  void checkCallInLoop(const CallExpr &Call, ASTContext &Ctx);

  LoopInvarianceCache Loops;
};

} // namespace clang::tidy::devcopy
