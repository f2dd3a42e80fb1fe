// devcopy-redundant-chain: a copy whose result is copied again at once.
#pragma once

#include "DevcopyCheck.h"

namespace clang::tidy::devcopy {

/// Flags `x.cpu().cuda()` (round trip), `x.to(d).to(d)` (same target twice),
/// `x.clone().to(d)` / `x.to(d).clone()` / `x.to(d).detach().clone()` (two
/// copies where one does), `x.to(d).to(kHalf)` (the wide tensor crosses: one
/// `to(d, kHalf)` moves fewer bytes), `(x.to(d) == v).cpu()` (uploaded only
/// to compare) and `y.copy_(x.to(d))` (a temporary made only to feed copy_,
/// which converts itself). Only where one call is strictly cheaper: a first
/// copy to where `x` already lives (TensorPlace.h) copies nothing, and a cast
/// before a transfer is the good order. Fix-its where the combined call is
/// unambiguous.
/// See rules/devcopy-redundant-chain.md.
class RedundantChainCheck : public DevcopyCheck {
public:
  using DevcopyCheck::DevcopyCheck;

protected:
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void
  checkMatch(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void checkChain(const CXXMemberCallExpr &Outer,
                  const CXXMemberCallExpr &Inner, const Expr &Recv,
                  const CXXMemberCallExpr *Detach, ASTContext &Ctx);
  void checkCompareTrip(const CXXMemberCallExpr &Down,
                        const CXXMemberCallExpr &Up, const Expr &Recv,
                        const Expr &Other, ASTContext &Ctx);
  void checkCopyInto(const CXXMemberCallExpr &Inner, const Expr &Recv,
                     ASTContext &Ctx);
};

} // namespace clang::tidy::devcopy
