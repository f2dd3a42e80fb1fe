#include "Sarif.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>

#include "Fingerprint.h"

#include "devcopy/rules_catalog.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#ifndef DEVCOPY_VERSION
#define DEVCOPY_VERSION "0.0.0"
#endif
#ifndef DEVCOPY_DOCS_DIR // where `cmake --install` puts README.md and
                         // rules/*.md
#define DEVCOPY_DOCS_DIR "/usr/local/share/doc/devcopy"
#endif
#ifndef DEVCOPY_SOURCE_DIR // the source tree, for a binary run from its build
#define DEVCOPY_SOURCE_DIR ""
#endif
#ifndef DEVCOPY_INFORMATION_URI // the project's home page, when it has one
#define DEVCOPY_INFORMATION_URI ""
#endif

namespace devcopy::cli {

namespace json = llvm::json;

static constexpr const char *kRootBase = "%SRCROOT%";

std::string markdownSection(const std::string &page,
                            const std::string &heading) {
  std::string marker = "## " + heading + "\n";
  std::size_t at = page.rfind(marker, 0) == 0 ? 0 : page.find("\n" + marker);
  if (at == std::string::npos)
    return "";
  std::size_t begin = page.find('\n', at + (page[at] == '\n' ? 1 : 0)) + 1;
  std::size_t end = page.find("\n## ", begin);
  std::string body = page.substr(
      begin, end == std::string::npos ? std::string::npos : end - begin);
  auto blank = [](char c) { return c == '\n' || c == ' '; };
  while (!body.empty() && blank(body.back()))
    body.pop_back();
  while (!body.empty() && blank(body.front()))
    body.erase(0, 1);
  return body;
}

std::string uriEncode(const std::string &path) {
  std::string out;
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::strchr("-._~/", c)) {
      out += char(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

static json::Object artifact(const std::string &file, const std::string &root) {
  std::string rel = relativeTo(file, root);
  if (rel != file)
    return json::Object{{"uri", uriEncode(rel)}, {"uriBaseId", kRootBase}};
  return json::Object{{"uri", "file://" + uriEncode(file)}};
}

static json::Object region(SourceText &src, const Position &begin,
                           const Position &end) {
  json::Object r{{"startLine", begin.line}};
  if (begin.column == 0)
    return r; // a baseline entry: its line alone is known
  r["startColumn"] = src.utf16Column(begin.file, begin.line, begin.column);
  if (end.line >= begin.line && end.line > 0 &&
      (end.line > begin.line || end.column >= begin.column)) {
    r["endLine"] = end.line;
    r["endColumn"] = src.utf16Column(end.file, end.line, end.column);
  }
  return r;
}

static json::Object physical(SourceText &src, const Position &begin,
                             const Position &end, const std::string &root) {
  return json::Object{{"artifactLocation", artifact(begin.file, root)},
                      {"region", region(src, begin, end)}};
}

static std::string str(std::string_view s) { return std::string(s); }

// SARIF wants `name` readable and distinct from the opaque `id`:
// devcopy-copy-in-loop -> CopyInLoop.
static std::string ruleName(std::string_view id) {
  std::string name;
  bool upper = true;
  for (char c : id.substr(id.rfind("devcopy-", 0) == 0 ? 8 : 0)) {
    if (c == '-') {
      upper = true;
      continue;
    }
    name += upper ? char(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return name;
}

/// clang-tidy's page for one of its checks: bugprone-use-after-move ->
/// .../checks/bugprone/use-after-move.html.
static std::string clangTidyDocs(const std::string &id) {
  auto dash = id.find('-');
  if (dash == std::string::npos || id.rfind("clang-", 0) == 0)
    return "";
  return "https://clang.llvm.org/extra/clang-tidy/checks/" +
         id.substr(0, dash) + "/" + id.substr(dash + 1) + ".html";
}

/// file:// URL of a folder holding devcopy's README.md and rules/*.md.
static std::string docsFolder() {
  // Beside the installed binary (bin/../share/doc/devcopy), so an unpacked
  // package points at its own pages; from the build tree, the source tree
  // the binary was built from (README.md and rules/ have the same layout);
  // else the configured prefix's.
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  llvm::SmallString<256> dir(
      llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(dir, "share", "doc", "devcopy");
  std::string path = DEVCOPY_DOCS_DIR;
  if (llvm::sys::fs::is_directory(dir))
    path = std::string(dir);
  else if (llvm::sys::fs::is_directory(DEVCOPY_SOURCE_DIR "/rules"))
    path = DEVCOPY_SOURCE_DIR;
  return "file://" + uriEncode(path);
}

std::string defaultRuleDocs() { return docsFolder() + "/rules"; }

static json::Array rulesArray(const std::vector<std::string> &order,
                              const std::string &docs) {
  json::Array rules;
  for (const std::string &id : order) {
    const rules::Rule *r = rules::find(id);
    if (!r) { // a clang-tidy check devcopy ran
      json::Object o{
          {"id", id},
          {"name", ruleName(id)},
          {"shortDescription",
           json::Object{{"text", "clang-tidy check " + id}}},
          {"defaultConfiguration", json::Object{{"level", "warning"}}}};
      if (std::string uri = clangTidyDocs(id); !uri.empty())
        o["helpUri"] = uri;
      rules.push_back(std::move(o));
      continue;
    }
    std::string help(r->help);
    std::string full = markdownSection(help, "What it flags");
    rules.push_back(json::Object{
        {"id", str(r->id)},
        {"name", ruleName(r->id)},
        {"shortDescription", json::Object{{"text", str(r->summary)}}},
        {"fullDescription",
         json::Object{{"text", full.empty() ? str(r->summary) : full}}},
        {"help", json::Object{{"text", help}, {"markdown", help}}},
        {"helpUri", docs + "/" + uriEncode(str(r->id)) + ".md"},
        {"defaultConfiguration", json::Object{{"level", str(r->level)}}},
        {"properties",
         json::Object{{"tags", json::Array{"performance", "libtorch"}}}}});
  }
  return rules;
}

static json::Object result(const Finding &f, SourceText &src,
                           const std::string &root,
                           const std::vector<std::string> &order) {
  json::Object res{
      {"ruleId", f.rule},
      {"level", f.level},
      {"message", json::Object{{"text", f.message}}},
      {"locations",
       json::Array{json::Object{
           {"physicalLocation", physical(src, f.where, f.end, root)}}}},
      {"partialFingerprints", json::Object{{kFingerprintKey, f.fingerprint}}}};
  auto at = std::find(order.begin(), order.end(), f.rule);
  res["ruleIndex"] = int64_t(at - order.begin());
  if (!f.baselineState.empty())
    res["baselineState"] = f.baselineState;
  if (!f.notes.empty()) {
    json::Array related;
    int id = 1;
    for (const Note &n : f.notes)
      related.push_back(json::Object{
          {"id", id++},
          {"message", json::Object{{"text", n.message}}},
          {"physicalLocation", physical(src, n.where, n.end, root)}});
    res["relatedLocations"] = std::move(related);
  }
  if (!f.fixes.empty()) {
    // One artifactChange per file, replacements in file order as SARIF asks.
    json::Array changes;
    for (std::size_t i = 0; i < f.fixes.size();) {
      const std::string &file = f.fixes[i].begin.file;
      json::Array replacements;
      for (; i < f.fixes.size() && f.fixes[i].begin.file == file; ++i) {
        const Edit &e = f.fixes[i];
        replacements.push_back(
            json::Object{{"deletedRegion", region(src, e.begin, e.end)},
                         {"insertedContent", json::Object{{"text", e.text}}}});
      }
      changes.push_back(
          json::Object{{"artifactLocation", artifact(file, root)},
                       {"replacements", std::move(replacements)}});
    }
    res["fixes"] = json::Array{json::Object{
        {"description",
         json::Object{{"text", "apply devcopy's suggested change"}}},
        {"artifactChanges", std::move(changes)}}};
  }
  return res;
}

void writeSarif(llvm::raw_ostream &out, const Results &results,
                SourceText &sources, const std::string &root,
                const std::string &ruleDocs) {
  // The catalog's checks, then any clang-tidy check a result names.
  std::vector<std::string> order;
  for (const rules::Rule &r : rules::kAll)
    if (r.kind == "static")
      order.push_back(str(r.id));
  std::vector<const Finding *> all;
  for (const auto *list : {&results.findings, &results.known, &results.absent})
    for (const Finding &f : *list)
      all.push_back(&f);
  for (const Finding *f : all)
    if (std::find(order.begin(), order.end(), f->rule) == order.end())
      order.push_back(f->rule);
  std::string docs = ruleDocs.empty() ? defaultRuleDocs() : ruleDocs;
  while (!docs.empty() && docs.back() == '/')
    docs.pop_back();
  json::Array resultsArray;
  for (const Finding *f : all)
    resultsArray.push_back(result(*f, sources, root, order));
  json::Array notifications;
  for (const ToolError &e : results.errors) {
    json::Object n{{"level", "error"},
                   {"message", json::Object{{"text", e.message}}}};
    if (!e.file.empty())
      n["locations"] = json::Array{json::Object{
          {"physicalLocation",
           json::Object{{"artifactLocation", artifact(e.file, root)}}}}};
    notifications.push_back(std::move(n));
  }
  std::string rootUri =
      "file://" + uriEncode(root.back() == '/' ? root : root + "/");
  json::Object driver{{"name", "devcopy"},
                      {"version", DEVCOPY_VERSION},
                      {"semanticVersion", DEVCOPY_VERSION},
                      {"rules", rulesArray(order, docs)}};
  // The project's home page when configured, else the installed README.
  driver["informationUri"] = *DEVCOPY_INFORMATION_URI
                                 ? DEVCOPY_INFORMATION_URI
                                 : docsFolder() + "/README.md";
  json::Value doc = json::Object{
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs",
       json::Array{json::Object{
           {"tool", json::Object{{"driver", std::move(driver)}}},
           {"originalUriBaseIds",
            json::Object{{kRootBase, json::Object{{"uri", rootUri}}}}},
           {"columnKind", "utf16CodeUnits"},
           {"invocations",
            json::Array{json::Object{
                {"executionSuccessful", results.errors.empty()},
                {"toolExecutionNotifications", std::move(notifications)}}}},
           {"results", std::move(resultsArray)}}}}};
  out << llvm::formatv("{0:2}", doc) << "\n";
}

} // namespace devcopy::cli
