// What a Module::to call moves, and which members a module registers: the
// facts devcopy-repeated-module-move compares. Nothing here needs the parent
// map, so it also works on headers outside a narrowed traversal scope.
#pragma once

#include "clang/AST/DeclCXX.h"
#include "clang/ASTMatchers/ASTMatchers.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <string>

namespace clang::tidy::devcopy {

/// The object a module call is made on, as a path of canonical declarations
/// from its root: {} for `this`, {var}, {field}, {var, field} for
/// `m->enc->to(d)`, through ModuleHolder's and shared_ptr's `->` and `*`,
/// `.get()` and `.ptr()`. False for anything else (a call result, an element).
bool objectPath(const Expr *E, llvm::SmallVectorImpl<const ValueDecl *> &Path,
                int Depth = 0);
/// "model.enc": the names along an objectPath, joined with dots.
std::string objectPathName(llvm::ArrayRef<const ValueDecl *> Path);

/// The module class a member's type holds: Impl for a TORCH_MODULE holder,
/// ModuleHolder<Impl>, std::shared_ptr<Impl>, Impl* or Impl itself; canonical.
const CXXRecordDecl *moduleClassOf(QualType T, int Depth = 0);

/// How a member gets registered, each binding the FieldDecl as "registered":
/// `f = register_module(...)`, `register_module("f", f)` (statements) and
/// `: f(register_module(...))` (constructors).
ast_matchers::StatementMatcher assignedRegistration();
ast_matchers::StatementMatcher passedRegistration();
ast_matchers::DeclarationMatcher initializedRegistration();

/// Constructors that hand a local (or parameter) to register_module: binds
/// the constructor "regctor", the variable "regvar", and the member it is
/// assigned to, if any, "regfield". The variable moved before or after is the
/// same module as the member.
ast_matchers::DeclarationMatcher registeredLocal();

} // namespace clang::tidy::devcopy
