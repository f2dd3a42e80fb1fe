// The devcopy command's result model: what the analysis found, independent of
// clang-tidy's types so the writers, the baseline and their tests need no AST.
#pragma once

#include <string>
#include <vector>

namespace devcopy::cli {

/// A point in a source file. `file` is absolute; line and column are 1-based,
/// the column counted in bytes as clang does. `offset` is the byte offset.
struct Position {
  std::string file;
  unsigned offset = 0;
  unsigned line = 0;
  unsigned column = 0;
};

/// One replacement of a fix-it: `length` bytes at `begin` become `text`.
struct Edit {
  Position begin;
  Position end; // begin + length
  unsigned length = 0;
  std::string text;
  // contentHash() of begin.file as the analysis read it ("" unknown): --fix
  // edits only a file that still holds those bytes.
  std::string analysed;
};

/// A source range of a diagnostic, as clang highlights it: [begin, end).
struct Range {
  Position begin;
  Position end;
};

/// A note attached to a finding: the other move, the loop, ...
struct Note {
  Position where;
  std::string message;
  std::vector<Range> ranges; // the note's highlighted ranges (may be none)
  Position end;              // end of the region SARIF shows (see Finding::end)
};

struct Finding {
  std::string rule;            // "devcopy-discarded-copy"
  std::string level;           // SARIF level: "error", "warning" or "note"
  bool warningAsError = false; // --warnings-as-errors made it an error
  std::string message;         // one line, lowercase
  Position where;
  // End of the flagged region: the diagnostic's range around `where`, else
  // the token at `where` (as clangd shows it); equals `where` until located.
  Position end;
  std::vector<Range> ranges; // the diagnostic's highlighted ranges
  std::vector<Note> notes;
  std::vector<Edit> fixes;
  std::string fingerprint; // see Fingerprint.h; stable across line shifts
  std::string directory;   // the unit's compile directory (--export-fixes)
  // SARIF baselineState when a baseline is given: "new", "unchanged" or
  // "absent" (a baseline entry no longer found); "" without a baseline.
  std::string baselineState;
};

/// A unit's error that is clang-tidy's, about a NOLINT comment it cannot pair
/// (an open NOLINTBEGIN), not the compiler's: the file compiles. The runner
/// turns it into a compile-error finding with its rule at the message's end.
inline bool isNolintError(const Finding &f) {
  const std::string tail = " [clang-tidy-nolint]";
  return f.rule == "clang-diagnostic-error" &&
         f.message.size() >= tail.size() &&
         f.message.compare(f.message.size() - tail.size(), tail.size(), tail) ==
             0;
}

/// A problem that stops devcopy from vouching for a result (exit code 2): a
/// missing database, a translation unit that does not parse, a bad config.
struct ToolError {
  std::string file;    // the file to look at; may be empty
  std::string message; // one line: what failed and what to do
};

struct Results {
  std::vector<Finding> findings;
  std::vector<ToolError> errors;
  unsigned analyzed = 0;  // translation units analyzed
  unsigned baselined = 0; // findings hidden because the baseline has them
  // With a baseline: the known findings (unchanged) and the baseline entries
  // no longer found (absent). Text and JSON leave them out; SARIF keeps them.
  std::vector<Finding> known;
  std::vector<Finding> absent;
};

} // namespace devcopy::cli
