// Helpers shared by the writer tests: a temporary directory, whole-file reads, frame building.
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "capture/codif/header.hpp"
#include "writers/rotating_file.hpp"
#include "writers/status.hpp"

namespace rocecap::writers::test {

using Bytes = std::vector<std::byte>;

class TempDir {
 public:
  explicit TempDir(const std::filesystem::path& base = std::filesystem::temp_directory_path()) {
    std::string templ = (base / "rocecap-writer-XXXXXX").string();
    if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp " + templ);
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// stdio rather than iostreams: g++ 12's -Wnull-dereference trips over istreambuf_iterator.
inline Bytes read_file(const std::filesystem::path& p) {
  Bytes out;
  std::FILE* f = std::fopen(p.c_str(), "rb");
  if (f == nullptr) return out;
  std::byte chunk[65536];
  std::size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0)
    out.insert(out.end(), chunk, chunk + n);
  std::fclose(f);
  return out;
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("fopen " + p.string());
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

inline void append(Bytes& to, std::span<const std::byte> from) {
  to.insert(to.end(), from.begin(), from.end());
}

// Deterministic bytes that differ per `seed` and per position.
inline Bytes pattern(std::size_t n, uint32_t seed) {
  Bytes b(n);
  uint32_t x = seed * 2654435761u + 12345u;
  for (auto& v : b) {
    x = x * 1103515245u + 12345u;
    v = static_cast<std::byte>(x >> 24);
  }
  return b;
}

inline std::array<std::byte, capture::codif::kHeaderBytes> encoded(
    const capture::codif::Header& h) {
  std::array<std::byte, capture::codif::kHeaderBytes> out{};
  capture::codif::encode(h, out);
  return out;
}

// Path maker writing "<dir>/f.<seq>" without the namer, so rotation tests stand alone.
inline PathMaker simple_paths(std::filesystem::path dir, std::string stem = "f") {
  return [dir = std::move(dir), stem = std::move(stem)](uint64_t seq, std::filesystem::path& out) {
    out = dir / (stem + "." + std::to_string(seq));
    return Status{};
  };
}

inline bool is_tmpfs(const std::filesystem::path& p) {
  struct statfs s {};
  return statfs(p.c_str(), &s) == 0 && s.f_type == 0x01021994;  // TMPFS_MAGIC
}

// A filesystem mounted on a fresh temporary directory for one test (needs root / CAP_SYS_ADMIN);
// unmounted at scope exit. When it cannot mount, ok() is false and why() says so.
class TempMount {
 public:
  TempMount(const char* fstype, const char* options) {
    if (geteuid() != 0) {
      why_ = "needs root to mount a " + std::string(fstype);
      return;
    }
    if (::mount(fstype, dir_.path().c_str(), fstype, 0, options) != 0) {
      why_ = "mount -t " + std::string(fstype) + " failed: " + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~TempMount() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  TempMount(const TempMount&) = delete;
  TempMount& operator=(const TempMount&) = delete;
  bool ok() const { return mounted_; }
  const std::string& why() const { return why_; }
  const std::filesystem::path& path() const { return dir_.path(); }

 private:
  TempDir dir_;
  bool mounted_ = false;
  std::string why_;
};

// RLIMIT_FSIZE with SIGXFSZ ignored makes write() fail with EFBIG past the limit, without root.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit l = saved_;
    l.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &l) == 0;
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  sighandler_t old_handler_{};
  bool ok_ = false;
};

}  // namespace rocecap::writers::test
