// Reading what users hand devcopy (baselines, compile databases,
// configuration): limits checked before any parser sees the text, because
// LLVM's JSON and YAML parsers recurse once per nesting level and a hostile
// file 50,000 levels deep would overflow the stack.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

namespace devcopy::cli {

/// Deeper than any real baseline, compile database or .clang-tidy.
constexpr unsigned kMaxNesting = 256;

/// devcopy's one error convention: an llvm::Error carrying a one-line
/// message (what failed, where, what to do). Control characters are escaped
/// here, so a name quoted from a user's file cannot break the line.
llvm::Error toolError(const llvm::Twine &message);

/// A toolError about one file (devcopy names it in SARIF's notification).
class FileProblem : public llvm::ErrorInfo<FileProblem> {
public:
  static char ID;
  FileProblem(std::string file, std::string message)
      : file(std::move(file)), message(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }
  std::string file;
  std::string message;
};

/// `error` as a FileProblem of `file` ("" when no file is to blame).
inline llvm::Error aboutFile(const std::string &file, llvm::Error error) {
  return llvm::make_error<FileProblem>(file, llvm::toString(std::move(error)));
}

/// `text` with its control characters escaped ("\n", "\x01").
std::string escapeControls(llvm::StringRef text);

/// `text` fit for a one-line error: control characters escaped, and cut in
/// the middle past 1,000 bytes (a quoted key may be megabytes).
std::string oneLine(llvm::StringRef text);

/// `p` made absolute against `base` when relative, with `.` and `..` removed.
std::string absolutePath(const std::string &p, const std::string &base);

/// The most devcopy reads from each kind of input (InputLimit.h): far above
/// any real one, low enough that /dev/zero or a runaway pipe stops early.
constexpr std::uint64_t kMaxDatabase = 1ull << 30; // compile databases, shards
constexpr std::uint64_t kMaxBaseline = 256ull << 20; // baselines, cache entries
constexpr std::uint64_t kMaxConfig = 16ull << 20; // .clang-tidy, response files

/// Reads the text file `path` whole, at most `limit` bytes; an error gives
/// the reason in one line.
llvm::Expected<std::string> readInput(const std::string &path,
                                      std::uint64_t limit);

/// A reason when `text` nests `[`/`{` deeper than `maxDepth`, as "line L:
/// ..."; nullopt when it does not. JSON strings are skipped; YAML's quoting
/// rules are too loose to follow here (`don't` is no string), so for YAML
/// every bracket counts.
std::optional<std::string> nestingError(llvm::StringRef text, bool json,
                                        unsigned maxDepth = kMaxNesting);

/// llvm::json::parse with the nesting limit checked first. An error reads
/// "line:column: reason".
llvm::Expected<llvm::json::Value> parseJson(llvm::StringRef text);

} // namespace devcopy::cli
