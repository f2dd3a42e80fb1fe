// devcopy-discarded-copy: a copying Tensor call whose result is never used.
#pragma once

#include "clang-tidy/ClangTidyCheck.h"

namespace clang::tidy::devcopy {

/// Flags `x.to(d);` as a statement, and a local initialised from a copy and
/// never read: the copy is made and dropped, `x` is unchanged. Module::to is
/// in place and never flagged. Fix-it: assign the result back to `x` when `x`
/// is a modifiable variable. See rules/devcopy-discarded-copy.md.
class DiscardedCopyCheck : public ClangTidyCheck {
public:
  using ClangTidyCheck::ClangTidyCheck;
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

} // namespace clang::tidy::devcopy
