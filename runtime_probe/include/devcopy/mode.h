// What to do with a finished Report: the one place DEVCOPY_PROBE is read, so
// check(), the GoogleTest macros and CopyObserver's assertions all agree.
// LibTorch-free.
#pragma once

#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>

#include "devcopy/report.h"

namespace devcopy {

/// off: do nothing (not even inspect); warn: print findings; fail: throw /
/// fail the assertion.
enum class Mode { off, warn, fail };

/// "off", "warn" or "fail" (case-sensitive); anything else throws
/// std::invalid_argument with a one-line message.
Mode parse_mode(std::string_view text);
const char *to_string(Mode mode);

/// The mode named by the environment variable DEVCOPY_PROBE, or `fallback`
/// when it is unset or empty. A bad value prints one line to stderr and
/// yields `fallback`: a typo in the environment must not crash a job.
Mode mode_from_env(Mode fallback);

/// Thrown by enforce() in fail mode; what() is the whole text report.
class ProbeFailure : public std::runtime_error {
public:
  explicit ProbeFailure(Report report);
  const Report &report() const { return report_; }

private:
  Report report_;
};

/// Applies `mode` to `report`: nothing when off or when the report has no
/// findings; warn prints the report to `out`; fail throws ProbeFailure.
void enforce(const Report &report, Mode mode, std::ostream &out);
/// Same, printing to std::cerr.
void enforce(const Report &report, Mode mode);

/// Writes `report.to_json()` to `path` through a temporary file beside it,
/// renamed into place (an interrupted write leaves the old file), creating
/// the folder. Returns an empty string, or a one-line error.
std::string write_json(const Report &report, const std::string &path);

/// The findings of `kind` only (all findings when `kind` is empty), with the
/// rest of the report kept as context. Assertions about one rule use it.
Report only(const Report &report, std::string_view kind);

} // namespace devcopy
