// Loading whole run files: values, defaults, several problems at once, YAML-level errors,
// host checks and the shipped examples.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/loader.hpp"
#include "config/name_template.hpp"
#include "config/summary.hpp"
#include "config_test_support.hpp"

namespace rocecap::config {
namespace {

using testing::fixed_host;
using testing::kBaseConfig;
using testing::patched;

std::string all_problems(const LoadResult& r) {
  std::string out;
  for (const Problem& p : r.problems)
    out += format_problem(p) + "\n";
  return out;
}

TEST(ConfigLoader, ReadsEveryValueOfTheBaseConfig) {
  const LoadResult r = load_string(kBaseConfig, "run.yaml", fixed_host());
  ASSERT_TRUE(r.ok()) << all_problems(r);
  const RunConfig& c = *r.config;
  EXPECT_EQ(c.source_path, "run.yaml");
  EXPECT_EQ(c.source_text, kBaseConfig);
  EXPECT_EQ(c.run.name, "test-run");
  EXPECT_EQ(c.run.duration, std::chrono::seconds(10));
  EXPECT_FALSE(c.run.packets.has_value());
  EXPECT_EQ(c.capture.backend, Backend::verbs);
  EXPECT_EQ(c.capture.ring_depth, 1024u);
  EXPECT_EQ(c.capture.header_split, 128u);
  ASSERT_EQ(c.capture.interfaces.size(), 1u);
  const InterfaceConfig& itf = c.capture.interfaces[0];
  EXPECT_EQ(itf.name, "eth0");
  EXPECT_EQ(itf.device, "mlx5_0");
  EXPECT_EQ(itf.capture_cpu, 1u);
  ASSERT_EQ(itf.groups.size(), 2u);
  EXPECT_EQ(itf.groups[0].address, 0xEF010001u);
  EXPECT_EQ(itf.groups[0].port, 36001);
  EXPECT_EQ(itf.groups[1].address, 0xEF010002u);
  EXPECT_EQ(itf.groups[1].port, 36002);
  // Two groups x two antennas x 1024 slots share the device's CQ.
  EXPECT_EQ(c.capture.cq_size, 4096u);
  EXPECT_EQ(c.streams.format, StreamFormat::codif);
  ASSERT_EQ(c.streams.antennas.size(), 2u);
  EXPECT_EQ(c.streams.antennas[1].name, "a2");
  EXPECT_EQ(c.streams.antennas[1].source, 0xC0000202u);
  ASSERT_EQ(c.streams.sync.size(), 2u);  // defaults
  EXPECT_EQ(c.streams.sync[0].word, 0xFEEDCAFEu);
  EXPECT_EQ(c.streams.sync[0].layout, CodifLayout::v3);
  EXPECT_EQ(c.streams.sync[1].word, 0xABADDEEDu);
  EXPECT_EQ(c.streams.sync[1].layout, CodifLayout::v1);
  EXPECT_EQ(c.output.directory, "/tmp/rocecap-test");
  EXPECT_EQ(c.output.formats, (std::vector{OutputFormat::raw, OutputFormat::codifhdr}));
  EXPECT_EQ(c.output.rotate_bytes, uint64_t{1} << 30);
  EXPECT_EQ(c.output.reorder_window, 8u);
  EXPECT_EQ(c.output.writer_cpu, 2u);
  EXPECT_EQ(c.metrics.address, 0x7F000001u);
  EXPECT_EQ(c.metrics.port, 9464);
  EXPECT_EQ(c.logging.level, LogLevel::info);
  EXPECT_EQ(enumerate_streams(c).size(), 4u);
}

TEST(ConfigLoader, MinimalFileGetsDocumentedDefaults) {
  const char* text =
      "run: {name: r}\n"
      "capture:\n"
      "  backend: pcap\n"
      "  interfaces: [{name: lo, groups: [239.2.0.1:5000]}]\n"
      "streams: {antennas: [{name: x, source: 192.0.2.1}]}\n"
      "output: {directory: /tmp/x}\n";
  const LoadResult r = load_string(text, "min.yaml", fixed_host());
  ASSERT_TRUE(r.ok()) << all_problems(r);
  const RunConfig& c = *r.config;
  EXPECT_FALSE(c.run.duration.has_value());
  EXPECT_FALSE(c.run.packets.has_value());
  EXPECT_EQ(c.capture.ring_depth, 4096u);
  EXPECT_EQ(c.capture.header_split, 128u);
  EXPECT_EQ(c.capture.max_frame, 9216u);
  EXPECT_EQ(c.capture.payload_memory, PayloadMemory::automatic);
  EXPECT_EQ(c.capture.poll_mode, PollMode::busy_poll);
  EXPECT_EQ(c.capture.cq_size, 0u);  // not verbs
  // The live pcap reader since issue 17's ladder (BENCHMARKS.md, "Kernel path").
  EXPECT_EQ(c.capture.pcap_reader, PcapReader::packet_ring);
  EXPECT_TRUE(c.capture.zero_copy);
  EXPECT_FALSE(c.capture.interfaces[0].capture_cpu.has_value());
  EXPECT_EQ(c.streams.format, StreamFormat::codif);
  EXPECT_EQ(c.output.formats, std::vector{OutputFormat::raw});
  EXPECT_EQ(c.output.rotate_bytes, uint64_t{4} << 30);
  EXPECT_TRUE(c.output.fill_gaps);
  EXPECT_FALSE(c.output.strip_headers);
  EXPECT_FALSE(c.output.direct_io);
  EXPECT_EQ(c.output.reorder_window, 8u);
  EXPECT_TRUE(c.metrics.enabled);
  EXPECT_EQ(c.metrics.address, 0x7F000001u);
  EXPECT_EQ(c.metrics.port, 9464);
  EXPECT_EQ(c.logging.level, LogLevel::info);
  EXPECT_EQ(stream_file_name(c, StreamRef{0, 0, 0}, OutputFormat::raw, 3),
            "r/239.2.0.1_5000_x.0003.codif");
}

// capture.gpu: a CUDA index or a PCI bus id, kept as written; anything else is refused with its
// position (whether the GPU exists is decided at start-up).
TEST(ConfigLoader, CaptureGpuIsAnIndexOrAPciBusId) {
  for (const char* good : {"1", "0000:3b:00.0", "00000000:3B:00.0", "3b:00.0"}) {
    const LoadResult r =
        load_string(patched("  header_split: 128\n",
                            std::string("  header_split: 128\n  gpu: \"") + good + "\"\n"),
                    "run.yaml", fixed_host());
    ASSERT_TRUE(r.ok()) << good << ": " << all_problems(r);
    EXPECT_EQ(r.config->capture.gpu, good);
  }
  const LoadResult r =
      load_string(patched("  header_split: 128\n", "  header_split: 128\n  gpu: gpu1\n"),
                  "run.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(format_problem(r.problems[0]),
            "run.yaml:8:8: capture.gpu: 'gpu1' is neither a CUDA device index (0, 1, ...) nor a "
            "PCI bus id (0000:3b:00.0)");
  const LoadResult d = load_string(kBaseConfig, "run.yaml", fixed_host());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.config->capture.gpu, "");  // nearest the NICs
}

// output.directories: several targets, the first also output.directory (run directory, lock,
// manifest); output.directory alone is the one-target list; both at once is refused with the
// file, line and column of output.directories.
TEST(ConfigLoader, OutputDirectoriesListTheTargets) {
  const LoadResult r = load_string(
      patched("directory: /tmp/rocecap-test", "directories: [/tmp/rocecap-a, /tmp/rocecap-b]"),
      "run.yaml", fixed_host());
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_EQ(r.config->output.directory, "/tmp/rocecap-a");
  EXPECT_EQ(r.config->output.directories,
            (std::vector<std::string>{"/tmp/rocecap-a", "/tmp/rocecap-b"}));
  const LoadResult one = load_string(kBaseConfig, "run.yaml", fixed_host());
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one.config->output.directories, std::vector<std::string>{"/tmp/rocecap-test"});
  const LoadResult both = load_string(
      patched("  reorder_window: 8\n", "  reorder_window: 8\n  directories: [/tmp/a, /tmp/b]\n"),
      "run.yaml", fixed_host());
  ASSERT_EQ(both.problems.size(), 1u) << all_problems(both);
  EXPECT_EQ(format_problem(both.problems[0]),
            "run.yaml:29:16: output.directories: give output.directory (one target) or "
            "output.directories (several), not both");
}

