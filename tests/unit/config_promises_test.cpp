// Run files that main accepted but then ran differently from what they say (issue 23): each
// is now refused with file:line:column: key: what, or honoured, and the test says which.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/loader.hpp"
#include "config/summary.hpp"
#include "config/token_file.hpp"
#include "config_test_support.hpp"

namespace rocecap::config {
namespace {

using testing::fixed_host;
using testing::patched;
namespace fs = std::filesystem;

std::string all_problems(const LoadResult& r) {
  std::string out;
  for (const Problem& p : r.problems)
    out += format_problem(p) + "\n";
  return out;
}

// The one problem of `r` as run.yaml:line:column: key: message.
std::string only_problem(const LoadResult& r) {
  EXPECT_EQ(r.problems.size(), 1u) << all_problems(r);
  return r.problems.empty() ? "" : format_problem(r.problems.front());
}

LoadResult load(const std::string& text) {
  return load_string(text, "run.yaml", fixed_host());
}

// The base config with backend pcap (the verbs-only device key removed).
std::string pcap_base() {
  std::string text = patched("backend: verbs", "backend: pcap");
  return text.replace(text.find("      device: mlx5_0\n"), 21, "");
}

// --- output.directories: one directory listed twice under two spellings --------------------

TEST(ConfigPromises, TheSameTargetSpelledTwoWaysIsRefusedNamingBoth) {
  const LoadResult r = load(
      patched("directory: /tmp/rocecap-test", "directories: [/o/b, /o/x/../b, /o/c/, /o/./c]"));
  ASSERT_EQ(r.problems.size(), 2u) << all_problems(r);
  EXPECT_EQ(format_problem(r.problems[0]),
            "run.yaml:25:23: output.directories[1]: '/o/x/../b' is the same directory as "
            "output.directories[0] '/o/b' (both are /o/b); list each target once");
  EXPECT_EQ(format_problem(r.problems[1]),
            "run.yaml:25:41: output.directories[3]: '/o/./c' is the same directory as "
            "output.directories[2] '/o/c/' (both are /o/c); list each target once");
}

class ConfigTargetsOnDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "rocecap-promise-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = fs::canonical(pattern);  // messages name resolved paths
    fs::create_directories(dir_ / "real");
    fs::create_directory_symlink(dir_ / "real", dir_ / "link");
  }
  void TearDown() override { fs::remove_all(dir_); }
  LoadResult load_targets(const std::string& a, const std::string& b) {
    HostChecks host = fixed_host();
    host.check_filesystem = true;
    return load_string(
        patched("directory: /tmp/rocecap-test", "directories: [" + a + ", " + b + "]"), "run.yaml",
        host);
  }
  fs::path dir_;
};

TEST_F(ConfigTargetsOnDisk, ASymlinkToAnotherTargetIsTheSameDirectory) {
  const std::string real = (dir_ / "real").string(), link = (dir_ / "link").string();
  const std::string p = only_problem(load_targets(real, link));
  EXPECT_NE(p.find("output.directories[1]: '" + link +
                   "' is the same directory as "
                   "output.directories[0] '" +
                   real + "' (both are " + real + ")"),
            std::string::npos)
      << p;
  // Not created yet: the nearest existing ancestor is resolved, the rest compared as written.
  const std::string q = only_problem(load_targets(real + "/new", link + "/new/"));
  EXPECT_NE(q.find("output.directories[1]: '" + link +
                   "/new/' is the same directory as "
                   "output.directories[0] '" +
                   real + "/new'"),
            std::string::npos)
      << q;
  // Through a symlink one target can sit inside another.
  const std::string n = only_problem(load_targets(real, link + "/inner"));
  EXPECT_NE(n.find("output.directories[1]: '" + link + "/inner' is inside output.directories[0] '" +
                   real + "'"),
            std::string::npos)
      << n;
  EXPECT_TRUE(load_targets(real, (dir_ / "other").string()).ok());
}

// --- output.writer_threads, writer_cpus, writer_cpu -----------------------------------------

TEST(ConfigPromises, WriterCpuAndWriterCpusTogetherAreRefused) {
  EXPECT_EQ(only_problem(load(patched("writer_cpu: 2", "writer_cpu: 2\n  writer_cpus: [3, 4]"))),
            "run.yaml:30:16: output.writer_cpus: give output.writer_cpu (one writer CPU) or "
            "output.writer_cpus (one per writer thread), not both");
}

