// Triggered dumps end to end in one process: frames fed through the Ingest, written (nothing
// continuously) and retained by the CaptureWriter, dumped by the DumpService on request. Each
// dump file must be byte-identical to the generator's frames of the window, with fill frames
// where frames were dropped, across a CODIF period boundary (1000 frames per 1 s period).
#include "daemon/lib/dumps/dump_service.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <prometheus/metric_family.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "capture/ingest.hpp"
#include "capture/memory/cuda_runtime.hpp"
#include "capture/memory/gpu_memory.hpp"
#include "daemon/lib/listeners/http_listener.hpp"
#include "daemon/lib/listeners/trigger_socket.hpp"
#include "test_frames.hpp"
#include "writer_test_util.hpp"
#include "writers/capture_writer.hpp"
#include "writers/fault_injection.hpp"
#include "writers/output_targets.hpp"
#include "writers/staging/engine_factory.hpp"

namespace rocecap::daemon {
namespace {

namespace tf = ::rocecap::test;
namespace codif = capture::codif;
using Bytes = std::vector<std::byte>;
using nlohmann::json;

constexpr uint32_t kKeep = 300;  // retention 300 ms at 1000 frames/s
constexpr uint32_t kPin = 100;
constexpr uint32_t kDepth = 64;

std::string read_text(const std::filesystem::path& p) {
  const Bytes b = writers::test::read_file(p);
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

codif::Header header_at(uint64_t index, uint8_t epoch = 0) {
  codif::Header h = codif::at_index(tf::base_header(), tf::kTiming, index);
  h.epoch = epoch;
  return h;
}

int64_t time_of(uint64_t index, uint8_t epoch = 0) {
  return codif::frame_start_unix_ns(header_at(index, epoch), tf::kTiming);
}

// tf::frame with the CODIF reference epoch `epoch`.
Bytes frame_at(uint32_t src, uint64_t index, uint8_t epoch) {
  Bytes f = tf::frame(src, index);
  codif::encode(header_at(index, epoch), std::span<std::byte, 64>(f.data() + 42, 64));
  return f;
}

capture::StreamSpec spec(uint32_t src) {
  capture::StreamSpec s;
  s.key = {tf::kGroup, tf::kPort, src};
  s.ring.slots = kDepth + kKeep + kPin;
  s.ring.header_slot_bytes = 128;
  s.ring.payload_slot_bytes = tf::kPayload;
  s.ring.memory.huge_pages = capture::memory::Want::no;
  s.ring.memory.lock = capture::memory::Want::no;
  s.sequencer.reorder_window = 4;
  return s;
}

config::RunConfig run_config(const std::filesystem::path& dir) {
  config::RunConfig c;
  c.run.name = "t";
  c.capture.backend = config::Backend::pcap_file;
  c.capture.interfaces.push_back({"eth0", "", {{tf::kGroup, tf::kPort}}, std::nullopt});
  c.streams.antennas = {{"a", tf::kSrcA}, {"b", tf::kSrcB}};
  c.output.directory = dir.string();
  c.output.formats.clear();
  c.retention.enabled = true;
  c.retention.retain = std::chrono::milliseconds(kKeep);
  c.retention.frame_rate = 1000;
  c.retention.max_future = std::chrono::seconds(1);
  c.retention.formats = {config::OutputFormat::raw, config::OutputFormat::codifhdr};
  c.retention.write_rate = 0;
  return c;
}

// The raw file the generator's frames [first, last] make, `dropped` as fill frames.
Bytes expected_raw(uint64_t first, uint64_t last, const std::set<uint64_t>& dropped) {
  Bytes out;
  for (uint64_t i = first; i <= last; ++i) {
    codif::Header h = codif::at_index(tf::base_header(), tf::kTiming, i);
    const bool fill = dropped.count(i) != 0;
    h.invalid = fill;
    std::array<std::byte, 64> hb;
    codif::encode(h, hb);
    out.insert(out.end(), hb.begin(), hb.end());
    for (uint32_t k = 0; k < tf::kPayload; ++k)
      out.push_back(fill ? std::byte{0} : tf::data_byte(i, k));
  }
  return out;
}

struct Rig {
  writers::test::TempDir tmp;
  config::RunConfig cfg = run_config(tmp.path());
  capture::StreamPipeline a{spec(tf::kSrcA)}, b{spec(tf::kSrcB)};
  capture::Ingest ingest{{&a, &b}, false};
  std::optional<writers::CaptureWriter> writer;
  std::atomic<int64_t> now{0};
  std::unique_ptr<DumpService> dumps;
  std::set<uint64_t> dropped;
  uint8_t epoch = 0;  // the CODIF reference epoch of the frames fed

  explicit Rig(const std::string& token = {}) {
    if (!token.empty()) {
      std::ofstream(tmp.path() / "token") << token << "\n";
      cfg.retention.http_token_file = (tmp.path() / "token").string();
    }
    a.retention = std::make_unique<capture::Retention>(a.ring(), kKeep);
    b.retention = std::make_unique<capture::Retention>(b.ring(), kKeep);
    writer.emplace(ingest.streams(), ingest.arrivals(), std::vector<writers::StreamWriters>(2),
                   std::nullopt, writers::CaptureWriterOptions{}, nullptr);
    DumpServiceOptions o;
    o.now_ns = [this] { return now.load(); };
    o.future_grace = std::chrono::milliseconds(50);
    std::vector<DumpStream> streams;
    streams.push_back({{0, 0, 0}, a.retention.get(), codif::SyncSet::defaults(), {}, {}});
    streams.push_back({{0, 0, 1}, b.retention.get(), codif::SyncSet::defaults(), {}, {}});
    dumps = std::make_unique<DumpService>(cfg, tmp.path() / "t", std::move(streams), o);
  }
  // Frames [first, last] of both antennas, except `dropped`; drained through the writer.
  void feed(uint64_t first, uint64_t last) {
    for (uint64_t i = first; i <= last; ++i) {
      if (dropped.count(i) != 0) continue;
      for (uint32_t src : {tf::kSrcA, tf::kSrcB}) {
        const Bytes f = frame_at(src, i, epoch);
        ingest.on_frame(f, f.size(), time_of(i, epoch));
      }
      writer->poll();
    }
    ingest.flush_all();  // the sequencer's reorder window: deliver what it holds
    writer->poll();
    now.store(time_of(last + 1, epoch));
  }
  json trigger(uint64_t first, uint64_t end, const std::string& extra = "") {
    const std::string body = fmt::format("{{\"start\": {}, \"end\": {}{}}}", time_of(first, epoch),
                                         time_of(end, epoch), extra);
    return dumps->handle(body);
  }
};

TEST(DumpService, PastWindowIsByteIdenticalAcrossAPeriodBoundaryWithFillFrames) {
  Rig rig;
  rig.dropped = {1003, 1004, 1010};
  rig.feed(800, 1199);
  // Frames 990..1019: period 0 ends at 999, period 1 starts at 1000.
  const json a = rig.trigger(990, 1020, ", \"antennas\": [\"a\"], \"label\": \"frb-1\"");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  ASSERT_EQ(a.at("streams").size(), 1u);
  const json& s = a.at("streams")[0];
  EXPECT_EQ(s.at("retained").at("first_frame"), 990);
  EXPECT_EQ(s.at("retained").at("last_frame"), 1019);
  EXPECT_TRUE(s.at("not_retained").empty());
  rig.dumps->wait_idle();
  const std::filesystem::path dir = rig.tmp.path() / "t" / "dumps" / "0001-frb-1";
  const Bytes raw = writers::test::read_file(dir / "eth0_239.17.0.1_36001_a.codif");
  EXPECT_EQ(raw, expected_raw(990, 1019, rig.dropped));
  const json m = json::parse(read_text(dir / "dump.json"));
  EXPECT_EQ(m.at("streams")[0].at("frames"), 27);
  EXPECT_EQ(m.at("streams")[0].at("fill_frames"), 3);
  EXPECT_EQ(m.at("streams")[0].at("gaps").size(), 2u);
  EXPECT_EQ(m.at("request").at("label"), "frb-1");
  EXPECT_EQ(rig.dumps->counters().served.load(), 1u);
  EXPECT_FALSE(std::filesystem::exists(dir / "eth0_239.17.0.1_36001_b.codif"));
}

// A run continued after a crash finds the earlier attempt's dumps in its run directory: the
// new service numbers on from the highest (0001-label, 0007), never into their directories.
TEST(DumpService, NumberingContinuesAfterAnEarlierAttemptsDumps) {
  Rig rig;
  rig.dumps.reset();
  for (const char* d : {"0001-frb-1", "0007", "notes", "12"})
    std::filesystem::create_directories(rig.tmp.path() / "t" / "dumps" / d);
  std::ofstream(rig.tmp.path() / "t" / "dumps" / "0007" / "eth0_239.17.0.1_36001_a.codif")
      << "earlier attempt";
  DumpServiceOptions o;
  o.now_ns = [&rig] { return rig.now.load(); };
  std::vector<DumpStream> streams;
  streams.push_back({{0, 0, 0}, rig.a.retention.get(), codif::SyncSet::defaults(), {}, {}});
  streams.push_back({{0, 0, 1}, rig.b.retention.get(), codif::SyncSet::defaults(), {}, {}});
  rig.dumps = std::make_unique<DumpService>(rig.cfg, rig.tmp.path() / "t", std::move(streams), o);
  rig.feed(800, 1199);
  const json a = rig.trigger(990, 1020, ", \"antennas\": [\"a\"]");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  rig.dumps->wait_idle();
  const std::filesystem::path dumps = rig.tmp.path() / "t" / "dumps";
  EXPECT_EQ(writers::test::read_file(dumps / "0008" / "eth0_239.17.0.1_36001_a.codif"),
            expected_raw(990, 1019, {}));
  EXPECT_EQ(read_text(dumps / "0007" / "eth0_239.17.0.1_36001_a.codif"), "earlier attempt");
  EXPECT_EQ(rig.dumps->counters().served.load(), 1u);
}

TEST(DumpService, WindowPartlyOlderThanTheRetentionIsServedInPartAndTheRestNamed) {
  Rig rig;
  rig.feed(800, 1199);  // retains 900..1199
  const json a = rig.trigger(850, 950, ", \"antennas\": [\"b\"]");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  const json& s = a.at("streams")[0];
  EXPECT_EQ(s.at("retained").at("first_frame"), 900);
  EXPECT_EQ(s.at("retained").at("last_frame"), 949);
  ASSERT_EQ(s.at("not_retained").size(), 1u);
  EXPECT_EQ(s.at("not_retained")[0].at("first_frame"), 850);
  EXPECT_EQ(s.at("not_retained")[0].at("last_frame"), 899);
  EXPECT_NE(s.at("not_retained")[0].at("reason").get<std::string>().find("overwritten"),
            std::string::npos);
  rig.dumps->wait_idle();
  const auto dir = rig.tmp.path() / "t" / "dumps" / "0001";
  EXPECT_EQ(writers::test::read_file(dir / "eth0_239.17.0.1_36001_b.codif"),
            expected_raw(900, 949, {}));
  EXPECT_EQ(rig.dumps->counters().frames_not_retained.load(), 50u);
}

TEST(DumpService, FutureWindowIsServedWhenItArrives) {
  Rig rig;
  rig.feed(800, 1199);
  const json a = rig.trigger(1250, 1300, ", \"antennas\": [\"a\"]");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  EXPECT_TRUE(a.at("streams")[0].at("served_when_arrived").get<bool>());
  rig.dropped = {1260};
  rig.feed(1200, 1400);
  rig.dumps->wait_idle();
  EXPECT_EQ(writers::test::read_file(rig.tmp.path() / "t/dumps/0001/eth0_239.17.0.1_36001_a.codif"),
            expected_raw(1250, 1299, rig.dropped));
}

TEST(DumpService, FutureFramesThatNeverComeAreReportedNotReceived) {
  Rig rig;
  rig.feed(800, 1199);
  const json a = rig.trigger(1190, 1230, ", \"antennas\": [\"a\"]");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  rig.feed(1200, 1209);
  rig.now.store(time_of(1300));  // past the window's end + grace: the stream went quiet
  rig.dumps->wait_idle();
  const json m = json::parse(read_text(rig.tmp.path() / "t/dumps/0001/dump.json"));
  const json& nw = m.at("streams")[0].at("not_written");
  EXPECT_EQ(nw.at("first_frame"), 1210);
  EXPECT_EQ(nw.at("last_frame"), 1229);
  EXPECT_EQ(writers::test::read_file(rig.tmp.path() / "t/dumps/0001/eth0_239.17.0.1_36001_a.codif"),
            expected_raw(1190, 1209, {}));
}

TEST(DumpService, TwoOverlappingTriggersWhileTrafficRunsAreBothServedWhole) {
  Rig rig;
  rig.cfg.retention.write_rate = 2u << 20;  // slow enough that the second waits for the first
  rig.feed(800, 1199);
  std::atomic<bool> done{false};
  std::thread traffic([&] {
    uint64_t i = 1200;
    while (!done.load() && i < 1900) {
      rig.feed(i, i + 9);
      i += 10;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  const json a = rig.trigger(1000, 1150);
  const json b = rig.trigger(1100, 1190);
  rig.dumps->wait_idle();
  done.store(true);
  traffic.join();
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  ASSERT_TRUE(b.at("ok").get<bool>()) << b.dump();
  for (const char* ant : {"a", "b"}) {
    const std::string name = std::string("eth0_239.17.0.1_36001_") + ant + ".codif";
    EXPECT_EQ(writers::test::read_file(rig.tmp.path() / "t/dumps/0001" / name),
              expected_raw(1000, 1149, {}));
    EXPECT_EQ(writers::test::read_file(rig.tmp.path() / "t/dumps/0002" / name),
              expected_raw(1100, 1189, {}));
  }
  EXPECT_EQ(rig.dumps->counters().served.load(), 2u);
}

TEST(DumpService, AWindowInCodifFrameTimeIsServedAndBoundedToo) {
  Rig rig;
  rig.feed(800, 1199);
  // Epoch 0, period 1 s of 1000 frames: second 1, frame 2 is frame index 1002.
  json a = rig.dumps->handle(
      R"({"start": {"epoch": 0, "seconds": 0, "frame": 998},
          "end": {"epoch": 0, "seconds": 1, "frame": 4}, "antennas": ["a"]})");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  EXPECT_EQ(a.at("streams")[0].at("retained").at("first_frame"), 998);
  EXPECT_EQ(a.at("streams")[0].at("retained").at("last_frame"), 1003);
  a = rig.dumps->handle(R"({"start": {"epoch": 0, "seconds": 0, "frame": 0},
                            "end": {"epoch": 0, "seconds": 1, "frame": 0}})");
  EXPECT_EQ(a.at("reason"), "too_long") << a.dump();
  rig.dumps->wait_idle();
  EXPECT_EQ(writers::test::read_file(rig.tmp.path() / "t/dumps/0001/eth0_239.17.0.1_36001_a.codif"),
            expected_raw(998, 1003, {}));
}

TEST(DumpService, BadRequestsGetAClearErrorAndChangeNothing) {
  Rig rig;
  rig.feed(800, 1199);
  const struct {
    std::string body, reason, words;
  } cases[] = {
      {fmt::format("{{\"start\": {}, \"end\": {}}}", time_of(1100), time_of(1000)), "bad_window",
       "end is not after start"},
      {fmt::format("{{\"start\": {}, \"end\": {}, \"antennas\": [\"zz\"]}}", time_of(1000),
                   time_of(1010)),
       "unknown_antenna", "unknown antenna 'zz' (this run has: a, b)"},
      {fmt::format("{{\"start\": {}, \"end\": {}}}", time_of(0), time_of(1000)), "too_long",
       "longer than the retention"},
      {"{\"start\": 1, \"end\": ", "malformed", "malformed JSON"},
      {fmt::format("{{\"start\": {}, \"end\": {}, \"label\": \"a/b\"}}", time_of(1000),
                   time_of(1010)),
       "bad_label", "contains '/'"},
      {fmt::format("{{\"start\": {}, \"end\": {}, \"label\": \"..\"}}", time_of(1000),
                   time_of(1010)),
       "bad_label", "contains '..'"},
      {fmt::format("{{\"start\": {}, \"end\": {}, \"groups\": [\"239.1.1.1:1\"]}}", time_of(1000),
                   time_of(1010)),
       "unknown_group", "unknown group"},
  };
  for (const auto& c : cases) {
    const json a = rig.dumps->handle(c.body);
    EXPECT_FALSE(a.at("ok").get<bool>()) << c.body;
    EXPECT_EQ(a.at("reason"), c.reason) << c.body;
    EXPECT_NE(a.at("error").get<std::string>().find(c.words), std::string::npos) << a.dump();
  }
  rig.dumps->wait_idle();
  EXPECT_FALSE(std::filesystem::exists(rig.tmp.path() / "t" / "dumps"));
  EXPECT_EQ(rig.dumps->counters().served.load(), 0u);
  EXPECT_EQ(rig.dumps->counters().received.load(), std::size(cases));
  EXPECT_EQ(rig.a.retention->stats().pins, 0u);
}

TEST(DumpService, TriggerSocketAnswersWithMode0660) {
  Rig rig;
  rig.feed(800, 1199);
  const std::string path = (rig.tmp.path() / "trigger.sock").string();
  TriggerSocket sock(path, [&](const std::string& r) { return rig.dumps->handle(r).dump(); });
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0660u);
  const json ok = json::parse(send_trigger(
      path, fmt::format("{{\"start\": {}, \"end\": {}}}", time_of(1000), time_of(1005))));
  EXPECT_TRUE(ok.at("ok").get<bool>()) << ok.dump();
  EXPECT_EQ(ok.at("streams").size(), 2u);
  const json bad = json::parse(send_trigger(path, "{nonsense"));
  EXPECT_EQ(bad.at("reason"), "malformed");
  rig.dumps->wait_idle();
  EXPECT_EQ(writers::test::read_file(rig.tmp.path() / "t/dumps/0001/eth0_239.17.0.1_36001_b.codif"),
            expected_raw(1000, 1004, {}));
}

// One HTTP/1.1 exchange with 127.0.0.1:port; the whole response.
std::string http(uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof sa) != 0) return {};
  (void)!::write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

std::string post(uint16_t port, const std::string& body, const std::string& extra_header = {}) {
  return http(port, "POST /trigger HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                        extra_header + "Content-Length: " + std::to_string(body.size()) +
                        "\r\nConnection: close\r\n\r\n" + body);
}

class NoMetrics : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    prometheus::MetricFamily f{"rocecap_test_up", "test", prometheus::MetricType::Gauge, {}};
    f.metric.emplace_back();
    f.metric.back().gauge.value = 1;
    return {f};
  }
};

