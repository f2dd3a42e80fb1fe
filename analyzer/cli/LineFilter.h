// --line-filter: clang-tidy's list of files and line ranges whose findings
// are reported, e.g. the lines a change touched:
//   [{"name":"src/train.cpp","lines":[[10,12],[40,40]]},{"name":"main.cpp"}]
// Applied to the whole run's findings, cross-file ones included, after the
// analysis (so cached results serve every filter).
#pragma once

#include <string>
#include <vector>

#include "Finding.h"
#include "clang-tidy/ClangTidyOptions.h"
#include "llvm/Support/Error.h"

namespace devcopy::cli {

class LineFilter {
public:
  /// An empty text lets everything pass; bad JSON is a one-line error.
  static llvm::Expected<LineFilter> parse(const std::string &json);

  /// clang-tidy's rule: the first entry whose name ends `file` decides; no
  /// lines there means the whole file; a file no entry names is out.
  bool passes(const std::string &file, unsigned line) const;

  /// Keeps the findings whose location, or one of whose notes, passes, as
  /// clang-tidy's diagnostic consumer does.
  void apply(std::vector<Finding> &findings) const;

private:
  std::vector<clang::tidy::FileFilter> files_;
};

} // namespace devcopy::cli
