// Unit tests of the devcopy command's AST-free parts: fingerprints, the
// baseline, option parsing and the text/JSON/SARIF writers.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "Baseline.h"
#include "Fingerprint.h"
#include "Options.h"
#include "Output.h"
#include "Sarif.h"
#include "SourceText.h"
#include "devcopy/rules_catalog.h"
#include "llvm/Support/JSON.h"

using namespace devcopy::cli;
namespace json = llvm::json;

namespace {

std::string tempDir() {
  // Never destroyed, so the exit handler can still read it.
  static const std::string *dir = [] {
    char tmpl[] = "/tmp/devcopy_cli_unitXXXXXX";
    auto *made = new std::string(mkdtemp(tmpl));
    std::atexit([] { std::filesystem::remove_all(tempDir()); });
    return made;
  }();
  return *dir;
}

std::string writeFile(const std::string &name, const std::string &text) {
  std::string path = tempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

Finding findingAt(const std::string &file, unsigned offset,
                  const std::string &rule, SourceText &src) {
  Finding f;
  f.rule = rule;
  f.level = "warning";
  f.message = "copy discarded";
  f.where.file = file;
  f.where.offset = offset;
  src.locate(f.where);
  f.end = f.where;
  return f;
}

std::string firstStaticRule() {
  for (const auto &r : devcopy::rules::kAll)
    if (r.kind == "static")
      return std::string(r.id);
  return "devcopy-unknown";
}

} // namespace

TEST(Fingerprint, SurvivesLineShiftsAndReindentation) {
  std::string file = writeFile("a.cpp", "void f() {\n  x.to(dev);\n}\n");
  SourceText before;
  std::vector<Finding> one{findingAt(file, 13, "devcopy-x", before)};
  assignFingerprints(one, before, tempDir());
  EXPECT_EQ(one[0].where.line, 2u);

  writeFile("a.cpp", "// new comment\n\nvoid f() {\n      x.to( dev );\n}\n");
  SourceText after;
  std::vector<Finding> two{findingAt(file, 31, "devcopy-x", after)};
  assignFingerprints(two, after, tempDir());
  EXPECT_EQ(two[0].where.line, 4u);
  EXPECT_EQ(one[0].fingerprint, two[0].fingerprint);

  writeFile("a.cpp", "// new comment\n\nvoid f() {\n      x.to(other);\n}\n");
  SourceText edited;
  std::vector<Finding> three{findingAt(file, 31, "devcopy-x", edited)};
  assignFingerprints(three, edited, tempDir());
  EXPECT_NE(one[0].fingerprint, three[0].fingerprint);
}

TEST(Fingerprint, ChangesWithRuleTextAndCountsIdenticalLines) {
  std::string file = writeFile("c.cpp", "x.to(dev);\nx.to(dev);\ny.to(dev);\n");
  SourceText src;
  std::vector<Finding> fs{findingAt(file, 0, "devcopy-x", src),
                          findingAt(file, 11, "devcopy-x", src),
                          findingAt(file, 22, "devcopy-x", src),
                          findingAt(file, 0, "devcopy-y", src)};
  assignFingerprints(fs, src, tempDir());
  std::set<std::string> unique;
  for (const Finding &f : fs)
    unique.insert(f.fingerprint);
  EXPECT_EQ(unique.size(), 4u);
  // Identical lines share the hash and differ by occurrence index.
  auto hash = [](const std::string &fp) { return fp.substr(0, fp.find(':')); };
  const Finding *first = nullptr;
  const Finding *second = nullptr;
  for (const Finding &f : fs)
    if (f.rule == "devcopy-x" && f.where.line == 1)
      first = &f;
    else if (f.rule == "devcopy-x" && f.where.line == 2)
      second = &f;
  ASSERT_TRUE(first && second);
  EXPECT_EQ(hash(first->fingerprint), hash(second->fingerprint));
  EXPECT_NE(first->fingerprint, second->fingerprint);
  EXPECT_EQ(normalizeLine("  a . to ( b );\t"), "a.to(b);");
  EXPECT_EQ(stableHash(""),
            "cbf29ce484222325"); // FNV-1a offset basis: no seed, no drift
}

TEST(Baseline, HidesKnownFindingsAfterAShiftAndKeepsNewOnes) {
  std::string v1 = writeFile("base.cpp", "void f() {\n  x.to(dev);\n}\n");
  SourceText src1;
  std::vector<Finding> old{findingAt(v1, 13, "devcopy-x", src1)};
  assignFingerprints(old, src1, tempDir());
  std::string error, path = tempDir() + "/baseline.json";
  ASSERT_FALSE(bool(Baseline::write(path, old, tempDir())));

  writeFile("base.cpp",
            "#include <vector>\nvoid f() {\n  x.to(dev);\n  y.cuda();\n}\n");
  SourceText src2;
  std::vector<Finding> now{findingAt(v1, 31, "devcopy-x", src2),
                           findingAt(v1, 44, "devcopy-x", src2)};
  assignFingerprints(now, src2, tempDir());
  auto baseline = Baseline::read(path);
  ASSERT_TRUE(bool(baseline)) << llvm::toString(baseline.takeError());
  std::vector<Finding> again = now;
  EXPECT_EQ(baseline->removeKnown(again), 1u);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].where.line, 4u);
  // classify keeps the known one, marked, and reports gone entries as absent.
  std::vector<Finding> known, absent;
  baseline->classify(now, known, absent, tempDir());
  ASSERT_EQ(now.size(), 1u);
  EXPECT_EQ(now[0].baselineState, "new");
  ASSERT_EQ(known.size(), 1u);
  EXPECT_EQ(known[0].baselineState, "unchanged");
  EXPECT_EQ(known[0].where.line, 3u);
  EXPECT_TRUE(absent.empty());
  std::vector<Finding> none, known2, absent2;
  baseline->classify(none, known2, absent2, tempDir());
  ASSERT_EQ(absent2.size(), 1u);
  EXPECT_EQ(absent2[0].baselineState, "absent");
  EXPECT_EQ(absent2[0].where.file, v1);
  EXPECT_EQ(absent2[0].where.line, 2u);
  EXPECT_EQ(absent2[0].rule, "devcopy-x");
  EXPECT_EQ(absent2[0].fingerprint, old[0].fingerprint);
}

