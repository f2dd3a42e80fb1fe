// devcopy-redundant-chain: a copy whose result is copied again at once.
#pragma once

#include "clang-tidy/ClangTidyCheck.h"

namespace clang::tidy::devcopy {

/// Flags `x.cpu().cuda()` (round trip), `x.to(d).to(d)` (same target twice),
/// `x.clone().to(d)` / `x.to(d).clone()` (two copies where one does),
/// `x.to(d).to(kHalf)` (two copies: one `to(d, kHalf)` does both) and
/// `y.copy_(x.to(d))` (a temporary made only to feed copy_, which converts
/// itself). Fix-its where the combined call is unambiguous.
/// See rules/devcopy-redundant-chain.md.
class RedundantChainCheck : public ClangTidyCheck {
public:
  using ClangTidyCheck::ClangTidyCheck;
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  void checkChain(const CXXMemberCallExpr &Outer, const CXXMemberCallExpr &Inner,
                  const Expr &Recv, const ASTContext &Ctx);
  void checkCopyInto(const CXXMemberCallExpr &Inner, const Expr &Recv, const ASTContext &Ctx);
};

} // namespace clang::tidy::devcopy
