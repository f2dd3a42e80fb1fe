// A guard for parsers of user files (facts, baselines, compile databases,
// configuration): LLVM's JSON and YAML parsers recurse once per nesting level,
// so a hostile or corrupted file nested tens of thousands of levels deep
// overflows the stack. Checked before any parser sees the text. Header-only:
// the facts and the devcopy command both use it.
#pragma once

#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace devcopy {

/// "line N: nested more than D levels deep" when brackets (outside JSON
/// strings, when \p Json) nest deeper than \p MaxDepth; nullopt otherwise.
inline std::optional<std::string> nestingError(llvm::StringRef Text, bool Json,
                                               unsigned MaxDepth = 256) {
  unsigned Depth = 0, Line = 1;
  bool Quoted = false; // inside a JSON string
  for (std::size_t I = 0; I < Text.size(); ++I) {
    char C = Text[I];
    if (C == '\n')
      ++Line;
    if (Quoted) {
      if (C == '\\')
        ++I; // the escaped character
      else if (C == '"')
        Quoted = false;
      continue;
    }
    if (C == '"' && Json)
      Quoted = true;
    else if (C == '[' || C == '{') {
      if (++Depth > MaxDepth)
        return "line " + std::to_string(Line) + ": nested more than " +
               std::to_string(MaxDepth) + " levels deep";
    } else if ((C == ']' || C == '}') && Depth > 0)
      --Depth;
  }
  return std::nullopt;
}

} // namespace devcopy
