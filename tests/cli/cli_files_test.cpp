// Unit tests of how the devcopy command writes files (AtomicFile, --fix by
// file identity) and reads hostile input (nesting limits, baselines).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "AtomicFile.h"
#include "Baseline.h"
#include "Fixes.h"
#include "Input.h"

using namespace devcopy::cli;
namespace stdfs = std::filesystem;

namespace {

class Files : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/devcopy_cli_filesXXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override {
    stdfs::permissions(dir_, stdfs::perms::owner_all, stdfs::perm_options::add);
    stdfs::remove_all(dir_);
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
  }
  std::string read(const std::string& name) const {
    std::ifstream in(path(name), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  /// Only the files the test made: no temporary file may be left behind.
  std::size_t entries() const {
    return std::size_t(std::distance(stdfs::directory_iterator(dir_), stdfs::directory_iterator()));
  }
  std::string dir_;
};

TEST_F(Files, ReplacesOnlyOnCommitAndKeepsPermissions) {
  write("report.txt", "previous");
  chmod(path("report.txt").c_str(), 0640);
  auto f = AtomicFile::create(path("report.txt"));
  ASSERT_TRUE(bool(f)) << llvm::toString(f.takeError());
  f->os() << "new report";
  f->os().flush();
  EXPECT_EQ(read("report.txt"), "previous");  // not truncated while in progress
  EXPECT_EQ(entries(), 2u);                    // the report and its temporary
  ASSERT_FALSE(bool(f->commit()));
  EXPECT_EQ(read("report.txt"), "new report");
  EXPECT_EQ(entries(), 1u);
  struct stat st;
  stat(path("report.txt").c_str(), &st);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(Files, AnAbandonedWriteLeavesThePreviousFile) {
  write("baseline.json", "{\"old\": true}");
  {
    auto f = AtomicFile::create(path("baseline.json"));
    ASSERT_TRUE(bool(f));
    f->os() << std::string(1 << 20, 'x');
  }  // destroyed without commit: a failed run
  EXPECT_EQ(read("baseline.json"), "{\"old\": true}");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(Files, ASymlinkStaysALinkAndItsTargetIsReplaced) {
  write("real.cpp", "old");
  stdfs::create_symlink(path("real.cpp"), path("link.cpp"));
  ASSERT_FALSE(bool(writeAtomically(path("link.cpp"), [](llvm::raw_ostream& o) { o << "new"; })));
  EXPECT_TRUE(stdfs::is_symlink(path("link.cpp")));
  EXPECT_EQ(read("real.cpp"), "new");
}

TEST_F(Files, UnwritableTargetsAreErrorsNamingTheFile) {
  write("locked.cpp", "keep");
  chmod(path("locked.cpp").c_str(), 0444);
  llvm::Error err = writeAtomically(path("locked.cpp"), [](llvm::raw_ostream& o) { o << "x"; });
  ASSERT_TRUE(bool(err));
  std::string msg = llvm::toString(std::move(err));
  EXPECT_NE(msg.find("locked.cpp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("read-only"), std::string::npos) << msg;
  EXPECT_EQ(read("locked.cpp"), "keep");

  err = writeAtomically(path("no/such/dir/out.json"), [](llvm::raw_ostream& o) { o << "x"; });
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("no/such/dir"), std::string::npos);

  // A full disk shows when the data is written, not when the file is opened.
  err = writeAtomically("/dev/full", [](llvm::raw_ostream& o) { o << std::string(1 << 16, 'x'); });
  ASSERT_TRUE(bool(err));
  msg = llvm::toString(std::move(err));
  EXPECT_NE(msg.find("/dev/full"), std::string::npos) << msg;
  EXPECT_NE(msg.find("space"), std::string::npos) << msg;
}

Finding fixable(const std::string& file, unsigned offset, const std::string& text) {
  Finding f;
  f.rule = "devcopy-discarded-copy";
  f.where.file = file;
  f.where.offset = offset;
  Edit e;
  e.begin = f.where;
  e.text = text;
  f.fixes.push_back(e);
  return f;
}

TEST_F(Files, FixesReachingAFileByTwoPathsApplyOnce) {
  stdfs::create_directory(path("src"));
  stdfs::create_directory_symlink(path("src"), path("alias"));
  write("src/a.cpp", "void f(T t) {\n  t.to(d);\n}\n");
  std::vector<Finding> findings = {fixable(path("src/a.cpp"), 16, "t = "),
                                   fixable(path("alias/a.cpp"), 16, "t = ")};
  SourceText sources;
  std::vector<ToolError> errors;
  EXPECT_EQ(applyFixes(findings, sources, errors), 2u);  // one edit fixes both
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(read("src/a.cpp"), "void f(T t) {\n  t = t.to(d);\n}\n");
  EXPECT_TRUE(findings.empty());
}

TEST_F(Files, AnUnwritableFileKeepsEveryFindingAndEveryFile) {
  write("a.cpp", "  t.to(d);\n");
  write("b.h", "  u.to(d);\n");
  chmod(path("b.h").c_str(), 0444);
  std::vector<Finding> findings = {fixable(path("a.cpp"), 2, "t = "),
                                   fixable(path("b.h"), 2, "u = ")};
  SourceText sources;
  std::vector<ToolError> errors;
  EXPECT_EQ(applyFixes(findings, sources, errors), 0u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("b.h"), std::string::npos) << errors[0].message;
  EXPECT_NE(errors[0].message.find("read-only"), std::string::npos) << errors[0].message;
  EXPECT_EQ(findings.size(), 2u);
  EXPECT_EQ(read("a.cpp"), "  t.to(d);\n");  // all files or none
  EXPECT_EQ(read("b.h"), "  u.to(d);\n");
  EXPECT_EQ(entries(), 2u);
}

/// The message of a failed Expected, "" on success.
template <typename T> std::string errorOf(llvm::Expected<T> value) {
  return value ? "" : llvm::toString(value.takeError());
}

TEST(Input, NestingIsBoundedBeforeAnyParserRecurses) {
  std::string deep = "{\"version\": 1, \"entries\": " + std::string(50000, '[') +
                     std::string(50000, ']') + "}";
  std::string error = errorOf(Baseline::parse(deep, "deep.json"));
  EXPECT_NE(error.find("nested more than"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  // Brackets inside JSON strings are text, not nesting.
  std::string fine = "{\"version\": 1, \"entries\": [{\"fingerprint\": \"" +
                     std::string(1000, '[') + "\"}]}";
  EXPECT_EQ(errorOf(Baseline::parse(fine, "fine.json")), "");
  EXPECT_TRUE(nestingError(std::string(300, '[') , /*json=*/false));
  EXPECT_FALSE(nestingError("Checks: '-*,devcopy-*'\nCheckOptions: {a: [b]}\n", false));
}

TEST(Input, HostileJsonGivesOneLineErrors) {
  const char* hostile[] = {"", "\xff\xfe\x00garbage", "[{\"fingerprint\":", "{\"version\": 1e999999}",
                           "\"\\ud800\"", "{\"version\": 1, \"entries\": [1, 2]}",
                           "{\"version\": 18446744073709551616, \"entries\": []}"};
  for (const char* text : hostile) {
    std::string error = errorOf(Baseline::parse(text, "b.json"));
    EXPECT_FALSE(error.empty()) << text;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    EXPECT_EQ(error.find("byte="), std::string::npos) << error;
  }
}

}  // namespace
