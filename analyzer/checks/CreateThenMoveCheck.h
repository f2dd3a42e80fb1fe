// devcopy-create-then-move: a tensor made on the host and moved at once.
#pragma once

#include "DevcopyCheck.h"

namespace clang::tidy::devcopy {

/// Flags `torch::zeros(s).to(d)`, `torch::randn(s).cuda()`, `torch::ones_like(x).to(d)`:
/// the tensor is filled on the host, then copied. Passing the device in the
/// factory's TensorOptions creates it in place. `from_blob(...).to(d)` uploads
/// real host data and is not flagged. See rules/devcopy-create-then-move.md.
class CreateThenMoveCheck : public DevcopyCheck {
public:
  using DevcopyCheck::DevcopyCheck;

protected:
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void checkMatch(const ast_matchers::MatchFinder::MatchResult &Result) override;
};

} // namespace clang::tidy::devcopy
