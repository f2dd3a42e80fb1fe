// Fix-its that cannot damage code. A rewrite sees only the tokens the AST
// knows: a comment or a preprocessor directive inside the replaced text
// (`#ifdef VARIANT` / `.to(dev)` / `#else` / `.to(dev2)` / `#endif`, a
// `// note` between two calls) would be deleted with it, and a range that
// starts or ends inside a macro expansion would rewrite the macro's uses.
// Such a fix is not offered; the finding stays.
#pragma once

#include "clang/Basic/Diagnostic.h"
#include "llvm/ADT/ArrayRef.h"

namespace clang {
class ASTContext;
namespace tidy::devcopy {

/// \p Range lies in one file, outside any macro, and its text holds no
/// comment and no preprocessor directive.
bool isSafeToRewrite(CharSourceRange Range, const ASTContext &Ctx);

/// Every fix of \p Fixes is safe: isSafeToRewrite for what it removes, a
/// file location for what it inserts.
bool areSafeFixes(llvm::ArrayRef<FixItHint> Fixes, const ASTContext &Ctx);

/// Adds every fix of \p Fixes to \p D, or none when one of them is not safe
/// (isSafeToRewrite for what it removes, a file location for what it
/// inserts).
void addSafeFixes(DiagnosticBuilder &D, llvm::ArrayRef<FixItHint> Fixes,
                  const ASTContext &Ctx);

} // namespace tidy::devcopy
} // namespace clang