TEST(DumpService, HttpEndpointOnTheMetricsListenerRequiresTheToken) {
  Rig rig("s3cret");
  rig.feed(800, 1199);
  auto metrics = std::make_shared<NoMetrics>();
  HttpListener listener("127.0.0.1:0", metrics);
  const auto port = static_cast<uint16_t>(listener.ports().at(0));
  EXPECT_NE(http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .find("rocecap_test_up 1"),
            std::string::npos);
  // Before the handler is set (no retention): refused, nothing done.
  EXPECT_NE(post(port, "{}").find("404 Not Found"), std::string::npos);
  listener.set_trigger_handler([&](const std::string& body, const std::string& bearer) {
    return rig.dumps->handle(body, true, bearer).dump();
  });
  const std::string window =
      fmt::format("\"start\": {}, \"end\": {}", time_of(1000), time_of(1005));
  std::string r = post(port, "{" + window + "}");
  EXPECT_NE(r.find("401 Unauthorized"), std::string::npos) << r;
  EXPECT_NE(r.find("WWW-Authenticate: Bearer"), std::string::npos) << r;
  EXPECT_NE(r.find("needs the configured token"), std::string::npos) << r;
  r = post(port, "{" + window + ", \"token\": \"guess\"}");
  EXPECT_NE(r.find("\"reason\":\"unauthorized\""), std::string::npos) << r;
  EXPECT_NE(r.find("wrong token"), std::string::npos) << r;
  EXPECT_EQ(rig.dumps->counters().refused[6].load(), 2u);  // kReasons[6] == "unauthorized"
  r = post(port, "{" + window + ", \"label\": \"web\"}", "Authorization: Bearer s3cret\r\n");
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  r = post(port, "{" + window + ", \"token\": \"s3cret\"}");
  EXPECT_NE(r.find("\"ok\":true"), std::string::npos) << r;
  rig.dumps->wait_idle();
  EXPECT_EQ(
      writers::test::read_file(rig.tmp.path() / "t/dumps/0001-web/eth0_239.17.0.1_36001_a.codif"),
      expected_raw(1000, 1004, {}));
  // The Unix socket needs no token: its mode (0660) is the access control.
  EXPECT_TRUE(rig.dumps->handle("{" + window + "}").at("ok").get<bool>());
}

