// Whether an expression's value is dropped where it stands: the positions of
// clang-tidy's bugprone-unused-return-value (a block's statement, the body or
// init of if/for/while/do/switch, a case, default or label statement, a
// for's increment), reached through parentheses, attributes (`[[likely]]`),
// the temporaries a returned Tensor leaves behind. The left side of a
// comma is not one (`m << a.item<float>(), b.item<float>();` fills a matrix).
// `(void)x` is a discard on purpose and does not count; the last statement of a
// statement expression is its value.
#pragma once

#include "clang/AST/Expr.h"
#include "clang/ASTMatchers/ASTMatchers.h"

namespace clang::tidy::devcopy {

/// True when nothing reads the value of \p E.
bool isDiscardedValue(const Expr &E, ASTContext &Ctx);

namespace matchers {
/// An expression whose value nothing reads (see isDiscardedValue).
AST_MATCHER(Expr, discardedValue) {
  return isDiscardedValue(Node, Finder->getASTContext());
}
} // namespace matchers

} // namespace clang::tidy::devcopy
