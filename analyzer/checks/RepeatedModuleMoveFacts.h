// devcopy-repeated-module-move's side of the facts (facts/MoveFacts.h): the
// facts' targets as the check's CopyTargets and back, and what the rule says
// of a move repeated from another unit. `devcopy analyze` reports the joined
// facts with the same words as the check.
#pragma once

#include "analysis/TorchMatchers.h"
#include "facts/MoveFacts.h"
#include <string>

namespace clang::tidy::devcopy {

facts::Target toFactsTarget(const CopyTarget &T);
CopyTarget toCopyTarget(const facts::Target &T);

/// The diagnostic and its note for a move \p Later that repeats \p H.
std::string repeatedMoveMessage(const facts::Move &Later, const facts::Hit &H);
std::string repeatedMoveNote(const facts::Move &Later, const facts::Hit &H);

} // namespace clang::tidy::devcopy