// A secret is never persisted: the token of an HTTP request (right, wrong, or inside a body
// that is not even JSON) appears neither in dump.json nor in the trigger log (the manifest).
TEST(DumpService, TheTokenIsRedactedFromDumpJsonAndTheTriggerLog) {
  Rig rig("s3cret-token");
  rig.feed(800, 1199);
  const std::string window =
      fmt::format("\"start\": {}, \"end\": {}", time_of(1000), time_of(1005));
  const json ok = rig.dumps->handle("{" + window + ", \"token\": \"s3cret-token\"}", true);
  ASSERT_TRUE(ok.at("ok").get<bool>()) << ok.dump();
  const json wrong = rig.dumps->handle("{" + window + ", \"token\": \"s3cret-tokem\"}", true);
  EXPECT_EQ(wrong.at("reason"), "unauthorized");
  const json broken = rig.dumps->handle("{\"token\": \"s3cret-token\", \"start\": ", true);
  EXPECT_EQ(broken.at("reason"), "malformed");
  const json badkey = rig.dumps->handle("{\"token\": \"s3cret-token\", \"x\": \"s3cret-tok\"}");
  EXPECT_EQ(badkey.at("reason"), "malformed");
  rig.dumps->wait_idle();
  const std::string dump_json = read_text(rig.tmp.path() / "t/dumps/0001/dump.json");
  EXPECT_EQ(json::parse(dump_json).at("request").at("token"), "(redacted)");
  const std::string log = rig.dumps->trigger_log().dump();
  for (const std::string& text : {dump_json, log, broken.dump()}) {
    EXPECT_EQ(text.find("s3cret-tok"), std::string::npos) << text;
  }
}

