// `rocecap gen --pulse-at`: the samples carrying the pulse are exactly those the dispersion
// formula gives (recomputed here in long double, independently of tools/lib/pulse_plan.cpp),
// every other byte is the one a run without the pulse has, bad options are refused by name, and
// `rocecap verify` accepts a pulse run byte for byte but not a byte changed inside the pulse.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "capture/net/packet.hpp"
#include "config/loader.hpp"
#include "daemon/lib/reporting/logging.hpp"
#include "daemon/lib/run/run.hpp"
#include "tests/unit/writer_test_util.hpp"
#include "tools/lib/gen_engine.hpp"
#include "tools/lib/gen_sinks.hpp"
#include "tools/lib/payload_pattern.hpp"
#include "tools/lib/pulse_plan.hpp"
#include "tools/lib/verify.hpp"

namespace rocecap::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<PulseGroupAddress> kFourGroups = {
    {"239.1.0.1", 5000}, {"239.1.0.2", 5000}, {"239.1.0.3", 5000}, {"239.1.0.4", 5000}};
const char* const kFourBands = "1200:1264,1264:1328,1328:1392,1392:1456";

// 12800 samples per second per channel, 256 payload bytes per frame: 8-bit real samples.
GenFrameParams small_frames(uint16_t nchan, uint8_t nbits = 8) {
  GenFrameParams p;
  p.payload_bytes = 256;
  p.nchan = nchan;
  p.nbits = nbits;
  p.total_samples = 12800;
  p.start_seconds = 1000;
  p.start_frame = 3;
  return p;
}

// The formula of the brief in long double: first sample at or after the time, a time within
// 1e-6 of a sample boundary counting as on it.
int64_t expected_sample(long double seconds, long double rate) {
  long double x = seconds * rate;
  const long double nearest = std::nearbyint(x);
  if (std::fabs(x - nearest) <= 1e-6L) x = nearest;
  const long double c = std::ceil(x);
  return c > 0 ? static_cast<int64_t>(c) : 0;
}

long double delay(long double dm, long double f_mhz, long double ref_mhz) {
  const long double f = f_mhz / 1000, ref = ref_mhz / 1000;
  return 4.148808e-3L * dm * (1 / (f * f) - 1 / (ref * ref));
}

struct Expected {
  std::vector<int64_t> first, end;  // per channel, run samples
};

Expected expected_group(long double at, long double width, long double dm, long double low,
                        long double high, unsigned nchan, long double rate) {
  Expected e;
  const long double ref = 1456, bw = (high - low) / nchan;
  for (unsigned c = 0; c < nchan; ++c) {
    e.first.push_back(expected_sample(at + delay(dm, low + (c + 1) * bw, ref), rate));
    e.end.push_back(expected_sample(at + width + delay(dm, low + c * bw, ref), rate));
  }
  return e;
}

std::vector<std::byte> payload(const FrameBuilder& b, uint32_t group, uint64_t index) {
  std::vector<std::byte> frame(b.frame_bytes());
  const std::size_t n = b.build(group, 1, index, Fate::plain, frame);
  return {frame.begin() + capture::codif::kHeaderBytes, frame.begin() + static_cast<long>(n)};
}

// Every byte of the group's frames up to past the pulse: the pulse value exactly where the
// formula says, else the byte of the run without a pulse. Returns the pulse samples seen.
uint64_t check_group(const FrameBuilder& with, const FrameBuilder& without, uint32_t group,
                     const Expected& e) {
  const uint64_t spf = with.samples_per_frame();
  const unsigned nchan = with.params().nchan;
  int64_t last = 0;
  for (int64_t end : e.end)
    last = std::max(last, end);
  uint64_t seen = 0;
  for (uint64_t f = 0; f * spf < static_cast<uint64_t>(last) + 2 * spf; ++f) {
    const uint64_t index = with.first_index() + f;
    const auto got = payload(with, group, index), plain = payload(without, group, index);
    for (std::size_t o = 0; o < got.size(); ++o) {
      const auto n = static_cast<int64_t>(f * spf + o / nchan);
      const unsigned c = o % nchan;
      const bool in = n >= e.first[c] && n < e.end[c];
      const int sign = (pattern_byte(1, index, o) & 0x80) ? -1 : 1;
      const auto want = in ? std::byte{static_cast<uint8_t>(100 * sign)} : plain[o];
      if (got[o] != want) {
        ADD_FAILURE() << "group " << group << " frame " << f << " byte " << o << " sample " << n
                      << " channel " << c << (in ? " (in the pulse)" : " (outside)");
        return seen;
      }
      seen += in;
    }
  }
  return seen;
}

