// Baselines: record today's findings so that a codebase with findings can
// turn devcopy on and fail only on new ones. Entries match by fingerprint
// (Fingerprint.h), so they survive edits that shift lines.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "Finding.h"
#include "llvm/ADT/StringRef.h"

namespace devcopy::cli {

class Baseline {
 public:
  /// Reads a baseline written by writeBaseline. On failure returns nullopt
  /// and sets `error` to a one-line reason.
  static std::optional<Baseline> read(const std::string& path, std::string& error);
  /// The same from `text` (what read() does once the file is read; `path`
  /// names it in errors).
  static std::optional<Baseline> parse(llvm::StringRef text, const std::string& path,
                                       std::string& error);
  /// Writes `findings` (fingerprints assigned) to `path`; false and `error`
  /// on failure. File names are stored relative to `root`.
  static bool write(const std::string& path, const std::vector<Finding>& findings,
                    const std::string& root, std::string& error);

  /// Removes the findings the baseline holds; returns how many it removed.
  unsigned removeKnown(std::vector<Finding>& findings) const;
  std::size_t size() const { return fingerprints_.size(); }

 private:
  std::multiset<std::string> fingerprints_;
};

}  // namespace devcopy::cli