// Times that no frame number can name are refused as bad_window, saying why; a window wholly
// beyond retention.max_future is refused as too far ahead. None is answered "overwritten".
TEST(DumpService, WindowsThatCannotBeRepresentedAreRefusedNotCalledOld) {
  Rig rig;
  rig.feed(800, 1199);
  const int64_t day = int64_t{86400} * 1'000'000'000;
  const struct {
    std::string start, end, reason, words;
  } cases[] = {
      {"\"9999-01-01T00:00:00Z\"", "\"9999-01-01T00:00:00.1Z\"", "bad_window", "'start'"},
      {R"({"epoch": 255, "seconds": 4294967295, "frame": 0})",
       R"({"epoch": 255, "seconds": 4294967295, "frame": 1})", "bad_window", "'start'"},
      {R"({"epoch": 0, "seconds": 4294967296, "frame": 0})",
       R"({"epoch": 0, "seconds": 4294967296, "frame": 1})", "bad_window", "32-bit"},
      {R"({"epoch": 0, "seconds": 1, "frame": 5000})",
       R"({"epoch": 0, "seconds": 1, "frame": 5001})", "bad_window", "frames per period"},
      {"-5", std::to_string(time_of(1000)), "bad_window", "'start'"},
      {"\"1999-12-31T23:59:59.9Z\"", "\"2000-01-01T00:00:00Z\"", "bad_window", "'start'"},
      {"18446744073709551615", "18446744073709551616", "bad_window", "'start'"},
      {"\"2000-02-30T00:00:00Z\"", "\"2000-02-30T00:00:00.1Z\"", "malformed", "a real date"},
      {std::to_string(time_of(1200) + 2'000'000'000), std::to_string(time_of(1200) + 2'100'000'000),
       "too_far_ahead", "retention.max_future"},
      {"\"2200-01-01T00:00:00Z\"", "\"2200-01-01T00:00:00.1Z\"", "too_far_ahead",
       "retention.max_future"},
      {std::to_string(time_of(1000) + 300 * day), std::to_string(time_of(1000) + 300 * day + 1000),
       "too_far_ahead", "retention.max_future"},
  };
  for (const auto& c : cases) {
    const std::string body = "{\"start\": " + c.start + ", \"end\": " + c.end + "}";
    const json a = rig.dumps->handle(body);
    EXPECT_FALSE(a.value("ok", true)) << body << " -> " << a.dump();
    EXPECT_EQ(a.value("reason", ""), c.reason) << body << " -> " << a.dump();
    EXPECT_NE(a.value("error", "").find(c.words), std::string::npos) << body << " -> " << a.dump();
  }
  rig.dumps->wait_idle();
  EXPECT_FALSE(std::filesystem::exists(rig.tmp.path() / "t" / "dumps"));
  EXPECT_EQ(rig.a.retention->stats().pins, 0u);
}

// Frames of a stream whose CODIF reference epoch is 52 (2026-01-01): a window in 2000 lies
// before frame 0 of that stream and has no frame number (main answered it "overwritten" as
// frame 0).
TEST(DumpService, AWindowBeforeTheStreamsEpochIsRefused) {
  Rig rig;
  rig.epoch = 52;
  rig.feed(800, 1199);
  const json a = rig.dumps->handle(R"({"start": "2000-01-01T00:00:00Z",
                                       "end": "2000-01-01T00:00:00.1Z"})");
  EXPECT_EQ(a.value("reason", ""), "bad_window") << a.dump();
  EXPECT_NE(a.value("error", "").find("epoch 52"), std::string::npos) << a.dump();
  // The same stream serves a window of its own time.
  const json b = rig.trigger(1000, 1010, ", \"antennas\": [\"a\"]");
  ASSERT_TRUE(b.at("ok").get<bool>()) << b.dump();
  EXPECT_EQ(b.at("streams")[0].at("retained").at("first_frame"), 1000);
}

// Issue 27: a trigger with a dm cuts each stream's window at the delay of its own frequencies
// (the group spans 1200-1264 MHz). Frame numbers worked out here from the formula: frame i
// spans [i, i + 1) ms after the epoch.
uint64_t swept_frame(uint64_t frame, double dm, double f_mhz, double ref_mhz, bool end) {
  const long double d =
      4.148808e-3L * dm *
      (1e6L / (f_mhz * (long double)f_mhz) - 1e6L / (ref_mhz * (long double)ref_mhz));
  const long double ns = frame * 1e6L + (end ? std::ceil(d * 1e9L) - 1 : std::floor(d * 1e9L));
  return static_cast<uint64_t>(ns / 1e6L);
}

config::GroupFrequencies band_1200_1264() {
  config::GroupFrequencies g;
  g.address = tf::kGroup;
  g.port = tf::kPort;
  g.centre_mhz = 1232;
  g.bandwidth_mhz = 64;
  g.low_mhz = 1200;
  g.high_mhz = 1264;
  return g;
}

TEST(DumpService, ADispersedTriggerCutsEachStreamAtTheDelayOfItsFrequencies) {
  Rig rig;
  rig.cfg.streams.frequencies = {band_1200_1264()};
  rig.feed(800, 1199);
  // At 1456 MHz: frames 1031..1056 (delays 31.99 and 46.20 ms).
  const json a = rig.trigger(1000, 1010, R"(, "antennas": ["a"], "dm": 50, "ref_freq": 1456)");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  const uint64_t first = swept_frame(1000, 50, 1264, 1456, false);
  const uint64_t last = swept_frame(1010, 50, 1200, 1456, true);
  EXPECT_EQ(first, 1031u);
  EXPECT_EQ(last, 1056u);
  const json& s = a.at("streams")[0];
  EXPECT_EQ(s.at("window").at("first_frame"), first) << s.dump();
  EXPECT_EQ(s.at("window").at("last_frame"), last) << s.dump();
  EXPECT_EQ(s.at("frequency_mhz").at("low"), 1200);
  EXPECT_NEAR(s.at("delay_seconds").at("end").get<double>(), 0.0462040, 1e-6);
  EXPECT_EQ(a.at("dispersion").at("ref_freq_mhz"), 1456);
  // No ref_freq: the top of the band (1264 MHz), so the window starts where it was asked.
  const json b = rig.trigger(1000, 1010, R"(, "antennas": ["a"], "dm": 50, "label": "top")");
  ASSERT_TRUE(b.at("ok").get<bool>()) << b.dump();
  EXPECT_EQ(b.at("streams")[0].at("window").at("first_frame"), 1000);
  EXPECT_EQ(b.at("streams")[0].at("window").at("last_frame"),
            swept_frame(1010, 50, 1200, 1264, true));
  EXPECT_EQ(b.at("dispersion").at("ref_freq_is_top_of_band"), true);
  rig.dumps->wait_idle();
  const auto dir = rig.tmp.path() / "t" / "dumps";
  EXPECT_EQ(writers::test::read_file(dir / "0001" / "eth0_239.17.0.1_36001_a.codif"),
            expected_raw(first, last, {}));
  const json m = json::parse(read_text(dir / "0001" / "dump.json"));
  EXPECT_EQ(m.at("dispersion").at("dm"), 50);
  EXPECT_EQ(m.at("dispersion").at("constant_ms"), 4.148808);
  EXPECT_EQ(m.at("streams")[0].at("frames"), last - first + 1);
  EXPECT_EQ(m.at("streams")[0].at("window").at("start"), format_utc_ns(time_of(1000) + 31'985'016))
      << "the start delay rounded down to the ns";
}

TEST(DumpService, ADispersedTriggerIsRefusedWithoutFrequenciesOrWhenTheSweepIsTooLong) {
  Rig rig;
  rig.feed(800, 1199);
  json a = rig.trigger(1000, 1010, R"(, "dm": 50)");
  EXPECT_EQ(a.value("reason", ""), "no_frequencies") << a.dump();
  EXPECT_NE(a.value("error", "").find("239.17.0.1:36001 a"), std::string::npos) << a.dump();
  rig.cfg.streams.frequencies = {band_1200_1264()};
  // DM 2000 from 1456 MHz: 10 ms + a 568.7 ms sweep, beyond the 300 ms retained.
  a = rig.trigger(1000, 1010, R"(, "dm": 2000, "ref_freq": 1456)");
  EXPECT_EQ(a.value("reason", ""), "too_long") << a.dump();
  EXPECT_NE(a.value("error", "").find("dispersed by dm 2000 from 1456 MHz"), std::string::npos)
      << a.dump();
  EXPECT_NE(a.value("error", "").find("0.010000 s window + 0.568745 s sweep"), std::string::npos)
      << a.dump();
  const struct {
    std::string extra, words;
  } malformed[] = {{R"(, "dm": -1)", "'dm' must be a number from 0 to 100000"},
                   {R"(, "dm": "50")", "'dm' must be a number"},
                   {R"(, "dm": 1e6)", "'dm' must be a number"},
                   {R"(, "ref_freq": 1400)", "'ref_freq' needs 'dm'"},
                   {R"(, "dm": 5, "ref_freq": 0)", "'ref_freq' must be a frequency in MHz"}};
  for (const auto& c : malformed) {
    a = rig.trigger(1000, 1010, c.extra);
    EXPECT_EQ(a.value("reason", ""), "malformed") << c.extra << a.dump();
    EXPECT_NE(a.value("error", "").find(c.words), std::string::npos) << c.extra << a.dump();
  }
  rig.dumps->wait_idle();
  EXPECT_FALSE(std::filesystem::exists(rig.tmp.path() / "t" / "dumps"));
  EXPECT_EQ(rig.a.retention->stats().pins, 0u);
}

