#include "rundir/file_scan.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace rocecap::rundir {
namespace {

std::runtime_error sys_failure(const char* what, const std::filesystem::path& p) {
  return std::runtime_error(std::string(what) + " " + p.string() + ": " + std::strerror(errno));
}

// Reads forward through a file in large chunks (headers are read at increasing offsets).
class Reader {
 public:
  Reader(int fd, uint64_t size, const std::filesystem::path& path)
      : fd_(fd), size_(size), path_(path), buf_(4u << 20) {}

  // The n bytes at `at`, or nullptr when the file ends first.
  const std::byte* get(uint64_t at, std::size_t n) {
    if (at + n > size_) return nullptr;
    if (at < start_ || at + n > start_ + len_) fill(at);
    return buf_.data() + (at - start_);
  }

 private:
  void fill(uint64_t at) {
    start_ = at;
    len_ = 0;
    while (len_ < buf_.size() && start_ + len_ < size_) {
      const ssize_t r =
          ::pread(fd_, buf_.data() + len_, buf_.size() - len_, static_cast<off_t>(start_ + len_));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw sys_failure("cannot read", path_);
      if (r == 0) break;
      len_ += static_cast<std::size_t>(r);
    }
  }

  int fd_;
  uint64_t size_;
  const std::filesystem::path& path_;
  std::vector<std::byte> buf_;
  uint64_t start_ = 0;
  std::size_t len_ = 0;
};

// One CODIF header: decoded and valid for a frame of its own declared size.
bool codif_header(const std::byte* p, const capture::codif::SyncSet& syncs,
                  capture::codif::Header& h, capture::codif::Timing& t) {
  std::array<std::byte, capture::codif::kHeaderBytes> raw{};
  std::memcpy(raw.data(), p, raw.size());
  return capture::codif::decode(raw, syncs, h) &&
         capture::codif::validate(h, static_cast<std::size_t>(h.frame_bytes()), t) ==
             capture::codif::Invalid::ok;
}

// One whole frame of a CODIF or VDIF file (index and start time from its format's rules).
template <class Header, class Timing>
void note_frame(FileScan& s, const Header& h, const Timing& t) {
  const uint64_t index = absolute_index(h, t);
  const int64_t ns = frame_start_unix_ns(h, t);
  if (!s.first_index) {
    s.first_index = index;
    s.first_unix_ns = ns;
  }
  s.last_index = index;
  s.last_unix_ns = ns;
  ++s.records;
  if (h.invalid) ++s.flagged_invalid;
}

// Whether a frame of `stride` bytes at `at` runs past the end of the file (the scan stops
// there, saying so).
bool cut_short(FileScan& s, uint64_t at, uint64_t stride) {
  if (at + stride <= s.bytes_on_disk) return false;
  s.stop = "a frame cut short at byte " + std::to_string(at) + " (" +
           std::to_string(s.bytes_on_disk - at) + " of " + std::to_string(stride) + " bytes)";
  return true;
}

// Raw CODIF (stride = the frame size of the first header) or codifhdr (stride 64).
void walk_codif(Reader& r, FileScan& s, const ScanOptions& o, bool headers_only) {
  uint64_t at = 0, frame_bytes = 0;
  while (at < s.bytes_on_disk) {
    const std::byte* p = r.get(at, capture::codif::kHeaderBytes);
    capture::codif::Header h;
    capture::codif::Timing t;
    if (p == nullptr) {
      s.stop = "a header cut short at byte " + std::to_string(at);
      break;
    }
    if (!codif_header(p, o.syncs, h, t)) {
      s.stop = "no valid CODIF header at byte " + std::to_string(at);
      break;
    }
    if (frame_bytes == 0) {
      frame_bytes = s.frame_bytes = h.frame_bytes();
      s.header_bytes = capture::codif::kHeaderBytes;
    }
    if (h.frame_bytes() != frame_bytes) {
      s.stop = "a frame of " + std::to_string(h.frame_bytes()) + " bytes (the file's are " +
               std::to_string(frame_bytes) + ") at byte " + std::to_string(at);
      break;
    }
    const uint64_t stride = headers_only ? capture::codif::kHeaderBytes : frame_bytes;
    if (cut_short(s, at, stride)) break;
    note_frame(s, h, t);
    at += stride;
  }
  s.bytes_whole = at;
}

// One VDIF header at `p` with `avail` bytes behind it: decoded and valid for a frame of its own
// declared length at the run's rate (doc/vdif.md).
bool vdif_header(const std::byte* p, uint64_t avail, const capture::vdif::Rate& rate,
                 capture::vdif::Header& h, capture::vdif::Timing& t) {
  const std::size_t n = static_cast<std::size_t>(std::min<uint64_t>(avail, 32));
  return capture::vdif::decode(std::span<const std::byte>(p, n), h) &&
         capture::vdif::validate(h, static_cast<std::size_t>(h.frame_bytes()), rate, t) ==
             capture::vdif::Invalid::ok;
}

// Raw VDIF (stride = the first header's frame length) or vdifhdr (stride = its header size).
// Every frame of a file has the first one's header form and length (the writer's stream).
void walk_vdif(Reader& r, FileScan& s, const ScanOptions& o, bool headers_only) {
  uint64_t at = 0;
  while (at < s.bytes_on_disk) {
    const uint64_t avail = std::min<uint64_t>(s.bytes_on_disk - at, 32);
    const std::byte* p = r.get(at, static_cast<std::size_t>(avail));
    capture::vdif::Header h;
    capture::vdif::Timing t;
    if (!vdif_header(p, avail, o.vdif_rate, h, t)) {
      s.stop = "no valid VDIF header at byte " + std::to_string(at);
      break;
    }
    if (s.frame_bytes == 0) {
      s.frame_bytes = h.frame_bytes();
      s.header_bytes = h.header_bytes();
    }
    if (h.frame_bytes() != s.frame_bytes || h.header_bytes() != s.header_bytes) {
      s.stop = "a frame of " + std::to_string(h.frame_bytes()) + " bytes with a " +
               std::to_string(h.header_bytes()) +
               "-byte header (the file's: " + std::to_string(s.frame_bytes) + ", " +
               std::to_string(s.header_bytes) + ") at byte " + std::to_string(at);
      break;
    }
    const uint64_t stride = headers_only ? s.header_bytes : s.frame_bytes;
    if (cut_short(s, at, stride)) break;
    note_frame(s, h, t);
    at += stride;
  }
  s.bytes_whole = at;
}

uint32_t load32(const std::byte* p, bool swap) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return swap ? __builtin_bswap32(v) : v;
}