class PulseSamples : public ::testing::TestWithParam<std::tuple<double, uint16_t>> {};

TEST_P(PulseSamples, AreThoseOfTheDispersionFormula) {
  const auto [dm, nchan] = GetParam();
  const FrameBuilder without(small_frames(nchan));
  FrameBuilder with(small_frames(nchan));
  PulseRequest r;
  r.at = 0.0123456;
  r.width = 0.01;
  r.dm = dm;
  r.frequencies = kFourBands;
  const std::optional<GenPulse> pulse = plan_pulse(r, kFourGroups, with);
  ASSERT_TRUE(pulse);
  with.set_pulse(*pulse);
  EXPECT_EQ(pulse->ref_mhz, 1456);  // the top of the band by default
  EXPECT_EQ(pulse->unix_ns, without.frame_unix_ns(without.first_index()) + 12'345'600);
  ASSERT_EQ(pulse->groups.size(), 4u);
  int64_t previous_first = INT64_MAX;
  for (uint32_t g = 0; g < 4; ++g) {
    const long double low = 1200 + 64 * g;
    const Expected e = expected_group(0.0123456L, 0.01L, dm, low, low + 64, nchan, 12800);
    const GenPulseGroup& pg = pulse->groups[g];
    EXPECT_EQ(pg.first_sample, e.first) << "group " << g;
    EXPECT_EQ(pg.end_sample, e.end) << "group " << g;
    EXPECT_GT(check_group(with, without, g, e), 0u) << "group " << g;
    // The frames named in the summary are those of the first and last pulse sample.
    const uint64_t spf = with.samples_per_frame();
    const int64_t first = *std::min_element(e.first.begin(), e.first.end());
    const int64_t end = *std::max_element(e.end.begin(), e.end.end());
    EXPECT_EQ(pg.first_index, with.first_index() + static_cast<uint64_t>(first) / spf);
    EXPECT_EQ(pg.last_index, with.first_index() + static_cast<uint64_t>(end - 1) / spf);
    const uint64_t per_second = 12800 / spf, n = 3 + pg.last_index - with.first_index();
    EXPECT_EQ(pg.last.seconds, 1000 + n / per_second);
    EXPECT_EQ(pg.last.frame, n % per_second);
    // Lower groups get it later, unless there is no dispersion.
    if (dm > 0) {
      EXPECT_LT(first, previous_first);
    } else {
      EXPECT_EQ(first, expected_sample(0.0123456L, 12800));
    }
    previous_first = first;
  }
  // A stream of no pulse group is untouched.
  const uint64_t at = pulse->groups[3].first_index;
  EXPECT_EQ(payload(with, kNoPulseGroup, at), payload(without, 0, at));
}

INSTANTIATE_TEST_SUITE_P(DmAndChannels, PulseSamples,
                         ::testing::Combine(::testing::Values(0.0, 500.0, 2000.0),
                                            ::testing::Values(uint16_t{1}, uint16_t{4})));

TEST(GenPulse, SubByteAndVdifEncodings) {
  PulseRequest r;
  r.at = 0.001;
  r.frequencies = "1400:1401";
  const std::vector<PulseGroupAddress> one = {{"239.1.0.1", 5000}};
  FrameBuilder four(small_frames(1, 4));
  four.set_pulse(*plan_pulse(r, one, four));
  // 4-bit: 512 samples per frame; the pulse covers samples ceil(12.8) = 13 .. ceil(25.6) = 26.
  const auto p4 = payload(four, 0, four.first_index());
  const auto plain4 = payload(FrameBuilder(small_frames(1, 4)), 0, four.first_index());
  for (std::size_t o = 0; o < p4.size(); ++o) {
    for (unsigned j = 0; j < 2; ++j) {
      const uint64_t n = 2 * o + j;
      const unsigned got = (std::to_integer<unsigned>(p4[o]) >> (4 * j)) & 0xF;
      const unsigned plain = (std::to_integer<unsigned>(plain4[o]) >> (4 * j)) & 0xF;
      EXPECT_EQ(got, n >= 13 && n < 26 ? 0x7u : plain) << "sample " << n;
    }
  }
  GenFrameParams v = small_frames(1);
  v.format = "vdif";
  v.frames_per_second = 50;
  FrameBuilder vdif(v);
  vdif.set_pulse(*plan_pulse(r, one, vdif));
  std::vector<std::byte> frame(vdif.frame_bytes());
  vdif.build(0, 0, 0, vdif.first_index(), 0, Fate::plain, frame);
  for (uint64_t n = 13; n < 26; ++n) {
    const auto b = std::to_integer<unsigned>(frame[32 + n]);
    EXPECT_TRUE(b == 0xE4 || b == 0x1C) << "sample " << n << ": " << b;  // +-100 + 128
  }
}

