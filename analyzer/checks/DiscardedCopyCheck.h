// devcopy-discarded-copy: a copying Tensor call whose result is never used.
#pragma once

#include "DevcopyCheck.h"
#include "analysis/TorchMatchers.h"

namespace clang::tidy::devcopy {

/// Flags `x.to(d);` as a statement, and a local initialised from a copy and
/// never read: the copy is made and dropped, `x` is unchanged. Module::to is
/// in place and never flagged. Fix-it: assign the result back to `x` when `x`
/// is a modifiable variable. Also any other op that returns a new tensor
/// (`x.clamp(0, 1);`, `x.add(y);`, `torch::relu(x);`) as a statement: fix-it
/// to its in-place form (`clamp_`) where one exists. Also `x.item();` as a
/// statement (a sync whose value is dropped) and a copy made only to read its
/// options (`x.to(torch::kLong).options()`).
/// See rules/devcopy-discarded-copy.md.
class DiscardedCopyCheck : public DevcopyCheck {
public:
  using DevcopyCheck::DevcopyCheck;

protected:
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void
  checkMatch(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void checkDiscardedOp(const CallExpr &Op, const Expr *Recv, ASTContext &Ctx);
  void checkOptionsRead(const CXXMemberCallExpr &Read,
                        const CXXMemberCallExpr &Copy, const Expr &Recv,
                        const CopyTarget &T, ASTContext &Ctx);
};

} // namespace clang::tidy::devcopy
