// devcopy-discarded-copy: a copying Tensor call whose result is never used.
#pragma once

#include "DevcopyCheck.h"

namespace clang::tidy::devcopy {

/// Flags `x.to(d);` as a statement, and a local initialised from a copy and
/// never read: the copy is made and dropped, `x` is unchanged. Module::to is
/// in place and never flagged. Fix-it: assign the result back to `x` when `x`
/// is a modifiable variable. Also any other op that returns a new tensor
/// (`x.clamp(0, 1);`, `x.add(y);`, `torch::relu(x);`) as a statement: fix-it
/// to its in-place form (`clamp_`) where one exists.
/// See rules/devcopy-discarded-copy.md.
class DiscardedCopyCheck : public DevcopyCheck {
public:
  using DevcopyCheck::DevcopyCheck;

protected:
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void checkMatch(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void checkDiscardedOp(const CallExpr &Op, const Expr *Recv, ASTContext &Ctx);
};

} // namespace clang::tidy::devcopy
