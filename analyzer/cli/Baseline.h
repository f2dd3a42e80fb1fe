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
#include "llvm/Support/Error.h"

namespace devcopy::cli {

class Baseline {
public:
  /// Reads a baseline written by write(); an error says in one line why not.
  static llvm::Expected<Baseline> read(const std::string &path);
  /// The same from `text` (what read() does once the file is read; `path`
  /// names it in errors).
  static llvm::Expected<Baseline> parse(llvm::StringRef text,
                                        const std::string &path);
  /// Writes `findings` (fingerprints assigned) to `path`. File names are
  /// stored relative to `root`.
  static llvm::Error write(const std::string &path,
                           const std::vector<Finding> &findings,
                           const std::string &root);

  /// Removes the findings the baseline holds; returns how many it removed.
  unsigned removeKnown(std::vector<Finding> &findings) const;
  /// Moves the findings the baseline holds to `known` (baselineState
  /// "unchanged"), marks the rest "new", and adds to `absent` a finding for
  /// each entry nothing matched ("absent"; its file made absolute against
  /// `root`, its line as recorded).
  void classify(std::vector<Finding> &findings, std::vector<Finding> &known,
                std::vector<Finding> &absent, const std::string &root) const;
  std::size_t size() const { return entries_.size(); }

private:
  struct Entry {
    std::string fingerprint, rule, file, message;
    unsigned line = 0;
  };
  std::vector<Entry> entries_;
};

} // namespace devcopy::cli