// Issue 27: VDIF retention and dumps, the same checks as CODIF. One VDIF stream over VTP,
// 1000 frames per second, reference epoch 50 (2025-01-01), 256 data bytes of zeros: the
// headers (seconds, frame number) tell every frame apart. raw and vdifhdr are written without
// the VTP number, as the continuous writer does.
constexpr uint64_t kVdifFps = 1000;
constexpr uint8_t kVdifEpoch = 50;

tf::VdifDatagram vdif_stream() {
  tf::VdifDatagram d;
  d.fps = kVdifFps;
  d.epoch = kVdifEpoch;
  return d;
}

capture::vdif::Header vdif_header(uint64_t index, bool fill = false) {
  const Bytes f = tf::vdif_datagram(vdif_stream(), 0, 0, index);
  capture::vdif::Header h;
  EXPECT_TRUE(capture::vdif::decode(std::span<const std::byte>(f).subspan(42 + 8), h));
  h.invalid = fill;
  return h;
}

int64_t vdif_time(uint64_t index) {
  const capture::vdif::Timing t{64 * 16, kVdifFps};  // 2-bit, 1 channel: 1024 samples
  return capture::vdif::frame_start_unix_ns(vdif_header(index), t);
}

// What a raw (`data` true) or vdifhdr dump of frames [first, last] holds, `dropped` as fills.
Bytes expected_vdif(uint64_t first, uint64_t last, const std::set<uint64_t>& dropped, bool data) {
  Bytes out;
  for (uint64_t i = first; i <= last; ++i) {
    std::array<std::byte, capture::vdif::kHeaderBytes> h{};
    capture::vdif::encode(vdif_header(i, dropped.count(i) != 0), h);
    out.insert(out.end(), h.begin(), h.end());
    out.insert(out.end(), data ? 256 : 0, std::byte{0});
  }
  return out;
}

struct VdifRig {
  writers::test::TempDir tmp;
  config::RunConfig cfg = run_config(tmp.path());
  capture::StreamPipeline a{vdif_spec()};
  capture::Ingest ingest{{&a}, false};
  std::optional<writers::CaptureWriter> writer;
  std::atomic<int64_t> now{0};
  std::unique_ptr<DumpService> dumps;
  std::set<uint64_t> dropped;

  static capture::StreamSpec vdif_spec() {
    capture::StreamSpec s = spec(tf::kSrcA);
    s.format = capture::StreamFormat::vdif;
    s.vdif.rate.frames_per_second = kVdifFps;
    s.vdif.vtp = true;
    return s;
  }
  VdifRig() {
    cfg.streams.format = config::StreamFormat::vdif;
    cfg.streams.frames_per_second = kVdifFps;
    cfg.streams.vtp = true;
    cfg.streams.antennas = {{"a", tf::kSrcA}};
    cfg.retention.formats = {config::OutputFormat::raw, config::OutputFormat::vdifhdr};
    a.retention = std::make_unique<capture::Retention>(a.ring(), kKeep);
    writer.emplace(ingest.streams(), ingest.arrivals(), std::vector<writers::StreamWriters>(1),
                   std::nullopt, writers::CaptureWriterOptions{}, nullptr);
    DumpServiceOptions o;
    o.now_ns = [this] { return now.load(); };
    o.future_grace = std::chrono::milliseconds(50);
    DumpStream ds{{0, 0, 0},
                  a.retention.get(),
                  codif::SyncSet::defaults(),
                  capture::StreamFormat::vdif,
                  a.spec().vdif};
    dumps = std::make_unique<DumpService>(cfg, tmp.path() / "t", std::vector<DumpStream>{ds}, o);
  }
  void feed(uint64_t first, uint64_t last) {
    for (uint64_t i = first; i <= last; ++i) {
      if (dropped.count(i) != 0) continue;
      const Bytes f = tf::vdif_datagram(vdif_stream(), i, 0, i);
      ingest.on_frame(f, f.size(), vdif_time(i));
      writer->poll();
    }
    ingest.flush_all();
    writer->poll();
    now.store(vdif_time(last + 1));
  }
  json trigger(uint64_t first, uint64_t end, const std::string& extra = "") {
    return dumps->handle(
        fmt::format("{{\"start\": {}, \"end\": {}{}}}", vdif_time(first), vdif_time(end), extra));
  }
  Bytes file(const std::string& dump, const std::string& ext) const {
    return writers::test::read_file(tmp.path() / "t" / "dumps" / dump /
                                    ("eth0_239.17.0.1_36001_a." + ext));
  }
};

TEST(DumpService, VdifWindowsAreServedLikeCodifOnesWithFillFramesAndVdifTime) {
  VdifRig rig;
  rig.dropped = {1003, 1004, 1010};
  rig.feed(800, 1199);
  // Full, across a second boundary (frame numbers 990..999, then 0..19 of the next second).
  json a = rig.trigger(990, 1020, R"(, "label": "full")");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  // Frame indices count from the reference epoch: seconds x frames per second + frame number.
  EXPECT_EQ(a.at("streams")[0].at("retained").at("first_frame"), 990);
  // Partly older than the retention (about the last 300 ms are kept).
  a = rig.trigger(850, 910, R"(, "label": "old")");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  const uint64_t oldest = a.at("streams")[0].at("retained").at("first_frame");
  EXPECT_GT(oldest, 850u);
  EXPECT_EQ(a.at("streams")[0].at("not_retained")[0].at("first_frame"), 850) << a.dump();
  EXPECT_EQ(a.at("streams")[0].at("not_retained")[0].at("last_frame"), oldest - 1) << a.dump();
  // In VDIF frame time: reference epoch, seconds, frame number.
  a = rig.dumps->handle(R"({"start": {"epoch": 50, "seconds": 0, "frame": 995},
                            "end": {"epoch": 50, "seconds": 1, "frame": 2}, "label": "vtime"})");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  EXPECT_EQ(a.at("streams")[0].at("window").at("first_frame"), 995);
  EXPECT_EQ(a.at("streams")[0].at("window").at("last_frame"), 1001);
  rig.dumps->wait_idle();
  EXPECT_EQ(rig.file("0001-full", "vdif"), expected_vdif(990, 1019, rig.dropped, true));
  EXPECT_EQ(rig.file("0001-full", "vhead"), expected_vdif(990, 1019, rig.dropped, false));
  EXPECT_EQ(rig.file("0002-old", "vdif"), expected_vdif(oldest, 909, rig.dropped, true));
  EXPECT_EQ(rig.file("0003-vtime", "vdif"), expected_vdif(995, 1001, rig.dropped, true));
  const json m = json::parse(read_text(rig.tmp.path() / "t/dumps/0001-full/dump.json"));
  EXPECT_EQ(m.at("streams")[0].at("frames"), 27);
  EXPECT_EQ(m.at("streams")[0].at("fill_frames"), 3);
  EXPECT_EQ(m.at("streams")[0].at("gaps")[0].at("first_time"), format_utc_ns(vdif_time(1003)));
}

TEST(DumpService, VdifFutureAndOverlappingWindowsAreServedWhenTheyArrive) {
  VdifRig rig;
  rig.feed(800, 1199);
  // [1150, 1250): half retained, half in the future; [1180, 1230) overlaps it.
  const json a = rig.trigger(1150, 1250, R"(, "label": "future")");
  const json b = rig.trigger(1180, 1230, R"(, "label": "overlap")");
  ASSERT_TRUE(a.at("ok").get<bool>() && b.at("ok").get<bool>()) << a.dump() << b.dump();
  EXPECT_TRUE(a.at("streams")[0].at("served_when_arrived").get<bool>());
  rig.dropped = {1220};
  rig.feed(1200, 1260);
  rig.dumps->wait_idle();
  EXPECT_EQ(rig.file("0001-future", "vdif"), expected_vdif(1150, 1249, rig.dropped, true));
  EXPECT_EQ(rig.file("0002-overlap", "vdif"), expected_vdif(1180, 1229, rig.dropped, true));
  EXPECT_EQ(rig.file("0002-overlap", "vhead"), expected_vdif(1180, 1229, rig.dropped, false));
  EXPECT_EQ(rig.dumps->counters().served.load(), 2u);
  EXPECT_EQ(rig.a.retention->stats().pins, 0u);
}

