// devcopy-redundant-chain: a copy whose result is copied again at once.
#pragma once

#include "DevcopyCheck.h"

namespace clang::tidy::devcopy {

/// Flags `x.cpu().cuda()` (round trip), `x.to(d).to(d)` (same target twice),
/// `x.clone().to(d)` / `x.to(d).clone()` (two copies where one does),
/// `x.to(d).to(kHalf)` (two copies: one `to(d, kHalf)` does both) and
/// `y.copy_(x.to(d))` (a temporary made only to feed copy_, which converts
/// itself). Fix-its where the combined call is unambiguous.
/// See rules/devcopy-redundant-chain.md.
class RedundantChainCheck : public DevcopyCheck {
public:
  using DevcopyCheck::DevcopyCheck;

protected:
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void checkMatch(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void checkChain(const CXXMemberCallExpr &Outer, const CXXMemberCallExpr &Inner,
                  const Expr &Recv, const ASTContext &Ctx);
  void checkCopyInto(const CXXMemberCallExpr &Inner, const Expr &Recv, const ASTContext &Ctx);
};

} // namespace clang::tidy::devcopy
