#include "LineFilter.h"

#include <algorithm>

#include "Input.h"
#include "clang-tidy/ClangTidyOptions.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

namespace devcopy::cli {

/// One entry: {"name": "file.cpp", "lines": [[first, last], ...]}.
static bool readEntry(const llvm::json::Value &v, clang::tidy::FileFilter &f,
                      llvm::json::Path path) {
  llvm::json::ObjectMapper map(v, path);
  std::vector<std::vector<int64_t>> lines;
  if (!map || !map.map("name", f.Name) || !map.mapOptional("lines", lines))
    return false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].size() != 2 || lines[i][0] < 0 || lines[i][0] > lines[i][1]) {
      path.field("lines").index(i).report("expected [first, last]");
      return false;
    }
    f.LineRanges.emplace_back(unsigned(lines[i][0]), unsigned(lines[i][1]));
  }
  return true;
}

llvm::Expected<LineFilter> LineFilter::parse(const std::string &json) {
  LineFilter filter;
  if (json.empty())
    return filter;
  auto bad = [](const llvm::Twine &why) {
    return toolError("--line-filter is not clang-tidy's JSON "
                     "([{\"name\":\"file.cpp\",\"lines\":[[1,9]]}]): " +
                     why);
  };
  llvm::Expected<llvm::json::Value> doc = llvm::json::parse(json);
  if (!doc)
    return bad(llvm::toString(doc.takeError()));
  llvm::json::Path::Root root("line-filter");
  const llvm::json::Array *entries = doc->getAsArray();
  if (!entries)
    return bad("expected an array of files");
  for (std::size_t i = 0; i < entries->size(); ++i) {
    filter.files_.emplace_back();
    if (!readEntry((*entries)[i], filter.files_.back(),
                   llvm::json::Path(root).index(i)))
      return bad(llvm::toString(root.getError()));
  }
  return filter; // "[]": no filter, as in clang-tidy
}

bool LineFilter::passes(const std::string &file, unsigned line) const {
  if (files_.empty())
    return true;
  for (const clang::tidy::FileFilter &f : files_)
    if (llvm::StringRef(file).ends_with(f.Name)) {
      if (f.LineRanges.empty())
        return true;
      return std::any_of(f.LineRanges.begin(), f.LineRanges.end(),
                         [&](const auto &range) {
                           return range.first <= line && line <= range.second;
                         });
    }
  return false;
}

void LineFilter::apply(std::vector<Finding> &findings) const {
  if (files_.empty())
    return;
  auto out = [&](const Finding &f) {
    if (passes(f.where.file, f.where.line))
      return false;
    return std::none_of(f.notes.begin(), f.notes.end(), [&](const Note &n) {
      return passes(n.where.file, n.where.line);
    });
  };
  findings.erase(std::remove_if(findings.begin(), findings.end(), out),
                 findings.end());
}

} // namespace devcopy::cli
