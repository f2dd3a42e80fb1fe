// SARIF 2.1.0 output that GitHub code scanning accepts. Rule metadata comes
// from the generated rule catalog (<devcopy/rules_catalog.h>), so rule text
// lives only in rules/*.md.
#pragma once

#include <string>

#include "Finding.h"
#include "SourceText.h"
#include "llvm/Support/raw_ostream.h"

namespace devcopy::cli {

/// Writes one run. Locations are relative to `root` (uriBaseId %SRCROOT%);
/// files outside it get absolute file:// URIs. Each devcopy rule's helpUri is
/// `ruleDocs`/RULE.md ("" = defaultRuleDocs()). With a baseline, the known
/// findings and the absent entries (Results::known, ::absent) are results
/// too, each with its baselineState.
void writeSarif(llvm::raw_ostream &out, const Results &results,
                SourceText &sources, const std::string &root,
                const std::string &ruleDocs = "");

/// file:// URL of the installed rule pages: bin/../share/doc/devcopy/rules
/// beside this executable when there, else the configured install prefix's.
std::string defaultRuleDocs();

/// The body of section `## heading` of a Markdown page ("" if absent).
std::string markdownSection(const std::string &page,
                            const std::string &heading);

/// Percent-encodes what a URI path may not hold.
std::string uriEncode(const std::string &path);

} // namespace devcopy::cli
