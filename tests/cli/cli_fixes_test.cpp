// Unit tests of what keeps --fix and the readers of user input safe: fixes
// only on the bytes analysed, never over a preprocessor line or a comment,
// overlapping fixes skipped whole, files committed together with their
// owner and links; bounded reads; response-file expansion.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "AtomicFile.h"
#include "Cache.h"
#include "Fixes.h"
#include "Input.h"
#include "ResponseFiles.h"
#include "ScratchDir.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace devcopy::cli;
namespace stdfs = std::filesystem;

namespace {

class Fix : public ScratchDir {
protected:
  /// A finding with one edit per (offset, length, text), stamped with the
  /// file's current bytes as the analysis would.
  Finding finding(
      const std::string &name,
      std::vector<std::tuple<unsigned, unsigned, std::string>> edits) const {
    Finding f;
    f.rule = "devcopy-create-then-move";
    f.where.file = path(name);
    for (auto &[offset, length, text] : edits) {
      Edit e;
      e.begin.file = path(name);
      e.begin.offset = offset;
      e.length = length;
      e.text = text;
      e.analysed = contentHash(read(name));
      f.fixes.push_back(e);
    }
    return f;
  }
};

TEST_F(Fix, NeverOverAPreprocessorLineOrAComment) {
  std::string code = "x = ones()\n#ifdef V\n.to(a);\n#endif\n"
                     "y = ones() // why\n.to(b);\n";
  write("a.cpp", code);
  unsigned hash = unsigned(code.find("#ifdef")),
           slash = unsigned(code.find("//"));
  std::vector<Finding> findings = {
      finding("a.cpp", {{hash - 1, 16, ""}}),      // deletes "#ifdef V"
      finding("a.cpp", {{slash - 1, 14, ""}}),     // deletes the comment
      finding("a.cpp", {{slash, 8, "// why\n"}})}; // carries it over
  SourceText sources;
  std::vector<ToolError> errors;
  EXPECT_EQ(applyFixes(findings, sources, errors), 1u);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(findings.size(), 2u); // the refused ones stay
  EXPECT_NE(read("a.cpp").find("#ifdef V\n.to(a);\n#endif"), std::string::npos);
  // Another tool's fix (clang-tidy's own checks) is not devcopy's to judge.
  Finding other = finding("a.cpp", {{0, 0, "// x\n"}});
  other.rule = "llvm-include-order";
  other.fixes[0].length = 2;
  findings = {other};
  EXPECT_EQ(applyFixes(findings, sources, errors), 1u);
}

TEST_F(Fix, OverlappingFixesAreSkippedWholeAndDuplicatesApplyOnce) {
  write("a.cpp", "0123456789");
  std::vector<Finding> findings = {
      finding("a.cpp", {{2, 3, "A"}}),
      finding("a.cpp", {{0, 0, "<"}, {4, 2, "B"}}), // overlaps: none of it
      finding("a.cpp", {{2, 3, "A"}}),              // the same edit again
      finding("a.cpp", {{5, 0, "|"}}),              // right after the first
      finding("a.cpp", {{8, 2, "C"}})};
  SourceText sources;
  std::vector<ToolError> errors;
  EXPECT_EQ(applyFixes(findings, sources, errors), 4u);
  EXPECT_EQ(read("a.cpp"), "01A|567C");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].fixes.size(), 2u);
}

TEST_F(Fix, AFileChangedSinceItWasAnalyzedIsNotFixedNorAnyOther) {
  write("a.cpp", "  t.to(d);\n");
  write("b.cpp", "  u.to(d);\n");
  std::vector<Finding> findings = {finding("a.cpp", {{2, 0, "t = "}}),
                                   finding("b.cpp", {{2, 0, "u = "}})};
  write("b.cpp", "#include <x>\n  u.to(d);\n"); // edited meanwhile
  SourceText sources;
  std::vector<ToolError> errors;
  EXPECT_EQ(applyFixes(findings, sources, errors), 0u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message.find("b.cpp' changed since devcopy analyzed it"),
            std::string::npos)
      << errors[0].message;
  EXPECT_EQ(findings.size(), 2u);
  EXPECT_EQ(read("a.cpp"), "  t.to(d);\n");
  EXPECT_EQ(read("b.cpp"), "#include <x>\n  u.to(d);\n");
}

