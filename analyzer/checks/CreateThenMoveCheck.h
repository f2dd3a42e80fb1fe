// devcopy-create-then-move: a tensor made on the host and moved at once.
#pragma once

#include "DevcopyCheck.h"

namespace clang::tidy::devcopy {

/// Flags `torch::zeros(s).to(d)`, `torch::randn(s).cuda()`, the same with
/// casts and views between (`torch::eye(n).unsqueeze(0).to(d)`), and
/// factories made only to read `.options()`: the tensor is filled on the
/// host, then copied. Passing the device in the factory's TensorOptions
/// creates it in place. `from_blob(...).to(d)` uploads real host data, and
/// `*_like(t)` is made where `t` lives (TensorPlace.h): not flagged.
/// See rules/devcopy-create-then-move.md.
class CreateThenMoveCheck : public DevcopyCheck {
public:
  using DevcopyCheck::DevcopyCheck;

protected:
  void registerCheckMatchers(ast_matchers::MatchFinder *Finder) override;
  void
  checkMatch(const ast_matchers::MatchFinder::MatchResult &Result) override;

private:
  /// `torch::zeros({1}).to(d).options()`: a tensor made to read its options.
  void checkOptionsRead(const CXXMemberCallExpr &Read,
                        const CXXMemberCallExpr *Move, ASTContext &Ctx);
  void onEndOfTranslationUnit() override { ReadMoves.clear(); }

  llvm::DenseSet<const CXXMemberCallExpr *>
      ReadMoves; // reported with their read
};

} // namespace clang::tidy::devcopy
