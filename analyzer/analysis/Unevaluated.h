// Code that never runs although it is written in a function: the operands of
// sizeof, alignof, decltype, noexcept(...), typeid of a non-polymorphic type,
// static_assert and requires-expressions, and the discarded branch of an
// `if constexpr`. No devcopy rule reports a copy or a sync there, and no
// analysis counts it as a read.
#pragma once

#include "clang/AST/ASTTypeTraits.h"
#include "clang/ASTMatchers/ASTMatchers.h"

namespace clang::tidy::devcopy {

/// True when \p Node (a statement or declaration of a function body) is in
/// an unevaluated operand or a discarded `if constexpr` branch.
bool isUnevaluated(const DynTypedNode &Node, ASTContext &Ctx);

namespace matchers {
/// A statement that never runs (see isUnevaluated).
AST_MATCHER(Stmt, unevaluated) {
  return isUnevaluated(DynTypedNode::create(Node), Finder->getASTContext());
}
} // namespace matchers

} // namespace clang::tidy::devcopy
