// streams.frequencies (doc/dumps.md, "Frequencies"): both forms give the range a stream spans,
// VDIF threads may have their own, and every mistake is named at its file, line and field.
#include <gtest/gtest.h>

#include "config/loader.hpp"
#include "config/summary.hpp"
#include "config_test_support.hpp"

namespace rocecap::config {
namespace {

// pcap backend, eth0 with 2 groups, eth1 with 1; `tail` goes under streams.
std::string run_file(const std::string& streams_tail, const std::string& streams_head = {}) {
  return "run: {name: r}\n"
         "capture:\n"
         "  backend: pcap\n"
         "  interfaces:\n"
         "    - {name: eth0, groups: ['239.1.0.1:36001', '239.1.0.2:36002']}\n"
         "    - {name: eth1, groups: ['239.1.0.3:36003']}\n"
         "streams:\n" +
         streams_head +
         "  antennas: [{name: a1, source: 192.0.2.1}]\n"
         "  frequencies:\n" +
         streams_tail +
         "output:\n"
         "  directory: /tmp/rocecap-test\n";
}

LoadResult load(const std::string& text) {
  return load_string(text, "run.yaml", testing::fixed_host());
}

std::string problems(const LoadResult& r) {
  std::string s;
  for (const auto& p : r.problems)
    s += format_problem(p) + "\n";
  return s;
}

TEST(Frequencies, BothFormsGiveTheRangeEachStreamSpans) {
  const LoadResult r = load(run_file(
      "    - {group: 239.1.0.1:36001, centre_mhz: 1232, bandwidth_mhz: 64}\n"
      "    - group: 239.1.0.2:36002\n"
      "      channels_mhz: [1328, 1312, 1296.5]\n"
      "      channel_bandwidth_mhz: 16\n"
      "      sideband: lower\n"
      "    - {group: 239.1.0.3:36003, channels_mhz: [1400, 1416], channel_bandwidth_mhz: 16}\n"));
  ASSERT_TRUE(r.ok()) << problems(r);
  const RunConfig& c = *r.config;
  ASSERT_EQ(c.streams.frequencies.size(), 3u);
  const auto a = stream_frequencies(c, {0, 0, 0, 0});
  const auto b = stream_frequencies(c, {0, 1, 0, 0});
  const auto d = stream_frequencies(c, {1, 0, 0, 0});
  ASSERT_TRUE(a && b && d);
  EXPECT_DOUBLE_EQ(a->low_mhz, 1200);
  EXPECT_DOUBLE_EQ(a->high_mhz, 1264);
  EXPECT_DOUBLE_EQ(b->low_mhz, 1280.5);  // lower sideband: below each edge
  EXPECT_DOUBLE_EQ(b->high_mhz, 1328);
  EXPECT_DOUBLE_EQ(d->low_mhz, 1400);  // upper (the default): above each edge
  EXPECT_DOUBLE_EQ(d->high_mhz, 1432);
  EXPECT_EQ(top_of_band_mhz(c), 1432);
  EXPECT_EQ(c.streams.frequencies[1].sideband, Sideband::lower);
  EXPECT_EQ(c.streams.frequencies[1].channels_mhz.size(), 3u);
}

TEST(Frequencies, AGroupWithoutAnEntryHasNone) {
  const LoadResult r =
      load(run_file("    - {group: 239.1.0.3:36003, centre_mhz: 1400, bandwidth_mhz: 8}\n"));
  ASSERT_TRUE(r.ok()) << problems(r);
  EXPECT_FALSE(stream_frequencies(*r.config, {0, 0, 0, 0}));
  EXPECT_TRUE(stream_frequencies(*r.config, {1, 0, 0, 0}));
  RunConfig none;
  EXPECT_FALSE(top_of_band_mhz(none));
}

TEST(Frequencies, AVdifThreadMayHaveItsOwnAndTheOthersTakeTheGroups) {
  const LoadResult r = load(
      run_file("    - {group: 239.1.0.1:36001, centre_mhz: 1232, bandwidth_mhz: 64}\n"
               "    - {group: 239.1.0.1:36001, thread: 3, centre_mhz: 1600, bandwidth_mhz: 32}\n",
               "  format: vdif\n  frames_per_second: 1000\n  threads: [1, 3]\n"));
  ASSERT_TRUE(r.ok()) << problems(r);
  const auto t1 = stream_frequencies(*r.config, {0, 0, 0, 0});  // thread index 0: thread 1
  const auto t3 = stream_frequencies(*r.config, {0, 0, 0, 1});
  ASSERT_TRUE(t1 && t3);
  EXPECT_DOUBLE_EQ(t1->high_mhz, 1264);
  EXPECT_DOUBLE_EQ(t3->low_mhz, 1584);
}

// rocecapd --check-config shows each stream's band and which frequency a dm is referred to.
TEST(Frequencies, TheSummaryShowsEachStreamsBandAndTheTopOfTheBand) {
  const LoadResult r =
      load(run_file("    - {group: 239.1.0.1:36001, centre_mhz: 1232, bandwidth_mhz: 64}\n"
                    "    - {group: 239.1.0.3:36003, centre_mhz: 1424.5, bandwidth_mhz: 63}\n"));
  ASSERT_TRUE(r.ok()) << problems(r);
  const std::string text = render_summary(*r.config);
  EXPECT_NE(text.find("239.1.0.1:36001 a1         from 192.0.2.1, 1200-1264 MHz\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("239.1.0.2:36002 a1         from 192.0.2.1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("frequencies 2 of 3 streams, 1200-1456 MHz (a trigger's dm is referred to "
                      "1456 MHz unless it gives ref_freq); the others cannot be dumped with a dm"),
            std::string::npos)
      << text;
}

TEST(Frequencies, MistakesAreNamedAtTheirLineAndField) {
  const struct {
    std::string entries, words;
  } cases[] = {
      {"    - {group: 239.9.9.9:1, centre_mhz: 1232, bandwidth_mhz: 64}\n",
       "run.yaml:10:15: streams.frequencies[0].group: no interface has group 239.9.9.9:1"},
      {"    - {group: 239.1.0.1:36001, centre_mhz: 1.4e9, bandwidth_mhz: 64}\n",
       "streams.frequencies[0].centre_mhz: '1.4e9' is not a frequency in MHz"},
      {"    - {group: 239.1.0.1:36001, centre_mhz: 1232}\n",
       "streams.frequencies[0].bandwidth_mhz: missing"},
      {"    - {group: 239.1.0.1:36001, centre_mhz: 10, bandwidth_mhz: 64}\n",
       "the band reaches down to -22 MHz"},
      {"    - {group: 239.1.0.1:36001, centre_mhz: 1232, bandwidth_mhz: 64, channels_mhz: [1]}\n",
       "give either centre_mhz and bandwidth_mhz, or channels_mhz"},
      {"    - {group: 239.1.0.1:36001, channels_mhz: [1200]}\n",
       "streams.frequencies[0].channel_bandwidth_mhz: missing"},
      {"    - {group: 239.1.0.1:36001, channels_mhz: [], channel_bandwidth_mhz: 1}\n",
       "needs at least one channel frequency"},
      {"    - {group: 239.1.0.1:36001, channels_mhz: [1200], channel_bandwidth_mhz: 1, "
       "sideband: middle}\n",
       "streams.frequencies[0].sideband"},
      {"    - {group: 239.1.0.1:36001, centre_mhz: 1232, bandwidth_mhz: 64, sideband: lower}\n",
       "goes with channels_mhz"},
      {"    - {group: 239.1.0.1:36001, centre_mhz: 1232, bandwidth_mhz: 64}\n"
       "    - {group: 239.1.0.1:36001, centre_mhz: 1332, bandwidth_mhz: 64}\n",
       "streams.frequencies[1]: group 239.1.0.1:36001 already has its frequencies (entry 0)"},
      {"    - {group: 239.1.0.1:36001, thread: 2, centre_mhz: 1232, bandwidth_mhz: 64}\n",
       "streams.frequencies[0].thread: thread 2 is not in streams.threads"},
      {"    - {group: 239.1.0.1:36001, centre_mhz: 1232, bandwidth_mhz: 64, width: 3}\n",
       "streams.frequencies[0].width"},
  };
  for (const auto& c : cases) {
    const LoadResult r = load(run_file(c.entries));
    EXPECT_FALSE(r.ok()) << c.entries;
    EXPECT_NE(problems(r).find(c.words), std::string::npos)
        << c.entries << "wanted: " << c.words << "\ngot:\n"
        << problems(r);
  }
}

}  // namespace
}  // namespace rocecap::config
