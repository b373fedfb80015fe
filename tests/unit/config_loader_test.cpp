// Loading whole run files: values, defaults, several problems at once, YAML-level errors,
// host checks and the shipped examples.
#include <gtest/gtest.h>
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
      "streams: {antennas: [{name: x, source: 127.0.0.1}]}\n"
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
  const LoadResult dir = load_file("/", fixed_host());
  ASSERT_EQ(dir.problems.size(), 1u);
  EXPECT_NE(dir.problems[0].message.find("cannot read"), std::string::npos);
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
            "write 'test-run.0.pcap'; add a placeholder that tells them apart ({interface}, "
            "{group}, {port}, {antenna}, {ext})");
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
