// Fingerprints identify a finding across edits, for baselines and for SARIF
// partialFingerprints (GitHub code scanning matches alerts on them).
//
// A fingerprint hashes the rule id, the repository-relative file and the
// flagged line's text with all whitespace removed, then appends the index of
// the finding among those with the same hash (in source order). Lines moving
// up or down, reindentation and edits elsewhere in the file leave it alone;
// editing the flagged line, renaming the file or changing the rule do not.
#pragma once

#include <string>
#include <vector>

#include "Finding.h"
#include "SourceText.h"

namespace devcopy::cli {

/// The SARIF partialFingerprints key devcopy fills.
inline constexpr const char *kFingerprintKey = "devcopyLineHash/v1";

/// Whitespace-free text of a line: what the hash sees.
std::string normalizeLine(const std::string &line);

/// 64-bit FNV-1a, printed as 16 hex digits: stable across runs and machines.
std::string stableHash(const std::string &text);

/// Sorts `findings` into source order and fills each one's fingerprint.
/// `root` makes file names repository-relative.
void assignFingerprints(std::vector<Finding> &findings, SourceText &sources,
                        const std::string &root);

} // namespace devcopy::cli
