#include "DiscardedCopyCheck.h"
#include "TorchMatchers.h"
#include "clang/AST/ASTContext.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {
// Set by Sema on the first DeclRefExpr naming the variable: a local that is
// never referenced needs no body walk.
AST_MATCHER(VarDecl, isNeverReferenced) {
  return !Node.isReferenced() && !Node.hasAttr<UnusedAttr>();
}
} // namespace

void DiscardedCopyCheck::registerCheckMatchers(MatchFinder *Finder) {
  // The call is the whole statement (through the temporaries a returned
  // Tensor leaves behind). `(void)x.to(d)` says the discard is intended.
  auto Discarded = expr(ignoringImplicit(matchers::copyCall("copy")));
  Finder->addMatcher(
      stmt(anyOf(compoundStmt(forEach(Discarded), unless(hasParent(stmtExpr()))),
                 ifStmt(eachOf(hasThen(Discarded), hasElse(Discarded))),
                 forStmt(hasBody(Discarded)), whileStmt(hasBody(Discarded)),
                 doStmt(hasBody(Discarded)), cxxForRangeStmt(hasBody(Discarded)))),
      this);
  // A local initialised from a copy that nothing ever reads.
  Finder->addMatcher(varDecl(hasLocalStorage(), unless(parmVarDecl()), isNeverReferenced(),
                             unless(isInstantiated()),
                             hasInitializer(ignoringImplicit(matchers::copyCall("copy"))))
                         .bind("var"),
                     this);
}

void DiscardedCopyCheck::checkMatch(const MatchFinder::MatchResult &Result) {
  const auto *Call = Result.Nodes.getNodeAs<CXXMemberCallExpr>("copy");
  const auto *Recv = Result.Nodes.getNodeAs<Expr>("copy.recv");
  if (!Call || !Recv || Call->getBeginLoc().isInvalid())
    return;
  const ASTContext &Ctx = *Result.Context;
  CopyTarget T = describeCopy(*Call, Ctx);
  std::string Name = receiverName(Recv, Ctx);
  std::string Where = describeDestination(T);
  // contiguous() copies only a non-contiguous tensor; say so, not "every byte".
  std::string What = T.Method == "contiguous" ? "'" + Name + "' (when not contiguous)"
                                              : "every byte of '" + Name + "'";

  if (const auto *Var = Result.Nodes.getNodeAs<VarDecl>("var")) {
    diag(Var->getLocation(),
         "'%0' holds a copy of %1 %2 and is never read: the copy is wasted; use '%0' "
         "or remove it")
        << Var->getName() << What << Where;
    return;
  }
  std::string Extra =
      T.NonBlocking && T.Device == DeviceKind::CPU
          ? "; a non-blocking copy to the CPU also keeps a pinned host buffer cached"
          : "";
  auto D = diag(Call->getBeginLoc(),
                "result of '%0()' is discarded: %1 is copied %2 and the copy is dropped at "
                "once, '%3' itself is unchanged%4; assign the result or remove the call")
           << T.Method << What << Where << Name << Extra;
  // Module-like intent `x.to(d);` means `x = x.to(d);`.
  if (const Expr *Target = assignableReceiver(Recv, Ctx);
      Target && !Call->getBeginLoc().isMacroID())
    D << FixItHint::CreateInsertion(Call->getBeginLoc(), sourceText(Target, Ctx) + " = ");
}

} // namespace clang::tidy::devcopy
