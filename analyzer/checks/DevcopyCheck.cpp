#include "DevcopyCheck.h"
#include "analysis/Unevaluated.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/Lex/Preprocessor.h"

using namespace clang::ast_matchers;

namespace clang::tidy::devcopy {

DevcopyCheck::DevcopyCheck(StringRef Name, ClangTidyContext *Context)
    : ClangTidyCheck(Name, Context),
      Mode(Options.getLocalOrGlobal("MainFileOnly", "auto")),
      QuickFixTitles(Options.getLocalOrGlobal("QuickFixTitles", "false") ==
                     "true") {
  if (Mode == "true" || Mode == "1")
    LimitToMainFile = true;
  else if (Mode == "false" || Mode == "0")
    LimitToMainFile = false;
  else
    LimitToMainFile =
        onlyDevcopyChecks(Context->getOptions().Checks.value_or(""));
}

void DevcopyCheck::storeOptions(ClangTidyOptions::OptionMap &Opts) {
  Options.store(Opts, "MainFileOnly", Mode);
  Options.store(Opts, "QuickFixTitles", QuickFixTitles ? "true" : "false");
}

bool DevcopyCheck::onlyDevcopyChecks(StringRef Globs) {
  // Later globs win, so "-*" drops everything enabled before it; a negative
  // glob only narrows. Whatever positive glob is left decides.
  llvm::SmallVector<StringRef, 16> Enabled;
  llvm::SmallVector<StringRef, 16> Parts;
  Globs.split(Parts, ',', -1, false);
  for (StringRef P : Parts) {
    for (StringRef G : llvm::split(P, '\n')) {
      G = G.trim();
      if (G.empty())
        continue;
      if (G.consume_front("-")) {
        if (G.trim() == "*")
          Enabled.clear();
        continue;
      }
      Enabled.push_back(G);
    }
  }
  for (StringRef G : Enabled)
    if (!G.starts_with("devcopy") && !G.starts_with("clang-diagnostic-"))
      return false;
  return true;
}

void DevcopyCheck::onStartOfTranslationUnit() {
  Reported.clear();
  MuteNotes = false;
  InPlay.reset();
  Places.reset();
  PlacesCtx = nullptr;
}

TensorPlaces &DevcopyCheck::places(ASTContext &Ctx) {
  if (!Places || PlacesCtx != &Ctx) {
    InPlay.reset();
    Places = std::make_unique<TensorPlaces>(Ctx);
    PlacesCtx = &Ctx;
  }
  return *Places;
}

DevicesInPlay &DevcopyCheck::devicesInPlay(ASTContext &Ctx) {
  TensorPlaces &P = places(Ctx);
  if (!InPlay)
    InPlay = std::make_unique<DevicesInPlay>(P);
  return *InPlay;
}

DiagnosticBuilder DevcopyCheck::diag(SourceLocation Loc, StringRef Description,
                                     DiagnosticIDs::Level Level) {
  // A repeat is still built (the caller streams arguments and fix-its into
  // it) but at level Ignored, which the diagnostics engine drops together
  // with the notes that follow it.
  if (Level == DiagnosticIDs::Note
          ? MuteNotes
          : (MuteNotes = !Reported.insert(Loc.getRawEncoding()).second))
    Level = DiagnosticIDs::Ignored;
  return ClangTidyCheck::diag(Loc, Description, Level);
}

void DevcopyCheck::fix(DiagnosticBuilder &Warning, SourceLocation Loc,
                       StringRef Title, ArrayRef<FixItHint> Hints) {
  if (!QuickFixTitles || Hints.size() < 2) {
    for (const FixItHint &H : Hints)
      Warning << H;
    return;
  }
  // The edited code stays highlighted (clangd takes a diagnostic's range
  // from its fix-its when it has no range of its own).
  for (const FixItHint &H : Hints)
    if (H.RemoveRange.getBegin() != H.RemoveRange.getEnd())
      Warning << H.RemoveRange;
  {
    DiagnosticBuilder Emitted(Warning);
  } // the warning first, its note next
  auto Note = diag(Loc, "%0", DiagnosticIDs::Note) << Title;
  for (const FixItHint &H : Hints)
    Note << H;
}

namespace {
/// Once a header is missing, the errors that follow from it are many; the
/// error limit would stop the diagnostics (findings included) at the 20th.
class MissingHeaderCallbacks : public PPCallbacks {
public:
  explicit MissingHeaderCallbacks(DiagnosticsEngine &Diags) : Diags(Diags) {}
  bool FileNotFound(StringRef) override {
    Diags.setErrorLimit(0);
    return false; // clang reports it, as an error
  }

private:
  DiagnosticsEngine &Diags;
};
} // namespace

void DevcopyCheck::registerPPCallbacks(const SourceManager &, Preprocessor *PP,
                                       Preprocessor *) {
  PP->getDiagnostics().setFatalsAsError(true);
  PP->addPPCallbacks(
      std::make_unique<MissingHeaderCallbacks>(PP->getDiagnostics()));
}

void DevcopyCheck::registerMatchers(MatchFinder *Finder) {
  if (LimitToMainFile)
    Finder->addMatcher(translationUnitDecl().bind("devcopy.tu"), this);
  registerCheckMatchers(Finder);
}

void DevcopyCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *TU = Result.Nodes.getNodeAs<TranslationUnitDecl>("devcopy.tu");
  if (!TU) {
    // Code in sizeof, decltype, static_assert, ... never runs.
    for (const auto &[Id, Node] : Result.Nodes.getMap())
      if ((Node.get<Stmt>() || Node.get<VarDecl>()) &&
          isUnevaluated(Node, *Result.Context))
        return;
    checkMatch(Result);
    return;
  }
  // The TU is matched before its children are walked, and the walk reads the
  // traversal scope only then: narrowing it here takes effect for this run.
  ASTContext &Ctx = *Result.Context;
  std::vector<Decl *> Scope = Ctx.getTraversalScope();
  if (Scope.size() != 1 || !isa<TranslationUnitDecl>(Scope.front()))
    return; // already narrowed (another devcopy check, or clangd)
  const SourceManager &SM = Ctx.getSourceManager();
  Scope.clear();
  for (Decl *D : TU->decls())
    if (!D->isImplicit() &&
        SM.isInMainFile(SM.getExpansionLoc(D->getLocation())))
      Scope.push_back(D);
  Ctx.setTraversalScope(Scope);
}

} // namespace clang::tidy::devcopy
