// devcopy-create-then-move: a tensor made on the host and moved at once.
#pragma once

#include "clang-tidy/ClangTidyCheck.h"

namespace clang::tidy::devcopy {

/// Flags `torch::zeros(s).to(d)`, `torch::randn(s).cuda()`, `torch::ones_like(x).to(d)`:
/// the tensor is filled on the host, then copied. Passing the device in the
/// factory's TensorOptions creates it in place. `from_blob(...).to(d)` uploads
/// real host data and is not flagged. See rules/devcopy-create-then-move.md.
class CreateThenMoveCheck : public ClangTidyCheck {
public:
  using ClangTidyCheck::ClangTidyCheck;
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }
  void registerMatchers(ast_matchers::MatchFinder *Finder) override;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

} // namespace clang::tidy::devcopy
