// The Report model's text and JSON forms and the mode helpers. No LibTorch
// include: this file compiles in a second.
#include <devcopy/mode.h>
#include <devcopy/report.h>
#include <gtest/gtest.h>

#include <sstream>

namespace {

using namespace devcopy;

Report sample() {
  Report r;
  Finding f;
  f.kind = "duplicate-storage";
  f.message = "the 4.00 MiB of float in a on cpu are copied to b on cuda:0";
  f.bytes = 4 << 20;
  f.devices = {"cpu", "cuda:0"};
  f.tensors = {"enc.\"w\"\n", "back\\slash\ttab\x01"};
  f.details = {"block of 4.00 MiB at 0x7f00"};
  r.add(f);
  r.add(SharedStorage{"cpu", 1024, {"enc.weight", "dec.weight"}});
  r.add(DeviceMemory{"cuda:0", 100, 200, 300, 100, 64});
  r.add(CopyRoute{"cuda:0", "cpu", "float", 3, 12});
  r.add(Skipped{"meta_buf", "meta tensor: it holds no data"});
  r.set_host_syncs(2);
  return r;
}

TEST(Report, FormatBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(std::int64_t{512} << 20), "512.00 MiB");
  EXPECT_EQ(format_bytes(std::int64_t{3} << 30), "3.00 GiB");
  EXPECT_EQ(format_bytes(-2048), "-2.00 KiB");
}

TEST(Report, JsonHasStableKeysAndEscapes) {
  const std::string j = sample().to_json();
  EXPECT_EQ(j.front(), '{');
  EXPECT_EQ(j.back(), '}');
  for (const char *key :
       {"\"findings\":[{\"kind\":\"duplicate-storage\"", "\"bytes\":4194304",
        "\"devices\":[\"cpu\",\"cuda:0\"]", "\"op\":\"\"", "\"module\":\"\"",
        "\"details\":[\"block of 4.00 MiB at 0x7f00\"]",
        "\"shared\":[{\"device\":\"cpu\",\"bytes\":1024,\"tensors\":[\"enc."
        "weight\",\"dec.weight\"]}]",
        "\"reachable_bytes\":100", "\"allocated_bytes\":200",
        "\"reserved_bytes\":300", "\"reserved_unused_bytes\":100",
        "\"largest_free_block\":64",
        "\"copies\":[{\"src_device\":\"cuda:0\",\"dst_device\":\"cpu\","
        "\"dtype\":\"float\",\"count\":3,\"bytes\":12}]",
        "\"skipped\":[{\"tensor\":\"meta_buf\"", "\"host_syncs\":2",
        "\"wasted_bytes\":4194304"})
    EXPECT_NE(j.find(key), std::string::npos) << key << "\n" << j;
  EXPECT_NE(j.find(R"("enc.\"w\"\n")"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("back\\slash\ttab\u0001")"), std::string::npos) << j;
  EXPECT_EQ(
      Report().to_json(),
      R"({"findings":[],"shared":[],"devices":[],"copies":[],"skipped":[],"host_syncs":0,"wasted_bytes":0})");
}

TEST(Report, TextIsSanitizerStyle) {
  std::ostringstream os;
  os << sample();
  const std::string t = os.str();
  EXPECT_EQ(t.rfind("devcopy: duplicate-storage: 4.00 MiB\n", 0), 0u) << t;
  for (const char *line :
       {"    the 4.00 MiB of float in a on cpu are copied to b on cuda:0\n",
        "    devices: cpu, cuda:0\n", "      block of 4.00 MiB at 0x7f00\n",
        "devcopy: info: shared storage, 1.00 KiB on cpu",
        "    tensors: enc.weight, dec.weight\n",
        "devcopy: memory on cuda:0: 100 B reachable, 200 B allocated, 300 B "
        "reserved (100 B unused, "
        "largest free block 64 B)\n",
        "devcopy: copies cuda:0 -> cpu (float): 3, 12 B\n",
        "devcopy: device-to-host syncs: 2\n",
        "devcopy: skipped meta_buf: meta tensor: it holds no data\n",
        "devcopy: summary: 1 finding, 4.00 MiB wasted\n"})
    EXPECT_NE(t.find(line), std::string::npos) << line << "\n" << t;
}

TEST(Report, MergeFilterAndKinds) {
  Report r = sample();
  Report other;
  other.add(Finding{"cached-memory", "m", 10, {"cuda:0"}, {}, {}, {}, {}});
  r.merge(other);
  EXPECT_EQ(r.findings().size(), 2u);
  EXPECT_EQ(r.findings("cached-memory").size(), 1u);
  EXPECT_EQ(r.wasted_bytes(), (4 << 20) + 10);
  EXPECT_EQ(r.host_syncs(), 2);
  const Report only_cached = only(r, "cached-memory");
  EXPECT_EQ(only_cached.findings().size(), 1u);
  EXPECT_EQ(only_cached.shared().size(), 1u); // context kept
  EXPECT_EQ(only(r, "").findings().size(), 2u);
}

TEST(Mode, ParseAndEnforce) {
  EXPECT_EQ(parse_mode("off"), Mode::off);
  EXPECT_EQ(parse_mode("warn"), Mode::warn);
  EXPECT_EQ(parse_mode("fail"), Mode::fail);
  EXPECT_THROW(parse_mode("FAIL"), std::invalid_argument);
  std::ostringstream out;
  enforce(sample(), Mode::off, out);
  enforce(Report(), Mode::fail, out); // no findings: nothing to do
  EXPECT_TRUE(out.str().empty());
  enforce(sample(), Mode::warn, out);
  EXPECT_NE(out.str().find("devcopy: duplicate-storage"), std::string::npos);
  try {
    enforce(sample(), Mode::fail, out);
    ADD_FAILURE() << "fail mode did not throw";
  } catch (const ProbeFailure &e) {
    EXPECT_NE(std::string(e.what()).find("devcopy: summary: 1 finding"),
              std::string::npos);
    EXPECT_EQ(e.report().findings().size(), 1u);
  }
}

} // namespace
