#include "CheckProfile.h"

#include <algorithm>
#include <map>
#include <vector>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace devcopy::cli {

namespace fs = llvm::sys::fs;

CheckProfile::CheckProfile(bool enabled) {
  llvm::SmallString<128> dir;
  if (enabled && !fs::createUniqueDirectory("devcopy-profile", dir))
    root_ = std::string(dir);
}

CheckProfile::~CheckProfile() {
  if (!root_.empty())
    fs::remove_directories(root_);
}

std::string CheckProfile::folderFor(std::size_t index) const {
  if (root_.empty())
    return "";
  llvm::SmallString<128> dir(root_);
  llvm::sys::path::append(dir, std::to_string(index));
  return std::string(dir);
}

namespace {

struct Times {
  double wall = 0, user = 0, sys = 0;
};

/// Adds one stored profile: {"profile": {"time.clang-tidy.CHECK.wall": s}}.
void add(llvm::StringRef text, std::map<std::string, Times> &sums) {
  llvm::Expected<llvm::json::Value> doc = llvm::json::parse(text);
  if (!doc) {
    llvm::consumeError(doc.takeError());
    return;
  }
  const llvm::json::Object *profile =
      doc->getAsObject() ? doc->getAsObject()->getObject("profile") : nullptr;
  if (!profile)
    return;
  for (const auto &[key, value] : *profile) {
    llvm::StringRef name = key;
    name.consume_front("time.");
    name.consume_front("clang-tidy.");
    std::optional<double> seconds = value.getAsNumber();
    if (!seconds)
      continue;
    Times &t = sums[name.rsplit('.').first.str()];
    llvm::StringRef kind = name.rsplit('.').second;
    (kind == "wall" ? t.wall : kind == "user" ? t.user : t.sys) += *seconds;
  }
}

} // namespace

void CheckProfile::print(llvm::raw_ostream &os) const {
  if (root_.empty())
    return;
  std::map<std::string, Times> sums;
  unsigned units = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root_, ec), end; it != end && !ec;
       it.increment(ec)) {
    if (!llvm::StringRef(it->path()).ends_with(".json"))
      continue;
    if (auto buffer = llvm::MemoryBuffer::getFile(it->path())) {
      add((*buffer)->getBuffer(), sums);
      ++units;
    }
  }
  std::vector<std::pair<std::string, Times>> rows(sums.begin(), sums.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
    return a.second.wall > b.second.wall;
  });
  os << "devcopy: check profile of " << units
     << " translation unit(s), in seconds:\n"
     << "      wall      user    system  check\n";
  for (const auto &[check, t] : rows)
    os << llvm::format("%10.4f%10.4f%10.4f  ", t.wall, t.user, t.sys) << check
       << "\n";
}

} // namespace devcopy::cli
