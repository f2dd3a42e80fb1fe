// MemoryTimeline on synthetic allocator events (no device needed): the peak,
// its parts by owner and line, the finding that explains it, and a request
// that made a new segment although enough was cached.
#include <devcopy/timeline.h>
#include <gtest/gtest.h>

#include <sstream>

namespace {

using devcopy::Finding;
using devcopy::MemoryTimeline;
using devcopy::SourceLocation;

constexpr std::int64_t MiB = 1 << 20;
const SourceLocation kInit{"__init__", "clip.py", 12};
const SourceLocation kLoad{"__init__", "owner.py", 30};

// The LoRA seed in miniature: 4 parameter blocks moved at clip.py:12, then
// torch.load restores 4 checkpoint tensors on the device at owner.py:30,
// copies them into the parameters and frees them.
MemoryTimeline lora(std::vector<Finding> &findings) {
  MemoryTimeline tl(MiB);
  tl.baseline("cuda:0", 2 * MiB, 2 * MiB);
  std::int64_t t = 0;
  for (std::uint64_t i = 0; i < 4; ++i) {
    tl.segment("cuda:0", 0x1000'0000 + i * 0x100'0000, 64 * MiB, ++t);
    const auto id =
        tl.allocated("cuda:0", 0x1000'0000 + i * 0x100'0000, 64 * MiB, ++t);
    EXPECT_NE(id, 0u); // large: its line is wanted
    tl.locate(id, kInit);
    tl.own("cuda:0", 0x1000'0000 + i * 0x100'0000, "parameters");
  }
  EXPECT_NE(tl.allocated("cuda:0", 0x9000'0000, 4096, ++t), 0u); // a peak
  std::vector<std::uint64_t> temps;
  for (std::uint64_t i = 0; i < 4; ++i) {
    const std::uint64_t at = 0x2000'0000 + i * 0x100'0000;
    tl.segment("cuda:0", at, 64 * MiB, ++t);
    const auto id = tl.allocated("cuda:0", at, 64 * MiB, ++t, "copies");
    tl.locate(id, kLoad);
    temps.push_back(id);
  }
  for (std::uint64_t i = 0; i < 4; ++i) // copied into the parameters, freed
    tl.freed("cuda:0", 0x2000'0000 + i * 0x100'0000, 0, ++t);
  for (auto id : temps) // the observer judges them after they died
    tl.own(id, "checkpoint temporaries");
  // Small and below the peak: counted, not located.
  EXPECT_EQ(tl.allocated("cuda:0", 0x9100'0000, 4096, ++t), 0u);
  Finding f;
  f.kind = "transient-device-copy";
  f.devices = {"cpu", "cuda:0"};
  f.location = kLoad;
  f.bytes = 256 * MiB;
  findings.push_back(f);
  return tl;
}

TEST(Timeline, PeakPartsAndTheFindingThatExplainsIt) {
  std::vector<Finding> findings;
  const auto all = lora(findings).summary(findings);
  ASSERT_EQ(all.size(), 1u);
  const auto &t = all[0];
  EXPECT_EQ(t.device, "cuda:0");
  EXPECT_EQ(t.peak_bytes, 2 * MiB + 512 * MiB + 4096);
  EXPECT_EQ(t.peak_reserved, 2 * MiB + 512 * MiB);
  EXPECT_EQ(t.peak_where.line, kLoad.line); // reached during the load
  EXPECT_EQ(t.owned("parameters"), 256 * MiB);
  EXPECT_EQ(t.owned("checkpoint temporaries"), 256 * MiB);
  ASSERT_GE(t.parts.size(), 3u);
  EXPECT_EQ(t.parts[0].where.file, "owner.py"); // ties: owners by name
  EXPECT_EQ(t.parts[1].where.file, "clip.py");
  EXPECT_EQ(t.parts[1].blocks, 4);
  EXPECT_EQ(t.explained_by, "transient-device-copy");
  EXPECT_NE(t.explanation.find("256.00 MiB parameters moved at clip.py:12"),
            std::string::npos)
      << t.explanation;
  EXPECT_NE(t.explanation.find("checkpoint temporaries from owner.py:30"),
            std::string::npos)
      << t.explanation;
  EXPECT_NE(t.explanation.find("map_location='cpu'"), std::string::npos);
  // The parts and the small blocks add up to the peak.
  std::int64_t sum = 0;
  for (const auto &p : t.parts)
    sum += p.bytes;
  EXPECT_EQ(sum, t.peak_bytes);
  // The samples rise to the peak and fall back.
  ASSERT_GE(t.samples.size(), 3u);
  std::int64_t top = 0;
  for (const auto &s : t.samples)
    top = std::max(top, s.allocated);
  EXPECT_EQ(top, t.peak_bytes);
  EXPECT_EQ(t.samples.back().allocated, 2 * MiB + 256 * MiB + 4096);
  EXPECT_EQ(t.peak_where.file, "owner.py");
  EXPECT_TRUE(t.misses.empty()); // every segment was needed
}

TEST(Timeline, WithoutTemporariesThePeakIsNotBlamedOnALoad) {
  MemoryTimeline tl(MiB);
  tl.segment("cuda:0", 0x1000, 64 * MiB, 1);
  tl.own("cuda:0", 0x1000, "parameters"); // not live: ignored
  const auto id = tl.allocated("cuda:0", 0x1000, 64 * MiB, 2);
  tl.locate(id, kInit);
  tl.own("cuda:0", 0x1000, "parameters");
  const auto all = tl.summary({});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].explained_by, "");
  EXPECT_EQ(all[0].owned("parameters"), 64 * MiB);
  EXPECT_EQ(all[0].explanation.find("map_location"), std::string::npos);
}

TEST(Timeline, ANewSegmentAlthoughEnoughWasCached) {
  MemoryTimeline tl(MiB);
  std::int64_t t = 0;
  for (std::uint64_t i = 0; i < 8; ++i) { // 8 x 256 MiB, then freed
    const std::uint64_t at = 0x1'0000'0000ull * (i + 1);
    tl.segment("cuda:0", at, 256 * MiB, ++t);
    tl.allocated("cuda:0", at, 256 * MiB, ++t);
  }
  for (std::uint64_t i = 0; i < 8; ++i)
    tl.freed("cuda:0", 0x1'0000'0000ull * (i + 1), 0, ++t);
  // A small request in a small segment of its own pool: no miss.
  tl.segment("cuda:0", 0x10'0000'0000ull, 2 * MiB, ++t);
  tl.allocated("cuda:0", 0x10'0000'0000ull, MiB, ++t);
  // 1 GiB: more than any cached block, less than the cache.
  tl.segment("cuda:0", 0x20'0000'0000ull, 1024 * MiB, ++t);
  const auto id = tl.allocated("cuda:0", 0x20'0000'0000ull, 1024 * MiB, ++t);
  ASSERT_NE(id, 0u);
  tl.locate(id, SourceLocation{"main", "reserve.py", 9});
  // A later request larger than all that is cached: no miss.
  tl.segment("cuda:0", 0x30'0000'0000ull, 4096 * MiB, ++t);
  tl.allocated("cuda:0", 0x30'0000'0000ull, 4096 * MiB, ++t);
  const auto all = tl.summary({});
  ASSERT_EQ(all.size(), 1u);
  ASSERT_EQ(all[0].misses.size(), 1u);
  const auto &m = all[0].misses[0];
  EXPECT_EQ(m.requested, 1024 * MiB);
  EXPECT_EQ(m.cached_free, 2048 * MiB + MiB);
  EXPECT_EQ(m.largest_free_block, 256 * MiB);
  EXPECT_EQ(m.where.file, "reserve.py");
  devcopy::Report r;
  r.add(all[0]);
  std::ostringstream text;
  text << r;
  EXPECT_NE(text.str().find("a request of 1.00 GiB at reserve.py:9 in main "
                            "made a new segment of 1.00 GiB although 2.00 GiB "
                            "were cached unused (largest free block "
                            "256.00 MiB)"),
            std::string::npos)
      << text.str();
  EXPECT_NE(r.to_json().find("\"misses\":[{\"time_ns\""), std::string::npos);
}

TEST(Timeline, PeakPartsStayExactAcrossManyEvents) {
  MemoryTimeline tl(MiB);
  std::int64_t t = 0;
  // A training loop: weights stay, activations come and go, one step peaks.
  tl.allocated("cuda:0", 1, 100 * MiB, ++t, "parameters");
  for (int step = 0; step < 2000; ++step) {
    const std::int64_t act = (step == 1234 ? 50 : 10) * MiB;
    tl.allocated("cuda:0", 2, act, ++t);
    tl.freed("cuda:0", 2, 0, ++t);
  }
  const auto all = tl.summary({});
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].peak_bytes, 150 * MiB);
  EXPECT_EQ(all[0].owned("parameters"), 100 * MiB);
  EXPECT_EQ(all[0].owned("other"), 50 * MiB);
  EXPECT_LE(all[0].samples.size(), 4096u);
}

} // namespace
