// The retention section (doc/dumps.md): parsed, its ring memory planned per stream, per
// interface and in total, shown by the summary, and a plan that does not fit refused with the
// numbers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "config/loader.hpp"
#include "config/retention_plan.hpp"
#include "config/summary.hpp"
#include "config/units.hpp"
#include "config_test_support.hpp"

namespace rocecap::config {
namespace {

// pcap backend, 2 interfaces: eth0 with 2 groups, eth1 with 1, 2 antennas: 6 streams.
const char* const kRun =
    "run: {name: r}\n"
    "capture:\n"
    "  backend: pcap\n"
    "  ring_depth: 1024\n"
    "  interfaces:\n"
    "    - {name: eth0, groups: ['239.1.0.1:36001', '239.1.0.2:36002']}\n"
    "    - {name: eth1, groups: ['239.1.0.3:36003']}\n"
    "streams:\n"
    "  antennas: [{name: a1, source: 192.0.2.1}, {name: a2, source: 192.0.2.2}]\n"
    "output:\n"
    "  directory: /tmp/rocecap-test\n"
    "  formats: []\n"
    "retention:\n"
    "  retain: 2s\n"
    "  frame_rate: 1000\n";

std::string all_problems(const LoadResult& r) {
  std::string s;
  for (const auto& p : r.problems)
    s += format_problem(p) + "\n";
  return s;
}

class Retention : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("rocecap-retention-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  LoadResult load(const std::string& text, const std::string& available_kb = {}) {
    HostChecks host = testing::fixed_host();
    if (!available_kb.empty()) {
      std::ofstream(dir_ / "meminfo")
          << "MemTotal: 99999999 kB\nMemAvailable: " << available_kb << " kB\n";
      host.check_memory = true;
      host.proc_root = dir_.string();
    }
    return load_string(text, "run.yaml", host);
  }
  std::filesystem::path dir_;
};

TEST_F(Retention, PlansTheRingMemoryPerStreamPerInterfaceAndInTotal) {
  const LoadResult r = load(kRun);
  ASSERT_TRUE(r.ok()) << all_problems(r);
  const RetentionPlan p = plan_retention(*r.config);
  EXPECT_EQ(p.keep_frames, 2000u);
  EXPECT_EQ(p.pin_frames, 500u);  // pin_headroom defaults to retain / 4
  EXPECT_EQ(p.ring_slots, 1024u + 2500u);
  EXPECT_EQ(p.slot_bytes, 128u + 9088u);
  EXPECT_EQ(p.stream_bytes, 2500u * 9216u);
  ASSERT_EQ(p.interface_bytes.size(), 2u);
  EXPECT_EQ(p.interface_bytes[0], 4u * 2500u * 9216u);
  EXPECT_EQ(p.interface_bytes[1], 2u * 2500u * 9216u);
  EXPECT_EQ(p.total_bytes, 6u * 2500u * 9216u);
  const std::string summary = render_summary(*r.config);
  EXPECT_NE(summary.find("retention   2s at 1000 frames/s: 2000 frames + 500 pin headroom per "
                         "stream, rings of 3524 slots"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("eth0 " + format_size(p.interface_bytes[0])), std::string::npos);
}

// POST /trigger shares the metrics listener: exposed without a token, check-config says so.
TEST_F(Retention, AnExposedTriggerEndpointWithoutATokenIsWarnedAbout) {
  const std::string warning = "anyone who can reach this host can start dumps";
  LoadResult r = load(std::string(kRun) + "metrics: {listen: 0.0.0.0:9464}\n");
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_TRUE(trigger_exposed_without_token(*r.config));
  EXPECT_NE(render_summary(*r.config).find(warning), std::string::npos)
      << render_summary(*r.config);
  r = load(std::string(kRun) + "metrics: {listen: 127.0.0.1:9464}\n");
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_EQ(render_summary(*r.config).find(warning), std::string::npos);
  r = load(std::string(kRun) +
           "  http_token_file: /etc/rocecap/token\nmetrics: {listen: 0.0.0.0:9464}\n");
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_FALSE(trigger_exposed_without_token(*r.config));
  EXPECT_EQ(render_summary(*r.config).find(warning), std::string::npos);
}

// With verbs a stream's receive queue holds its whole ring, retained frames included: the
// default CQ covers those slots (a CQ sized by ring_depth alone made start-up refuse a run
// that check-config passed), and a cq_size below them is refused.
TEST_F(Retention, TheVerbsCqCoversTheRetainedSlotsToo) {
  const std::string verbs_run =
      "run: {name: r}\n"
      "capture:\n"
      "  backend: verbs\n"
      "  ring_depth: 1024\n"
      "  interfaces:\n"
      "    - {name: eth0, device: mlx5_0, groups: ['239.1.0.1:36001']}\n"
      "streams:\n"
      "  antennas: [{name: a1, source: 192.0.2.1}, {name: a2, source: 192.0.2.2}]\n"
      "output:\n"
      "  directory: /tmp/rocecap-test\n"
      "  formats: []\n"
      "retention:\n"
      "  retain: 2s\n"
      "  frame_rate: 1000\n";
  LoadResult r = load(verbs_run);
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_EQ(r.config->capture.cq_size, 2u * (1024u + 2000u + 500u));
  r = load(std::string(verbs_run).replace(verbs_run.find("  ring_depth"), 0, "  cq_size: 4096\n"));
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "capture.cq_size");
  EXPECT_NE(r.problems[0].message.find("7048 receive slots on device mlx5_0"), std::string::npos)
      << r.problems[0].message;
}

TEST_F(Retention, APlanBeyondMemAvailableIsRefusedNamingTheNumbers) {
  // 6 streams x 2500 slots x 9216 B = 132 MiB, plus 6 x 1024 ring slots and the two
  // interfaces' 256 MiB kernel receive rings (packet_ring): 567 MiB fit in 612 MiB, all of
  // it does not.
  LoadResult r = load(kRun, "626688");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "retention.retain");
  const std::string& m = r.problems[0].message;
  const uint64_t stream = 2500u * 9216u;
  for (const std::string& part :
       {std::string("retention keeps 2000 frames per stream (2s at 1000 frames/s) plus 500 of "
                    "pin headroom: ") +
            format_size(stream) + " per stream",
        "per interface eth0 " + format_size(4 * stream) + ", eth1 " + format_size(2 * stream),
        format_size(6 * stream) + " in total",
        std::string("with the rings' 566.8 MiB (their kernel receive rings included) that is "),
        std::string("this host has 612 MiB available")}) {
    EXPECT_NE(m.find(part), std::string::npos) << part << "\n in: " << m;
  }
  EXPECT_TRUE(load(kRun, "1048576").ok());  // 1 GiB: fits
}

