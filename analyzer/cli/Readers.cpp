#include "Readers.h"

#include "Input.h"
#include "ResponseFiles.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

namespace devcopy::cli {

using clang::tidy::ClangTidyOptions;
namespace path = llvm::sys::path;

/// JSONCompilationDatabase wants every value a string ("arguments" a list of
/// them) and says only "Expected string as value.": name the entry and key.
static llvm::Error checkValues(const llvm::json::Value &db) {
  const llvm::json::Array *entries = db.getAsArray();
  if (!entries)
    return llvm::Error::success(); // JSONCompilationDatabase words this one
  auto kind = [](const llvm::json::Value &v) {
    switch (v.kind()) {
    case llvm::json::Value::Null:
      return "null";
    case llvm::json::Value::Boolean:
      return "a boolean";
    case llvm::json::Value::Number:
      return "a number";
    case llvm::json::Value::String:
      return "a string";
    case llvm::json::Value::Array:
      return "a list";
    case llvm::json::Value::Object:
      return "an object";
    }
    return "a value";
  };
  for (std::size_t i = 0; i < entries->size(); ++i) {
    const llvm::json::Object *entry = (*entries)[i].getAsObject();
    if (!entry)
      continue;
    for (const auto &[key, value] : *entry) {
      const llvm::json::Array *list = value.getAsArray();
      bool ok = key == "arguments"
                    ? list && llvm::all_of(*list,
                                           [](const llvm::json::Value &a) {
                                             return a.getAsString().has_value();
                                           })
                    : value.getAsString().has_value();
      if (ok)
        continue;
      std::string file(entry->getString("file").value_or("").str());
      return toolError(
          "entry " + std::to_string(i + 1) +
          (file.empty() ? "" : " ('" + oneLine(file) + "')") + ": \"" +
          oneLine(key.str()) + "\" must be " +
          (key == "arguments" ? "a list of strings" : "a string") + ", not " +
          (key == "arguments" && list ? "a list holding other values"
                                      : kind(value)));
    }
  }
  return llvm::Error::success();
}

llvm::Expected<std::vector<clang::tooling::CompileCommand>>
loadCompileDatabase(llvm::StringRef text, const std::string &dbPath) {
  // llvm::json first: one "line:column: reason" for broken JSON, where the
  // YAML parser behind JSONCompilationDatabase would print raw diagnostics.
  auto json = parseJson(text);
  if (!json)
    return json.takeError();
  if (llvm::Error e = checkValues(*json))
    return e;
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