// pcap (libpcap's savefile format): microsecond or nanosecond magic, either byte order.
void walk_pcap(Reader& r, FileScan& s) {
  constexpr uint64_t kFileHeader = 24, kRecordHeader = 16;
  const std::byte* p = r.get(0, kFileHeader);
  if (p == nullptr) {
    s.stop = "the pcap file header is cut short";
    s.bytes_whole = 0;
    return;
  }
  const uint32_t magic = load32(p, false);
  const bool swap = magic == 0xd4c3b2a1u || magic == 0x4d3cb2a1u;
  if (!swap && magic != 0xa1b2c3d4u && magic != 0xa1b23c4du) {
    s.stop = "not a pcap file (magic)";
    s.bytes_whole = 0;
    return;
  }
  const uint32_t snaplen = load32(p + 16, swap);
  uint64_t at = kFileHeader;
  while (at < s.bytes_on_disk) {
    const std::byte* rec = r.get(at, kRecordHeader);
    if (rec == nullptr) {
      s.stop = "a record header cut short at byte " + std::to_string(at);
      break;
    }
    const uint32_t incl = load32(rec + 8, swap), orig = load32(rec + 12, swap);
    if (incl > orig || (snaplen != 0 && incl > snaplen) || (incl == 0 && orig == 0)) {
      s.stop = "no valid record header at byte " + std::to_string(at);
      break;
    }
    if (at + kRecordHeader + incl > s.bytes_on_disk) {
      s.stop = "a record cut short at byte " + std::to_string(at);
      break;
    }
    ++s.records;
    at += kRecordHeader + incl;
  }
  s.bytes_whole = at;
}

void walk_fixed(FileScan& s, uint64_t record_bytes) {
  if (record_bytes == 0) {
    s.checked = false;  // no headers and no size: nothing to check against
    s.bytes_whole = s.bytes_on_disk;
    return;
  }
  s.records = s.bytes_on_disk / record_bytes;
  s.bytes_whole = s.records * record_bytes;
  if (s.bytes_whole != s.bytes_on_disk) {
    s.stop = "a record cut short at byte " + std::to_string(s.bytes_whole);
  }
}

// Closes the scanned file on every way out of a scan.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