// The base config has 4 streams (2 groups x 2 antennas) and no pcap output: at most 4 writer
// threads can each own a stream; more ran as fewer without a word.
TEST(ConfigPromises, MoreWriterThreadsThanTheRunCanUseAreRefusedWithTheLimit) {
  EXPECT_EQ(only_problem(load(patched("writer_cpu: 2", "writer_threads: 256"))),
            "run.yaml:29:19: output.writer_threads: 256 writer threads, but this run has 4 "
            "streams to share out (a ring has one writer); at most 4");
  EXPECT_TRUE(load(patched("writer_cpu: 2", "writer_threads: 4")).ok());
  // pcap output: each interface is written whole by one thread.
  std::string text = patched("writer_cpu: 2", "writer_threads: 2");
  text.replace(text.find("formats: [raw, codifhdr]"), 24, "formats: [raw, pcap]");
  EXPECT_EQ(only_problem(load(text)),
            "run.yaml:29:19: output.writer_threads: 2 writer threads, but this run has 1 "
            "interface with pcap output, written whole by one thread; at most 1");
}

TEST(ConfigPromises, MoreWriterCpusThanWriterThreadsAreRefused) {
  EXPECT_EQ(
      only_problem(load(patched("writer_cpu: 2", "writer_threads: 2\n  writer_cpus: [2, 3, 4]"))),
      "run.yaml:30:16: output.writer_cpus: 3 CPUs for 2 writer threads "
      "(output.writer_threads): CPU 4 would run no writer; list at most 2");
  // Without writer_threads, one writer thread per listed CPU.
  const LoadResult r = load(patched("writer_cpu: 2", "writer_cpus: [2, 3, 4]"));
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_EQ(r.config->output.writer_threads, 3u);
  // ... within the same limit as writer_threads.
  EXPECT_EQ(only_problem(load(patched("writer_cpu: 2", "writer_cpus: [2, 3, 4, 5, 6]"))),
            "run.yaml:29:16: output.writer_cpus: 5 writer threads (one per listed CPU), but this "
            "run has 4 streams to share out (a ring has one writer); at most 4");
}

// --- streams.threads: [] ---------------------------------------------------------------------

TEST(ConfigPromises, AnEmptyThreadListIsRefused) {
  std::string text =
      patched("  format: codif\n", "  format: vdif\n  frames_per_second: 100\n  threads: []\n");
  text.replace(text.find("formats: [raw, codifhdr]"), 24, "formats: [raw]");
  EXPECT_EQ(only_problem(load(text)),
            "run.yaml:20:12: streams.threads: needs at least one VDIF thread id; leave threads out "
            "to record every thread as one stream");
}

// --- ring memory: every VDIF thread is a stream with rings of its own ------------------------

class ConfigRingMemory : public ConfigTargetsOnDisk {
 protected:
  LoadResult load_with_memory(const std::string& text, uint64_t available_kib) {
    std::ofstream(dir_ / "meminfo")
        << "MemTotal: 24641536 kB\nMemAvailable: " << available_kib << " kB\n";
    HostChecks host = fixed_host();
    host.check_memory = true;
    host.proc_root = dir_.string();
    return load_string(text, "run.yaml", host);
  }
};

TEST_F(ConfigRingMemory, VdifThreadsMultiplyTheRingsAndAreChecked) {
  std::string threads;
  for (int t = 0; t < 1024; ++t)
    threads += (t ? ", " : "") + std::to_string(t);
  std::string text = pcap_base();
  text.replace(text.find("  format: codif\n"), 16,
               "  format: vdif\n  frames_per_second: 100\n  threads: [" + threads + "]\n");
  text.replace(text.find("formats: [raw, codifhdr]"), 24, "formats: [raw]");
  // 2 groups x 2 antennas x 1024 threads = 4096 streams x 1024 slots x (9216 + 128) B:
  // 36.5 GiB on a host with 22 GiB available, and as many frames of kernel receive ring
  // (packet_ring, zero copy: 37450 + 2 blocks of 112 frames).
  const LoadResult r = load_with_memory(text, uint64_t{22} << 20);
  const std::string p = only_problem(r);
  EXPECT_NE(p.find("run.yaml:6:15: capture.ring_depth: the rings need 36.5 GiB of host memory "
                   "(4096 streams x 1024 slots, header and payload), plus 36.6 GiB of kernel "
                   "receive ring (capture.pcap_reader packet_ring, 1 interface(s)): 73.1 GiB "
                   "but this host has 22 GiB available"),
            std::string::npos)
      << p;
  // One thread listed: 4 streams, 36.5 MiB, and the 256 MiB kernel ring.
  text.replace(text.find("threads: ["), 10 + threads.size() + 1, "threads: [0]");
  EXPECT_TRUE(load_with_memory(text, uint64_t{22} << 20).ok());
}