TEST(ConfigLoader, ReportsAllProblemsInFileOrder) {
  std::string text = patched("rotate: 1GiB", "rotate: 4GB");
  text = text.substr(0, text.find("  duration: 10s")) + "  duration: ten\n" +
         text.substr(text.find("capture:"));
  const std::size_t port = text.find("port: 36002");
  text.replace(port, 11, "port: 99999");
  text.replace(text.find("level: info"), 11, "level: loud");
  const LoadResult r = load_string(text, "run.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 4u) << all_problems(r);
  EXPECT_EQ(format_problem(r.problems[0]),
            "run.yaml:3:13: run.duration: 'ten' is not a duration; use e.g. 30s, 5m or 1h30m");
  EXPECT_EQ(r.problems[1].key_path, "capture.interfaces[0].groups[1].port");
  EXPECT_EQ(r.problems[1].line, 16);
  EXPECT_EQ(format_problem(r.problems[2]),
            "run.yaml:27:11: output.rotate: '4GB' is not a size; use e.g. 4GiB");
  EXPECT_EQ(r.problems[3].key_path, "logging.level");
  EXPECT_EQ(r.problems[3].line, 33);
  EXPECT_FALSE(r.config.has_value());
}

TEST(ConfigLoader, DuplicateTopLevelSectionIsAnError) {
  const std::string text = std::string(kBaseConfig) + "logging:\n  level: debug\n";
  const LoadResult r = load_string(text, "run.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(format_problem(r.problems[0]),
            "run.yaml:34:1: logging: duplicate key 'logging' (first at line 32)");
}

TEST(ConfigLoader, UnknownKeyWithoutCloseMatchListsTheKnownKeys) {
  const LoadResult r = load_string(patched("level: info", "colour: red"), "r.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].message, "unknown key 'colour' (known here: level)");
}

TEST(ConfigLoader, MissingSectionsPointAtTheDocument) {
  const LoadResult r = load_string("run: {name: a}\n", "r.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 3u) << all_problems(r);
  EXPECT_EQ(format_problem(r.problems[0]), "r.yaml:1:1: capture: missing (required)");
  EXPECT_EQ(r.problems[1].key_path, "streams");
  EXPECT_EQ(r.problems[2].key_path, "output");
}

TEST(ConfigLoader, YamlSyntaxErrorIsOneProblemWithAPosition) {
  const LoadResult r = load_string("run:\n  name: [a, b\ncapture: x\n", "r.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_GE(r.problems[0].line, 2);
  EXPECT_NE(r.problems[0].message.find("not valid YAML"), std::string::npos);
}

TEST(ConfigLoader, EmptyFileAndSecondDocumentAreRefused) {
  LoadResult r = load_string("", "e.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].message.find("the file is empty"), std::string::npos);
  r = load_string(std::string(kBaseConfig) + "---\nrun: {name: b}\n", "two.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].line, 35);
  EXPECT_NE(r.problems[0].message.find("more than one YAML document"), std::string::npos);
}

TEST(ConfigLoader, TopLevelNotAMap) {
  const LoadResult r = load_string("- a\n- b\n", "l.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(format_problem(r.problems[0]), "l.yaml:1:1: expected a map of keys, found a list");
}

TEST(ConfigLoader, UnreadableFileIsOneProblemWithoutPosition) {
  const LoadResult r = load_file("/nonexistent/rocecap/run.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(format_problem(r.problems[0]),
            "/nonexistent/rocecap/run.yaml: cannot read: No such file or directory");
}

// /dev/zero was read until std::bad_alloc (abort, rc 134), a FIFO blocked with no writer:
// only a regular file of at most 16 MiB is read. Each refusal is one problem naming the kind.
class RunFileKinds : public ::testing::Test {
 public:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "rocecap-kind-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  static std::string only_problem(const std::string& path) {
    const LoadResult r = load_file(path, fixed_host());
    EXPECT_EQ(r.problems.size(), 1u) << all_problems(r);
    return r.problems.empty() ? "" : format_problem(r.problems[0]);
  }
  std::filesystem::path dir_;
};

TEST_F(RunFileKinds, DeviceIsRefusedNotReadForever) {
  EXPECT_EQ(only_problem("/dev/zero"),
            "/dev/zero: is a character device, not a run file; give a regular YAML file");
}

TEST_F(RunFileKinds, FifoIsRefusedWithoutBlocking) {
  const std::string fifo = (dir_ / "run.yaml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer ever opens it: a blocking open would hang here (and ctest would time out).
  EXPECT_EQ(only_problem(fifo), fifo + ": is a FIFO, not a run file; give a regular YAML file");
}

TEST_F(RunFileKinds, DirectoryIsRefused) {
  EXPECT_EQ(only_problem(dir_.string()),
            dir_.string() + ": is a directory, not a run file; give a regular YAML file");
}

TEST_F(RunFileKinds, FileOverTheBoundIsRefusedAtOrBelowItIsRead) {
  const std::string big = (dir_ / "big.yaml").string();
  std::ofstream(big).close();
  std::filesystem::resize_file(big, kMaxRunFileBytes + 1);
  EXPECT_EQ(only_problem(big), big +
                                   ": is 16777217 bytes; a run file may have at most 16777216 "
                                   "bytes (16 MiB)");
  // At the bound: read and parsed (a comment padded to exactly 16 MiB after a valid file).
  const std::string fits = (dir_ / "fits.yaml").string();
  std::string text = std::string(kBaseConfig) + "#";
  text.resize(kMaxRunFileBytes, 'x');
  std::ofstream(fits) << text;
  const LoadResult r = load_file(fits, fixed_host());
  EXPECT_TRUE(r.ok()) << all_problems(r);
}

// 3000 nested lists were "not valid YAML: bad file" (yaml-cpp's depth guard): say what.
TEST(ConfigLoader, DeepNestingIsNamedWithItsPosition) {
  const std::string text = "run: " + std::string(3000, '[') + std::string(3000, ']') + "\n";
  const LoadResult r = load_string(text, "deep.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].line, 1);
  EXPECT_GT(r.problems[0].column, 1000);
  EXPECT_NE(r.problems[0].message.find("nested too deep here"), std::string::npos)
      << r.problems[0].message;
}

// A NUL byte in the file gave "unknown escape character: " and the raw byte.
TEST(ConfigLoader, NulAndControlBytesAreNamedByLineAndColumn) {
  std::string text = kBaseConfig;
  text.insert(text.find("test-run") + 4, 1, '\0');  // line 2, column 13
  LoadResult r = load_string(text, "nul.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(format_problem(r.problems[0]),
            "nul.yaml:2:13: NUL byte at line 2, column 13; a run file is text");
  text = std::string(kBaseConfig) + "\x01";
  r = load_string(text, "ctl.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(format_problem(r.problems[0]),
            "ctl.yaml:34:1: control character 0x01 at line 34, column 1; a run file is text");
}

// Validation was quadratic in the antennas (pairwise duplicate search, and a scan of every
// problem per lookup): 200k antennas took minutes. Now linear: this test would not finish in
// ctest's time otherwise. The duplicates among them are still found, each pointing at the
// first antenna that had the name or source.
TEST(ConfigLoader, TwoHundredThousandAntennasWithDuplicatesAreChecked) {
  constexpr std::size_t kAntennas = 200'000;
  std::string text =  // antenna i on line 11 + i
      "run: {name: many}\n"
      "capture:\n"
      "  backend: pcap\n"
      "  interfaces:\n"
      "    - name: eth0\n"
      "      groups: [239.1.0.1:36001]\n"
      "output: {directory: /tmp/rocecap-test}\n"
      "streams:\n"
      "  format: codif\n"
      "  antennas:\n";
  for (std::size_t i = 0; i < kAntennas; ++i) {
    const std::size_t name = i == 150'000 ? 7 : i;     // antenna 150000 repeats a name
    const std::size_t source = i == 180'000 ? 12 : i;  // antenna 180000 repeats a source
    text += fmt::format("    - {{name: a{}, source: 10.{}.{}.{}}}\n", name, 1 + source / 65536,
                        source / 256 % 256, source % 256);
  }
  const LoadResult r = load_string(text, "many.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 2u) << all_problems(r).substr(0, 2000);
  EXPECT_EQ(format_problem(r.problems[0]),
            "many.yaml:150011:14: streams.antennas[150000].name: duplicate antenna 'a7' (first "
            "at line 18)");
  EXPECT_EQ(r.problems[1].key_path, "streams.antennas[180000].source");
  EXPECT_EQ(r.problems[1].line, 180011);
  EXPECT_NE(r.problems[1].message.find("10.1.0.12 is already the source of antenna 'a12' (line "
                                       "23)"),
            std::string::npos)
      << r.problems[1].message;
}

TEST(ConfigLoader, SyncWordsLayoutAndUdpFormat) {
  LoadResult r = load_string(
      patched("  format: codif\n",
              "  format: codif\n  sync: [0xabaddeed, {word: 0xADEADBEE, layout: v1}]\n"),
      "s.yaml", fixed_host());
  ASSERT_TRUE(r.ok()) << all_problems(r);
  ASSERT_EQ(r.config->streams.sync.size(), 2u);
  EXPECT_EQ(r.config->streams.sync[0].word, 0xABADDEEDu);
  EXPECT_EQ(r.config->streams.sync[0].layout, CodifLayout::v1);
  EXPECT_EQ(r.config->streams.sync[1].word, 0xADEADBEEu);

  r = load_string(patched("  format: codif\n", "  format: udp\n  sync: [0xFEEDCAFE]\n"), "u.yaml",
                  fixed_host());
  ASSERT_EQ(r.problems.size(), 2u) << all_problems(r);  // sync, and codifhdr in formats
  EXPECT_EQ(r.problems[0].key_path, "streams.sync");
  EXPECT_EQ(r.problems[0].message, "only used with format codif");
}

TEST(ConfigLoader, ProblemsBelowAFailedValueAreNotPiledOn) {
  // A bad backend must not also produce "device only with verbs" and the like.
  const LoadResult r =
      load_string(patched("backend: verbs", "backend: [verbs]"), "r.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].message, "expected a single value, found a list");
}

// Two interfaces after the base config's eth0 (device mlx5_0, CPU 1).
std::string with_second_interface(const std::string& device, int cpu) {
  return patched("          port: 36002\n",
                 "          port: 36002\n    - name: eth1\n      device: " + device +
                     "\n      capture_cpu: " + std::to_string(cpu) +
                     "\n      groups: [239.1.0.9:36009]\n");
}

TEST(ConfigLoader, CpuPlanAndCqSizeFollowTheDevices) {
  // Same device: one capture thread and one CQ for both interfaces (3 groups x 2 x 1024).
  LoadResult r = load_string(with_second_interface("mlx5_0", 1), "r.yaml", fixed_host());
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_EQ(r.config->capture.cq_size, 6144u);

  r = load_string(with_second_interface("mlx5_0", 3), "r.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(format_problem(r.problems[0]),
            "r.yaml:19:20: capture.interfaces[1].capture_cpu: interfaces on device mlx5_0 share "
            "one capture thread; give them the same capture_cpu (line 11 says 1)");

  // Different devices: two busy-polling threads may not share CPU 1; the busiest CQ sets size.
  r = load_string(with_second_interface("mlx5_1", 1), "r.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].line, 19);
  EXPECT_NE(
      r.problems[0].message.find("CPU 1 already runs the busy-polling capture thread of eth0"),
      std::string::npos);
  r = load_string(with_second_interface("mlx5_1", 3), "r.yaml", fixed_host());
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_EQ(r.config->capture.cq_size, 4096u);

  // Threads that sleep between packets may share a CPU.
  std::string text = with_second_interface("mlx5_1", 1);
  text.replace(text.find("  ring_depth: 1024\n"), 18, "  ring_depth: 1024\n  poll_mode: event\n");
  r = load_string(text, "r.yaml", fixed_host());
  EXPECT_TRUE(r.ok()) << all_problems(r);
}

TEST(ConfigLoader, WriterPoolAndWritePathKeys) {
  std::string text = kBaseConfig;
  text.replace(text.find("writer_cpu: 2"), 13,
               "writer_threads: 3\n  writer_cpus: [2, 3]\n  io_uring: false\n  preallocate: false\n"
               "  fsync_rotated: true");
  const LoadResult r = load_string(text, "run.yaml", fixed_host());
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_EQ(r.config->output.writer_threads, 3u);
  EXPECT_EQ(r.config->output.writer_cpus, (std::vector<unsigned>{2, 3}));
  EXPECT_FALSE(r.config->output.io_uring);
  EXPECT_FALSE(r.config->output.preallocate);
  EXPECT_TRUE(r.config->output.fsync_rotated);
  const LoadResult d = load_string(kBaseConfig, "run.yaml", fixed_host());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d.config->output.writer_threads, 0u) << "0: chosen at start";
  EXPECT_TRUE(d.config->output.io_uring);
  EXPECT_TRUE(d.config->output.preallocate);
  EXPECT_FALSE(d.config->output.fsync_rotated) << "one syncfs at the end, not a flush per file";
}

TEST(ConfigLoader, FileNameClashesAreFoundBesideUnrelatedProblems) {
  std::string text = with_second_interface("mlx5_1", 3);
  text.replace(text.find("formats: [raw, codifhdr]"), 24, "formats: [raw, pcap]");
  text.replace(text.find("  reorder_window: 8\n"), 20,
               "  reorder_window: 8\n  pcap_name_template: \"{run}.{seq}.pcap\"\n");
  text.replace(text.find("writer_cpu: 2"), 13, "writer_cpu: 64");
  const LoadResult r = load_string(text, "r.yaml", fixed_host());
  ASSERT_EQ(r.problems.size(), 2u) << all_problems(r);
  EXPECT_EQ(format_problem(r.problems[0]),
            "r.yaml:33:23: output.pcap_name_template: eth0 (pcap) and eth1 (pcap) would both "
            "write 'test-run.0.pcap'; add a placeholder that tells them apart ({interface})");
  EXPECT_EQ(r.problems[1].key_path, "output.writer_cpu");
}

// --- host checks -------------------------------------------------------------------------

class ConfigHostChecks : public ::testing::Test {
 public:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "rocecap-cfg-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all);
    std::filesystem::remove_all(dir_);
  }
  LoadResult load_with_directory(const std::string& directory) {
    HostChecks host = fixed_host();
    host.check_filesystem = true;
    return load_string(patched("directory: /tmp/rocecap-test", "directory: " + directory),
                       "run.yaml", host);
  }
  std::filesystem::path dir_;
};

TEST_F(ConfigHostChecks, ExistingWritableDirectoryAndCreatableOneAreAccepted) {
  EXPECT_TRUE(load_with_directory(dir_.string()).ok());
  EXPECT_TRUE(load_with_directory((dir_ / "new" / "deeper").string()).ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ / "new")) << "checking must not create it";
  EXPECT_TRUE(std::filesystem::is_empty(dir_)) << "the probe must leave nothing behind";
}

TEST_F(ConfigHostChecks, FileInsteadOfDirectoryIsRefused) {
  std::ofstream(dir_ / "file") << "x";
  LoadResult r = load_with_directory((dir_ / "file").string());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].line, 25);
  EXPECT_EQ(r.problems[0].key_path, "output.directory");
  EXPECT_NE(r.problems[0].message.find("exists and is not a directory"), std::string::npos);
  r = load_with_directory((dir_ / "file" / "sub").string());
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_NE(r.problems[0].message.find("is not a directory"), std::string::npos);
}

// The problems of loading with output.directory = directory, as text, checked by an
// unprivileged user: root passes every permission check, so as root a child process drops to
// nobody (65534) first.
std::string problems_as_unprivileged(ConfigHostChecks& self, const std::string& directory) {
  if (::geteuid() != 0) return all_problems(self.load_with_directory(directory));
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const std::string text = all_problems(self.load_with_directory(directory));
    const bool written = ::write(fds[1], text.data(), text.size()) == ssize_t(text.size());
    ::_exit(written ? 0 : 4);
  }
  ::close(fds[1]);
  std::string text;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fds[0], buffer, sizeof buffer)) > 0)
    text.append(buffer, size_t(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "child failed";
  return text;
}

TEST_F(ConfigHostChecks, ReadOnlyDirectoryIsRefused) {
  using std::filesystem::perms;
  // r-x for everyone: the unprivileged checker can look inside but not create anything.
  std::filesystem::permissions(dir_, perms::owner_read | perms::owner_exec | perms::group_read |
                                         perms::group_exec | perms::others_read |
                                         perms::others_exec);
  std::string problems = problems_as_unprivileged(*this, dir_.string());
  EXPECT_EQ(std::count(problems.begin(), problems.end(), '\n'), 1) << problems;
  EXPECT_NE(problems.find("run.yaml:25:14: output.directory: '" + dir_.string() +
                          "' is not writable: Permission denied"),
            std::string::npos)
      << problems;
  problems = problems_as_unprivileged(*this, (dir_ / "sub").string());
  EXPECT_EQ(std::count(problems.begin(), problems.end(), '\n'), 1) << problems;
  EXPECT_NE(problems.find("cannot be created: '" + dir_.string() + "' is not writable"),
            std::string::npos)
      << problems;
}

TEST_F(ConfigHostChecks, ReplayFileMustBeReadable) {
  HostChecks host = fixed_host();
  host.check_filesystem = true;
  const std::string base = patched("directory: /tmp/rocecap-test", "directory: " + dir_.string());
  std::string text = base;
  text.replace(text.find("backend: verbs"), 14,
               "backend: pcap-file\n  pcap_file: " + (dir_ / "in.pcap").string());
  text.replace(text.find("      device: mlx5_0\n"), 21, "");
  LoadResult r = load_string(text, "run.yaml", host);
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "capture.pcap_file");
  EXPECT_EQ(r.problems[0].line, 6);
  EXPECT_NE(r.problems[0].message.find("No such file or directory"), std::string::npos);
  std::ofstream(dir_ / "in.pcap") << "pcap";
  r = load_string(text, "run.yaml", host);
  EXPECT_TRUE(r.ok()) << all_problems(r);
}

// 31.9 GiB of rings on a 23.5 GiB host passed check-config and died by OOM. The facts come
// from a proc root given to the loader: here a fake one with the numbers under test.
class RingMemory : public ConfigHostChecks {
 public:
  void fake_proc(const std::string& available_kb, const std::string& memlock,
                 const std::string& cap_eff) {
    std::filesystem::create_directories(dir_ / "self");
    std::ofstream(dir_ / "meminfo") << "MemTotal:       24641536 kB\n"
                                    << "MemAvailable:   " << available_kb << " kB\n";
    std::ofstream(dir_ / "self" / "limits")
        << "Limit                     Soft Limit           Hard Limit           Units\n"
        << "Max locked memory         " << memlock << "              " << memlock
        << "              bytes\n";
    std::ofstream(dir_ / "self" / "status") << "Name:\trocecapd\nCapEff:\t" << cap_eff << "\n";
  }
  LoadResult load(const std::string& from, const std::string& to) {
    return load_text(patched(from, to));
  }
  LoadResult load_text(const std::string& text) {
    HostChecks host = fixed_host();
    host.check_memory = true;
    host.proc_root = dir_.string();
    return load_string(text, "run.yaml", host);
  }
};

TEST_F(RingMemory, RingsBeyondMemAvailableAreRefusedWithTheNumbers) {
  fake_proc("1048576", "unlimited", "0000000000000000");  // 1 GiB available
  // 2 groups x 2 antennas x 32768 slots x (9216 + 128) B of host memory = 1.14 GiB.
  LoadResult r = load("  ring_depth: 1024\n", "  ring_depth: 32768\n  payload_memory: host\n");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "capture.ring_depth");
  EXPECT_EQ(r.problems[0].line, 6);
  EXPECT_NE(
      r.problems[0].message.find("the rings need 1.1 GiB of host memory (4 streams x 32768 slots, "
                                 "header and payload) but this host has 1 GiB available "
                                 "(MemAvailable, " +
                                 dir_.string() + "/meminfo)"),
      std::string::npos)
      << r.problems[0].message;
  // The same rings fit in 2 GiB; with verbs and payload auto only the header slots count.
  fake_proc("2097152", "unlimited", "0000000000000000");
  EXPECT_TRUE(load("  ring_depth: 1024\n", "  ring_depth: 32768\n  payload_memory: host\n").ok());
  fake_proc("1048576", "unlimited", "0000000000000000");
  EXPECT_TRUE(load("  ring_depth: 1024\n", "  ring_depth: 32768\n").ok());
}

// The packet ring reader lends payloads out of the kernel's receive ring, which is sized to
// hold as many frames as the rings (config/packet_ring_geometry.hpp): kernel memory the check
// counts too.
TEST_F(RingMemory, ThePacketRingReadersKernelRingCountsAndGrowsWithTheRings) {
  fake_proc("2097152", "unlimited", "0000000000000000");  // 2 GiB available
  // The base run on the pcap backend (no RDMA device), 4 streams x 32768 slots.
  const auto pcap = [](const std::string& extra) {
    std::string text = patched("  backend: verbs\n  ring_depth: 1024\n",
                               "  backend: pcap\n  ring_depth: 32768\n" + extra);
    text.erase(text.find("      device: mlx5_0\n"), std::strlen("      device: mlx5_0\n"));
    return text;
  };
  // 1.1 GiB of rings, plus 1171 + 2 blocks of 1 MiB (112 frames of up to 9216 B each).
  LoadResult r = load_text(pcap(""));
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "capture.ring_depth");
  EXPECT_NE(r.problems[0].message.find(
                "the rings need 1.1 GiB of host memory (4 streams x 32768 slots, header and "
                "payload), plus 1.1 GiB of kernel receive ring (capture.pcap_reader "
                "packet_ring, 1 interface(s)): 2.3 GiB but this host has 2 GiB available"),
            std::string::npos)
      << r.problems[0].message;
  const LoadResult unchecked = load_string(pcap(""), "run.yaml", fixed_host());
  ASSERT_TRUE(unchecked.ok()) << all_problems(unchecked);
  EXPECT_EQ(kernel_ring_bytes(*unchecked.config), uint64_t{1173} << 20);
  EXPECT_NE(render_summary(*unchecked.config).find("kernel receive rings 1.1 GiB"),
            std::string::npos);
  // Without zero copy the kernel ring keeps its 256 MiB; libpcap's ring is not rocecapd's.
  EXPECT_TRUE(load_text(pcap("  zero_copy: false\n")).ok());
  EXPECT_TRUE(load_text(pcap("  pcap_reader: libpcap\n")).ok());
}

TEST_F(RingMemory, VerbsRingsBeyondTheMemlockLimitNeedCapIpcLock) {
  // 4 streams x 1024 slots x (128 + 64) B = 768 KiB locked, plus what libmlx5 pins: the limit
  // is 64 KiB.
  fake_proc("16777216", "65536", "0000000000000000");
  LoadResult r = load("ring_depth: 1024", "ring_depth: 1024");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_NE(r.problems[0].message.find(
                "the rings need 768 KiB of host memory (4 streams x 1024 slots, header "
                "slots only) locked, plus 644 KiB"),
            std::string::npos)
      << r.problems[0].message;
  EXPECT_NE(r.problems[0].message.find("but this process may lock 64 KiB (RLIMIT_MEMLOCK"),
            std::string::npos)
      << r.problems[0].message;
  fake_proc("16777216", "65536", "0000000000004000");  // CAP_IPC_LOCK (bit 14)
  EXPECT_TRUE(load("ring_depth: 1024", "ring_depth: 1024").ok());
  fake_proc("16777216", "unlimited", "0000000000000000");
  EXPECT_TRUE(load("ring_depth: 1024", "ring_depth: 1024").ok());
}

// The kernel pins libmlx5's queue buffers against RLIMIT_MEMLOCK too (ib_umem_get): the CQ of
// 4096 entries becomes 8192 x 64 B = 512 KiB, each stream's receive queue 1024 x 32 B = 32 KiB,
// and the doorbell records a page. With a 1 MiB limit the rings alone (768 KiB) fit, the run
// would not: ibv_create_cq_ex / ibv_create_qp would fail with ENOMEM at start-up.
TEST_F(RingMemory, VerbsQueueBuffersCountAgainstTheMemlockLimit) {
  fake_proc("16777216", "1048576", "0000000000000000");
  LoadResult r = load("ring_depth: 1024", "ring_depth: 1024");
  ASSERT_EQ(r.problems.size(), 1u) << all_problems(r);
  EXPECT_EQ(r.problems[0].key_path, "capture.ring_depth");
  EXPECT_NE(r.problems[0].message.find(
                "the rings need 768 KiB of host memory (4 streams x 1024 slots, header slots only) "
                "locked, "
                "plus 644 KiB that libmlx5 pins for the completion and receive queues (a "
                "completion queue of 8191 entries per interface, 32 KiB of receive queue per "
                "stream, doorbell records): 1.4 MiB, but this process may lock 1 MiB"),
            std::string::npos)
      << r.problems[0].message;
  // 1.5 MiB holds both.
  fake_proc("16777216", "1572864", "0000000000000000");
  EXPECT_TRUE(load("ring_depth: 1024", "ring_depth: 1024").ok());
}

// recover, verify and inspect read the run file back from the manifest, maybe as an ordinary
// user or on a smaller host: the capture host's memory and memlock limit are not checked here.
TEST_F(RingMemory, ASnapshotLoadsWhereItsRingsWouldNotFit) {
  fake_proc("1048576", "65536", "0000000000000000");  // 1 GiB available, 64 KiB memlock
  const std::string big =
      patched("  ring_depth: 1024\n", "  ring_depth: 32768\n  payload_memory: host\n");
  EXPECT_FALSE(load("  ring_depth: 1024\n", "  ring_depth: 32768\n  payload_memory: host\n").ok());
  HostChecks snapshot = snapshot_host();
  snapshot.proc_root = dir_.string();
  const LoadResult r = load_string(big, "manifest config", snapshot);
  EXPECT_TRUE(r.ok()) << all_problems(r);
}

TEST_F(RingMemory, UnreadableFactsAreNotChecked) {
  HostChecks host = fixed_host();
  host.check_memory = true;
  host.proc_root = (dir_ / "absent").string();
  EXPECT_TRUE(load_string(kBaseConfig, "run.yaml", host).ok());
}

TEST_F(ConfigHostChecks, CpuIdsAreCheckedAgainstThisProcessByDefault) {
  HostChecks host;
  host.check_filesystem = false;
  const LoadResult r =
      load_string(patched("capture_cpu: 1", "capture_cpu: 4095"), "run.yaml", host);
  const Problem* cpu = nullptr;
  for (const Problem& p : r.problems) {
    if (p.key_path == "capture.interfaces[0].capture_cpu") cpu = &p;
  }
  ASSERT_NE(cpu, nullptr) << all_problems(r);
  EXPECT_NE(cpu->message.find("CPU 4095 is not usable on this host"), std::string::npos);
}

// --- the shipped examples ------------------------------------------------------------------

LoadResult load_example(const std::string& name) {
  HostChecks host;
  host.check_filesystem = false;  // they name production paths
  host.usable_cpus = std::vector<unsigned>();
  for (unsigned cpu = 0; cpu < 64; ++cpu)
    host.usable_cpus->push_back(cpu);
  return load_file(std::string(ROCECAP_SOURCE_DIR) + "/config/examples/" + name, host);
}

TEST(ConfigExamples, EveryExampleLoadsCleanly) {
  std::size_t examples = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(ROCECAP_SOURCE_DIR) + "/config/examples")) {
    if (entry.path().extension() != ".yaml") continue;
    ++examples;
    const LoadResult r = load_example(entry.path().filename().string());
    EXPECT_TRUE(r.ok()) << entry.path() << ":\n" << all_problems(r);
  }
  EXPECT_GE(examples, 3u);
}

