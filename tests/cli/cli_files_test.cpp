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
#include "Cache.h"
#include "Fixes.h"
#include "Input.h"
#include "ScratchDir.h"
#include "Shard.h"

using namespace devcopy::cli;
namespace stdfs = std::filesystem;

namespace {

class Files : public ScratchDir {};

TEST_F(Files, ReplacesOnlyOnCommitAndKeepsPermissions) {
  write("report.txt", "previous");
  chmod(path("report.txt").c_str(), 0640);
  auto f = AtomicFile::create(path("report.txt"));
  ASSERT_TRUE(bool(f)) << llvm::toString(f.takeError());
  f->os() << "new report";
  f->os().flush();
  EXPECT_EQ(read("report.txt"), "previous"); // not truncated while in progress
  EXPECT_EQ(entries(), 2u);                  // the report and its temporary
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
  } // destroyed without commit: a failed run
  EXPECT_EQ(read("baseline.json"), "{\"old\": true}");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(Files, ASymlinkStaysALinkAndItsTargetIsReplaced) {
  write("real.cpp", "old");
  stdfs::create_symlink(path("real.cpp"), path("link.cpp"));
  ASSERT_FALSE(bool(writeAtomically(path("link.cpp"),
                                    [](llvm::raw_ostream &o) { o << "new"; })));
  EXPECT_TRUE(stdfs::is_symlink(path("link.cpp")));
  EXPECT_EQ(read("real.cpp"), "new");
}

TEST_F(Files, UnwritableTargetsAreErrorsNamingTheFile) {
  write("locked.cpp", "keep");
  chmod(path("locked.cpp").c_str(), 0444);
  llvm::Error err = writeAtomically(path("locked.cpp"),
                                    [](llvm::raw_ostream &o) { o << "x"; });
  ASSERT_TRUE(bool(err));
  std::string msg = llvm::toString(std::move(err));
  EXPECT_NE(msg.find("locked.cpp"), std::string::npos) << msg;
  EXPECT_NE(msg.find("read-only"), std::string::npos) << msg;
  EXPECT_EQ(read("locked.cpp"), "keep");

  err = writeAtomically(path("no/such/dir/out.json"),
                        [](llvm::raw_ostream &o) { o << "x"; });
  ASSERT_TRUE(bool(err));
  EXPECT_NE(llvm::toString(std::move(err)).find("no/such/dir"),
            std::string::npos);

  // A full disk shows when the data is written, not when the file is opened.
  err = writeAtomically("/dev/full", [](llvm::raw_ostream &o) {
    o << std::string(1 << 16, 'x');
  });
  ASSERT_TRUE(bool(err));
  msg = llvm::toString(std::move(err));
  EXPECT_NE(msg.find("/dev/full"), std::string::npos) << msg;
  EXPECT_NE(msg.find("space"), std::string::npos) << msg;
}

Finding fixable(const std::string &file, unsigned offset,
                const std::string &text) {
  Finding f;
  f.rule = "devcopy-discarded-copy";
  f.where.file = file;
  f.where.offset = offset;
  Edit e;
  e.begin = f.where;
  e.text = text;
  // As the analysis stamps it: the bytes the file held when it was read.
  std::ifstream in(file, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  e.analysed = contentHash(bytes.str());
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
  EXPECT_EQ(applyFixes(findings, sources, errors), 2u); // one edit fixes both
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
  EXPECT_NE(errors[0].message.find("b.h"), std::string::npos)
      << errors[0].message;
  EXPECT_NE(errors[0].message.find("read-only"), std::string::npos)
      << errors[0].message;
  EXPECT_EQ(findings.size(), 2u);
  EXPECT_EQ(read("a.cpp"), "  t.to(d);\n"); // all files or none
  EXPECT_EQ(read("b.h"), "  u.to(d);\n");
  EXPECT_EQ(entries(), 2u);
}

/// The message of a failed Expected, "" on success.
template <typename T> std::string errorOf(llvm::Expected<T> value) {
  return value ? "" : llvm::toString(value.takeError());
}

TEST(Input, NestingIsBoundedBeforeAnyParserRecurses) {
  std::string deep =
      "{\"version\": 1, \"entries\": " + std::string(50000, '[') +
      std::string(50000, ']') + "}";
  std::string error = errorOf(Baseline::parse(deep, "deep.json"));
  EXPECT_NE(error.find("nested more than"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  // Brackets inside JSON strings are text, not nesting.
  std::string fine = "{\"version\": 1, \"entries\": [{\"fingerprint\": \"" +
                     std::string(1000, '[') + "\"}]}";
  EXPECT_EQ(errorOf(Baseline::parse(fine, "fine.json")), "");
  EXPECT_TRUE(nestingError(std::string(300, '['), /*json=*/false));
  EXPECT_FALSE(
      nestingError("Checks: '-*,devcopy-*'\nCheckOptions: {a: [b]}\n", false));
}

TEST(Input, HostileJsonGivesOneLineErrors) {
  const char *hostile[] = {
      "",
      "\xff\xfe\x00garbage",
      "[{\"fingerprint\":",
      "{\"version\": 1e999999}",
      "\"\\ud800\"",
      "{\"version\": 1, \"entries\": [1, 2]}",
      "{\"version\": 18446744073709551616, \"entries\": []}"};
  for (const char *text : hostile) {
    std::string error = errorOf(Baseline::parse(text, "b.json"));
    EXPECT_FALSE(error.empty()) << text;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    EXPECT_EQ(error.find("byte="), std::string::npos) << error;
  }
}

// --- the results cache (Cache.h) and shards (Shard.h) ----------------------

/// Reads `file` through `fs` as clang does: open, then the buffer.
void readThrough(llvm::vfs::FileSystem &fs, const std::string &file) {
  auto f = fs.openFileForRead(file);
  ASSERT_TRUE(bool(f)) << file;
  ASSERT_TRUE(bool((*f)->getBuffer(file)));
}

TEST_F(Files, CacheReusesAnEntryOnlyWhileEveryAnswerHolds) {
  write("a.h", "int a;");
  write("opened.h", "int o;");
  auto recorder = llvm::makeIntrusiveRefCnt<DependencyRecorder>(
      llvm::vfs::getRealFileSystem());
  readThrough(*recorder, path("a.h"));
  ASSERT_TRUE(
      bool(recorder->openFileForRead(path("opened.h")))); // opened, never read
  EXPECT_FALSE(recorder->exists(path("shadow.h")));
  Dependencies deps = recorder->take();
  EXPECT_EQ(deps.read.at(path("a.h")), contentHash("int a;"));
  EXPECT_EQ(deps.read.at(path("opened.h")), contentHash("int o;"));
  EXPECT_EQ(deps.absent, std::vector<std::string>{path("shadow.h")});

  const llvm::json::Value payload = llvm::json::Object{{"findings", 3}};
  std::string key = ResultCache(path("cache"), "tool 1").key({"unit", "a.cpp"});
  EXPECT_NE(key, ResultCache(path("cache"), "tool 2").key({"unit", "a.cpp"}));
  EXPECT_NE(key, ResultCache(path("cache"), "tool 1").key({"unit", "b.cpp"}));
  EXPECT_NE(ResultCache("", "").key({"ab", "c"}),
            ResultCache("", "").key({"a", "bc"}));
  ASSERT_FALSE(
      bool(ResultCache(path("cache"), "tool 1").store(key, deps, payload)));
  // Each run is a new ResultCache: it hashes each file once.
  auto lookup = [&] {
    std::string note;
    std::optional<llvm::json::Value> hit =
        ResultCache(path("cache"), "tool 1").lookup(key, note);
    EXPECT_EQ(note, "");
    return hit;
  };
  ASSERT_TRUE(lookup());
  EXPECT_EQ(*lookup(), payload);
  write("a.h", "int b;"); // same size, other bytes
  EXPECT_FALSE(lookup());
  write("a.h",
        "int a;"); // back as it was: reusable again (a touch is no change)
  EXPECT_TRUE(lookup());
  write("shadow.h", ""); // a header looked for and missed now exists
  EXPECT_FALSE(lookup());
  stdfs::remove(path("shadow.h"));
  EXPECT_TRUE(lookup());
  stdfs::remove(path("opened.h"));
  EXPECT_FALSE(lookup());
}

TEST_F(Files, CorruptCacheEntriesAreOneLineNotes) {
  ResultCache cache(path("cache"), "tool");
  std::string key = cache.key({"unit"});
  ASSERT_FALSE(bool(cache.store(key, {}, llvm::json::Value(1))));
  std::string entry =
      path("cache") + "/v2/" + key.substr(0, 2) + "/" + key + ".json";
  ASSERT_TRUE(stdfs::exists(entry));
  const std::string corrupt[] = {"",
                                 "{",
                                 std::string(100000, '['),
                                 "[]",
                                 "{\"format\": 1}",
                                 "{\"format\": 1, \"key\": \"" + key +
                                     "\", \"deps\": 3}",
                                 "\xff\xfe garbage"};
  for (const std::string &text : corrupt) {
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << text;
    std::string note;
    EXPECT_FALSE(cache.lookup(key, note)) << text.substr(0, 40);
    EXPECT_NE(note.find("ignoring corrupt cache entry"), std::string::npos)
        << note;
    EXPECT_EQ(note.find('\n'), std::string::npos) << note;
  }
  // Any byte flipped anywhere in a real entry: a note, never a changed result.
  ASSERT_FALSE(bool(cache.store(
      key, {}, llvm::json::Object{{"message", "'mask' is copied"}})));
  std::string good = read(entry.substr(dir_.size() + 1));
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x04;
    std::ofstream(entry, std::ios::binary | std::ios::trunc) << bad;
    std::string note;
    EXPECT_FALSE(cache.lookup(key, note)) << "byte " << i;
    EXPECT_NE(note.find("ignoring corrupt cache entry"), std::string::npos)
        << "byte " << i << ": " << note;
  }
  // A cache under a file cannot be written: an error, and nothing else happens.
  write("file", "");
  ResultCache blocked(path("file/cache"), "tool");
  llvm::Error e = blocked.store(key, {}, llvm::json::Value(1));
  ASSERT_TRUE(bool(e));
  EXPECT_NE(llvm::toString(std::move(e)).find("file/cache"), std::string::npos);
}

TEST(Shards, StableSplitOfTheUnits) {
  for (const char *bad :
       {"0/3", "4/3", "3", "a/b", "1/0", "", "1/3/4", "-1/3"}) {
    llvm::Expected<ShardSpec> spec = parseShard(bad);
    ASSERT_FALSE(bool(spec)) << bad;
    EXPECT_NE(llvm::toString(spec.takeError()).find("K/N"), std::string::npos);
  }
  llvm::Expected<ShardSpec> spec = parseShard("2/3");
  ASSERT_TRUE(bool(spec));
  EXPECT_EQ(spec->index, 2u);
  EXPECT_EQ(spec->count, 3u);
  for (unsigned n = 1; n <= 5; ++n) {
    std::vector<unsigned> sizes(n);
    for (int i = 0; i < 1000; ++i) {
      std::string file = "src/file" + std::to_string(i) + ".cpp";
      unsigned in = 0;
      for (unsigned k = 1; k <= n; ++k)
        if (inShard(file, {k, n}))
          ++in, ++sizes[k - 1];
      EXPECT_EQ(in, 1u) << file; // each unit in exactly one shard
    }
    for (unsigned size : sizes)
      EXPECT_GT(size, 1000 / n / 2) << n; // and about even
  }
}

TEST_F(Files, MergeNeedsEveryShardOnce) {
  auto shard = [&](unsigned k, unsigned n, const std::string &unit) {
    ShardFile f;
    f.shard = {k, n};
    f.version = "1";
    f.analyzed = 1;
    f.units.push_back(llvm::json::Object{{"file", unit}});
    std::string name =
        "s" + std::to_string(k) + "of" + std::to_string(n) + ".json";
    std::string text;
    llvm::raw_string_ostream(text) << toJSON(f);
    write(name, text);
    return path(name);
  };
  std::string s1 = shard(1, 3, "a"), s2 = shard(2, 3, "b"),
              s3 = shard(3, 3, "c");
  llvm::Expected<ShardFile> all = readShards({s3, s1, s2});
  ASSERT_TRUE(bool(all)) << llvm::toString(all.takeError());
  EXPECT_EQ(all->analyzed, 3u);
  ASSERT_EQ(all->units.size(), 3u);
  EXPECT_EQ(*all->units[0].getAsObject()->getString("file"),
            "a"); // in shard order
  auto error = [&](std::vector<std::string> files) {
    llvm::Expected<ShardFile> r = readShards(files);
    return r ? std::string("(merged)") : llvm::toString(r.takeError());
  };
  EXPECT_NE(error({s1, s3}).find("shard 2/3 missing"), std::string::npos);
  EXPECT_NE(error({s1, s2, s3, s2}).find("again"), std::string::npos);
  EXPECT_NE(error({s1, s2, s3, shard(1, 2, "d")}).find("one of 2 shards"),
            std::string::npos);
  write("bad.json", "{\"format\": \"devcopy-facts\"}");
  EXPECT_NE(error({path("bad.json")}).find("not a shard file"),
            std::string::npos);
  EXPECT_NE(error({path("none.json")}).find("none.json"), std::string::npos);
  EXPECT_NE(error({}).find("no shard files"), std::string::npos);
}

} // namespace
