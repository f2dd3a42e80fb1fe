// Walking up the AST, one way for every check and analysis. clang's parent
// map gives a node two parents where the AST shares it (the elements of an
// InitListExpr sit under its syntactic and its semantic form): parentOf()
// follows the form as written and says when there was a choice;
// parentStmts() gives every statement one step up, through any declaration
// between, as clang-tidy's ExprSequence (getParentStmts) does.
#pragma once

#include "clang/AST/ASTContext.h"
#include "clang/AST/ASTTypeTraits.h"
#include "llvm/ADT/SmallVector.h"

namespace clang::tidy::devcopy {

/// The parent of \p N, or a null node at the top. Of two parents, the one as
/// written; \p Shared, when given, is set to whether \p N had more than one.
DynTypedNode parentOf(const DynTypedNode &N, ASTContext &Ctx,
                      bool *Shared = nullptr);
template <typename T>
DynTypedNode parentOf(const T &Node, ASTContext &Ctx, bool *Shared = nullptr) {
  return parentOf(DynTypedNode::create(Node), Ctx, Shared);
}

/// The parent of \p S when it is an expression; null for a null \p S.
const Expr *parentExpr(const Stmt *S, ASTContext &Ctx);

/// Every statement one step above \p S, through any declaration in between,
/// in the plain AST (an InitListExpr's elements have both of its forms).
llvm::SmallVector<const Stmt *, 1> parentStmts(const Stmt &S, ASTContext &Ctx);

/// The function whose body holds \p S, with that body; a null Fn outside any
/// function.
struct FunctionBody {
  const Decl *Fn = nullptr;
  const Stmt *Body = nullptr;
};
/// Whether a lambda's body is a function of its own (its call operator: the
/// CFG to read) or belongs to the function that holds the lambda.
enum class Lambdas { Own, OfCaller };
FunctionBody enclosingFunction(const Stmt &S, ASTContext &Ctx,
                               Lambdas L = Lambdas::Own);

} // namespace clang::tidy::devcopy