// quick_scan of a VDIF file: its first and last header agree in form and length with its size.
std::optional<FileScan> quick_scan_vdif(Reader& reader, FileScan s, FileKind kind,
                                        const ScanOptions& opts) {
  capture::vdif::Header first, last;
  capture::vdif::Timing t1, t2;
  const uint64_t head = std::min<uint64_t>(s.bytes_on_disk, 32);
  const std::byte* p = reader.get(0, static_cast<std::size_t>(head));
  if (p == nullptr || !vdif_header(p, head, opts.vdif_rate, first, t1)) return std::nullopt;
  const uint64_t stride = kind == FileKind::vdifhdr ? first.header_bytes() : first.frame_bytes();
  if (s.bytes_on_disk % stride != 0) return std::nullopt;
  const uint64_t tail = std::min<uint64_t>(stride, 32);
  p = reader.get(s.bytes_on_disk - stride, static_cast<std::size_t>(tail));
  if (p == nullptr || !vdif_header(p, tail, opts.vdif_rate, last, t2) ||
      last.frame_bytes() != first.frame_bytes() || last.legacy != first.legacy) {
    return std::nullopt;
  }
  s.frame_bytes = first.frame_bytes();
  s.header_bytes = first.header_bytes();
  note_frame(s, first, t1);
  note_frame(s, last, t2);
  s.records = s.bytes_on_disk / stride;
  s.flagged_invalid = 0;  // not counted without reading every header
  return s;
}

}  // namespace

std::optional<FileScan> quick_scan(const std::filesystem::path& path, FileKind kind,
                                   const ScanOptions& opts) {
  const bool vdif = kind == FileKind::raw_vdif || kind == FileKind::vdifhdr;
  if (kind != FileKind::raw_codif && kind != FileKind::codifhdr && !vdif) return std::nullopt;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw sys_failure("cannot open", path);
  const FdCloser closer{fd};
  const off_t end = ::lseek(fd, 0, SEEK_END);
  if (end <= 0) return std::nullopt;
  FileScan s;
  s.bytes_on_disk = s.bytes_whole = static_cast<uint64_t>(end);
  Reader reader(fd, s.bytes_on_disk, path);
  if (vdif) return quick_scan_vdif(reader, s, kind, opts);
  capture::codif::Header first, last;
  capture::codif::Timing t1, t2;
  const std::byte* p = reader.get(0, capture::codif::kHeaderBytes);
  if (p == nullptr || !codif_header(p, opts.syncs, first, t1)) return std::nullopt;
  const uint64_t stride =
      kind == FileKind::codifhdr ? capture::codif::kHeaderBytes : first.frame_bytes();
  if (s.bytes_on_disk % stride != 0) return std::nullopt;
  p = reader.get(s.bytes_on_disk - stride, capture::codif::kHeaderBytes);
  if (p == nullptr || !codif_header(p, opts.syncs, last, t2) ||
      last.frame_bytes() != first.frame_bytes()) {
    return std::nullopt;
  }
  s.frame_bytes = first.frame_bytes();
  s.header_bytes = capture::codif::kHeaderBytes;
  note_frame(s, first, t1);
  note_frame(s, last, t2);
  s.records = s.bytes_on_disk / stride;
  s.flagged_invalid = 0;  // not counted without reading every header
  return s;
}

FileScan scan_file(const std::filesystem::path& path, FileKind kind, const ScanOptions& opts) {
  const int fd = ::open(path.c_str(), (opts.trim ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw sys_failure("cannot open", path);
  const FdCloser closer{fd};
  const off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) throw sys_failure("cannot seek", path);
  FileScan s;
  s.bytes_on_disk = static_cast<uint64_t>(end);
  Reader reader(fd, s.bytes_on_disk, path);
  switch (kind) {
    case FileKind::raw_codif:
      walk_codif(reader, s, opts, false);
      break;
    case FileKind::codifhdr:
      walk_codif(reader, s, opts, true);
      break;
    case FileKind::pcap:
      walk_pcap(reader, s);
      break;
    case FileKind::raw_data:
      walk_fixed(s, opts.record_bytes);
      break;
    case FileKind::raw_vdif:
      walk_vdif(reader, s, opts, false);
      break;
    case FileKind::vdifhdr:
      walk_vdif(reader, s, opts, true);
      break;
  }
  if (opts.trim && s.bytes_whole < s.bytes_on_disk) {
    if (::ftruncate(fd, static_cast<off_t>(s.bytes_whole)) != 0 || ::fsync(fd) != 0) {
      throw sys_failure("cannot cut", path);
    }
    s.trimmed = true;
  }
  return s;
}

}  // namespace rocecap::rundir
