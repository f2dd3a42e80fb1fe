#include "SourceText.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "llvm/Support/FileSystem.h"

namespace devcopy::cli {

const SourceText::File &SourceText::get(const std::string &path) {
  auto [it, inserted] = files_.try_emplace(path);
  File &f = it->second;
  if (!inserted)
    return f;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return f;
  std::ostringstream ss;
  ss << in.rdbuf();
  f.text = ss.str();
  f.ok = true;
  f.lineStarts.push_back(0);
  for (unsigned i = 0; i < f.text.size(); ++i)
    if (f.text[i] == '\n')
      f.lineStarts.push_back(i + 1);
  return f;
}

void SourceText::locate(Position &pos) {
  const File &f = get(pos.file);
  if (!f.ok || pos.offset > f.text.size())
    return;
  auto it =
      std::upper_bound(f.lineStarts.begin(), f.lineStarts.end(), pos.offset);
  unsigned index = unsigned(it - f.lineStarts.begin()) - 1;
  pos.line = index + 1;
  pos.column = pos.offset - f.lineStarts[index] + 1;
}

Position SourceText::tokenEnd(const Position &pos) {
  Position end = pos;
  const File &f = get(pos.file);
  if (!f.ok || pos.offset >= f.text.size() || pos.line == 0)
    return end;
  auto word = [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c >= 0x80;
  };
  unsigned i = pos.offset;
  if (word(f.text[i]))
    while (i < f.text.size() && word(f.text[i]))
      ++i;
  else if (f.text[i] != '\n')
    ++i;
  end.offset = i;
  end.column = pos.column + (i - pos.offset);
  return end;
}

std::string SourceText::line(const std::string &file, unsigned line) {
  const File &f = get(file);
  if (!f.ok || line == 0 || line > f.lineStarts.size())
    return "";
  unsigned begin = f.lineStarts[line - 1];
  unsigned end =
      line < f.lineStarts.size() ? f.lineStarts[line] : unsigned(f.text.size());
  std::string s = f.text.substr(begin, end - begin);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r'))
    s.pop_back();
  return s;
}

unsigned SourceText::utf16Column(const std::string &file, unsigned lineNo,
                                 unsigned byteColumn) {
  std::string text = line(file, lineNo);
  unsigned units = 0;
  for (unsigned i = 0; i + 1 < byteColumn && i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) == 0x80)
      continue;                 // continuation byte
    units += c >= 0xF0 ? 2 : 1; // a 4-byte sequence is a surrogate pair
  }
  // Bytes past the line's end (a fix-it at the line break) count one each.
  if (byteColumn > text.size() + 1)
    units += byteColumn - unsigned(text.size()) - 1;
  return units + 1;
}

const std::string &SourceText::identity(const std::string &path) {
  auto [it, inserted] = identities_.try_emplace(path, path);
  llvm::SmallString<256> real;
  if (inserted && !llvm::sys::fs::real_path(path, real))
    it->second = std::string(real);
  return it->second;
}

std::string relativeTo(const std::string &path, const std::string &root) {
  if (root.empty())
    return path;
  std::string prefix = root.back() == '/' ? root : root + "/";
  if (path.compare(0, prefix.size(), prefix) == 0)
    return path.substr(prefix.size());
  return path;
}

} // namespace devcopy::cli