TEST_F(Fix, OwnerModeAndHardLinksAreKept) {
  write("a.cpp", "old");
  chmod(path("a.cpp").c_str(), 0640);
  if (geteuid() == 0)
    ASSERT_EQ(chown(path("a.cpp").c_str(), 65534, 65534), 0);
  write("b.cpp", "old");
  stdfs::create_hard_link(path("b.cpp"), path("b-link.cpp"));
  struct stat before;
  stat(path("b.cpp").c_str(), &before);
  std::vector<AtomicFile> files;
  for (const char *name : {"a.cpp", "b.cpp"}) {
    auto f = AtomicFile::create(path(name));
    ASSERT_TRUE(bool(f)) << llvm::toString(f.takeError());
    f->os() << "new";
    files.push_back(std::move(*f));
  }
  std::vector<std::string> unplaced;
  ASSERT_FALSE(bool(commitAll(files, unplaced)));
  EXPECT_TRUE(unplaced.empty());
  struct stat a, b;
  stat(path("a.cpp").c_str(), &a);
  stat(path("b.cpp").c_str(), &b);
  EXPECT_EQ(a.st_mode & 07777, 0640u);
  if (geteuid() == 0)
    EXPECT_EQ(a.st_uid, 65534u);
  EXPECT_EQ(b.st_ino, before.st_ino); // written through the inode
  EXPECT_EQ(read("b-link.cpp"), "new");
  EXPECT_EQ(read("a.cpp"), "new");
}

TEST_F(Fix, CommitAllPlacesNothingWhenOneFileCannotBeWritten) {
  write("a.cpp", "old");
  std::vector<AtomicFile> files;
  for (std::string name : {path("a.cpp"), std::string("/dev/full")}) {
    auto f = AtomicFile::create(name);
    ASSERT_TRUE(bool(f));
    f->os() << std::string(1 << 16, 'x');
    files.push_back(std::move(*f));
  }
  std::vector<std::string> unplaced;
  llvm::Error e = commitAll(files, unplaced);
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("/dev/full"), std::string::npos);
  EXPECT_EQ(unplaced.size(), 2u);
  EXPECT_EQ(read("a.cpp"), "old");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(Fix, ManyFixesInOneFileApplyInOnePass) {
  std::string code;
  for (int i = 0; i < 20000; ++i)
    code += "  t.to(d);\n";
  write("many.cpp", code);
  std::vector<Finding> findings(20000, finding("many.cpp", {{2, 0, "t = "}}));
  for (unsigned i = 0; i < 20000; ++i)
    findings[i].fixes[0].begin.offset = i * 11 + 2;
  SourceText sources;
  std::vector<ToolError> errors;
  EXPECT_EQ(applyFixes(findings, sources, errors), 20000u);
  EXPECT_EQ(read("many.cpp").substr(0, 30), "  t = t.to(d);\n  t = t.to(d);\n");
  EXPECT_EQ(read("many.cpp").size(), code.size() + 20000 * 4);
}

TEST_F(Fix, InputsAreReadWithALimitAndStopAtANulByte) {
  for (const char *device : {"/dev/zero", "/dev/urandom"}) {
    auto text = readInput(device, kMaxBaseline);
    ASSERT_FALSE(bool(text));
    EXPECT_NE(llvm::toString(text.takeError()).find("NUL"), std::string::npos);
  }
  write("big.json", std::string(2 << 20, ' '));
  auto text = readInput(path("big.json"), 1 << 20);
  ASSERT_FALSE(bool(text));
  EXPECT_NE(llvm::toString(text.takeError()).find("larger than 1 MiB"),
            std::string::npos);
  EXPECT_EQ(readInput(path("big.json"), kMaxBaseline)->size(), 2u << 20);
}

TEST(ResponseFiles, ExpandedFromTheCommandsDirectory) {
  auto fs = llvm::makeIntrusiveRefCnt<llvm::vfs::InMemoryFileSystem>();
  fs->addFile(
      "/b/flags.rsp", 0,
      llvm::MemoryBuffer::getMemBuffer("-std=c++17 \"-I/a b\" @more.rsp"));
  fs->addFile("/b/more.rsp", 0, llvm::MemoryBuffer::getMemBuffer("-DX=1\n"));
  clang::tooling::CompileCommand c(
      "/b", "/s/a.cpp", {"clang++", "@flags.rsp", "-c", "a.cpp"}, "");
  ASSERT_FALSE(bool(expandResponseFiles(c, *fs)));
  EXPECT_EQ(c.CommandLine,
            (std::vector<std::string>{"clang++", "-std=c++17", "-I/a b",
                                      "-DX=1", "-c", "a.cpp"}));
  clang::tooling::CompileCommand gone("/b", "/s/a.cpp",
                                      {"clang++", "@nope.rsp"}, "");
  llvm::Error e = expandResponseFiles(gone, *fs);
  ASSERT_TRUE(bool(e));
  std::string msg = llvm::toString(std::move(e));
  EXPECT_NE(msg.find("'nope.rsp', which does not exist"), std::string::npos)
      << msg;
}

} // namespace
