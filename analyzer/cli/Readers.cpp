#include "Readers.h"

#include "Input.h"
#include "ResponseFiles.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

namespace devcopy::cli {

using clang::tidy::ClangTidyOptions;
namespace path = llvm::sys::path;

llvm::Expected<std::vector<clang::tooling::CompileCommand>>
loadCompileDatabase(llvm::StringRef text, const std::string &dbPath) {
  // llvm::json first: one "line:column: reason" for broken JSON, where the
  // YAML parser behind JSONCompilationDatabase would print raw diagnostics.
  if (auto json = parseJson(text); !json)
    return json.takeError();
  std::string error;
  auto db = clang::tooling::JSONCompilationDatabase::loadFromBuffer(
      text, error, clang::tooling::JSONCommandLineSyntax::AutoDetect);
  if (!db)
    return toolError(oneLine(error)); // it may quote the database's text
  // The specification: "file" is relative to "directory". A relative
  // "directory" has no anchor but the database itself (clang would resolve it
  // against the current directory, wherever devcopy was started).
  std::string dbDir(path::parent_path(dbPath));
  std::vector<clang::tooling::CompileCommand> commands =
      db->getAllCompileCommands();
  for (clang::tooling::CompileCommand &c : commands) {
    c.Directory = absolutePath(c.Directory, dbDir);
    c.Filename = absolutePath(c.Filename, c.Directory);
    if (!c.Output.empty())
      c.Output = absolutePath(c.Output, c.Directory);
    if (llvm::Error e = expandResponseFiles(c, *llvm::vfs::getRealFileSystem()))
      return std::move(e);
  }
  return commands;
}

llvm::Expected<ClangTidyOptions> parseConfigText(llvm::StringRef text,
                                                 const std::string &file) {
  if (auto deep = nestingError(text, /*json=*/false))
    return toolError("invalid configuration '" + file + "': " + *deep +
                     "; fix the YAML or remove the file");
  std::string diag;
  auto parsed = clang::tidy::parseConfigurationWithDiags(
      llvm::MemoryBufferRef(text, file), [&](const llvm::SMDiagnostic &d) {
        if (diag.empty() && d.getKind() == llvm::SourceMgr::DK_Error)
          diag = std::to_string(d.getLineNo()) + ":" +
                 std::to_string(d.getColumnNo() + 1) + ": " +
                 d.getMessage().str();
      });
  if (!parsed)
    return toolError(oneLine("invalid configuration '" + file + "'" +
                             (diag.empty() ? "" : ":" + diag) + " (" +
                             parsed.getError().message() +
                             "); fix the YAML or remove the file"));
  return std::move(*parsed);
}

} // namespace devcopy::cli
