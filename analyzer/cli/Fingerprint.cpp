#include "Fingerprint.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>
#include <tuple>

namespace devcopy::cli {

std::string normalizeLine(const std::string &line) {
  std::string out;
  for (char c : line)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += c;
  return out;
}

std::string stableHash(const std::string &text) {
  std::uint64_t h = 14695981039346656037ull; // FNV-1a 64 offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void assignFingerprints(std::vector<Finding> &findings, SourceText &sources,
                        const std::string &root) {
  std::stable_sort(
      findings.begin(), findings.end(), [](const Finding &a, const Finding &b) {
        return std::tie(a.where.file, a.where.offset, a.rule, a.message) <
               std::tie(b.where.file, b.where.offset, b.rule, b.message);
      });
  std::map<std::string, unsigned> seen; // hash -> occurrences so far
  for (Finding &f : findings) {
    std::string key = f.rule + '\0' + relativeTo(f.where.file, root) + '\0' +
                      normalizeLine(sources.line(f.where.file, f.where.line));
    std::string hash = stableHash(key);
    f.fingerprint = hash + ":" + std::to_string(seen[hash]++);
  }
}

} // namespace devcopy::cli
