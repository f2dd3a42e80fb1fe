#include "Runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <tuple>

#include "CheckProfile.h"
#include "Progress.h"
#include "clang-tidy/ClangTidy.h"
#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "clang-tidy/ClangTidyModule.h"
#include "devcopy/rules_catalog.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/CrashRecoveryContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/VirtualFileSystem.h"

namespace devcopy::cli {

using namespace clang;
using namespace clang::tidy;

std::unique_ptr<ClangTidyOptionsProvider>
TidyConfig::provider(llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs) const {
  if (!fs)
    fs = llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>(
        llvm::vfs::createPhysicalFileSystem().release());
  if (configFile)
    return std::make_unique<ConfigOptionsProvider>(
        ClangTidyGlobalOptions(), defaults, *configFile, overrides, fs);
  return std::make_unique<FileOptionsProvider>(ClangTidyGlobalOptions(),
                                               defaults, overrides, fs);
}

namespace {

/// The commands devcopy already chose, served to ClangTool from memory so
/// workers never share the JSON database's lookup structures.
class UnitDatabase : public tooling::CompilationDatabase {
public:
  explicit UnitDatabase(const TranslationUnit &unit) : unit_(unit) {}
  std::vector<tooling::CompileCommand>
  getCompileCommands(llvm::StringRef) const override {
    return unit_.commands;
  }

private:
  const TranslationUnit &unit_;
};

class TidyAction : public ASTFrontendAction {
public:
  explicit TidyAction(ClangTidyASTConsumerFactory &factory)
      : factory_(factory) {}
  std::unique_ptr<ASTConsumer>
  CreateASTConsumer(CompilerInstance &ci, llvm::StringRef file) override {
    return factory_.createASTConsumer(ci, file);
  }

private:
  ClangTidyASTConsumerFactory &factory_;
};

/// What clang-tidy's runClangTidy does, minus its stderr chatter ("Error
/// while processing"): devcopy reports compile errors itself, in one line.
class TidyActionFactory : public tooling::FrontendActionFactory {
public:
  TidyActionFactory(ClangTidyContext &context,
                    llvm::IntrusiveRefCntPtr<llvm::vfs::OverlayFileSystem> fs)
      : factory_(context, std::move(fs)) {}
  std::unique_ptr<FrontendAction> create() override {
    return std::make_unique<TidyAction>(factory_);
  }
  bool runInvocation(std::shared_ptr<CompilerInvocation> invocation,
                     FileManager *files,
                     std::shared_ptr<PCHContainerOperations> pch,
                     DiagnosticConsumer *consumer) override {
    invocation->getPreprocessorOpts().SetUpStaticAnalyzer =
        true; // as clang-tidy does
    invocation->getDiagnosticOpts().ShowCarets =
        false; // no "N warnings generated."
    return FrontendActionFactory::runInvocation(invocation, files, pch,
                                                consumer);
  }

private:
  ClangTidyASTConsumerFactory factory_;
};

std::string absolute(const std::string &path, const std::string &base) {
  llvm::SmallString<256> p(path);
  if (!llvm::sys::path::is_absolute(p) && !base.empty()) {
    p = base;
    llvm::sys::path::append(p, path);
  }
  llvm::sys::path::remove_dots(p, /*remove_dot_dot=*/true);
  return std::string(p);
}

std::vector<Range>
ranges(const llvm::SmallVector<tooling::FileByteRange, 1> &in,
       const std::string &buildDir) {
  std::vector<Range> out;
  for (const tooling::FileByteRange &r : in) {
    Range range;
    range.begin.file = absolute(r.FilePath, buildDir);
    range.begin.offset = r.FileOffset;
    range.end = range.begin;
    range.end.offset += r.Length;
    out.push_back(std::move(range));
  }
  return out;
}

/// The fix-its of `e`: its own, else with --fix-notes the one fix of its
/// notes (none when two notes carry different fixes), as clang-tidy applies
/// them.
const llvm::StringMap<tooling::Replacements> *fixOf(const ClangTidyError &e,
                                                    bool fromNotes) {
  if (!e.Message.Fix.empty() || !fromNotes)
    return &e.Message.Fix;
  const llvm::StringMap<tooling::Replacements> *found = nullptr;
  for (const tooling::DiagnosticMessage &n : e.Notes)
    if (!n.Fix.empty()) {
      if (found)
        return &e.Message.Fix;
      found = &n.Fix;
    }
  return found ? found : &e.Message.Fix;
}

Finding convert(const ClangTidyError &e, const std::string &unitFile,
                bool fixNotes) {
  Finding f;
  f.rule = e.DiagnosticName;
  f.message = e.Message.Message;
  f.warningAsError = e.IsWarningAsError;
  f.directory = e.BuildDirectory;
  const rules::Rule *rule = rules::find(f.rule);
  f.level = e.DiagLevel == tooling::Diagnostic::Error || e.IsWarningAsError
                ? "error"
            : rule ? std::string(rule->level)
                   : "warning";
  // Errors without a location (a bad compiler flag) belong to the unit.
  f.where.file = e.Message.FilePath.empty()
                     ? unitFile
                     : absolute(e.Message.FilePath, e.BuildDirectory);
  f.where.offset = e.Message.FilePath.empty() ? 0 : e.Message.FileOffset;
  f.end = f.where;
  f.ranges = ranges(e.Message.Ranges, e.BuildDirectory);
  // SARIF's region: the range around the location, as clang's caret shows it.
  for (const Range &r : f.ranges)
    if (r.begin.file == f.where.file && r.begin.offset <= f.where.offset &&
        f.where.offset < r.end.offset) {
      f.end = r.end;
      break;
    }
  for (const tooling::DiagnosticMessage &n : e.Notes) {
    Note note;
    note.where.file = n.FilePath.empty()
                          ? f.where.file
                          : absolute(n.FilePath, e.BuildDirectory);
    note.where.offset = n.FileOffset;
    note.message = n.Message;
    note.ranges = ranges(n.Ranges, e.BuildDirectory);
    note.end = note.where;
    for (const Range &r : note.ranges)
      if (r.begin.file == note.where.file &&
          r.begin.offset <= note.where.offset &&
          note.where.offset < r.end.offset) {
        note.end = r.end;
        break;
      }
    f.notes.push_back(std::move(note));
  }
  for (const auto &[file, replacements] : *fixOf(e, fixNotes))
    for (const tooling::Replacement &r : replacements) {
      Edit edit;
      edit.begin.file =
          absolute(std::string(r.getFilePath()), e.BuildDirectory);
      edit.begin.offset = r.getOffset();
      edit.length = r.getLength();
      edit.end = edit.begin;
      edit.end.offset += r.getLength();
      edit.text = std::string(r.getReplacementText());
      f.fixes.push_back(std::move(edit));
    }
  std::sort(f.fixes.begin(), f.fixes.end(), [](const Edit &a, const Edit &b) {
    return std::tie(a.begin.file, a.begin.offset) <
           std::tie(b.begin.file, b.begin.offset);
  });
  return f;
}

std::vector<Finding> analyzeOne(const TranslationUnit &unit,
                                const TidyConfig &config, bool &crashed,
                                UnitHooks *hooks, std::size_t index,
                                const std::string &profileDir) {
  // A physical file system of its own: ClangTool changes its working
  // directory, and the process-wide one would race between workers.
  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> physical(
      llvm::vfs::createPhysicalFileSystem().release());
  // The results cache sees what the parse reads; not the .clang-tidy
  // lookups below (their outcome, the effective options, is in its key).
  auto fs = llvm::makeIntrusiveRefCnt<llvm::vfs::OverlayFileSystem>(
      hooks ? hooks->fileSystem(index, physical) : physical);
  // The same file system as the tool's: clang names the main file as the
  // command does ("src/a.cpp"), and .clang-tidy must be looked up from the
  // command's directory, not devcopy's (ClangTool moves the overlay's, and so
  // this physical one's, working directory to each command's).
  ClangTidyContext context(config.provider(physical));
  if (!profileDir.empty()) {
    context.setEnableProfiling(true);
    context.setProfileStoragePrefix(profileDir);
  }
  UnitDatabase db(unit);
  tooling::ClangTool tool(db, {unit.file},
                          std::make_shared<PCHContainerOperations>(), fs);
  tool.setPrintErrorMessage(false);
  // ExtraArgs / ExtraArgsBefore from the configuration, as clang-tidy adds
  // them.
  tool.appendArgumentsAdjuster(
      [&context](const tooling::CommandLineArguments &args,
                 llvm::StringRef file) {
        ClangTidyOptions opts = context.getOptionsForFile(file);
        tooling::CommandLineArguments adjusted = args;
        if (opts.ExtraArgsBefore) {
          auto at = adjusted.begin();
          if (at != adjusted.end() && !llvm::StringRef(*at).starts_with("-"))
            ++at;
          adjusted.insert(at, opts.ExtraArgsBefore->begin(),
                          opts.ExtraArgsBefore->end());
        }
        if (opts.ExtraArgs)
          adjusted.insert(adjusted.end(), opts.ExtraArgs->begin(),
                          opts.ExtraArgs->end());
        return adjusted;
      });
  tool.appendArgumentsAdjuster(tooling::getStripPluginsAdjuster());
  ClangTidyDiagnosticConsumer consumer(context, nullptr,
                                       /*RemoveIncompatibleErrors=*/true,
                                       /*GetFixesFromNotes=*/config.fixNotes);
  DiagnosticsEngine engine(new DiagnosticIDs(), new DiagnosticOptions(),
                           &consumer,
                           /*ShouldOwnClient=*/false);
  context.setDiagnosticsEngine(&engine);
  tool.setDiagnosticConsumer(&consumer);
  TidyActionFactory factory(context, fs);
  // A crash in a check or in clang loses this unit, not the whole run.
  llvm::CrashRecoveryContext recovery;
  int status = 0;
  if (!recovery.RunSafely([&] { status = tool.run(&factory); })) {
    crashed = true;
    return {};
  }
  std::vector<Finding> out;
  for (const ClangTidyError &e : consumer.take())
    out.push_back(convert(e, unit.file, config.fixNotes));
  // A failed run that left no compile error would otherwise read as clean.
  // A warning made an error (-Werror) or a NOLINT block begun and never
  // ended is what failed it: reported as the compile error it is, by its
  // name.
  auto compileError = [](const Finding &f) {
    return f.rule == "clang-diagnostic-error";
  };
  if (status != 0 && std::none_of(out.begin(), out.end(), compileError))
    for (Finding &f : out)
      if (f.level == "error" && !f.warningAsError &&
          llvm::StringRef(f.rule).starts_with("clang-")) {
        llvm::StringRef name(f.rule);
        f.message += name.consume_front("clang-diagnostic-")
                         ? " [-Werror,-W" + name.str() + "]"
                         : " [" + f.rule + "]";
        f.rule = "clang-diagnostic-error";
      }
  if (status != 0 && std::none_of(out.begin(), out.end(), compileError)) {
    Finding f;
    f.rule = "clang-diagnostic-error";
    f.where.file = unit.file;
    f.message = "clang could not run the file's compile command";
    out.push_back(std::move(f));
  }
  if (hooks)
    hooks->finished(index, out);
  return out;
}

} // namespace

void analyzeUnits(const std::vector<TranslationUnit> &units,
                  const TidyConfig &config, unsigned jobs, bool progress,
                  std::vector<Finding> &findings,
                  std::vector<ToolError> &errors, UnitHooks *hooks) {
  llvm::CrashRecoveryContext::Enable();
  std::vector<const TranslationUnit *> order;
  for (const TranslationUnit &u : units)
    order.push_back(&u);
  // Longest first: a LibTorch unit started last would leave the other workers
  // idle.
  std::stable_sort(order.begin(), order.end(),
                   [](auto *a, auto *b) { return a->cost > b->cost; });
  std::vector<std::vector<Finding>> perUnit(order.size());
  std::unique_ptr<bool[]> crashed(new bool[order.size()]());
  std::atomic<std::size_t> next{0};
  llvm::SmallString<256> cwd;
  llvm::sys::fs::current_path(cwd);
  Progress lines(order.size(), std::string(cwd));
  CheckProfile profile(config.profile);
  auto worker = [&] {
    for (std::size_t i; (i = next++) < order.size();) {
      auto start = std::chrono::steady_clock::now();
      perUnit[i] = analyzeOne(*order[i], config, crashed[i], hooks,
                              std::size_t(order[i] - units.data()),
                              profile.folderFor(i));
      std::chrono::duration<double> took =
          std::chrono::steady_clock::now() - start;
      if (progress)
        lines.finished(order[i]->file, took.count(), perUnit[i], crashed[i]);
    }
  };
  jobs = std::max(1u, std::min<unsigned>(jobs, unsigned(order.size())));
  std::vector<std::thread> threads;
  for (unsigned j = 1; j < jobs; ++j)
    threads.emplace_back(worker);
  worker();
  for (std::thread &t : threads)
    t.join();
  profile.print(llvm::errs());
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (crashed[i])
      errors.push_back(
          {order[i]->file,
           "analyzing '" + order[i]->file +
               "' crashed; please report it with that file, and "
               "leave the file out of the analyzed paths meanwhile"});
    for (Finding &f : perUnit[i])
      findings.push_back(std::move(f));
  }
}

} // namespace devcopy::cli
