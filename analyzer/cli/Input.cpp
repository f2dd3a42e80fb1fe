#include "Input.h"
#include "common/InputLimit.h"
#include "common/NestingLimit.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

namespace devcopy::cli {

std::string escapeControls(llvm::StringRef text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\t')
      out += ' ';
    else if (c < 0x20 || c == 0x7f)
      out += llvm::formatv("\\x{0:x-2}", unsigned(c)).str();
    else
      out += char(c);
  }
  return out;
}

llvm::Error toolError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 escapeControls(message.str()));
}

std::string oneLine(llvm::StringRef text) {
  constexpr std::size_t kMax = 1000, kHead = 700, kTail = 250;
  std::string out = escapeControls(text);
  if (out.size() > kMax)
    out = out.substr(0, kHead) + " ... " + out.substr(out.size() - kTail);
  return out;
}

std::string absolutePath(const std::string &p, const std::string &base) {
  llvm::SmallString<256> s(p);
  if (!llvm::sys::path::is_absolute(s)) {
    s = base;
    llvm::sys::path::append(s, p);
  }
  llvm::sys::path::remove_dots(s, /*remove_dot_dot=*/true);
  return std::string(s);
}

llvm::Expected<std::string> readInput(const std::string &path,
                                      std::uint64_t limit) {
  llvm::Expected<std::string> text = devcopy::readText(path, limit);
  if (!text)
    return toolError(oneLine(llvm::toString(text.takeError())));
  return text;
}

char FileProblem::ID = 0;

std::optional<std::string> nestingError(llvm::StringRef text, bool json,
                                        unsigned maxDepth) {
  return devcopy::nestingError(text, json, maxDepth);
}

llvm::Expected<llvm::json::Value> parseJson(llvm::StringRef text) {
  if (auto deep = nestingError(text, /*json=*/true))
    return toolError(*deep);
  auto parsed = llvm::json::parse(text);
  if (parsed)
    return std::move(*parsed);
  std::string error;
  llvm::handleAllErrors(parsed.takeError(), [&](const llvm::ErrorInfoBase &e) {
    // ParseError's text is "[3:7, byte=25]: Expected ','": keep "3:7: Expected
    // ','".
    std::string m = e.message();
    auto comma = m.find(", byte=");
    auto close = m.find("]: ");
    error = m.size() > 1 && m[0] == '[' && comma < close &&
                    close != std::string::npos
                ? m.substr(1, comma - 1) + ": " + m.substr(close + 3)
                : m;
  });
  return toolError(error);
}

} // namespace devcopy::cli