TEST_F(Retention, EmptyFormatsNeedRetention) {
  std::string text = kRun;
  text = text.substr(0, text.find("retention:"));
  const LoadResult r = load(text);
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "output.formats");
  EXPECT_NE(r.problems[0].message.find("add a retention section"), std::string::npos);
}

// Issue 27: VDIF streams are retained and dumped too (windows in VDIF time); each header
// format goes with its own stream format, and plain UDP has no frame time to cut windows in.
TEST_F(Retention, VdifStreamsMayBeRetainedWithTheirOwnHeaderFormat) {
  std::string vdif = kRun;
  vdif.replace(vdif.find("streams:\n"), 9, "streams:\n  format: vdif\n  frames_per_second: 1000\n");
  LoadResult r = load(vdif + "  formats: [raw, vdifhdr, pcap]\n");
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_EQ(r.config->retention.formats.size(), 3u);
  r = load(vdif + "  formats: [raw, codifhdr]\n");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "retention.formats[1]");
  EXPECT_EQ(r.problems[0].message, "codifhdr needs streams.format codif");
  r = load(std::string(kRun) + "  formats: [vdifhdr]\n");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].message, "vdifhdr needs streams.format vdif");
  std::string udp = kRun;
  udp.replace(udp.find("streams:\n"), 9, "streams:\n  format: udp\n");
  r = load(udp);
  EXPECT_NE(all_problems(r).find("triggered dumps need streams.format codif or vdif"),
            std::string::npos)
      << all_problems(r);
}

TEST_F(Retention, BadValuesAreNamed) {
  const std::string base = kRun;
  LoadResult r = load(base + "  socket: relative.sock\n");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "retention.socket");
  std::string text = base;
  text.replace(text.find("frame_rate: 1000"), 16, "frame_rate: fast");
  r = load(text);
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_NE(r.problems[0].message.find("'fast' is not a frame rate"), std::string::npos);
  text = base;
  text.replace(text.find("retain: 2s"), 10, "retain: 9000s");  // 90M frames: more than a ring holds
  text.replace(text.find("frame_rate: 1000"), 16, "frame_rate: 10000");
  r = load(text);
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "retention.retain");
  EXPECT_NE(r.problems[0].message.find("more than 16777216"), std::string::npos)
      << r.problems[0].message;
}

}  // namespace
}  // namespace rocecap::config
