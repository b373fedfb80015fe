// The metrics exposer of a run, scraped over loopback like Prometheus would, after feeding
// known frames through the run's own Ingest and writers.
#include "daemon/lib/reporting/metrics.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "config/loader.hpp"
#include "daemon/lib/reporting/report.hpp"
#include "daemon/lib/run/writer_pool.hpp"
#include "test_frames.hpp"
#include "writers/output_file.hpp"

namespace rocecap::daemon {
namespace {

namespace fs = std::filesystem;
using daemon::InterfaceRuntime;

// GET /metrics with a plain socket; returns the body (empty on any failure).
std::string http_get(uint16_t port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req =
        "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if (write(fd, req.data(), req.size()) == ssize_t(req.size())) {
      char buf[4096];
      for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
        reply.append(buf, std::size_t(n));
    }
  }
  close(fd);
  const auto body = reply.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : reply.substr(body + 4);
}

// `name{b="1",a="2"}` -> `name{a="2",b="1"}`: labels sorted, as the expectations write them.
std::string sorted_labels(const std::string& series) {
  const auto open = series.find('{');
  if (open == std::string::npos) return series;
  std::vector<std::string> labels;
  const std::string body = series.substr(open + 1, series.size() - open - 2);
  std::size_t from = 0;
  for (std::size_t end; (end = body.find("\",", from)) != std::string::npos; from = end + 2)
    labels.push_back(body.substr(from, end + 1 - from));
  labels.push_back(body.substr(from));
  std::sort(labels.begin(), labels.end());
  std::string out = series.substr(0, open + 1);
  for (std::size_t i = 0; i < labels.size(); ++i)
    out += (i ? "," : "") + labels[i];
  return out + "}";
}

// "name{labels}" -> value, for every sample line of an exposition.
std::map<std::string, double> samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    out[sorted_labels(line.substr(0, space))] = std::stod(line.substr(space + 1));
  }
  return out;
}

void write_empty_pcap(const fs::path& p) {
  const uint32_t hdr[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 65535, 1};
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(hdr), sizeof hdr);
}

std::vector<std::byte> invalid_frame(uint32_t src, uint64_t index) {
  std::vector<std::byte> f = test::frame(src, index);
  capture::codif::Header h = capture::codif::at_index(test::base_header(), test::kTiming, index);
  h.invalid = true;
  capture::codif::encode(h, std::span<std::byte, 64>(f.data() + 42, 64));
  return f;
}

class Metrics : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rocecap_metrics_" + std::to_string(getpid()));
    fs::create_directories(dir_);
    write_empty_pcap(dir_ / "empty.pcap");
    const std::string yaml =
        "run: {name: m1}\n"
        "capture:\n"
        "  backend: pcap-file\n"
        "  pcap_file: " +
        (dir_ / "empty.pcap").string() +
        "\n"
        "  interfaces:\n"
        "    - {name: rec0, groups: [239.17.0.1:36001]}\n"
        "streams:\n" +
        streams_section() + "output:\n" + output_directories() + "  formats: [" + formats() +
        "]\n"
        "  reorder_window: 4\n"
        "metrics: {listen: 127.0.0.1:9464}\n";
    auto r = config::load_string(yaml, "metrics_test.yaml");
    ASSERT_TRUE(r.ok()) << (r.problems.empty() ? "" : r.problems[0].message);
    cfg_ = *r.config;
    cfg_.metrics.port = 0;  // any free port
    rt_ = daemon::build_runtime(cfg_, spdlog::default_logger());
  }
  // The streams section's keys.
  virtual std::string streams_section() {
    return "  format: codif\n"
           "  antennas:\n"
           "    - {name: ak11, source: 192.0.2.11}\n"
           "    - {name: ak12, source: 192.0.2.12}\n";
  }
  virtual std::string formats() { return "raw, codifhdr"; }
  // The output section's directory key(s).
  virtual std::string output_directories() { return "  directory: " + dir_.string() + "\n"; }
  void TearDown() override {
    server_.reset();
    rt_.reset();
    fs::remove_all(dir_);
  }
  InterfaceRuntime& rec0() { return *rt_->interfaces.at(0); }
  void feed(const std::vector<std::byte>& f) {
    rec0().ingest->on_frame(f, f.size(), 1'763'726'400'000'000'000);
  }
  // What the capture and writer threads would do at their next housekeeping / pass.
  void settle() {
    rec0().ingest->flush_all();
    while (rec0().writer->poll() != 0) {
    }
    daemon::publish_capture(rec0(), 1'800'000'000'500'000'000);
    daemon::publish_writer(rec0(), 1'800'000'001'000'000'000);
  }
  std::map<std::string, double> scrape() {
    if (!server_) server_ = daemon::start_metrics(*rt_, "9.9.9", 1'700'000'000'250'000'000);
    const std::string text = http_get(server_->port(), "/metrics");
    last_text_ = text;
    return samples(text);
  }

  fs::path dir_;
  config::RunConfig cfg_;
  std::unique_ptr<daemon::Runtime> rt_;
  std::unique_ptr<daemon::MetricsServer> server_;
  std::string last_text_;
};

