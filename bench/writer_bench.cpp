// Writer cost and aggregate rate (issue 12 benchmarks). Not a test; prints one line per case.
//
//   writer_bench cpu <dir> [seconds]
//       One thread moves 8298-byte CODIF frames (64-byte header + 8234 data bytes... as
//       rocecapd's raw writer gets them: header + data spans in 9216-byte ring slots) into raw
//       files in <dir> (tmpfs: a target that costs nothing), through each write path, and
//       memcpy()s the same bytes from the same slots into a buffer as large as one file, in the
//       same run, alternating. Reported: thread CPU time per GB and the ratio memcpy/path.
//   writer_bench aggregate <dir1> [<dir2>...] --gib G [--path copy|gather|uring|direct]
//                          [--no-preallocate | --size-ahead] [--buffer-mib M]
//       One writer thread per directory (the writer pool's shape: each thread owns its files),
//       each writing G/N GiB of frames with rotation at 1 GiB; prints the aggregate GB/s.
//
// Frames are written from a ring of 4096 slots refilled with a counter so every frame differs;
// borrowed (writev) paths flush before the slots are "released", every 256 frames, as the
// CaptureWriter does per pass.
#include <time.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "writers/aligned_buffer.hpp"
#include "writers/raw_writer.hpp"

namespace {

using namespace rocecap;
namespace fs = std::filesystem;

constexpr std::size_t kFrame = 8298;
constexpr std::size_t kHeader = 64;
constexpr std::size_t kSlot = 9216;
constexpr std::size_t kSlots = 4096;
constexpr std::size_t kPass = 256;  // CaptureWriter's batch per stream

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Ring {
  writers::AlignedBuffer mem{kSlots * kSlot};
  Ring() {
    for (std::size_t i = 0; i < mem.size(); ++i)
      mem.span()[i] = static_cast<std::byte>(i * 131 + (i >> 12));
  }
  std::byte* slot(std::size_t i) const { return mem.span().data() + (i % kSlots) * kSlot; }
};

enum class Path { copy, gather, uring_direct, copy_direct };
const char* name(Path p) {
  switch (p) {
    case Path::copy:
      return "copy+write";
    case Path::gather:
      return "writev";
    case Path::uring_direct:
      return "O_DIRECT copy+io_uring";
    case Path::copy_direct:
      return "O_DIRECT copy+write";
  }
  return "?";
}

writers::PathMaker paths(fs::path dir, std::string stem) {
  return [dir, stem](uint64_t seq, fs::path& out) {
    out = dir / (stem + "." + std::to_string(seq) + ".codif");
    return writers::Status{};
  };
}

std::size_t g_buffer_bytes = 1u << 20;  // --buffer-mib
bool g_fsync = false;                   // aggregate: true
bool g_preallocate = true;              // --no-preallocate
bool g_size_ahead = false;              // --size-ahead

writers::RawWriter make_writer(Path p, const fs::path& dir, const std::string& stem,
                               uint64_t rotate) {
  writers::RotationOptions r;
  r.buffer_bytes = g_buffer_bytes;
  r.max_bytes = rotate;
  r.output.direct = p == Path::uring_direct || p == Path::copy_direct;
  // cpu: the page cache (tmpfs) is the target; aggregate: on the disk when close returns, as
  // fio's end_fsync=1.
  r.output.fsync_on_close = g_fsync;
  r.io_uring = p == Path::uring_direct;
  r.preallocate = g_preallocate;
  r.output.size_ahead = g_size_ahead;
  writers::RawWriter w(paths(dir, stem), r);
  if (p == Path::gather) w.borrow_payloads();
  return w;
}

// Writes `frames` frames; the slot header gets the frame number so files are not constant.
void write_frames(writers::RawWriter& w, Ring& ring, uint64_t first, uint64_t frames) {
  for (uint64_t i = first; i < first + frames; ++i) {
    std::byte* s = ring.slot(i);
    std::memcpy(s, &i, sizeof i);
    const auto header = std::span<const std::byte, kHeader>(s, kHeader);
    if (!w.write_frame(header, {s + kHeader, kFrame - kHeader}).ok()) {
      std::fprintf(stderr, "write failed: %s\n", w.stats().last_error.c_str());
      std::exit(1);
    }
    if ((i + 1) % kPass == 0) (void)w.flush_borrowed();
  }
}

int cpu(const fs::path& dir, double seconds) {
  Ring ring;
  const uint64_t per_file = 64ull << 20;
  const uint64_t frames = per_file / kFrame;  // one 64 MiB file per round
  writers::AlignedBuffer dest(frames * kFrame);
  std::memset(dest.span().data(), 0, dest.size());  // faulted in before timing
  const Path paths_[] = {Path::copy, Path::gather, Path::copy_direct, Path::uring_direct};
  std::array<double, 4> cpu_s{};
  double memcpy_s = 0;
  uint64_t rounds = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end || rounds == 0) {
    // memcpy of the same bytes from the same slots.
    double t0 = thread_cpu_s();
    std::byte* to = dest.span().data();
    for (uint64_t i = 0; i < frames; ++i) {
      std::byte* s = ring.slot(i);
      std::memcpy(s, &i, sizeof i);
      std::memcpy(to, s, kFrame);
      to += kFrame;
    }
    memcpy_s += thread_cpu_s() - t0;
    for (std::size_t k = 0; k < 4; ++k) {
      const std::string stem = "b" + std::to_string(k) + "_" + std::to_string(rounds);
      t0 = thread_cpu_s();
      {
        writers::RawWriter w = make_writer(paths_[k], dir, stem, 0);
        write_frames(w, ring, 0, frames);
        (void)w.close();
      }
      cpu_s[k] += thread_cpu_s() - t0;
      fs::remove(dir / (stem + ".0.codif"));
    }
    ++rounds;
  }
  const double gb = static_cast<double>(rounds * frames * kFrame) / 1e9;
  std::printf("frames: %zu bytes, %llu rounds of %llu frames (%.2f GB per case), dir %s\n", kFrame,
              static_cast<unsigned long long>(rounds), static_cast<unsigned long long>(frames), gb,
              dir.c_str());
  std::printf("%-26s %10s %12s %16s\n", "case", "cpu s", "GB/cpu-s", "memcpy/case");
  std::printf("%-26s %10.3f %12.2f %16s\n", "memcpy", memcpy_s, gb / memcpy_s, "1.00");
  for (std::size_t k = 0; k < 4; ++k) {
    std::printf("%-26s %10.3f %12.2f %16.2f\n", name(paths_[k]), cpu_s[k], gb / cpu_s[k],
                memcpy_s / cpu_s[k]);
  }
  return 0;
}

