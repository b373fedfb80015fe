// `rocecap extract` cost against the recording's size (issue 27). Not a test; prints one line
// per case.
//
//   extract_bench <dir> [--gib 1,100] [--streams 4] [--reps 5] [--drop-caches]
//
// For each size G a recording of G GiB (decimal GB: 1e9 bytes) is made under <dir>: `streams`
// CODIF streams of 8256-byte frames (64 + 8192) at 6250 frames per second each (52 MB/s a
// stream, 1.65 Gb/s in all with 4), raw files rotated at 1 GiB, and a manifest as rocecapd
// writes it. The files are sparse: real frames only where an extract reads them (each file's
// first and last frame, and the 1 s window in the middle of the recording); the rest is
// holes. Then `extract` (the library the command runs) cuts that 1 s window of every stream,
// `reps` times, each into a new directory on the same file system; the median wall time is
// reported with the number of files the extract opened, beside a baseline measured in the same
// run: pread + write of the same window bytes from the same files (what any extract must at
// least do), so the ratio, not the absolute time, is the result. --drop-caches (root) writes 3
// to /proc/sys/vm/drop_caches before every timed run (cold reads).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "capture/codif/header.hpp"
#include "daemon/lib/extract/extractor.hpp"

namespace {

using namespace rocecap;
namespace fs = std::filesystem;
namespace codif = capture::codif;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kData = 8192, kFrame = kData + 64, kFps = 6250;
constexpr uint64_t kFileBytes = (uint64_t{1} << 30) / kFrame * kFrame;  // rotation: 1 GiB
constexpr uint64_t kFramesPerFile = kFileBytes / kFrame;
constexpr uint64_t kFirst = 1'000ull * kFps;  // second 1000 of epoch 52

codif::Header header_at(uint64_t index) {
  codif::Header h;
  h.nbits = 8;
  h.nchan = 4;
  h.period = 1;
  h.epoch = 52;
  h.data_words = kData / 8;
  h.total_samples = kFps * kData / 4;
  h.version = 3;
  const codif::Timing t{kData / 4, kFps, 1};
  return codif::at_index(h, t, index);
}

void put_frame(int fd, uint64_t k, uint64_t index, std::vector<std::byte>& buf) {
  codif::encode(header_at(index), std::span<std::byte, 64>(buf.data(), 64));
  for (uint64_t i = 64; i < kFrame; i += 64)
    buf[i] = static_cast<std::byte>(index + i);
  if (::pwrite(fd, buf.data(), kFrame, static_cast<off_t>(k * kFrame)) != kFrame)
    throw std::runtime_error(std::string("pwrite: ") + std::strerror(errno));
}

struct Made {
  fs::path run;
  uint64_t window_first = 0;  // frame index of the window's start
  uint64_t files = 0;
};

// A sparse recording of `bytes` over `streams` streams (see the top).
Made make_recording(const fs::path& root, uint64_t bytes, int streams) {
  Made m;
  m.run = root / "out" / "r";
  fs::create_directories(m.run);
  const uint64_t frames = bytes / static_cast<uint64_t>(streams) / kFrame;
  m.window_first = kFirst + frames / 2;
  std::string yaml =
      "run:\n  name: r\n  duration: 1h\ncapture:\n  backend: pcap-file\n  pcap_file: /x.pcap\n"
      "  interfaces:\n    - name: eth0\n      groups: [239.17.0.1:36001]\nstreams:\n"
      "  format: codif\n  antennas:\n";
  nlohmann::json list = nlohmann::json::array();
  std::vector<std::byte> buf(kFrame);
  for (int s = 0; s < streams; ++s) {
    yaml += "    - { name: a" + std::to_string(s) + ", source: 192.0.2." + std::to_string(s + 1) +
            " }\n";
    nlohmann::json files = nlohmann::json::array();
    for (uint64_t f0 = 0, seq = 0; f0 < frames; f0 += kFramesPerFile, ++seq) {
      const uint64_t n = std::min(kFramesPerFile, frames - f0);
      char name[64];
      std::snprintf(name, sizeof name, "a%d.%04llu.codif", s, static_cast<unsigned long long>(seq));
      const int fd = ::open((m.run / name).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(n * kFrame)) != 0)
        throw std::runtime_error((m.run / name).string() + ": " + std::strerror(errno));
      put_frame(fd, 0, kFirst + f0, buf);
      put_frame(fd, n - 1, kFirst + f0 + n - 1, buf);
      for (uint64_t i = m.window_first; i < m.window_first + kFps; ++i) {
        if (i >= kFirst + f0 && i < kFirst + f0 + n) put_frame(fd, i - kFirst - f0, i, buf);
      }
      ::close(fd);
      files.push_back({{"path", std::string("r/") + name}, {"format", "raw"}, {"bytes", n * kFrame}});
      ++m.files;
    }
    list.push_back({{"interface", "eth0"}, {"group", "239.17.0.1"}, {"port", 36001},
                    {"antenna", "a" + std::to_string(s)}, {"files", files}});
  }
  yaml += "output:\n  directory: " + (root / "out").string() + "\n  formats: [raw]\n";
  const nlohmann::json manifest{{"run", "r"}, {"state", "stopped"},
                                {"config", {{"file", "r.yaml"}, {"text", yaml}}},
                                {"streams", list}};
  std::ofstream(m.run / "manifest.json") << manifest.dump();
  return m;
}

