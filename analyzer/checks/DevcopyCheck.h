// Base class of the devcopy checks: keeps the AST walk to the main file.
//
// <torch/torch.h> is ~280k lines. clang-tidy's matcher walk visits all of it
// for every run with a matcher registered, which alone costs more than the 10%
// the analyzer may add to a parse. Every devcopy rule is about the user's code,
// so a DevcopyCheck, on the first node of the walk (the translation unit),
// narrows ASTContext's traversal scope to the top-level declarations of the
// main file, as clangd does. The scope is shared by every check of the run, so
// it is narrowed only when all enabled checks are devcopy checks, unless the
// option says otherwise:
//
//   MainFileOnly: auto (default) | true | false
//     (CheckOptions: {devcopy-<name>.MainFileOnly: false}, or MainFileOnly)
//   QuickFixTitles: false (default) | true: a fix-it of several edits goes
//     on a note saying it in a few words, for editors (devcopy-clangd's
//     default); see fix().
#pragma once

#include "analysis/DevicesInPlay.h"
#include "analysis/TensorPlace.h"
#include "clang-tidy/ClangTidyCheck.h"
#include "llvm/ADT/DenseSet.h"
#include <memory>

namespace clang::tidy::devcopy {

class DevcopyCheck : public ClangTidyCheck {
public:
  DevcopyCheck(StringRef Name, ClangTidyContext *Context);
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus;
  }
  void registerMatchers(ast_matchers::MatchFinder *Finder) final;
  void check(const ast_matchers::MatchFinder::MatchResult &Result) final;
  void storeOptions(ClangTidyOptions::OptionMap &Opts) override;

  /// True when a --checks glob list enables no check outside devcopy-*
  /// (clang-diagnostic-* are compiler warnings, not AST checks).
  static bool onlyDevcopyChecks(StringRef Globs);

  void onStartOfTranslationUnit() override;

  /// A header that is not found is an error, not a fatal one: clang goes on
  /// parsing either way, but after a fatal error it drops every later
  /// diagnostic, the checks' findings included. The missing header is still
  /// reported (exit status non-zero), and so are the errors that follow
  /// from it, past the error limit; the code that does not depend on it
  /// keeps its findings.
  void registerPPCallbacks(const SourceManager &SM, Preprocessor *PP,
                           Preprocessor *ModuleExpanderPP) override;

  /// Reports one finding per source location and check: the same code seen
  /// again (each instantiation of a template, its pattern) is reported once,
  /// with the notes that follow it. Hides ClangTidyCheck::diag for every
  /// devcopy check, so clang-tidy, the plugin and clangd all get it.
  DiagnosticBuilder diag(SourceLocation Loc, StringRef Description,
                         DiagnosticIDs::Level Level = DiagnosticIDs::Warning);

  /// Attaches the fix-it `Hints` to `Warning`, which is then complete (it is
  /// emitted here; stream nothing into it afterwards). With QuickFixTitles
  /// they go on a note `Title` at `Loc` instead: clangd names a quick fix
  /// after the note carrying it, but a warning's own fix of several edits
  /// after the whole warning. clang-tidy's --fix applies a note's fix only
  /// with --fix-notes, so the command-line default keeps it on the warning.
  void fix(DiagnosticBuilder &Warning, SourceLocation Loc, StringRef Title,
           ArrayRef<FixItHint> Hints);

  /// Where tensors and devices live in this translation unit (TensorPlace.h).
  TensorPlaces &places(ASTContext &Ctx);
  /// Whether code of this translation unit works with an accelerator
  /// (DevicesInPlay.h).
  DevicesInPlay &devicesInPlay(ASTContext &Ctx);

protected:
  /// The check's own matchers (what registerMatchers is for other checks).
  virtual void registerCheckMatchers(ast_matchers::MatchFinder *Finder) = 0;
  /// The check's own results (what check is for other checks).
  virtual void
  checkMatch(const ast_matchers::MatchFinder::MatchResult &Result) = 0;

private:
  std::string Mode;                  // the MainFileOnly option as written
  bool QuickFixTitles;               // the QuickFixTitles option
  bool LimitToMainFile;              // resolved for this run
  llvm::DenseSet<unsigned> Reported; // raw file locations of warnings so far
  bool MuteNotes = false;            // the last warning was a repeat
  std::unique_ptr<TensorPlaces> Places;
  std::unique_ptr<DevicesInPlay> InPlay; // over Places
  ASTContext *PlacesCtx = nullptr;
};

} // namespace clang::tidy::devcopy