constexpr const char* kA = R"({antenna="ak11",group="239.17.0.1:36001",interface="rec0"})";
constexpr const char* kB = R"({antenna="ak12",group="239.17.0.1:36001",interface="rec0"})";
std::string m(const char* name, const char* labels) {
  return std::string(name) + labels;
}

TEST_F(Metrics, StreamCountersMatchTheFramesFed) {
  for (uint64_t i : {0, 1, 2, 5, 6, 7, 8, 9, 5})  // 3 and 4 lost, 5 twice
    feed(test::frame(test::kSrcA, i));
  for (uint64_t i : {0, 1, 3})
    feed(test::frame(test::kSrcB, i));
  feed(invalid_frame(test::kSrcB, 2));             // late and invalid, still placed
  feed(test::frame(test::kSrcA, 10, 0x12345678));  // bad sync: rejected
  feed(test::frame(0xC0000263, 0));                // unknown antenna: no stream
  settle();
  auto s = scrape();
  const double frame_bytes = capture::codif::kHeaderBytes + test::kPayload;
  EXPECT_EQ(s[m("rocecap_stream_received_packets_total", kA)], 9);
  EXPECT_EQ(s[m("rocecap_stream_received_bytes_total", kA)], 9 * frame_bytes);
  EXPECT_EQ(s[m("rocecap_stream_lost_frames_total", kA)], 2);
  EXPECT_EQ(s[m("rocecap_stream_duplicate_frames_total", kA)], 1);
  EXPECT_EQ(s[m("rocecap_stream_received_packets_total", kB)], 4);
  EXPECT_EQ(s[m("rocecap_stream_lost_frames_total", kB)], 0);
  EXPECT_EQ(s[m("rocecap_stream_late_frames_total", kB)], 1);
  EXPECT_EQ(s[m("rocecap_stream_invalid_frames_total", kB)], 1);
  EXPECT_EQ(s[R"(rocecap_rejected_packets_total{interface="rec0",reason="bad_sync"})"], 1);
  EXPECT_EQ(s[R"(rocecap_rejected_packets_total{interface="rec0",reason="no_stream"})"], 1);
  // Frame 9 of a 1000 frames/s stream starts 9 ms after frame 0, at reference epoch 0
  // (2000-01-01T00:00:00Z = 946684800 Unix seconds).
  EXPECT_DOUBLE_EQ(s[m("rocecap_stream_last_frame_time_seconds", kA)], 946'684'800.009);
  EXPECT_DOUBLE_EQ(s[m("rocecap_stream_last_packet_timestamp_seconds", kA)], 1'800'000'000.5);
  // raw: 8 + 4 distinct frames plus 2 fill frames for A's gap; codifhdr: the same headers.
  const auto raw = R"({format="raw",interface="rec0"})";
  const auto hdr = R"({format="codifhdr",interface="rec0"})";
  EXPECT_EQ(s[m("rocecap_written_frames_total", raw)], 14);
  EXPECT_EQ(s[m("rocecap_fill_frames_total", raw)], 2);
  EXPECT_EQ(s[m("rocecap_written_bytes_total", raw)], 14 * frame_bytes);
  EXPECT_EQ(s[m("rocecap_written_bytes_total", hdr)], 14 * capture::codif::kHeaderBytes);
  EXPECT_EQ(s[m("rocecap_files_opened_total", raw)], 2);
  EXPECT_EQ(s[m("rocecap_write_errors_total", raw)], 0);
  EXPECT_EQ(s.count(R"(rocecap_written_bytes_total{format="pcap",interface="rec0"})"), 0u);
  EXPECT_DOUBLE_EQ(s[R"(rocecap_writer_last_pass_timestamp_seconds{interface="rec0"})"],
                   1'800'000'001.0);
  EXPECT_EQ(s[m("rocecap_ring_fill_ratio", kA)], 0);  // the writer released every slot
  EXPECT_EQ(s[m("rocecap_writer_backlog_frames", kA)], 0);
}

TEST_F(Metrics, WriteErrorLossAndStorageLossAreExported) {
  feed(test::frame(test::kSrcA, 0));
  settle();
  auto s = scrape();
  const auto raw = R"({format="raw",interface="rec0"})";
  EXPECT_EQ(s.count(m("rocecap_write_error_lost_frames_total", raw)), 1u);
  EXPECT_EQ(s[m("rocecap_write_error_lost_frames_total", raw)], 0);
  EXPECT_EQ(s[m("rocecap_storage_errors_total", raw)], 0);
  EXPECT_EQ(s[m("rocecap_write_retries_total", raw)], 0);
  EXPECT_EQ(s.count("rocecap_storage_lost"), 1u);
  EXPECT_EQ(s["rocecap_storage_lost"], 0);
  // The disk answers EIO (fault seam in OutputFile): the closing flush fails, the runtime's
  // error reporter calls it a storage loss (rocecapd then stops the run and exits 5).
  writers::testing::set_write_function(
      [](int, const void*, std::size_t) -> ssize_t { return errno = EIO, -1; });
  const writers::Status closed = rec0().writer->close();
  writers::testing::set_write_function(nullptr);
  EXPECT_EQ(closed.code(), EIO);
  daemon::publish_writer(rec0(), 1'800'000'002'000'000'000);
  s = scrape();
  EXPECT_EQ(s["rocecap_storage_lost"], 1);
  // The raw frame went out with writev from its ring slot in the pass that released the slot
  // (writers/README.md, write paths); the 64-byte codifhdr record was still in the staging
  // buffer when the disk failed.
  const auto hdr = R"({format="codifhdr",interface="rec0"})";
  EXPECT_GE(s[m("rocecap_storage_errors_total", hdr)], 1);
  EXPECT_EQ(s[m("rocecap_write_error_lost_frames_total", hdr)], 1) << "frame 0 never reached disk";
  EXPECT_EQ(s[m("rocecap_write_error_lost_frames_total", raw)], 0) << "written before the EIO";
  EXPECT_NE(rt_->storage.why().find("Input/output error"), std::string::npos) << rt_->storage.why();
}

// Per output target: bytes written, files, state; with one target it is the directory.
TEST_F(Metrics, TargetCountersFollowTheFiles) {
  for (uint64_t i : {0, 1, 2})
    feed(test::frame(test::kSrcA, i));
  settle();
  ASSERT_TRUE(rec0().writer->close().ok());
  auto s = scrape();
  const std::string l = R"({directory=")" + dir_.string() + R"(",target="0"})";
  const double frame_bytes = capture::codif::kHeaderBytes + test::kPayload;
  EXPECT_EQ(s["rocecap_target_written_bytes_total" + l], 3 * frame_bytes + 3 * 64.0);
  EXPECT_EQ(s["rocecap_target_files_total" + l], 2);
  EXPECT_GE(s["rocecap_target_writes_total" + l], 2);
  EXPECT_GT(s["rocecap_target_free_bytes" + l], 0);
  EXPECT_EQ(s.count("rocecap_target_write_backlog_bytes" + l), 1u) << last_text_;
  EXPECT_EQ(s["rocecap_target_write_backlog_bytes" + l], 0) << "writes of closed files counted";
  const std::string st = R"({directory=")" + dir_.string() + R"(",state="active",target="0"})";
  EXPECT_EQ(s["rocecap_target_state" + st], 1) << last_text_;
}

// Two targets; the second answers EIO (the file layer's fault seam) when the files are flushed:
// the run goes on (no storage loss), the data reaches the first target, nothing is lost, and
// the metrics say target 1 failed and the writers spilled.
class MetricsTwoTargets : public Metrics {
 protected:
  std::string output_directories() override {
    return "  directories: [" + (dir_ / "a").string() + ", " + (dir_ / "b").string() + "]\n";
  }
};

std::string g_eio_dir;
ssize_t eio_under_dir(int fd, const void* data, std::size_t n) {
  char link[64], path[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t len = ::readlink(link, path, sizeof path - 1);
  if (len > 0 && std::string(path, std::size_t(len)).rfind(g_eio_dir, 0) == 0) {
    errno = EIO;
    return -1;
  }
  return ::write(fd, data, n);
}

TEST_F(MetricsTwoTargets, EioOnOneTargetSpillsAndTheRunGoesOn) {
  for (uint64_t i = 0; i < 20; ++i) {
    feed(test::frame(test::kSrcA, i));
    feed(test::frame(test::kSrcB, i));
  }
  settle();
  // Four files (2 streams x raw, codifhdr) were opened, two on each target.
  g_eio_dir = (dir_ / "b").string() + "/";
  writers::testing::set_write_function(eio_under_dir);
  const writers::Status closed = rec0().writer->close();
  writers::testing::set_write_function(nullptr);
  EXPECT_TRUE(closed.ok()) << closed.message();
  daemon::publish_writer(rec0(), 1'800'000'002'000'000'000);
  auto s = scrape();
  EXPECT_EQ(s["rocecap_storage_lost"], 0) << "one target failing is not the run's storage lost";
  const auto raw = R"({format="raw",interface="rec0"})";
  const auto hdr = R"({format="codifhdr",interface="rec0"})";
  EXPECT_EQ(s[m("rocecap_write_error_lost_frames_total", raw)], 0);
  EXPECT_EQ(s[m("rocecap_write_errors_total", raw)], 0);
  EXPECT_EQ(s[m("rocecap_written_frames_total", raw)], 40);
  EXPECT_EQ(s[m("rocecap_written_frames_total", hdr)], 40);
  EXPECT_GE(s[m("rocecap_write_spills_total", raw)] + s[m("rocecap_write_spills_total", hdr)], 1);
  const std::string b =
      R"({directory=")" + (dir_ / "b").string() + R"(",state="failed",target="1"})";
  EXPECT_EQ(s["rocecap_target_state" + b], 1) << last_text_;
  // Every frame is in a file on target 0.
  uint64_t frames = 0;
  for (std::size_t st = 0; st < 2; ++st) {
    for (const auto& f : rec0().writer->writers(st).raw->files()) {
      if (f.records > 0) {
        EXPECT_EQ(f.target, 0u) << f.path;
      }
      frames += f.records;
      EXPECT_EQ(fs::file_size(f.path), f.bytes);
    }
  }
  EXPECT_EQ(frames, 40u);
  EXPECT_FALSE(rt_->storage.lost());
}

// Issue 23: target 1's run directory removed mid-run. The next identity check loses the
// target, the writers' storage check finds their files there gone: their frames are exported
// as storage_lost, rocecap_storage_lost is 1 (rocecapd goes on and exits 5 at the end), and
// the manifest lists those files under lost_files, no longer under files.
TEST_F(MetricsTwoTargets, FilesLostWithATargetAreCountedAndListedAsLost) {
  for (uint64_t i = 0; i < 20; ++i) {
    feed(test::frame(test::kSrcA, i));
    feed(test::frame(test::kSrcB, i));
  }
  settle();
  fs::remove_all(dir_ / "b" / "m1");
  EXPECT_EQ(rt_->targets->check_identity(), 1u);
  rec0().writer->check_storage();
  daemon::publish_writer(rec0(), 1'800'000'002'000'000'000);
  auto s = scrape();
  EXPECT_EQ(s["rocecap_storage_lost"], 1) << "files already written were lost";
  EXPECT_FALSE(rt_->storage.lost()) << "the run goes on on target 0";
  const auto raw = R"({format="raw",interface="rec0"})";
  const auto hdr = R"({format="codifhdr",interface="rec0"})";
  // Placement spreads the four first files (2 streams x raw, codifhdr) over both targets.
  const double lost = s[m("rocecap_storage_lost_frames_total", raw)] +
                      s[m("rocecap_storage_lost_frames_total", hdr)];
  EXPECT_GE(lost, 20) << "every file on target 1 holds 20 frames";
  EXPECT_EQ(
      lost + s[m("rocecap_written_frames_total", raw)] + s[m("rocecap_written_frames_total", hdr)],
      80);
  const nlohmann::json j = daemon::to_json(daemon::snapshot(*rt_, {"t", "h", "v"}, "running"));
  uint64_t listed_lost = 0;
  for (const auto& st : j["streams"]) {
    for (const auto& f : st["files"])
      EXPECT_EQ(f["target"], 0) << f;
    for (const auto& f : st["lost_files"]) {
      EXPECT_EQ(f["target"], 1) << f;
      EXPECT_NE(f["reason"].get<std::string>().find("was removed"), std::string::npos) << f;
      listed_lost += f["frames"].get<uint64_t>();
    }
  }
  EXPECT_EQ(double(listed_lost), lost);
  EXPECT_EQ(j["targets"][1]["state"], "failed");
}

// output.writer_threads: 2 threads, one stream each (raw + codifhdr, no pcap: the interface
// splits); each shard publishes its own counters, the exposition adds them, and each thread's
// own counters are exported.
TEST_F(Metrics, WriterPoolShardsAreSummedAndEachThreadIsExported) {
  const WriterPlan plan = plan_writer_pool(*rt_, 2);
  ASSERT_EQ(plan.size(), 2u);
  ASSERT_EQ(plan[0].size(), 1u);
  ASSERT_EQ(plan[1].size(), 1u);
  EXPECT_EQ(plan[0][0].part.streams.size() + plan[1][0].part.streams.size(), 2u);
  EXPECT_NE(plan[0][0].part.streams, plan[1][0].part.streams) << "each stream has one owner";
  for (uint64_t i : {0, 1, 2, 3, 4})
    feed(test::frame(test::kSrcA, i));
  for (uint64_t i : {0, 1, 2})
    feed(test::frame(test::kSrcB, i));
  rec0().ingest->flush_all();
  rec0().progress.done.store(true);  // the pool drains the rings, closes the files and ends
  std::atomic<bool> rotate{false};
  // The manifest (here: a reader of every stream's writer state) runs on thread 0 while the
  // other thread is parked at a pass boundary; at every pass here (interval 0).
  WriterLoopOptions options;
  options.manifest_interval = std::chrono::milliseconds(0);
  int manifests = 0;
  uint64_t seen = 0;
  options.write_manifest = [&] {
    ++manifests;
    for (std::size_t st = 0; st < rec0().streams.size(); ++st)
      seen += rec0().writer->writers(st).raw->stats().frames_written;
  };
  run_writer_pool(*rt_, plan, rotate, options, {}, *spdlog::default_logger());
  EXPECT_GE(manifests, 1);
  auto s = scrape();
  const auto raw = R"({format="raw",interface="rec0"})";
  const auto hdr = R"({format="codifhdr",interface="rec0"})";
  EXPECT_EQ(s[m("rocecap_written_frames_total", raw)], 8);
  EXPECT_EQ(s[m("rocecap_written_frames_total", hdr)], 8);
  EXPECT_EQ(s[m("rocecap_files_opened_total", raw)], 2);
  const double t0 = s[R"(rocecap_writer_thread_slots_total{thread="0"})"];
  const double t1 = s[R"(rocecap_writer_thread_slots_total{thread="1"})"];
  EXPECT_EQ(t0 + t1, 8);
  EXPECT_TRUE((t0 == 5 && t1 == 3) || (t0 == 3 && t1 == 5)) << t0 << " " << t1;
  EXPECT_GE(s[R"(rocecap_writer_thread_passes_total{thread="1"})"], 1);
  EXPECT_EQ(s[m("rocecap_ring_fill_ratio", kA)], 0);  // every slot released
}

TEST(WriterPool, DefaultThreadsFollowStreamsTargetsAndCpus) {
  EXPECT_EQ(default_writer_threads(6, 6, 1, 2), 1u) << "6 streams: one thread";
  EXPECT_EQ(default_writer_threads(32, 32, 1, 16), 4u) << "one per 8 streams";
  EXPECT_EQ(default_writer_threads(12, 12, 4, 16), 4u) << "one per target";
  EXPECT_EQ(default_writer_threads(1, 32, 4, 16), 1u) << "an unsplittable interface: one";
  EXPECT_EQ(default_writer_threads(64, 64, 1, 4), 2u) << "at most half the CPUs";
  EXPECT_EQ(default_writer_threads(64, 64, 1, 1), 1u);
}

TEST_F(Metrics, BuildInfoStartTimeAndRunState) {
  auto s = scrape();
  EXPECT_EQ(
      s[R"(rocecap_build_info{backend="pcap-file",payload_memory="host",payload_memory_reason="the pcap backends copy each frame into host memory",version="9.9.9"})"],
      1);
  EXPECT_DOUBLE_EQ(s["rocecap_process_start_time_seconds"], 1'700'000'000.25);
  EXPECT_EQ(s[R"(rocecap_run_state{state="starting"})"], 1);
  server_->collector().set_state(daemon::RunState::running);
  s = scrape();
  EXPECT_EQ(s[R"(rocecap_run_state{state="starting"})"], 0);
  EXPECT_EQ(s[R"(rocecap_run_state{state="running"})"], 1);
  EXPECT_EQ(s[R"(rocecap_run_state{state="stopped"})"], 0);
  EXPECT_EQ(s[R"(rocecap_capture_running{interface="rec0"})"], 1);
  EXPECT_EQ(s[m("rocecap_stream_last_packet_timestamp_seconds", kA)], 0);  // nothing yet
}

TEST_F(Metrics, RunAttemptSaysWhetherThisProcessContinuesARun) {
  EXPECT_EQ(scrape()["rocecap_run_attempt"], 1);
  server_.reset();
  rt_->attempt = 3;  // the third start of this run directory (run_attempt.hpp)
  EXPECT_EQ(scrape()["rocecap_run_attempt"], 3);
}

TEST_F(Metrics, CountersAdvanceBetweenScrapes) {
  feed(test::frame(test::kSrcA, 0));
  settle();
  EXPECT_EQ(scrape()[m("rocecap_stream_received_packets_total", kA)], 1);
  feed(test::frame(test::kSrcA, 1));
  feed(test::frame(test::kSrcA, 2));
  settle();
  EXPECT_EQ(scrape()[m("rocecap_stream_received_packets_total", kA)], 3);
}

TEST_F(Metrics, StagingCountersAppearWhenTheWriterStagesPayloads) {
  EXPECT_EQ(scrape().count(R"(rocecap_staging_copied_bytes_total{interface="rec0"})"), 0u);
  // The writer of a GPU interface, with the host engine standing in for the GPU.
  writers::CaptureWriterOptions forced;
  forced.force_staging = true;
  writers::RotationOptions rot;
  rot.buffer_bytes = 1 << 16;
  std::vector<writers::StreamWriters> w(2);
  for (std::size_t s = 0; s < w.size(); ++s) {
    w[s].raw.emplace(
        [this, s](uint64_t seq, fs::path& out) {
          out = dir_ / ("staged" + std::to_string(s) + "." + std::to_string(seq));
          return writers::Status{};
        },
        rot);
  }
  rec0().writer.emplace(rec0().ingest->streams(), rec0().ingest->arrivals(), std::move(w),
                        std::nullopt, forced, nullptr);
  daemon::prepare_published(rec0());
  for (uint64_t i = 0; i < 5; ++i)
    feed(test::frame(test::kSrcA, i));
  settle();
  auto s = scrape();
  const double slot_bytes =
      double(test::frame(test::kSrcA, 0).size()) - double(rec0().streams[0]->split());
  const std::string l = R"({interface="rec0"})";
  EXPECT_EQ(s["rocecap_staging_copied_bytes_total" + l], 5 * slot_bytes);
  EXPECT_EQ(s["rocecap_staging_frames_total" + l], 5);
  EXPECT_EQ(s["rocecap_staging_failed_frames_total" + l], 0);
  EXPECT_GT(s["rocecap_staging_lag_seconds_total" + l], 0);
  EXPECT_LE(s["rocecap_staging_lag_max_seconds" + l], s["rocecap_staging_lag_seconds_total" + l]);
  EXPECT_EQ(s[m("rocecap_written_frames_total", R"({format="raw",interface="rec0"})")], 5);
}

// promtool lints the exposition (names, units, _total, help); skipped where it is absent.
TEST_F(Metrics, PromtoolFindsNoLintProblems) {
  feed(test::frame(test::kSrcA, 0));
  settle();
  scrape();
  ASSERT_FALSE(last_text_.empty());
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) GTEST_SKIP() << "no promtool";
  const fs::path file = dir_ / "exposition.txt";
  std::ofstream(file) << last_text_;
  const std::string cmd = "promtool check metrics < " + file.string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p))
    out += buf;
  EXPECT_EQ(pclose(p), 0) << out;
  EXPECT_EQ(out, "");
}

TEST(MetricsServer, BusyPortIsReportedWithTheAddress) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const uint16_t port = ntohs(a.sin_port);
  daemon::Runtime rt;
  try {
    daemon::MetricsServer s(
        0x7F000001, port,
        std::make_shared<daemon::MetricsCollector>(rt, daemon::MetricsBuildInfo{}, 0));
    ADD_FAILURE() << "listened on a busy port";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
  close(fd);
}

// VDIF over VTP (doc/vdif.md): the VTP counters are per UDP flow (one series for a flow's two
// threads, labelled without `thread`), and only VTP runs export them.
class MetricsVtp : public Metrics {
  std::string streams_section() override {
    return "  format: vdif\n"
           "  frames_per_second: 100\n"
           "  vtp: true\n"
           "  threads: [0, 3]\n"
           "  antennas:\n"
           "    - {name: ak11, source: 192.0.2.11}\n";
  }
  std::string formats() override { return "raw"; }
};

TEST_F(MetricsVtp, SkippedAndOutOfOrderSequenceNumbersPerFlow) {
  const test::VdifDatagram d;  // 239.17.0.1:36001 from 192.0.2.11, 100 frames/s
  uint64_t psn = 0;
  for (uint64_t i = 500; i < 503; ++i) {
    feed(test::vdif_datagram(d, psn++, 0, i));
    feed(test::vdif_datagram(d, psn++, 3, i));
  }
  psn += 2;                                       // two packets lost on the network
  feed(test::vdif_datagram(d, psn, 0, 504));      // psn 8
  feed(test::vdif_datagram(d, psn - 1, 3, 504));  // psn 7: taken back, and out of order
  feed(test::vdif_datagram(d, psn + 1, 3, 505));
  settle();
  auto s = scrape();
  const char* flow = R"({antenna="ak11",group="239.17.0.1:36001",interface="rec0"})";
  EXPECT_EQ(s[m("rocecap_vtp_skipped_total", flow)], 1) << last_text_;  // 6: never seen
  EXPECT_EQ(s[m("rocecap_vtp_out_of_order_total", flow)], 1);
  EXPECT_EQ(
      s[R"(rocecap_stream_received_packets_total{antenna="ak11",group="239.17.0.1:36001",interface="rec0",thread="3"})"],
      5);
}

TEST_F(Metrics, CodifRunsExportNoVtpSeries) {
  feed(test::frame(test::kSrcA, 0));
  settle();
  const auto s = scrape();
  for (const auto& [series, value] : s)
    EXPECT_EQ(series.rfind("rocecap_vtp_", 0), std::string::npos) << series;
}

}  // namespace
}  // namespace rocecap::daemon