void drop_caches(bool on) {
  if (!on) return;
  ::sync();
  std::ofstream("/proc/sys/vm/drop_caches") << "3\n";
}

// The baseline: the window's bytes of every stream read with pread and written to one file.
double copy_window(const Made& m, int streams, const fs::path& out) {
  const auto t0 = Clock::now();
  std::vector<std::byte> buf(4u << 20);
  const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (int s = 0; s < streams; ++s) {
    uint64_t rel = m.window_first - kFirst, left = kFps * kFrame;
    while (left > 0) {
      const uint64_t seq = rel / kFramesPerFile, k = rel % kFramesPerFile;
      char name[64];
      std::snprintf(name, sizeof name, "a%d.%04llu.codif", s, static_cast<unsigned long long>(seq));
      const int fd = ::open((m.run / name).c_str(), O_RDONLY);
      const uint64_t in_file = std::min(left, (kFramesPerFile - k) * kFrame);
      for (uint64_t done = 0; done < in_file;) {
        const auto n = ::pread(fd, buf.data(), std::min<uint64_t>(buf.size(), in_file - done),
                               static_cast<off_t>(k * kFrame + done));
        if (n <= 0 || ::write(o, buf.data(), static_cast<std::size_t>(n)) != n)
          throw std::runtime_error("baseline copy failed");
        done += static_cast<uint64_t>(n);
      }
      ::close(fd);
      left -= in_file;
      rel += in_file / kFrame;
    }
  }
  ::fsync(o);
  ::close(o);
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR [--gib 1,100] [--streams 4] [--reps 5] [--drop-caches]\n",
                 argv[0]);
    return 2;
  }
  const fs::path dir = argv[1];
  std::vector<double> gib{1, 100};
  int streams = 4, reps = 5;
  bool cold = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--gib" && i + 1 < argc) {
      gib.clear();
      for (std::string s = argv[++i]; !s.empty();) {
        const auto c = s.find(',');
        gib.push_back(std::stod(s.substr(0, c)));
        s = c == std::string::npos ? "" : s.substr(c + 1);
      }
    } else if (a == "--streams" && i + 1 < argc) {
      streams = std::stoi(argv[++i]);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::stoi(argv[++i]);
    } else if (a == "--drop-caches") {
      cold = true;
    }
  }
  std::printf("%-8s %6s %7s %12s %12s %8s\n", "GB", "files", "window", "extract_s", "copy_s",
              "ratio");
  for (double g : gib) {
    const fs::path root = dir / ("extract-bench-" + std::to_string(static_cast<int>(g)));
    fs::remove_all(root);
    const Made m = make_recording(root, static_cast<uint64_t>(g * 1e9), streams);
    std::vector<double> ex, cp;
    uint64_t window_bytes = 0;
    for (int r = 0; r < reps; ++r) {
      daemon::ExtractOptions o;
      o.run_dir = m.run;
      o.out_dir = root / ("x" + std::to_string(r));
      const uint64_t end = m.window_first + kFps;
      auto t = [](uint64_t i) {
        return nlohmann::json{{"epoch", 52}, {"seconds", i / kFps}, {"frame", i % kFps}};
      };
      o.request = nlohmann::json{{"start", t(m.window_first)}, {"end", t(end)}}.dump();
      drop_caches(cold);
      const auto t0 = Clock::now();
      const daemon::ExtractOutcome out = daemon::extract(o);
      ::sync();
      ex.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      window_bytes = 0;
      for (const auto& s : out.dump.at("streams")) window_bytes += s.at("bytes").get<uint64_t>();
      if (window_bytes != static_cast<uint64_t>(streams) * kFps * kFrame || !out.ok)
        throw std::runtime_error("extract wrote " + std::to_string(window_bytes) + " bytes");
      fs::remove_all(o.out_dir);
      drop_caches(cold);
      cp.push_back(copy_window(m, streams, root / "copy.bin"));
      fs::remove(root / "copy.bin");
    }
    std::printf("%-8.0f %6llu %6.0fMB %12.4f %12.4f %8.2f\n", g,
                static_cast<unsigned long long>(m.files), static_cast<double>(window_bytes) / 1e6,
                median(ex), median(cp), median(ex) / median(cp));
    std::fflush(stdout);
    fs::remove_all(root);
  }
  return 0;
}
