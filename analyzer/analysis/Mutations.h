// Whether code changes a variable, where clang's ExprMutationAnalyzer answers
// wrongly for LibTorch: a tensor's in-place methods (`add_`) are const, so it
// misses them, and every `t.to(device)` binds `device` to TensorOptions'
// forwarding-reference constructor, which it takes for a change.
#pragma once

#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"

namespace clang::tidy::devcopy {

/// A Device or TensorOptions (a value its readers copy).
bool isDeviceValue(QualType T);
/// Named like an in-place tensor method: `add_`, `zero_`.
bool isInPlaceName(const NamedDecl *D);
/// \p Ref, a Device or TensorOptions, is assigned or calls a non-const
/// method (set_index).
bool changesDeviceValue(const DeclRefExpr &Ref, ASTContext &Ctx);
/// \p Ref, or a view of it (x[i], x.narrow(...), x.index(...): tensors
/// sharing its storage), is changed by an in-place method or an assignment to
/// the view.
bool changedInPlace(const Expr *Ref, ASTContext &Ctx);

} // namespace clang::tidy::devcopy