// A request that names the wrong format for its stream (a bug, never a client's mistake) ends
// at once with the reason instead of waiting for a frame that reads, until the deadline.
TEST(DumpService, AWindowWhoseFramesDoNotReadAsTheStreamsFormatEndsAtOnceWithTheReason) {
  VdifRig rig;
  rig.feed(800, 1199);
  capture::Retention& ret = *rig.a.retention;
  uint64_t pinned = 0;
  const auto pin = ret.pin(ret.range().head, pinned);
  ASSERT_TRUE(pin.has_value());
  writers::staging::PayloadStager stager(
      writers::staging::make_copy_engine(capture::memory::MemoryKind::host), tf::kPayload);
  writers::RateLimiter rate(0);
  writers::StreamDumpRequest r;
  r.retention = &ret;
  r.pin = *pin;
  r.from_pos = pinned;
  r.first_index = 1100;
  r.last_index = 1150;
  r.wait_until_ns = std::numeric_limits<int64_t>::max();  // no deadline would end it
  r.now_ns = [] { return int64_t{0}; };
  r.format = capture::StreamFormat::codif;  // the stream is VDIF
  r.files.raw = rig.tmp.path() / "wrong.codif";
  std::atomic<bool> stop{false};
  std::thread stopper([&] {  // without the bound the dump would wait: end it, and fail below
    for (int i = 0; i < 200 && !stop.load(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stop.store(true);
  });
  const writers::StreamDumpResult res = writers::StreamDumper(stager, rate).run(r, stop);
  stop.store(true);
  stopper.join();
  ret.unpin(*pin);
  ASSERT_TRUE(res.not_written.has_value());
  EXPECT_EQ(res.not_written->first, 1100u);
  EXPECT_EQ(res.not_written->second, 1150u);
  EXPECT_EQ(res.not_written_reason,
            "retained frame 1100 is not a CODIF frame: the dump cannot place it");
  EXPECT_EQ(res.frames + res.fill_frames, 0u);
}

// Item 15 of issue 23: a key given twice is refused (nlohmann would keep the last silently),
// at the top level and inside a CODIF time.
TEST(DumpService, ADuplicateKeyIsRefusedNamingIt) {
  Rig rig;
  rig.feed(800, 1199);
  const std::string a = std::to_string(time_of(1000)), b = std::to_string(time_of(1010));
  const struct {
    std::string body, key;
  } cases[] = {
      {"{\"start\": " + a + ", \"end\": " + b + ", \"end\": " + b + "}", "'end'"},
      {"{\"label\": \"x\", \"start\": " + a + ", \"end\": " + b + ", \"label\": \"y\"}", "'label'"},
      {R"({"start": {"epoch": 0, "seconds": 1, "frame": 0, "seconds": 0},
           "end": {"epoch": 0, "seconds": 0, "frame": 5}})",
       "'seconds'"},
  };
  for (const auto& c : cases) {
    const json r = rig.dumps->handle(c.body);
    EXPECT_EQ(r.value("reason", ""), "malformed") << c.body << " -> " << r.dump();
    const std::string e = r.value("error", "");
    EXPECT_NE(e.find("duplicate key " + c.key), std::string::npos) << r.dump();
  }
  rig.dumps->wait_idle();
  EXPECT_FALSE(std::filesystem::exists(rig.tmp.path() / "t" / "dumps"));
}

// Issue 23, item 2: a dump whose files cannot be written (the disk fails: EIO from the fault
// seam, as a full disk gives ENOSPC in integration_rocecapd_dump_disk_full) is "failed" with
// the reason in the trigger log, in dump.json, in the log and in a counter; the frames it
// could not write are listed, and no file claims data it does not hold.
struct FaultGuard {
  explicit FaultGuard(const std::filesystem::path& dir, uint64_t after_bytes) {
    writers::fault::Spec spec;
    spec.directory = dir;
    spec.after_bytes = after_bytes;
    writers::fault::install(spec);
  }
  ~FaultGuard() { writers::fault::clear(); }
};

TEST(DumpService, ADumpThatCannotBeWrittenIsFailedWithTheReason) {
  Rig rig;
  std::vector<std::pair<bool, std::string>> logged;
  std::mutex log_mu;
  rig.dumps.reset();
  DumpServiceOptions o;
  o.now_ns = [&rig] { return rig.now.load(); };
  o.log = [&](DumpLogLevel level, const std::string& line) {
    std::lock_guard lock(log_mu);
    logged.emplace_back(level == DumpLogLevel::error, line);
  };
  std::vector<DumpStream> streams;
  streams.push_back({{0, 0, 0}, rig.a.retention.get(), codif::SyncSet::defaults(), {}, {}});
  rig.dumps = std::make_unique<DumpService>(rig.cfg, rig.tmp.path() / "t", std::move(streams), o);
  rig.feed(800, 1199);
  const FaultGuard fault(rig.tmp.path() / "t" / "dumps", 0);
  const json a = rig.trigger(1000, 1030, ", \"label\": \"full\"");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  rig.dumps->wait_idle();
  const json log = rig.dumps->trigger_log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].value("state", ""), "failed") << log.dump();
  EXPECT_NE(log[0].value("error", "").find("Input/output error"), std::string::npos) << log.dump();
  EXPECT_EQ(rig.dumps->counters().failed.load(), 1u);
  EXPECT_EQ(rig.dumps->counters().served.load(), 0u);
  const std::filesystem::path dir = rig.tmp.path() / "t" / "dumps" / "0001-full";
  const json m = json::parse(read_text(dir / "dump.json"));
  EXPECT_EQ(m.value("state", ""), "failed");
  const json& st = m.at("streams")[0];
  EXPECT_EQ(st.at("frames"), 0) << st.dump();
  EXPECT_EQ(st.at("write_error_lost").at("raw").at("frames"), 30) << st.dump();
  EXPECT_EQ(st.at("write_error_lost").at("codifhdr").at("frames"), 30) << st.dump();
  for (const json& f : st.at("files")) {
    EXPECT_EQ(std::filesystem::file_size(f.at("path").get<std::string>()),
              f.at("bytes").get<uint64_t>());
  }
  std::lock_guard lock(log_mu);
  const bool said = std::any_of(logged.begin(), logged.end(), [](const auto& l) {
    return l.first && l.second.find("dump 0001-full failed") != std::string::npos &&
           l.second.find("Input/output error") != std::string::npos;
  });
  EXPECT_TRUE(said) << "no error logged for the failed dump";
}

