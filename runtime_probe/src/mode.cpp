#include "devcopy/mode.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace devcopy {

Mode parse_mode(std::string_view text) {
  if (text == "off")
    return Mode::off;
  if (text == "warn")
    return Mode::warn;
  if (text == "fail")
    return Mode::fail;
  throw std::invalid_argument(
      "devcopy: DEVCOPY_PROBE must be off, warn or fail, not '" +
      std::string(text) + "'");
}

const char *to_string(Mode mode) {
  switch (mode) {
  case Mode::off:
    return "off";
  case Mode::warn:
    return "warn";
  case Mode::fail:
    return "fail";
  }
  return "?";
}

Mode mode_from_env(Mode fallback) {
  const char *value = std::getenv("DEVCOPY_PROBE");
  if (value == nullptr || *value == '\0')
    return fallback;
  try {
    return parse_mode(value);
  } catch (const std::invalid_argument &e) {
    std::cerr << e.what() << "; using " << to_string(fallback) << '\n';
    return fallback;
  }
}

namespace {
std::string render(const Report &report) {
  std::ostringstream os;
  os << report;
  return os.str();
}
} // namespace

ProbeFailure::ProbeFailure(Report report)
    : std::runtime_error(render(report)), report_(std::move(report)) {}

void enforce(const Report &report, Mode mode, std::ostream &out) {
  if (mode == Mode::off || !report.has_findings())
    return;
  if (mode == Mode::fail)
    throw ProbeFailure(report);
  out << report << std::flush;
}

void enforce(const Report &report, Mode mode) {
  enforce(report, mode, std::cerr);
}

std::string write_json(const Report &report, const std::string &path) {
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path())
    std::filesystem::create_directories(target.parent_path(), ec);
  if (ec)
    return "devcopy: cannot create " + target.parent_path().string() + ": " +
           ec.message();
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  const std::string json = report.to_json() + "\n";
  std::FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    return "devcopy: cannot write " + tmp + ": " + std::strerror(errno);
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    return "devcopy: cannot write " + tmp + ": " +
           std::strerror(ok ? errno : err);
  }
  std::filesystem::rename(tmp, target, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return "devcopy: cannot rename " + tmp + " to " + path + ": " +
           ec.message();
  }
  return {};
}

Report only(const Report &report, std::string_view kind) {
  Report out;
  for (const Finding &f : report.findings())
    if (kind.empty() || f.kind == kind)
      out.add(f);
  for (const SharedStorage &s : report.shared())
    out.add(s);
  for (const DeviceMemory &d : report.devices())
    out.add(d);
  for (const CopyRoute &c : report.copies())
    out.add(c);
  for (const Skipped &s : report.skipped())
    out.add(s);
  for (const DeviceTimeline &t : report.timelines())
    out.add(t);
  out.set_host_syncs(report.host_syncs());
  return out;
}

} // namespace devcopy
