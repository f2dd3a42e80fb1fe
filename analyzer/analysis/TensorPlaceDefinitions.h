// Internal to TensorPlace*.cpp: the definitions of a variable that its
// place is computed from, and the recursion bound they share.
#pragma once

#include "clang/AST/Expr.h"
#include "llvm/ADT/SmallVector.h"

namespace clang {
class ASTContext;
class ParmVarDecl;
class VarDecl;
namespace tidy::devcopy {

/// How deep one question about a place may recurse.
constexpr unsigned MaxPlaceDepth = 24;

/// A definition of a local variable: its initialiser or an assignment (the
/// statement) and the value it stores (nullptr when it escapes by reference).
struct Definition {
  const Stmt *At;
  const Expr *Value;
};

/// Every definition of \p VD: its initialiser, then every assignment and
/// escape in its function's body, or in the main file for a global.
llvm::SmallVector<Definition, 4> definitions(const VarDecl *VD,
                                             ASTContext &Ctx);

/// \p D is \p P's default argument, not a definition in the body.
bool isDefaultArgument(const ParmVarDecl *P, const Definition &D);

} // namespace tidy::devcopy
} // namespace clang
