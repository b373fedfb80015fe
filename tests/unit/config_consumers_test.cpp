// The consumers section (doc/consumers.md): parsed with its defaults, its ring slots planned
// (kept frames and hold headroom), and every bad value refused naming its key and line.
#include <gtest/gtest.h>

#include <string>

#include "config/loader.hpp"
#include "config/retention_plan.hpp"
#include "config_test_support.hpp"

namespace rocecap::config {
namespace {

const char* const kRun =
    "run: {name: r}\n"
    "capture:\n"
    "  backend: pcap\n"
    "  ring_depth: 1024\n"
    "  interfaces:\n"
    "    - {name: eth0, groups: ['239.1.0.1:36001']}\n"
    "streams:\n"
    "  antennas: [{name: a1, source: 192.0.2.1}, {name: a2, source: 192.0.2.2}]\n"
    "output:\n"
    "  directory: /tmp/rocecap-test\n"
    "  formats: [raw]\n"
    "consumers:\n"  // line 12
    "  socket: /run/rocecap/c.sock\n";

LoadResult load(const std::string& text) {
  return load_string(text, "run.yaml", testing::fixed_host());
}

std::string all_problems(const LoadResult& r) {
  std::string s;
  for (const auto& p : r.problems)
    s += format_problem(p) + "\n";
  return s;
}

TEST(ConsumersConfig, DefaultsKeepAQuarterRingAndBoundHoldsToAQuarterRing) {
  const LoadResult r = load(kRun);
  ASSERT_TRUE(r.ok()) << all_problems(r);
  const RunConfig& c = *r.config;
  EXPECT_TRUE(c.consumers.enabled);
  EXPECT_EQ(c.consumers.socket, "/run/rocecap/c.sock");
  EXPECT_TRUE(c.consumers.streams.empty());
  EXPECT_EQ(consumer_keep(c), 256u);
  EXPECT_EQ(consumer_hold_frames(c), 256u);
  EXPECT_EQ(c.consumers.max_consumers, 16u);
  EXPECT_EQ(c.consumers.hold_time, std::chrono::seconds(1));
  EXPECT_EQ(c.consumers.wait_for, 0u);
  const RetentionPlan p = plan_retention(c);
  EXPECT_EQ(p.keep_frames, 256u);
  EXPECT_EQ(p.pin_frames, 256u);
  EXPECT_EQ(p.ring_slots, 1024u + 256u + 256u);
  EXPECT_EQ(consumer_log_frames(c), 8192u);  // bit_ceil(4 x 1536)
  EXPECT_TRUE(keeps_frames(c));
}

TEST(ConsumersConfig, EveryKeyIsRead) {
  const LoadResult r = load(std::string(kRun) +
                            "  streams: [a1, 'a2@239.1.0.1:36001']\n"
                            "  keep: 100\n"
                            "  hold_frames: 50\n"
                            "  hold_time: 250ms\n"
                            "  max_consumers: 4\n"
                            "  log_frames: 2048\n"
                            "  wait_for: 2\n"
                            "  wait_time: 5s\n");
  ASSERT_TRUE(r.ok()) << all_problems(r);
  const ConsumersSection& c = r.config->consumers;
  EXPECT_EQ(c.streams, (std::vector<std::string>{"a1", "a2@239.1.0.1:36001"}));
  EXPECT_EQ(consumer_keep(*r.config), 100u);
  EXPECT_EQ(consumer_hold_frames(*r.config), 50u);
  EXPECT_EQ(c.hold_time, std::chrono::milliseconds(250));
  EXPECT_EQ(c.max_consumers, 4u);
  EXPECT_EQ(consumer_log_frames(*r.config), 2048u);
  EXPECT_EQ(c.wait_for, 2u);
  EXPECT_EQ(c.wait_time, std::chrono::seconds(5));
  EXPECT_EQ(plan_retention(*r.config).ring_slots, 1024u + 100u + 50u);
}

struct Bad {
  const char* extra;
  const char* key;
  const char* words;
};

TEST(ConsumersConfig, BadValuesAreNamedWithTheirKey) {
  const Bad cases[] = {
      {"  log_frames: 3000\n", "consumers.log_frames", "not a power of two"},
      {"  streams: [nobody]\n", "consumers.streams", "'nobody' names no stream"},
      {"  streams: ['a1@239.1.0.9:36001']\n", "consumers.streams", "names no stream"},
      {"  log_frames: 1024\n  hold_frames: 2000\n", "consumers.log_frames", "cannot cover"},
      {"  hold_time: 0s\n", "consumers.hold_time", "longer than 0s"},
      {"  max_consumers: 17\n", "consumers.max_consumers", "16"},
      {"  group: no-such-group-here\n", "consumers.group", "no group of this host"},
      {"  wait_for: 99\n", "consumers.wait_for", "16"},
      {"  frobnicate: 1\n", "consumers.frobnicate", "unknown"},
  };
  for (const Bad& b : cases) {
    const LoadResult r = load(std::string(kRun) + b.extra);
    ASSERT_EQ(r.problems.size(), 1u) << b.extra << all_problems(r);
    EXPECT_EQ(r.problems[0].key_path, b.key) << b.extra;
    EXPECT_NE(format_problem(r.problems[0]).find(b.words), std::string::npos)
        << format_problem(r.problems[0]);
    EXPECT_NE(format_problem(r.problems[0]).find("run.yaml:14"), std::string::npos)
        << format_problem(r.problems[0]);
  }
  std::string text = kRun;
  text.replace(text.find("/run/rocecap/c.sock"), 19, "relative.sock");
  const LoadResult r = load(text);
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "consumers.socket");
  const LoadResult none = load(std::string(kRun).substr(0, std::string(kRun).find("  socket")) +
                               "  max_consumers: 2\n");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(all_problems(none).find("consumers.socket"), std::string::npos) << all_problems(none);
}

}  // namespace
}  // namespace rocecap::config
