#include "CreateThenMoveCheck.h"
#include "TorchMatchers.h"
#include "clang/AST/ASTContext.h"
#include "clang/Lex/Lexer.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

namespace {
/// Index of the factory's TensorOptions parameter, or -1.
int optionsParam(const FunctionDecl &FD) {
  for (unsigned I = 0; I < FD.getNumParams(); ++I) {
    QualType T = FD.getParamDecl(I)->getType().getNonReferenceType().getCanonicalType();
    const auto *TD = T->getAsTagDecl();
    if (TD && TD->getIdentifier() && TD->getName() == "TensorOptions")
      return static_cast<int>(I);
  }
  return -1;
}
} // namespace

void CreateThenMoveCheck::registerCheckMatchers(MatchFinder *Finder) {
  Finder->addMatcher(
      expr(matchers::tensorMethodCall({"to", "cuda"}, "move"),
           cxxMemberCallExpr(on(ignoringImplicit(matchers::factoryCall("factory"))))),
      this);
}

void CreateThenMoveCheck::checkMatch(const MatchFinder::MatchResult &Result) {
  const auto *Move = Result.Nodes.getNodeAs<CXXMemberCallExpr>("move");
  const auto *Factory = Result.Nodes.getNodeAs<CallExpr>("factory");
  const FunctionDecl *FD = Factory ? Factory->getDirectCallee() : nullptr;
  if (!Move || !FD)
    return;
  const ASTContext &Ctx = *Result.Context;
  CopyTarget T = describeCopy(*Move, Ctx);
  // Only moves off the host count: to(kCPU) and dtype-only conversions are
  // not a transfer (the latter is a different waste, left alone here).
  if (!T.changesDevice() || T.Device == DeviceKind::CPU)
    return;
  const int OptIdx = optionsParam(*FD);
  const Expr *OptArg = OptIdx >= 0 && static_cast<unsigned>(OptIdx) < Factory->getNumArgs() &&
                               !isa<CXXDefaultArgExpr>(Factory->getArg(OptIdx))
                           ? Factory->getArg(OptIdx)
                           : nullptr;
  // A factory that already names a device makes this a device-to-device move.
  if (OptArg && describeOptions(OptArg, Ctx).changesDevice())
    return;
  const auto *NSDecl = dyn_cast<NamespaceDecl>(FD->getDeclContext()->getRedeclContext());
  const std::string NS = NSDecl ? NSDecl->getName().str() : "torch";
  const std::string Dev = T.Method == "cuda" ? NS + "::kCUDA" : T.DeviceText;

  std::optional<uint64_t> Bytes = factoryBytes(*Factory, Ctx);
  auto D = diag(Move->getExprLoc(),
                "'%0::%1()' fills a new %5tensor on the host and '%2()' copies it %3 at once: "
                "the tensor is written twice and crosses the bus; create it there with "
                "'%0::TensorOptions().device(%4)'")
           << NS << FD->getName() << T.Method << describeDestination(T) << Dev
           << (Bytes ? formatBytes(*Bytes) + " " : std::string());

  // Fix-it: device into the options, `.to(...)` removed. Only for a plain
  // `.to(device)` / `.cuda()` with no macro in the way.
  if (OptIdx < 0 || Factory->getBeginLoc().isMacroID() || Move->getEndLoc().isMacroID() ||
      (T.Method == "to" && (writtenArgs(*Move) != 1 || T.changesDType())))
    return;
  const SourceManager &SM = Ctx.getSourceManager();
  const LangOptions &LO = Ctx.getLangOpts();
  SourceLocation FactoryEnd = Lexer::getLocForEndOfToken(Factory->getEndLoc(), 0, SM, LO);
  if (OptArg) {
    const Expr *Written = ignoreConversions(OptArg);
    std::string Text = sourceText(Written, Ctx);
    const auto *TD =
        Written->getType().getNonReferenceType().getCanonicalType()->getAsTagDecl();
    bool IsOptions = TD && TD->getIdentifier() && TD->getName() == "TensorOptions";
    Text = IsOptions ? Text + ".device(" + Dev + ")"
                     : NS + "::TensorOptions(" + Text + ").device(" + Dev + ")";
    D << FixItHint::CreateReplacement(Written->getSourceRange(), Text);
  } else {
    // Every parameter before the options must be written to append it.
    if (writtenArgs(*Factory) != static_cast<unsigned>(OptIdx))
      return;
    std::string Text = NS + "::TensorOptions().device(" + Dev + ")";
    if (OptIdx == 0)
      D << FixItHint::CreateInsertion(Factory->getRParenLoc(), Text);
    else
      D << FixItHint::CreateInsertion(
          Lexer::getLocForEndOfToken(Factory->getArg(OptIdx - 1)->getEndLoc(), 0, SM, LO),
          ", " + Text);
  }
  D << FixItHint::CreateRemoval(
      CharSourceRange::getCharRange(FactoryEnd, Lexer::getLocForEndOfToken(
                                                    Move->getEndLoc(), 0, SM, LO)));
}

} // namespace clang::tidy::devcopy