// With several output targets a dump whose target fails is written again, whole, on another
// one: its frames stay pinned until it is written, the failed target leaves rotation.
TEST(DumpService, ADumpWhoseTargetFailsIsWrittenWholeOnAnother) {
  Rig rig;
  rig.dumps.reset();
  const std::filesystem::path a = rig.tmp.path() / "a", b = rig.tmp.path() / "b";
  std::filesystem::create_directories(a / "t");
  std::filesystem::create_directories(b / "t");
  rig.cfg.output.directory = a.string();
  rig.cfg.output.directories = {a.string(), b.string()};
  writers::TargetOptions to;
  to.free_bytes = [&](const std::filesystem::path& d) -> std::optional<uint64_t> {
    return d == a ? uint64_t{100} << 30 : uint64_t{50} << 30;  // a is chosen first
  };
  DumpServiceOptions o;
  o.now_ns = [&rig] { return rig.now.load(); };
  o.targets =
      std::make_shared<writers::OutputTargets>(std::vector<std::filesystem::path>{a, b}, to);
  std::vector<DumpStream> streams;
  streams.push_back({{0, 0, 0}, rig.a.retention.get(), codif::SyncSet::defaults(), {}, {}});
  streams.push_back({{0, 0, 1}, rig.b.retention.get(), codif::SyncSet::defaults(), {}, {}});
  rig.dumps = std::make_unique<DumpService>(rig.cfg, a / "t", std::move(streams), o);
  rig.dropped = {1005};
  rig.feed(800, 1199);
  const FaultGuard fault(a, 0);
  const json r = rig.trigger(1000, 1030);
  ASSERT_TRUE(r.at("ok").get<bool>()) << r.dump();
  EXPECT_EQ(r.at("directory"), (a / "t" / "dumps" / "0001").string());
  rig.feed(1200, 1400);  // traffic goes on: the pins must hold the window for the retry
  rig.dumps->wait_idle();
  const json log = rig.dumps->trigger_log();
  EXPECT_EQ(log[0].value("state", ""), "written") << log.dump();
  EXPECT_EQ(log[0].value("directory", ""), (b / "t" / "dumps" / "0001").string()) << log.dump();
  ASSERT_EQ(log[0].at("retries").size(), 1u) << log.dump();
  EXPECT_NE(log[0].at("retries")[0].value("error", "").find("Input/output error"),
            std::string::npos);
  const std::filesystem::path dir = b / "t" / "dumps" / "0001";
  for (const char* ant : {"a", "b"}) {
    const std::string name = std::string("eth0_239.17.0.1_36001_") + ant + ".codif";
    EXPECT_EQ(writers::test::read_file(dir / name), expected_raw(1000, 1029, rig.dropped));
    EXPECT_FALSE(std::filesystem::exists(a / "t" / "dumps" / "0001" / name));
  }
  const json m = json::parse(read_text(dir / "dump.json"));
  EXPECT_EQ(m.value("state", ""), "written");
  EXPECT_EQ(m.at("streams")[1].at("frames"), 29);
  EXPECT_FALSE(o.targets->in_rotation(0));
  EXPECT_EQ(rig.dumps->counters().served.load(), 1u);
  EXPECT_EQ(rig.dumps->counters().failed.load(), 0u);
}
// The status of a dump (DumpService::status, {"status": N}): a future window is queued or
// writing with nothing written before its frames arrive, shows the frames written so far while
// they come, and once written gives the final counts, those of its dump.json; the trigger log
// (the run manifest) shows the same. Refused requests take no id.
TEST(DumpService, StatusFollowsADumpFromQueuedThroughWritingToWritten) {
  Rig rig;
  EXPECT_EQ(rig.dumps->status(1).at("error"), "no dump 1 in this run (none accepted yet)");
  rig.feed(800, 1199);
  EXPECT_EQ(rig.trigger(1100, 1000).at("reason"), "bad_window");  // refused: no dump, no id
  const json a = rig.trigger(1250, 1300, ", \"antennas\": [\"a\"], \"label\": \"st\"");
  ASSERT_TRUE(a.at("ok").get<bool>()) << a.dump();
  ASSERT_EQ(a.at("id"), 1);
  json s = rig.dumps->status(1);
  ASSERT_TRUE(s.at("ok").get<bool>()) << s.dump();
  EXPECT_TRUE(s.at("state") == "queued" || s.at("state") == "writing") << s.dump();
  EXPECT_EQ(s.at("progress").at("frames_planned"), 50);
  EXPECT_EQ(s.at("progress").at("window_frames"), 50);
  EXPECT_EQ(s.at("progress").at("frames"), 0);
  EXPECT_EQ(s.at("progress").at("streams"), 1);
  EXPECT_EQ(s.at("progress").at("streams_done"), 0);
  EXPECT_NE(s.at("streams")[0].at("progress").at("state"), "done");
  EXPECT_EQ(s.at("streams")[0].at("retained"), a.at("streams")[0].at("retained"));
  EXPECT_FALSE(s.contains("written")) << s.dump();

  // Half the window arrives (1250..1274): the dump thread writes it and says so.
  rig.dropped = {1260};
  rig.feed(1200, 1274);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    s = rig.dumps->status(1);
    if (s.at("progress").at("frames").get<uint64_t>() +
            s.at("progress").at("fill_frames").get<uint64_t>() >=
        25)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(s.at("state"), "writing") << s.dump();
  EXPECT_EQ(s.at("progress").at("frames"), 24) << s.dump();
  EXPECT_EQ(s.at("progress").at("fill_frames"), 1) << s.dump();
  EXPECT_EQ(s.at("progress").at("bytes"), 25 * (tf::kPayload + 64 + 64)) << s.dump();  // raw+chead
  EXPECT_EQ(s.at("streams")[0].at("progress").at("state"), "writing");
  EXPECT_LT(s.at("progress").at("frames").get<uint64_t>(),
            s.at("progress").at("frames_planned").get<uint64_t>());

  rig.feed(1275, 1400);
  rig.dumps->wait_idle();
  s = rig.dumps->status(1);
  ASSERT_EQ(s.at("state"), "written") << s.dump();
  const std::filesystem::path dump_json = rig.tmp.path() / "t/dumps/0001-st/dump.json";
  EXPECT_EQ(s.at("manifest"), dump_json.string());
  EXPECT_TRUE(s.contains("written"));
  const json m = json::parse(read_text(dump_json));
  const json& ms = m.at("streams")[0];
  const json& sp = s.at("streams")[0].at("progress");
  EXPECT_EQ(sp.at("state"), "done");
  EXPECT_EQ(sp.at("frames"), ms.at("frames"));
  EXPECT_EQ(sp.at("fill_frames"), ms.at("fill_frames"));
  EXPECT_EQ(sp.at("bytes"), ms.at("bytes"));
  EXPECT_EQ(ms.at("frames"), 49);
  EXPECT_EQ(ms.at("fill_frames"), 1);
  EXPECT_EQ(s.at("progress").at("frames"), 49);
  EXPECT_EQ(s.at("progress").at("bytes"), ms.at("bytes"));
  EXPECT_EQ(s.at("progress").at("streams_done"), 1);
  // The run manifest's trigger log: the same entry, from the same function.
  const json log = rig.dumps->trigger_log();
  ASSERT_EQ(log.size(), 2u);  // the dump, then the refused request
  EXPECT_EQ(log[0], s);
  EXPECT_EQ(log[1].at("refused"), "bad_window");

  const json unknown = rig.dumps->status(2);
  EXPECT_FALSE(unknown.at("ok").get<bool>());
  EXPECT_EQ(unknown.at("reason"), "unknown_dump");
  EXPECT_EQ(unknown.at("error"), "no dump 2 in this run (dump 1)");
  ASSERT_TRUE(rig.trigger(1300, 1310).at("ok").get<bool>());
  EXPECT_EQ(rig.dumps->status(5).at("error"), "no dump 5 in this run (dumps 1..2)");
  rig.dumps->wait_idle();
}