std::string error_of(const PulseRequest& r, std::size_t groups = 4) {
  const FrameBuilder b(small_frames(1));
  std::vector<PulseGroupAddress> g(kFourGroups.begin(),
                                   kFourGroups.begin() + static_cast<std::ptrdiff_t>(groups));
  try {
    (void)plan_pulse(r, g, b);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "no error";
}

TEST(GenPulse, BadOptionsAreRefusedByName) {
  PulseRequest r;
  r.at = 0.1;
  EXPECT_EQ(error_of(r).rfind("--pulse-at: needs --frequencies", 0), 0u) << error_of(r);
  r.frequencies = "1200:1264,1264:1328,1328:1392";
  EXPECT_EQ(error_of(r).rfind("--frequencies: 3 LOW:HIGH pairs for 4 --groups entries", 0), 0u)
      << error_of(r);
  r.frequencies = "1200:1264,1328:1264,1328:1392,1392:1456";
  EXPECT_EQ(error_of(r), "--frequencies: '1328:1264' (item 2): LOW must be below HIGH");
  r.frequencies = "1200:1264,1264:1328,1392:1392,1392:1456";
  EXPECT_EQ(error_of(r), "--frequencies: '1392:1392' (item 3): LOW must be below HIGH");
  r.frequencies = "1200:x";
  EXPECT_EQ(error_of(r, 1), "--frequencies: '1200:x' (item 1) is not LOW:HIGH in MHz");
  r.frequencies = "0:1264";
  EXPECT_EQ(error_of(r, 1), "--frequencies: '0:1264' (item 1): frequencies must be above 0 MHz");
  r.frequencies = "1200:1264";
  r.width = 0;
  EXPECT_EQ(error_of(r, 1), "--pulse-width: must be more than 0 seconds");
  r.width.reset();
  r.dm = -1;
  EXPECT_EQ(error_of(r, 1), "--pulse-dm: must be 0 or more");
  r.dm.reset();
  r.at = -0.5;
  EXPECT_EQ(error_of(r, 1), "--pulse-at: must be 0 or more seconds");
  PulseRequest no_at;
  no_at.frequencies = "1200:1264";
  EXPECT_EQ(error_of(no_at, 1), "--frequencies: needs --pulse-at");
  no_at = {};
  EXPECT_EQ(error_of(no_at, 1), "no error");
}

uint32_t ip(const char* text) {
  uint32_t out = 0;
  EXPECT_TRUE(capture::net::parse_ipv4(text, out)) << text;
  return out;
}

// A pulse run of two groups through the real capture pipeline, then `rocecap verify`.
class VerifyPulseRun : public ::testing::Test {
 protected:
  void SetUp() override {
    FrameBuilder frames(small_frames(1));
    GenSetup setup;
    setup.groups = {{ip("239.17.0.1"), 36001}, {ip("239.17.0.2"), 36001}};
    setup.sources = {ip("192.0.2.11"), ip("192.0.2.12")};
    setup.frames_per_stream = 200;
    setup.rate_per_stream = 1e6;
    PulseRequest r;
    r.at = 0.2;
    r.width = 0.05;
    r.dm = 300;
    r.frequencies = "1300:1400,1200:1300";
    GenSummary summary;
    summary.frame = frames.params();
    summary.pulse = plan_pulse(r, {{"239.17.0.1", 36001}, {"239.17.0.2", 36001}}, frames);
    frames.set_pulse(*summary.pulse);
    pulse_ = *summary.pulse;
    {
      PcapSink sink((tmp_.path() / "in.pcap").string(), setup.sources, 1'700'000'000'000'000'000,
                    1);
      const std::atomic<bool> stop{false};
      run_generator(setup, frames, sink, stop, summary);
      sink.finish();
    }
    std::ofstream(summary_) << json(summary).dump(2);
    const std::string yaml =
        "run: { name: pulse }\n"
        "capture:\n"
        "  backend: pcap-file\n"
        "  pcap_file: " +
        (tmp_.path() / "in.pcap").string() +
        "\n"
        "  ring_depth: 64\n"
        "  interfaces: [ { name: rec0, groups: [239.17.0.1:36001, 239.17.0.2:36001] } ]\n"
        "streams:\n"
        "  antennas: [ { name: a, source: 192.0.2.11 }, { name: b, source: 192.0.2.12 } ]\n"
        "output: { directory: " +
        tmp_.path().string() +
        "/out, formats: [raw], rotate: 1MiB }\n"
        "metrics: { enabled: false }\n";
    const config::LoadResult loaded = config::load_string(yaml, "pulse.yaml");
    ASSERT_TRUE(loaded.ok()) << config::format_problem(loaded.problems.front());
    daemon::RunOptions options;
    options.log = rocecap::daemon::make_logger("warn", false);
    ASSERT_EQ(daemon::run(*loaded.config, options), daemon::kExitOk);
  }

  static std::string all_problems(const VerifyResult& v) {
    std::string out;
    for (const auto& s : v.streams)
      for (const auto& p : s.problems)
        out += s.name + ": " + p + "\n";
    for (const auto& p : v.run_problems)
      out += "run: " + p + "\n";
    return out;
  }

  writers::test::TempDir tmp_;
  fs::path summary_ = tmp_.path() / "summary.json";
  fs::path manifest_ = tmp_.path() / "out" / "pulse" / "manifest.json";
  GenPulse pulse_;
};

TEST_F(VerifyPulseRun, AcceptedByteForByteAndAChangedPulseByteIsFound) {
  // The summary round-trips the pulse.
  std::ifstream in(summary_);
  const json s = json::parse(in);
  ASSERT_TRUE(s.at("pulse").is_object());
  EXPECT_EQ(s["pulse"]["groups"][1]["low_mhz"], 1200.0);
  EXPECT_EQ(s["pulse"]["ref_mhz"], 1400.0);
  EXPECT_EQ(s["pulse"]["groups"][0]["first_sample"][0], pulse_.groups[0].first_sample[0]);

  const VerifyResult ok = verify_run(manifest_, summary_);
  EXPECT_TRUE(ok.ok()) << all_problems(ok);

  // Group 2 (the lower band), antenna b: its first pulse byte in its raw file.
  std::ifstream min(manifest_);
  const json m = json::parse(min);
  std::size_t k = 0;
  while (k < m["streams"].size() &&
         !(m["streams"][k]["group"] == "239.17.0.2" && m["streams"][k]["antenna"] == "b"))
    ++k;
  ASSERT_LT(k, m["streams"].size());
  std::string raw;
  for (const auto& f : m["streams"][k]["files"])
    if (f["format"] == "raw") raw = f["path"];
  ASSERT_FALSE(raw.empty());
  const int64_t sample = pulse_.groups[1].first_sample[0];
  ASSERT_GT(sample, 0);
  ASSERT_LT(sample, 200 * 256);  // inside the run
  const std::streamoff at = (sample / 256) * (64 + 256) + 64 + sample % 256;
  {
    std::fstream f(tmp_.path() / "out" / raw, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(at);
    const auto c = static_cast<uint8_t>(f.get());
    EXPECT_TRUE(c == 0x64 || c == 0x9C) << int{c};  // +-100: a pulse sample
    f.seekp(at);
    f.put(static_cast<char>(c ^ 0x01));
  }
  const VerifyResult bad = verify_run(manifest_, summary_);
  EXPECT_FALSE(bad.ok());
  const std::string problems = all_problems(bad);
  EXPECT_NE(problems.find("data byte " + std::to_string(sample % 256)), std::string::npos)
      << problems;
}

}  // namespace
}  // namespace rocecap::tools
