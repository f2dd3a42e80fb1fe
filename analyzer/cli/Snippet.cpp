#include "Snippet.h"

#include <algorithm>

namespace devcopy::cli {

namespace {

constexpr unsigned kTabStop = 8;   // clang's -ftabstop default
constexpr unsigned kMaxLines = 16; // clang's -fcaret-diagnostics-max-lines
constexpr unsigned kMaxLineBytes =
    4096; // longer lines get no snippet, as in clang

/// Byte offset within a line -> display column, tabs expanded.
class ColumnMap {
public:
  explicit ColumnMap(const std::string &line) : line_(line) {
    unsigned col = 0;
    for (unsigned char c : line) {
      columns_.push_back(col);
      if (c == '\t')
        col += kTabStop - col % kTabStop;
      else if ((c & 0xC0) !=
               0x80) // a UTF-8 continuation byte shares its column
        col += 1;
      else if (!columns_.empty())
        columns_.back() = col - 1;
    }
    columns_.push_back(col);
  }
  unsigned column(unsigned byte) const {
    return byte < columns_.size() ? columns_[byte]
                                  : columns_.back() + (byte - line_.size());
  }
  std::string display() const {
    std::string out;
    for (unsigned char c : line_) {
      if (c == '\t')
        out.append(kTabStop - out.size() % kTabStop, ' ');
      else
        out += char(c);
    }
    return out;
  }
  const std::string &text() const { return line_; }

private:
  const std::string &line_;
  std::vector<unsigned> columns_;
};

unsigned digits(unsigned n) {
  unsigned d = 1;
  for (unsigned m = 10; m <= n && d < 10; m *= 10)
    ++d;
  return d;
}

bool blank(char c) { return c == ' ' || c == '\t'; }

/// clang's highlightRange: `~` over [begin, end) bytes minus surrounding
/// blanks.
void highlight(unsigned begin, unsigned end, const ColumnMap &map,
               std::string &caret) {
  const std::string &s = map.text();
  while (begin < s.size() && blank(s[begin]))
    ++begin;
  end = std::min<unsigned>(end, unsigned(s.size()));
  while (end && blank(s[end - 1]))
    --end;
  if (begin > end)
    return;
  unsigned from = map.column(begin), to = map.column(end);
  if (caret.size() < to)
    caret.resize(to, ' ');
  std::fill(caret.begin() + from, caret.begin() + to, '~');
}

} // namespace

void writeSnippet(llvm::raw_ostream &out, SourceText &sources,
                  const Position &at, const std::vector<Range> &diagRanges,
                  const std::vector<Edit> &fixes) {
  if (at.line == 0 || at.column > kMaxLineBytes)
    return;
  // As clang's DiagnosticRenderer: what the fix-its remove is highlighted too.
  std::vector<Range> ranges = diagRanges;
  for (const Edit &e : fixes)
    if (e.length)
      ranges.push_back({e.begin, e.end});
  unsigned first = at.line, last = at.line;
  for (const Range &r : ranges) {
    if (r.begin.file != at.file || r.end.file != at.file || r.begin.line == 0)
      continue;
    unsigned lo = std::min(first, r.begin.line),
             hi = std::max(last, r.end.line);
    if (hi - lo + 1 <= kMaxLines)
      first = lo, last = hi;
  }
  unsigned width = std::max(4u, digits(first + kMaxLines));
  auto gutter = [&] { out.indent(width + 2) << "| "; };
  for (unsigned lineNo = first; lineNo <= last; ++lineNo) {
    std::string text = sources.line(at.file, lineNo);
    if (text.size() > kMaxLineBytes)
      return;
    ColumnMap map(text);
    std::string caret;
    for (const Range &r : ranges) {
      if (r.begin.file != at.file || r.begin.line > lineNo ||
          r.end.line < lineNo)
        continue;
      unsigned begin = r.begin.line == lineNo ? r.begin.column - 1 : 0;
      unsigned end = r.end.line == lineNo ? r.end.column - 1 : ~0u;
      highlight(begin, end, map, caret);
    }
    if (lineNo == at.line) {
      unsigned col = map.column(at.column - 1);
      caret.resize(std::max<std::size_t>(col + 1, caret.size()), ' ');
      caret[col] = '^';
    }
    // clang's buildFixItInsertionLine: each insertion on this line below
    // its column, pushed right past a previous one it would overlap.
    std::string insertion;
    unsigned prevEnd = 0;
    for (const Edit &e : fixes) {
      if (e.text.empty() || e.begin.file != at.file || e.begin.line != lineNo ||
          e.text.find_first_of("\n\r") != std::string::npos)
        continue;
      unsigned col = map.column(e.begin.column - 1);
      if (col < prevEnd)
        col = prevEnd + 1;
      insertion.resize(insertion.size() + (col - prevEnd) + e.text.size(), ' ');
      std::copy(e.text.begin(), e.text.end(), insertion.end() - e.text.size());
      prevEnd = col + unsigned(e.text.size());
    }
    out.indent(width - digits(lineNo) + 1)
        << lineNo << " | " << map.display() << "\n";
    if (!caret.empty()) {
      gutter();
      out << caret << "\n";
    }
    if (!insertion.empty()) {
      gutter();
      out << insertion << "\n";
    }
  }
}

} // namespace devcopy::cli
