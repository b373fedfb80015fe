// streams.format vdif in run files (doc/vdif.md): the keys it takes, what it refuses with a
// file:line:column problem, and the streams and file names it makes.
#include <gtest/gtest.h>

#include <string>

#include "config/name_template.hpp"
#include "config_test_support.hpp"

namespace rocecap::config {
namespace {

using testing::fixed_host;
using testing::patched;

// The base config turned into a VDIF run: `streams_extra` goes after "format: vdif".
std::string vdif(const std::string& streams_extra, const std::string& formats = "[raw]") {
  std::string text = patched("  format: codif\n", "  format: vdif\n" + streams_extra);
  const std::size_t at = text.find("formats: [raw, codifhdr]");
  return at == std::string::npos ? "" : text.replace(at, 24, "formats: " + formats);
}

std::string problems(const LoadResult& r) {
  std::string all;
  for (const Problem& p : r.problems)
    all += format_problem(p) + "\n";
  return all;
}

TEST(ConfigVdif, FramesPerSecondThreadsAndVtpAreRead) {
  const LoadResult r = load_string(
      vdif("  frames_per_second: 25600\n  vtp: true\n  threads: [0, 3]\n", "[raw, vdifhdr]"),
      "run.yaml", fixed_host());
  // verbs cannot split threads: the same file with backend pcap loads.
  ASSERT_FALSE(r.ok());
  EXPECT_NE(problems(r).find("streams.threads: 2 threads of one flow need backend pcap"),
            std::string::npos)
      << problems(r);
  std::string text =
      vdif("  frames_per_second: 25600\n  vtp: true\n  threads: [0, 3]\n", "[raw, vdifhdr]");
  text.replace(text.find("backend: verbs"), 14, "backend: pcap");
  text.replace(text.find("      device: mlx5_0\n"), 21, "");
  const LoadResult ok = load_string(text, "run.yaml", fixed_host());
  ASSERT_TRUE(ok.ok()) << problems(ok);
  const RunConfig& c = *ok.config;
  EXPECT_EQ(c.streams.format, StreamFormat::vdif);
  EXPECT_EQ(c.streams.frames_per_second, 25600u);
  EXPECT_TRUE(c.streams.vtp);
  EXPECT_EQ(c.streams.threads, (std::vector<uint16_t>{0, 3}));
  // 2 groups x 2 antennas x 2 threads, each its own file named by thread.
  const auto refs = enumerate_streams(c);
  ASSERT_EQ(refs.size(), 8u);
  EXPECT_EQ(stream_file_name(c, refs[1], OutputFormat::raw, 0),
            "test-run/239.1.0.1_36001_a1_t3.0000.vdif");
  EXPECT_EQ(stream_file_name(c, refs[1], OutputFormat::vdifhdr, 0),
            "test-run/239.1.0.1_36001_a1_t3.0000.vhead");
}

struct Refusal {
  std::string text;
  std::string where;  // "line:column: key" prefix after the file name
  std::string message;
};

TEST(ConfigVdif, RefusalsNameTheKey) {
  const Refusal cases[] = {
      {vdif(""), "run.yaml:18:3: streams:", "format vdif needs frames_per_second"},
      {vdif("  frames_per_second: 100\n  sample_rate: 64000000\n"),
       "run.yaml:20:16: streams.sample_rate:", "give frames_per_second or sample_rate, not both"},
      {vdif("  frames_per_second: 16777217\n"),
       "run.yaml:19:22: streams.frames_per_second:", "too large"},
      {vdif("  frames_per_second: 100\n  threads: [1024]\n"),
       "run.yaml:20:13: streams.threads[0]:", "too large"},
      {vdif("  frames_per_second: 100\n  threads: [2, 2]\n"),
       "run.yaml:20:16: streams.threads[1]:", "listed twice"},
      {vdif("  frames_per_second: 100\n", "[raw, codifhdr]"),
       "output.formats:", "codifhdr needs streams.format codif"},
      {patched("formats: [raw, codifhdr]", "formats: [raw, vdifhdr]"),
       "output.formats:", "vdifhdr needs streams.format vdif"},
      {patched("  format: codif\n", "  format: codif\n  frames_per_second: 100\n"),
       "streams.frames_per_second:", "only used with format vdif"},
      {vdif("  frames_per_second: 100\n  vtp: true\n")
           .replace(vdif("  frames_per_second: 100\n  vtp: true\n").find("header_split: 128"), 17,
                    "header_split: 80"),
       "capture.header_split:",
       "80 bytes cannot hold the Ethernet, IPv4, UDP, VTP and VDIF headers (82 bytes)"},
  };
  for (const Refusal& c : cases) {
    ASSERT_FALSE(c.text.empty());
    const LoadResult r = load_string(c.text, "run.yaml", fixed_host());
    const std::string all = problems(r);
    EXPECT_NE(all.find(c.where), std::string::npos) << all;
    EXPECT_NE(all.find(c.message), std::string::npos) << all;
  }
}

}  // namespace
}  // namespace rocecap::config
