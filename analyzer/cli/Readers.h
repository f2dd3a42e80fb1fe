// The parsers of what users hand devcopy besides baselines (Baseline.h):
// compile databases and clang-tidy configuration. Text in, one-line error
// out, so the fuzz targets in tests/fuzz drive exactly what devcopy runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "clang-tidy/ClangTidyOptions.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace devcopy::cli {

/// Parses a compile database's text (JSON Compilation Database format) into
/// its commands, every "directory" and "file" made absolute: "file" against
/// "directory", a relative "directory" against the database's own folder.
/// An error gives the reason in one line.
llvm::Expected<std::vector<clang::tooling::CompileCommand>>
loadCompileDatabase(llvm::StringRef text, const std::string &dbPath);

/// Parses a .clang-tidy / --config-file / --config text named `file`; an
/// error gives the reason in one line.
llvm::Expected<clang::tidy::ClangTidyOptions>
parseConfigText(llvm::StringRef text, const std::string &file);

} // namespace devcopy::cli