TEST(Baseline, BadFilesGiveOneLineErrorsNamingTheFile) {
  auto missing = Baseline::read(tempDir() + "/missing.json");
  ASSERT_FALSE(bool(missing));
  std::string error = llvm::toString(missing.takeError());
  EXPECT_NE(error.find("missing.json"), std::string::npos);
  EXPECT_NE(error.find("--write-baseline"), std::string::npos);
  for (const char *bad :
       {"{not json", "{\"version\": 7, \"entries\": []}",
        "{\"version\": 1, \"entries\": [{\"rule\": \"x\"}]}"}) {
    std::string path = writeFile("bad.json", bad);
    auto b = Baseline::read(path);
    ASSERT_FALSE(bool(b)) << bad;
    error = llvm::toString(b.takeError());
    EXPECT_NE(error.find(path), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

/// parseOptions' action, or the error's message.
std::string parse(std::vector<const char *> argv, Options &o) {
  llvm::Expected<Action> a = parseOptions(int(argv.size()), argv.data(), o);
  if (!a)
    return "error: " + llvm::toString(a.takeError());
  return *a == Action::Analyze ? "analyze"
         : *a == Action::Help  ? "help"
                               : "version";
}

TEST(Options, ParsesEveryOptionAndRejectsBadInput) {
  Options o;
  ASSERT_EQ(parse({"devcopy", "analyze", "-p", "build", "--format=sarif",
                   "--jobs", "3", "--checks", "-*,devcopy-x", "--baseline",
                   "b.json", "--fix", "src"},
                  o),
            "analyze");
  EXPECT_EQ(o.buildDir, "build");
  EXPECT_EQ(o.format, "sarif");
  EXPECT_EQ(o.jobs, 3u);
  EXPECT_EQ(*o.checks, "-*,devcopy-x");
  EXPECT_TRUE(o.fix);
  EXPECT_EQ(o.paths, std::vector<std::string>{"src"});

  std::vector<std::vector<const char *>> bad = {
      {"devcopy"},
      {"devcopy", "scan"},
      {"devcopy", "analyze", "--frobnicate"},
      {"devcopy", "analyze", "--jobs", "0"},
      {"devcopy", "analyze", "--jobs", "two"},
      {"devcopy", "analyze", "--format", "xml"},
      {"devcopy", "analyze", "-p"},
      {"devcopy", "analyze", "--quiet=maybe"},
      {"devcopy", "analyze", "--config", "{}", "--config-file", "c.yaml"},
      {"devcopy", "analyze", "--baseline", "b", "--write-baseline", "b"}};
  for (auto &argv : bad) {
    Options opts;
    std::string error = parse(argv, opts);
    EXPECT_EQ(error.rfind("error: ", 0), 0u) << argv.back() << ": " << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  Options opts;
  EXPECT_EQ(parse({"devcopy", "analyze", "--chekcs=x"}, opts),
            "error: unknown option '--chekcs=x'; did you mean '--checks=x'? "
            "(see devcopy analyze "
            "--help)");
  EXPECT_EQ(parse({"devcopy", "analyze", "-p"}, opts),
            "error: option '-p' needs a value (see devcopy analyze --help)");
}

TEST(Options, ClangTidysFlagsWithClangTidysSpellings) {
  // Parsed twice in one process: llvm::cl's global state must not leak.
  for (int round = 0; round < 2; ++round) {
    Options o;
    ASSERT_EQ(parse({"devcopy",
                     "analyze",
                     "-checks=-*,performance-avoid-endl",
                     "--config={Checks: 'devcopy-*'}",
                     "--header-filter",
                     ".*",
                     "--warnings-as-errors=devcopy-*",
                     "--export-fixes=f.yaml",
                     "--quiet",
                     "--extra-arg=-DA",
                     "--extra-arg",
                     "-DB",
                     "--extra-arg-before=-DC",
                     "--rule-docs=https://x/rules",
                     "-j",
                     "2",
                     "./-dash.cpp",
                     "--",
                     "-std=c++17",
                     "--help"},
                    o),
              "analyze");
    EXPECT_EQ(*o.checks, "-*,performance-avoid-endl");
    EXPECT_EQ(*o.config, "{Checks: 'devcopy-*'}");
    EXPECT_EQ(*o.headerFilter, ".*");
    EXPECT_EQ(*o.warningsAsErrors, "devcopy-*");
    EXPECT_EQ(o.exportFixes, "f.yaml");
    EXPECT_TRUE(o.quiet);
    EXPECT_EQ(o.extraArgs, (std::vector<std::string>{"-DA", "-DB"}));
    EXPECT_EQ(o.extraArgsBefore, std::vector<std::string>{"-DC"});
    EXPECT_EQ(o.ruleDocs, "https://x/rules");
    EXPECT_EQ(o.jobs, 2u);
    EXPECT_EQ(o.paths, std::vector<std::string>{"./-dash.cpp"});
    // After "--", as in clang-tidy: the compile command, not options.
    EXPECT_EQ(*o.compileFlags,
              (std::vector<std::string>{"-std=c++17", "--help"}));
    // Nothing of the previous parse is left over.
    Options fresh;
    ASSERT_EQ(parse({"devcopy", "analyze"}, fresh), "analyze");
    EXPECT_FALSE(fresh.checks || fresh.config || fresh.headerFilter ||
                 fresh.quiet || fresh.compileFlags);
    EXPECT_TRUE(fresh.extraArgs.empty() && fresh.paths.empty());
    EXPECT_EQ(fresh.jobs, 0u);
    EXPECT_EQ(fresh.buildDir, ".");
  }
  Options o;
  EXPECT_EQ(parse({"devcopy", "analyze", "--list-checks"}, o), "analyze");
  EXPECT_TRUE(o.listChecks);
  EXPECT_EQ(parse({"devcopy", "analyze", "--explain-config"}, o), "analyze");
  EXPECT_TRUE(o.explainConfig);
  // Help and version never exit the process from the parser.
  EXPECT_EQ(parse({"devcopy", "--help"}, o), "help");
  EXPECT_EQ(parse({"devcopy", "analyze", "-checks=x", "--help"}, o), "help");
  EXPECT_EQ(parse({"devcopy", "analyze", "-help-hidden"}, o), "help");
  EXPECT_EQ(parse({"devcopy", "--version"}, o), "version");
  // "--" ends devcopy's options: the option before it has no value.
  EXPECT_EQ(
      parse({"devcopy", "analyze", "--jobs", "--", "--help"}, o),
      "error: option '--jobs' needs a value (see devcopy analyze --help)");
  EXPECT_EQ(parse({"devcopy", "analyze", "--", "-std=c++17"}, o),
            "error: the flags after '--' are the compile command of the files "
            "to analyze: name them before '--' (devcopy analyze FILE... -- "
            "FLAGS)");
  EXPECT_EQ(parse({"devcopy", "analyze", "--line-filter=[{\"name\":1}]"}, o),
            "error: --line-filter is not clang-tidy's JSON "
            "([{\"name\":\"file.cpp\",\"lines\":[[1,9]]}]): expected string "
            "at line-filter[0].name");
  EXPECT_EQ(parse({"devcopy", "analyze", "--fix-errors", "--fix-notes",
                   "--system-headers", "--use-color=false", "--dump-config",
                   "--exclude-header-filter=gen/", "--allow-no-checks"},
                  o),
            "analyze");
  EXPECT_TRUE(o.fix && o.fixErrors && o.fixNotes && *o.systemHeaders &&
              !*o.useColor && o.dumpConfig && o.allowNoChecks);
  EXPECT_EQ(*o.excludeHeaderFilter, "gen/");
  // llvm::cl would take "-hx" for the group "-h -x", print the help and exit.
  EXPECT_EQ(parse({"devcopy", "analyze", "--heAp"}, o),
            "error: unknown option '--heAp' (see devcopy analyze --help)");
  EXPECT_EQ(parse({"devcopy", "analyze", "--header-filter=x"}, o), "analyze");
}

TEST(Writers, TextIsClangStyle) {
  std::string file = writeFile("t.cpp", "int a;\n\tx.to(dev);\n");
  SourceText src;
  Results r;
  r.findings.push_back(
      findingAt(file, 10, "devcopy-x", src)); // "to", after a tab
  Finding &f = r.findings[0];
  Range range;
  range.begin = f.where;
  range.begin.offset = 8; // "x.to(dev)"
  range.end = f.where;
  range.end.offset = 17;
  src.locate(range.begin);
  src.locate(range.end);
  f.ranges.push_back(range);
  Edit insert;
  insert.begin = range.begin;
  insert.end = range.begin;
  insert.text = "x = ";
  f.fixes.push_back(insert);
  Note n;
  n.where.file = file;
  n.where.offset = 0;
  src.locate(n.where);
  n.message = "moved here";
  f.notes.push_back(n);
  std::string text;
  llvm::raw_string_ostream os(text);
  writeText(os, r, src, tempDir());
  os.flush();
  // clang's layout: gutter, the line with its tab expanded, `~` over the
  // range, `^` at the location, the inserted text under its column.
  EXPECT_EQ(text, "t.cpp:2:4: warning: copy discarded [devcopy-x]\n"
                  "    2 |         x.to(dev);\n"
                  "      |         ~~^~~~~~~\n"
                  "      |         x = \n"
                  "t.cpp:1:1: note: moved here\n"
                  "    1 | int a;\n"
                  "      | ^\n");
}

TEST(Writers, SarifCarriesRulesLocationsNotesFixesAndFingerprints) {
  std::string rule = firstStaticRule();
  std::string file = writeFile("with space.cpp", "// é\n  /*é*/x.to(dev);\n");
  SourceText src;
  Results r;
  Finding f = findingAt(file, 14, rule,
                        src); // after "  /*é*/": 8 bytes, 7 UTF-16 units
  f.end.offset = 23;
  src.locate(f.end);
  Note n{f.where, "the loop"};
  f.notes.push_back(n);
  Edit e;
  e.begin = f.where;
  e.end = f.end;
  e.length = 9;
  e.text = "";
  f.fixes.push_back(e);
  r.findings.push_back(f);
  assignFingerprints(r.findings, src, tempDir());
  std::string text;
  llvm::raw_string_ostream os(text);
  writeSarif(os, r, src, tempDir(), "https://example.com/rules/");
  os.flush();
  auto doc = json::parse(text);
  ASSERT_TRUE(bool(doc)) << llvm::toString(doc.takeError());
  const json::Object *run =
      (*doc->getAsObject()->getArray("runs"))[0].getAsObject();
  EXPECT_EQ(doc->getAsObject()->getString("version"), "2.1.0");
  const json::Array *rules =
      run->getObject("tool")->getObject("driver")->getArray("rules");
  unsigned statics = 0;
  for (const auto &r : devcopy::rules::kAll)
    statics += r.kind == "static";
  ASSERT_EQ(rules->size(), statics);
  const json::Object *r0 = (*rules)[0].getAsObject();
  EXPECT_EQ(r0->getString("id"), rule);
  EXPECT_EQ(r0->getObject("help")->getString("markdown"),
            std::string(devcopy::rules::find(rule)->help));
  EXPECT_TRUE(r0->getObject("fullDescription")->getString("text"));
  EXPECT_EQ(r0->getString("helpUri"),
            "https://example.com/rules/" + rule + ".md");
  EXPECT_TRUE(
      run->getObject("tool")->getObject("driver")->getString("informationUri"));
  const json::Object *res = (*run->getArray("results"))[0].getAsObject();
  EXPECT_EQ(res->getString("ruleId"), rule);
  EXPECT_EQ(res->getInteger("ruleIndex"), 0);
  const json::Object *loc =
      (*res->getArray("locations"))[0].getAsObject()->getObject(
          "physicalLocation");
  EXPECT_EQ(loc->getObject("artifactLocation")->getString("uri"),
            "with%20space.cpp");
  EXPECT_EQ(loc->getObject("artifactLocation")->getString("uriBaseId"),
            "%SRCROOT%");
  EXPECT_EQ(loc->getObject("region")->getInteger("startLine"), 2);
  EXPECT_EQ(loc->getObject("region")->getInteger("startColumn"), 8);
  EXPECT_EQ(loc->getObject("region")->getInteger("endColumn"), 17);
  EXPECT_EQ(res->getObject("partialFingerprints")->getString(kFingerprintKey),
            r.findings[0].fingerprint);
  EXPECT_EQ((*res->getArray("relatedLocations"))[0]
                .getAsObject()
                ->getObject("message")
                ->getString("text"),
            "the loop");
  EXPECT_TRUE(res->getArray("fixes"));
}

TEST(Writers, MarkdownSection) {
  std::string page = "intro\n\n## What it flags\n\nA call.\nMore.\n\n## Why it "
                     "costs\nBytes.\n";
  EXPECT_EQ(markdownSection(page, "What it flags"), "A call.\nMore.");
  EXPECT_EQ(markdownSection(page, "Why it costs"), "Bytes.");
  EXPECT_EQ(markdownSection(page, "Bad"), "");
}