// --- retention.formats: [] -------------------------------------------------------------------

TEST(ConfigPromises, AnEmptyDumpFormatListNamesOnlyTheDumpFormats) {
  std::string text = pcap_base();
  text += "retention:\n  retain: 1s\n  frame_rate: 1000\n  formats: []\n";
  EXPECT_EQ(only_problem(load(text)),
            "run.yaml:36:12: retention.formats: needs at least one of raw, codifhdr (CODIF), "
            "vdifhdr (VDIF), pcap");
}

// --- retention.http_token_file ---------------------------------------------------------------

class ConfigTokenFile : public ConfigTargetsOnDisk {
 protected:
  std::string token_file(const std::string& text, mode_t mode) {
    const std::string path = (dir_ / "token").string();
    std::ofstream(path, std::ios::trunc) << text;
    EXPECT_EQ(::chmod(path.c_str(), mode), 0);
    return path;
  }
  LoadResult load_with_token(const std::string& path) {
    HostChecks host = fixed_host();
    host.check_filesystem = true;
    std::string text = pcap_base();
    text.replace(text.find("/tmp/rocecap-test"), 17, (dir_ / "out").string());
    text +=
        "retention:\n  retain: 1s\n  frame_rate: 1000\n  formats: [raw]\n"
        "  http_token_file: " +
        path + "\n";
    return load_string(text, "run.yaml", host);
  }
};

TEST_F(ConfigTokenFile, SurroundingWhitespaceIsNotPartOfTheToken) {
  const TokenFile t = read_token_file(token_file(" \t s3cret-token \r\n\n", 0600));
  EXPECT_EQ(t.error, "");
  EXPECT_EQ(t.token, "s3cret-token");
  EXPECT_EQ(t.warning, "");
}

TEST_F(ConfigTokenFile, AWorldReadableTokenIsWarnedAboutGroupReadableIsNot) {
  const TokenFile world = read_token_file(token_file("s3cret\n", 0644));
  EXPECT_EQ(world.token, "s3cret");
  EXPECT_NE(world.warning.find("is readable by every user (mode 0644)"), std::string::npos)
      << world.warning;
  EXPECT_EQ(read_token_file(token_file("s3cret\n", 0640)).warning, "");
  EXPECT_EQ(read_token_file(token_file("s3cret\n", 0600)).warning, "");
  // check-config shows the warning under the retention plan.
  const LoadResult r = load_with_token(token_file("s3cret\n", 0604));
  ASSERT_TRUE(r.ok()) << all_problems(r);
  EXPECT_NE(render_summary(*r.config).find("warning: retention.http_token_file " +
                                           (dir_ / "token").string() +
                                           " is readable by every user (mode 0604)"),
            std::string::npos)
      << render_summary(*r.config);
}

TEST_F(ConfigTokenFile, AnEmptyOrMissingTokenFileIsAProblemOfTheKey) {
  std::string p = only_problem(load_with_token(token_file(" \n\t\n", 0600)));
  EXPECT_NE(p.find("retention.http_token_file: " + (dir_ / "token").string() +
                   " holds no token (only whitespace)"),
            std::string::npos)
      << p;
  p = only_problem(load_with_token(token_file("two\nlines\n", 0600)));
  EXPECT_NE(p.find("holds a control character (0x0A) inside the token"), std::string::npos) << p;
  p = only_problem(load_with_token((dir_ / "absent").string()));
  EXPECT_NE(p.find("retention.http_token_file: " + (dir_ / "absent").string() +
                   " cannot be read: No such file or directory"),
            std::string::npos)
      << p;
}

}  // namespace
}  // namespace rocecap::config