TEST(ConfigExamples, OneExamplePerBackend) {
  const LoadResult verbs = load_example("verbs.yaml");
  const LoadResult pcap = load_example("pcap.yaml");
  const LoadResult file = load_example("pcap-file.yaml");
  ASSERT_TRUE(verbs.ok() && pcap.ok() && file.ok());
  EXPECT_EQ(verbs.config->capture.backend, Backend::verbs);
  EXPECT_EQ(pcap.config->capture.backend, Backend::pcap);
  EXPECT_EQ(file.config->capture.backend, Backend::pcap_file);
  EXPECT_EQ(enumerate_streams(*verbs.config).size(), 6u);
  // mlx5_0 carries 2 groups x 2 antennas x 8192 slots; mlx5_1 half of that.
  EXPECT_EQ(verbs.config->capture.cq_size, 32768u);
  EXPECT_EQ(file.config->capture.pcap_file, "/var/lib/rocecap/recordings/atca-20261121.pcap");
  EXPECT_FALSE(file.config->output.fill_gaps);  // udp streams have no fill frames
}

TEST(ConfigSummary, ShowsRunBackendInterfacesStreamsOutputAndMetrics) {
  const LoadResult r = load_example("verbs.yaml");
  ASSERT_TRUE(r.ok());
  const std::string s = render_summary(*r.config);
  for (const char* expected :
       {"run         atca-verbs (stops after 1h30m)",
        "backend verbs, busy_poll, payload memory auto",
        "ring 8192 slots per stream, header split 128 B, max frame 8320 B, CQ 32768 entries",
        "interface enp65s0f0 (mlx5_0, CPU 2): 239.17.0.1:36001, 239.17.0.2:36002",
        "interface enp65s0f1 (mlx5_1, CPU 3): 239.17.0.3:36003", "streams     6 ",
        "sync 0xFEEDCAFE v3, 0xABADDEED v1", "239.17.0.3:36003 ca02       from 192.0.2.12",
        "/var/lib/rocecap/data [raw, codifhdr], rotate at 4 GiB",
        "raw       e.g. /var/lib/rocecap/data/atca-verbs/239.17.0.1_36001_ca01.0000.codif",
        "codifhdr  e.g. /var/lib/rocecap/data/atca-verbs/239.17.0.1_36001_ca01.0000.chead",
        "writer CPU 4", "metrics     http://127.0.0.1:9464/metrics", "logging     info"}) {
    EXPECT_NE(s.find(expected), std::string::npos) << "missing '" << expected << "' in:\n" << s;
  }
  // 6 streams x 8192 slots x 128 header bytes.
  EXPECT_NE(s.find("headers 6 MiB (host)"), std::string::npos) << s;
}

TEST(ConfigSummary, LongStreamListsStayOnOneScreen) {
  std::string text = kBaseConfig;
  std::string antennas;
  for (int i = 3; i <= 20; ++i) {
    antennas +=
        "    - {name: x" + std::to_string(i) + ", source: 192.0.2." + std::to_string(i) + "}\n";
  }
  text.insert(text.find("output:"), antennas);
  const LoadResult r = load_string(text, "big.yaml", fixed_host());
  ASSERT_TRUE(r.ok()) << all_problems(r);
  const std::string s = render_summary(*r.config);
  EXPECT_NE(s.find("streams     40 "), std::string::npos) << s;
  EXPECT_NE(s.find("... and 24 more"), std::string::npos) << s;
  EXPECT_LE(std::count(s.begin(), s.end(), '\n'), 40);
}

}  // namespace
}  // namespace rocecap::config
