#include "Output.h"

#include "Snippet.h"
#include "SourceText.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace devcopy::cli {

namespace json = llvm::json;

void writeText(llvm::raw_ostream &out, const Results &results,
               SourceText &sources, const std::string &cwd) {
  auto loc = [&](const Position &p) {
    return relativeTo(p.file, cwd) + ":" + std::to_string(p.line) + ":" +
           std::to_string(p.column);
  };
  // clang's colors when the stream has them enabled (--use-color): a bold
  // location and message, the level in its color.
  auto header = [&](const Position &p, const char *level,
                    llvm::raw_ostream::Colors color,
                    const std::string &message) {
    out.changeColor(llvm::raw_ostream::SAVEDCOLOR, true) << loc(p) << ": ";
    out.changeColor(color, true) << level << ": ";
    out.changeColor(llvm::raw_ostream::SAVEDCOLOR, true) << message;
    out.resetColor();
  };
  for (const Finding &f : results.findings) {
    bool error = f.level == "error";
    header(f.where, error ? "error" : "warning",
           error ? llvm::raw_ostream::RED : llvm::raw_ostream::MAGENTA,
           f.message);
    out << " [" << f.rule << (f.warningAsError ? ",-warnings-as-errors" : "")
        << "]\n";
    writeSnippet(out, sources, f.where, f.ranges, f.fixes);
    for (const Note &n : f.notes) {
      header(n.where, "note", llvm::raw_ostream::BLACK, n.message);
      out << "\n";
      writeSnippet(out, sources, n.where, n.ranges, {});
    }
  }
}

static json::Object position(const Position &p, const std::string &root) {
  return json::Object{{"file", relativeTo(p.file, root)},
                      {"line", p.line},
                      {"column", p.column}};
}

void writeJson(llvm::raw_ostream &out, const Results &results,
               const std::string &root) {
  json::Array findings;
  for (const Finding &f : results.findings) {
    json::Array notes, fixes;
    for (const Note &n : f.notes) {
      json::Object o = position(n.where, root);
      o["message"] = n.message;
      notes.push_back(std::move(o));
    }
    for (const Edit &e : f.fixes) {
      json::Object o = position(e.begin, root);
      o["offset"] = e.begin.offset;
      o["length"] = e.length;
      o["replacement"] = e.text;
      fixes.push_back(std::move(o));
    }
    json::Object o = position(f.where, root);
    o["end"] = json::Object{{"line", f.end.line}, {"column", f.end.column}};
    o["rule"] = f.rule;
    o["level"] = f.level;
    o["message"] = f.message;
    o["fingerprint"] = f.fingerprint;
    o["notes"] = std::move(notes);
    o["fixes"] = std::move(fixes);
    findings.push_back(std::move(o));
  }
  json::Array errors;
  for (const ToolError &e : results.errors)
    errors.push_back(json::Object{{"file", relativeTo(e.file, root)},
                                  {"message", e.message}});
  json::Value doc = json::Object{
      {"version", 1},
      {"tool", "devcopy"},
      {"findings", std::move(findings)},
      {"errors", std::move(errors)},
      {"summary", json::Object{{"translation_units", results.analyzed},
                               {"findings", int64_t(results.findings.size())},
                               {"baselined", results.baselined},
                               {"errors", int64_t(results.errors.size())}}}};
  out << llvm::formatv("{0:2}", doc) << "\n";
}

} // namespace devcopy::cli