int aggregate(const std::vector<fs::path>& dirs, double gib, Path p) {
  g_fsync = true;
  const uint64_t total = static_cast<uint64_t>(gib * (1ull << 30));
  const uint64_t frames = total / dirs.size() / kFrame;
  std::vector<std::thread> threads;
  std::vector<Ring> rings(dirs.size());  // filled before the clock starts
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t d = 0; d < dirs.size(); ++d) {
    threads.emplace_back([&, d] {
      Ring& ring = rings[d];
      writers::RawWriter w = make_writer(p, dirs[d], "agg", 1ull << 30);
      write_frames(w, ring, 0, frames);
      if (!w.close().ok()) std::fprintf(stderr, "close: %s\n", w.stats().last_error.c_str());
    });
  }
  for (auto& t : threads)
    t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double bytes = static_cast<double>(frames * kFrame * dirs.size());
  std::printf("aggregate %s%s buffer=%zuKiB targets=%zu bytes=%.0f seconds=%.3f GB/s=%.3f\n",
              name(p),
              !g_preallocate ? " no-preallocate"
              : g_size_ahead ? " size-ahead"
                             : "",
              g_buffer_bytes >> 10, dirs.size(), bytes, s, bytes / s / 1e9);
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: writer_bench cpu <dir> [seconds]\n"
               "       writer_bench aggregate <dir>... --gib G [--path copy|gather|uring|direct]\n"
               "                [--no-preallocate | --size-ahead] [--buffer-mib M]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string mode = argv[1];
  if (mode == "cpu") return cpu(argv[2], argc > 3 ? std::atof(argv[3]) : 5.0);
  if (mode != "aggregate") return usage();
  std::vector<fs::path> dirs;
  double gib = 1;
  Path p = Path::uring_direct;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--buffer-mib" && i + 1 < argc) {
      g_buffer_bytes = static_cast<std::size_t>(std::atof(argv[++i]) * (1 << 20));
    } else if (a == "--no-preallocate") {
      g_preallocate = false;
    } else if (a == "--size-ahead") {
      g_size_ahead = true;
    } else if (a == "--gib" && i + 1 < argc) {
      gib = std::atof(argv[++i]);
    } else if (a == "--path" && i + 1 < argc) {
      const std::string v = argv[++i];
      p = v == "copy"     ? Path::copy
          : v == "gather" ? Path::gather
          : v == "direct" ? Path::copy_direct
                          : Path::uring_direct;
    } else {
      dirs.emplace_back(a);
    }
  }
  if (dirs.empty()) return usage();
  return aggregate(dirs, gib, p);
}
