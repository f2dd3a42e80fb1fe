#include "Progress.h"

#include <algorithm>

#include "SourceText.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

Progress::Progress(std::size_t total, std::string cwd)
    : total_(total), cwd_(std::move(cwd)) {}

static std::string count(std::size_t n, const char *what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

std::string Progress::describe(const std::string &shown, double seconds,
                               const std::vector<Finding> &findings,
                               bool crashed) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << shown << " " << llvm::format("%.1f", seconds) << " s, ";
  if (crashed)
    return os.str() + "crashed";
  auto errors =
      std::count_if(findings.begin(), findings.end(), [](const Finding &f) {
        return f.rule == "clang-diagnostic-error";
      });
  // An open NOLINTBEGIN fails the unit, but the file compiles.
  auto nolint = std::count_if(findings.begin(), findings.end(), isNolintError);
  os << count(findings.size() - errors, "finding");
  if (errors - nolint)
    os << ", " << count(errors - nolint, "compile error");
  if (nolint)
    os << ", " << count(nolint, "NOLINT error");
  return os.str();
}

void Progress::finished(const std::string &file, double seconds,
                        const std::vector<Finding> &findings, bool crashed) {
  std::string shown = relativeTo(file, cwd_);
  std::string line =
      describe(shown.empty() ? file : shown, seconds, findings, crashed);
  std::lock_guard<std::mutex> lock(mu_);
  llvm::errs() << "[" << ++done_ << "/" << total_ << "] " << line << "\n";
  llvm::errs().flush();
}

} // namespace devcopy::cli
