// Reads source files once and answers the questions the writers ask about
// them: line/column of a byte offset, the text of a line, UTF-16 columns.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "Finding.h"

namespace devcopy::cli {

class SourceText {
public:
  /// Fills line and column of `pos` from its file and offset. A file that
  /// cannot be read leaves them 0.
  void locate(Position &pos);
  /// The end of the token starting at `pos` (located): an identifier or
  /// number whole, else one character. What clangd shows for a diagnostic
  /// without a range.
  Position tokenEnd(const Position &pos);
  /// The text of 1-based line `line`, without its line break ("" if none).
  std::string line(const std::string &file, unsigned line);
  /// SARIF counts columns in UTF-16 code units; clang counts bytes.
  unsigned utf16Column(const std::string &file, unsigned line,
                       unsigned byteColumn);
  /// One name per file however it is reached (symlinks, `..`): its real path,
  /// or `path` itself when it cannot be resolved.
  const std::string &identity(const std::string &path);

private:
  struct File {
    bool ok = false;
    std::string text;
    std::vector<unsigned> lineStarts; // byte offset of each line's start
  };
  const File &get(const std::string &path);
  std::map<std::string, File> files_;
  std::map<std::string, std::string> identities_;
};

/// `path` relative to `root` when it lies below it, else `path` unchanged.
std::string relativeTo(const std::string &path, const std::string &root);

} // namespace devcopy::cli
