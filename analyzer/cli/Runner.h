// Runs the devcopy checks over translation units through clang-tidy's own
// library (ClangTidyContext, ClangTidyDiagnosticConsumer,
// ClangTidyASTConsumerFactory), so options, NOLINT and .clang-tidy behave
// exactly as in clang-tidy and in the plugin.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Finding.h"
#include "clang-tidy/ClangTidyOptions.h"
#include "clang/Tooling/CompilationDatabase.h"

namespace devcopy::cli {

/// Where rule selection and check options come from: devcopy's defaults,
/// then the project's .clang-tidy files (or --config-file), then --checks.
struct TidyConfig {
  clang::tidy::ClangTidyOptions defaults;
  std::optional<clang::tidy::ClangTidyOptions> configFile; // --config-file
  clang::tidy::ClangTidyOptions overrides;                 // --checks
  bool fixNotes = false;      // --fix-notes: a note's single fix-it counts
  bool allowNoChecks = false; // --allow-no-checks
  bool profile = false;       // --enable-check-profile

  /// A fresh provider (one per worker: providers cache and are not shared).
  /// Relative file names resolve against `fs`'s working directory (a worker
  /// passes its tool's, which follows each command's "directory").
  std::unique_ptr<clang::tidy::ClangTidyOptionsProvider>
  provider(llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs = nullptr) const;
};

struct TranslationUnit {
  std::string file; // absolute
  std::vector<clang::tooling::CompileCommand> commands;
  double cost = 0; // estimated; the costliest start first
};

/// Lets a caller see each unit's analysis (the results cache, Cache.h).
/// Both run on the unit's worker thread.
class UnitHooks {
public:
  virtual ~UnitHooks() = default;
  /// The file system the unit's analysis reads through, over `fs`.
  virtual llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>
  fileSystem(std::size_t unit,
             llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> fs) = 0;
  /// The unit's findings, once its analysis completed (not after a crash).
  virtual void finished(std::size_t unit,
                        const std::vector<Finding> &findings) = 0;
};

/// Analyzes `units` on `jobs` threads, each with its own clang-tidy run and
/// file system (ClangTool's working directory must not be process-wide).
/// Positions in the findings carry file and offset; lines are not filled yet.
/// Diagnostics named clang-diagnostic-error are compile errors. A unit whose
/// analysis crashes adds an error; the others go on. With `progress`, one
/// line per finished unit on stderr (Progress.h); with `config.profile`, the
/// checks' timing table after the last.
void analyzeUnits(const std::vector<TranslationUnit> &units,
                  const TidyConfig &config, unsigned jobs, bool progress,
                  std::vector<Finding> &findings,
                  std::vector<ToolError> &errors, UnitHooks *hooks = nullptr);

} // namespace devcopy::cli