// {"status": N} through the real trigger socket and GET /trigger/N on the HTTP listener (the
// token required there as for POST /trigger); malformed status requests are refused naming
// what is wrong, and status questions are not counted as triggers.
TEST(DumpService, StatusRequestsThroughTheSocketAndTheHttpListener) {
  Rig rig("s3cret");
  rig.feed(800, 1199);
  ASSERT_TRUE(rig.trigger(1000, 1010).at("ok").get<bool>());
  rig.dumps->wait_idle();
  const std::string path = (rig.tmp.path() / "trigger.sock").string();
  TriggerSocket sock(path, [&](const std::string& r) { return rig.dumps->handle(r).dump(); });
  json s = json::parse(send_trigger(path, R"({"status": 1})"));
  ASSERT_TRUE(s.at("ok").get<bool>()) << s.dump();
  EXPECT_EQ(s.at("id"), 1);
  EXPECT_EQ(s.at("state"), "written");
  EXPECT_EQ(s.at("progress").at("frames"), 20);  // 10 frames of each antenna
  EXPECT_EQ(s.at("progress").at("streams_done"), 2);
  s = json::parse(send_trigger(path, R"({"status": 4})"));
  EXPECT_EQ(s.at("reason"), "unknown_dump") << s.dump();
  EXPECT_EQ(s.at("error"), "no dump 4 in this run (dump 1)");

  const struct {
    std::string body, words;
  } bad[] = {
      {R"({"status": 0})", "'status' must be a dump's id, a positive integer, not 0"},
      {R"({"status": "x"})", "'status' must be a dump's id, a positive integer, not \"x\""},
      {R"({"status": -3})", "a positive integer, not -3"},
      {R"({"status": 1.5})", "a positive integer, not 1.5"},
      {R"({"status": 1, "start": 5})", "'start' with 'status'"},
      {R"({"status": 1, "end": 5, "start": 3})", "takes no other key but 'token'"},
      {R"({"status": 1, "verbose": true})", "unknown key 'verbose' in a status request"},
      {R"({"status": 1, "status": 2})", "duplicate key 'status'"},
      {R"({"status": 1, "token": 5})", "'token' must be a string"},
  };
  for (const auto& c : bad) {
    const json r = json::parse(send_trigger(path, c.body));
    EXPECT_EQ(r.at("reason"), "malformed") << c.body << " -> " << r.dump();
    EXPECT_NE(r.value("error", "").find(c.words), std::string::npos) << r.dump();
  }
  // A trigger's unknown key names the status request as the other kind there is.
  const json other = rig.dumps->handle(R"({"start": 1, "end": 2, "stat": 1})");
  EXPECT_NE(other.at("error").get<std::string>().find("or status alone"), std::string::npos);
  // Status questions are not triggers: only the trigger and the refused requests count.
  EXPECT_EQ(rig.dumps->counters().received.load(), 1u + std::size(bad) + 1);

  auto metrics = std::make_shared<NoMetrics>();
  HttpListener listener("127.0.0.1:0", metrics);
  const auto port = static_cast<uint16_t>(listener.ports().at(0));
  const auto get = [port](const std::string& target, const std::string& extra = {}) {
    return http(port,
                "GET " + target + " HTTP/1.1\r\nHost: x\r\n" + extra + "Connection: close\r\n\r\n");
  };
  std::string r = get("/trigger/1");  // no handler yet: this run has no retention
  EXPECT_NE(r.find("404 Not Found"), std::string::npos) << r;
  EXPECT_NE(r.find("not_running"), std::string::npos) << r;
  listener.set_status_handler([&](uint64_t id, const std::string& bearer) {
    return rig.dumps->handle(json{{"status", id}}.dump(), true, bearer).dump();
  });
  listener.set_trigger_handler([&](const std::string& body, const std::string& bearer) {
    return rig.dumps->handle(body, true, bearer).dump();
  });
  r = get("/trigger/1");
  EXPECT_NE(r.find("401 Unauthorized"), std::string::npos) << r;
  EXPECT_NE(r.find("\"reason\":\"unauthorized\""), std::string::npos) << r;
  EXPECT_EQ(r.find("\"state\""), std::string::npos) << r;
  r = get("/trigger/1", "Authorization: Bearer guess\r\n");
  EXPECT_NE(r.find("wrong token"), std::string::npos) << r;
  r = get("/trigger/1", "Authorization: Bearer s3cret\r\n");
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  const json body = json::parse(r.substr(r.find("\r\n\r\n") + 4));
  EXPECT_EQ(body.at("state"), "written");
  EXPECT_EQ(body.at("progress"), rig.dumps->status(1).at("progress"));
  r = get("/trigger/0001?x=1", "Authorization: bearer s3cret\r\n");
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  r = get("/trigger/2", "Authorization: Bearer s3cret\r\n");
  EXPECT_NE(r.find("404 Not Found"), std::string::npos) << r;
  EXPECT_NE(r.find("no dump 2 in this run (dump 1)"), std::string::npos) << r;
  for (const char* bad_id : {"/trigger/0", "/trigger/x", "/trigger/", "/trigger/-1",
                             "/trigger/99999999999999999999999"}) {
    r = get(bad_id, "Authorization: Bearer s3cret\r\n");
    EXPECT_NE(r.find("400 Bad Request"), std::string::npos) << bad_id << ": " << r;
    EXPECT_NE(r.find("must be a dump's number"), std::string::npos) << r;
  }
  r = http(port, "DELETE /trigger/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("405"), std::string::npos) << r;
  // POST /trigger takes a status request too, the token in the body.
  r = post(port, R"({"status": 1, "token": "s3cret"})");
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
  EXPECT_NE(r.find("\"state\":\"written\""), std::string::npos) << r;
  // The token of a status request is never stored either.
  EXPECT_EQ(rig.dumps->trigger_log().dump().find("s3cret"), std::string::npos);
}

// GPU retention: the payload slots are GPU memory (as the verbs backend scatters them there);
// the dump copies them out with the CUDA copy engine and writes the same bytes.
TEST(DumpService, GpuRetentionDumpsTheSameBytes) {
  const capture::memory::GpuProbe probe = capture::memory::probe_gpu(0);
  if (!probe.usable) GTEST_SKIP() << "no usable GPU: " << probe.detail;
  writers::test::TempDir tmp;
  const config::RunConfig cfg = run_config(tmp.path());
  const capture::StreamSpec s = spec(tf::kSrcA);
  capture::StreamPipeline a(s, std::make_unique<capture::memory::GpuMemory>(
                                   capture::StreamRing::payload_bytes_needed(s.ring), 0));
  a.retention = std::make_unique<capture::Retention>(a.ring(), kKeep);
  capture::Ingest ingest({&a}, false);
  writers::CaptureWriter writer(ingest.streams(), ingest.arrivals(),
                                std::vector<writers::StreamWriters>(1), std::nullopt,
                                writers::CaptureWriterOptions{}, nullptr);
  std::atomic<int64_t> now{0};
  DumpServiceOptions o;
  o.now_ns = [&] { return now.load(); };
  o.cuda_device = 0;
  DumpService dumps(cfg, tmp.path() / "t", {{{0, 0, 0}, a.retention.get(), s.syncs, {}, {}}}, o);
  const std::set<uint64_t> dropped{1001};
  for (uint64_t i = 990; i < 1040; ++i) {
    if (dropped.count(i) != 0) continue;
    // As the NIC scatters: the split's bytes to the header slot, the rest to GPU memory.
    const Bytes f = tf::frame(tf::kSrcA, i);
    capture::SlotId id = 0;
    ASSERT_EQ(a.ring().take_free(std::span<capture::SlotId>(&id, 1)), 1u);
    std::memcpy(a.ring().header(id).data(), f.data(), a.split());
    std::string why;
    ASSERT_TRUE(capture::memory::copy_to_device(a.ring().payload(id).data(), f.data() + a.split(),
                                                f.size() - a.split(), why))
        << why;
    ingest.on_slot(0, id, static_cast<uint32_t>(f.size()), time_of(i), 0);
    writer.poll();
  }
  ingest.flush_all();
  writer.poll();
  now.store(time_of(1040));
  const json r = dumps.handle(fmt::format("{{\"start\": {}, \"end\": {}, \"label\": \"gpu\"}}",
                                          time_of(995), time_of(1010)));
  ASSERT_TRUE(r.at("ok").get<bool>()) << r.dump();
  dumps.wait_idle();
  EXPECT_EQ(writers::test::read_file(tmp.path() / "t/dumps/0001-gpu/eth0_239.17.0.1_36001_a.codif"),
            expected_raw(995, 1009, dropped));
}

// A token file written with spaces, a tab and `echo`'s newline around the token: the token is
// what is between them (main kept the leading spaces and the tab, so the token never matched).
TEST(DumpService, TheTokenIsTheFileWithoutTheWhitespaceAroundIt) {
  Rig rig("  s3cret\t");
  rig.feed(800, 1199);
  const std::string window =
      fmt::format("\"start\": {}, \"end\": {}", time_of(1000), time_of(1005));
  EXPECT_TRUE(rig.dumps->handle("{" + window + "}", true, "s3cret").at("ok").get<bool>());
  const json wrong = rig.dumps->handle("{" + window + "}", true, "  s3cret\t");
  EXPECT_EQ(wrong.at("reason"), "unauthorized") << wrong.dump();
}

}  // namespace
}  // namespace rocecap::daemon
