// verify_run over a run made in-process by the real pieces: the generator engine writes a pcap
// file with every impairment, the daemon's run() replays it through the capture pipeline and
// writers, and verify_run must find everything as the summary says; then a changed file byte,
// a changed manifest counter and an unreadable summary are each reported.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>

#include "capture/net/packet.hpp"
#include "config/loader.hpp"
#include "daemon/lib/reporting/logging.hpp"
#include "daemon/lib/run/run.hpp"
#include "tests/unit/writer_test_util.hpp"
#include "tools/lib/gen_engine.hpp"
#include "tools/lib/gen_sinks.hpp"
#include "tools/lib/verify.hpp"

namespace rocecap::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

uint32_t ip(const char* text) {
  uint32_t out = 0;
  EXPECT_TRUE(capture::net::parse_ipv4(text, out)) << text;
  return out;
}

class VerifyRun : public ::testing::Test {
 protected:
  void SetUp() override {
    GenFrameParams p;
    p.payload_bytes = 512;
    p.total_samples = 0;  // the default frames per period
    const FrameBuilder frames(p);
    GenSetup setup;
    setup.groups = {{ip("239.17.0.1"), 36001}};
    setup.sources = {ip("192.0.2.11"), ip("192.0.2.12")};
    setup.foreign = ip("192.0.2.99");
    setup.frames_per_stream = 800;
    setup.rate_per_stream = 1e6;
    setup.seed = 21;
    setup.rates = {0, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02, 0.02};
    GenSummary summary;
    summary.frame = frames.params();
    {
      std::vector<uint32_t> senders = setup.sources;
      senders.push_back(*setup.foreign);
      PcapSink sink((tmp_.path() / "in.pcap").string(), senders, 1'700'000'000'000'000'000, 1);
      const std::atomic<bool> stop{false};
      run_generator(setup, frames, sink, stop, summary);
      sink.finish();
    }
    for (const auto& s : summary.streams) {
      ASSERT_FALSE(s.swapped.empty() || s.duplicated.empty() || s.dropped.empty() ||
                   s.bad_sync.empty() || s.truncated.empty() || s.invalid.empty());
    }
    std::ofstream(summary_) << json(summary).dump(2);

    const std::string yaml =
        "run: { name: inproc }\n"
        "capture:\n"
        "  backend: pcap-file\n"
        "  pcap_file: " +
        (tmp_.path() / "in.pcap").string() +
        "\n"
        "  ring_depth: 64\n"
        "  interfaces: [ { name: rec0, groups: [239.17.0.1:36001] } ]\n"
        "streams:\n"
        "  antennas: [ { name: a, source: 192.0.2.11 },"
        " { name: b, source: 192.0.2.12 } ]\n"
        "output: { directory: " +
        tmp_.path().string() +
        "/out, formats: [raw, codifhdr, pcap], rotate: 1MiB }\n"
        "metrics: { enabled: false }\n";
    const config::LoadResult loaded = config::load_string(yaml, "inproc.yaml");
    ASSERT_TRUE(loaded.ok()) << config::format_problem(loaded.problems.front());
    daemon::RunOptions options;
    options.log = rocecap::daemon::make_logger("warn", false);
    ASSERT_EQ(daemon::run(*loaded.config, options), daemon::kExitOk);
  }

  json manifest() const {
    std::ifstream in(manifest_);
    return json::parse(in);
  }

  static std::string all_problems(const VerifyResult& r) {
    std::string out;
    for (const auto& s : r.streams)
      for (const auto& p : s.problems)
        out += s.name + ": " + p + "\n";
    for (const auto& p : r.run_problems)
      out += "run: " + p + "\n";
    return out;
  }

  writers::test::TempDir tmp_;
  fs::path summary_ = tmp_.path() / "summary.json";
  fs::path manifest_ = tmp_.path() / "out" / "inproc" / "manifest.json";
};

TEST_F(VerifyRun, TheRunMatchesAndEachChangeIsFound) {
  const VerifyResult ok = verify_run(manifest_, summary_);
  EXPECT_TRUE(ok.ok()) << all_problems(ok);
  ASSERT_EQ(ok.streams.size(), 2u);
  EXPECT_EQ(ok.streams[0].name, "rec0 239.17.0.1:36001 a (192.0.2.11)");
  EXPECT_EQ(ok.streams[0].checked.size(), 2u);  // raw and codifhdr compared

  // One bit of the second stream's codifhdr file: the frame number of its 3rd header.
  const json m = manifest();
  std::string chead;
  for (const auto& f : m["streams"][1]["files"])
    if (f["format"] == "codifhdr") chead = f["path"];
  ASSERT_FALSE(chead.empty());
  {
    std::fstream f(tmp_.path() / "out" / chead, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(2 * 64);
    const char c = static_cast<char>(f.get());
    f.seekp(2 * 64);
    f.put(static_cast<char>(c ^ 1));
  }
  const VerifyResult bad = verify_run(manifest_, summary_);
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(bad.streams[0].ok());
  ASSERT_EQ(bad.streams[1].problems.size(), 1u) << all_problems(bad);
  const uint64_t third = m["streams"][1]["first_frame"]["index"].get<uint64_t>() + 2;
  EXPECT_EQ(bad.streams[1].problems[0].rfind("codifhdr: " + chead + " offset 128, frame index " +
                                                 std::to_string(third) + ": header byte 0 (frame)",
                                             0),
            0u)
      << bad.streams[1].problems[0];
}

TEST_F(VerifyRun, ManifestCountersAndInputsAreChecked) {
  json m = manifest();
  const uint64_t dup = m["streams"][0]["duplicate"].get<uint64_t>();
  m["streams"][0]["duplicate"] = dup + 1;
  m["interfaces"][0]["ring_full_drops"] = 3;
  std::ofstream(manifest_) << m.dump();
  const VerifyResult r = verify_run(manifest_, summary_);
  ASSERT_EQ(r.streams[0].problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.streams[0].problems[0],
            "duplicate " + std::to_string(dup + 1) + ", expected " + std::to_string(dup));
  ASSERT_EQ(r.run_problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.run_problems[0], "interface rec0: ring_full_drops 3");
  EXPECT_EQ(to_json(r)["ok"], false);

  EXPECT_THROW(verify_run(manifest_, tmp_.path() / "none.json"), VerifyInputError);
  std::ofstream(summary_) << "{ not json";
  EXPECT_THROW(verify_run(manifest_, summary_), VerifyInputError);
}

}  // namespace
}  // namespace rocecap::tools
