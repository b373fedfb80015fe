#include "daemon/lib/extract/frame_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "capture/vdif/timeline.hpp"

namespace rocecap::daemon {
namespace {

namespace codif = capture::codif;
namespace vdif = capture::vdif;

constexpr std::size_t kHeadBytes = codif::kHeaderBytes;  // enough for both formats' headers

std::optional<RecordedFrame> decode_codif(const FrameFormat& format,
                                          std::span<const std::byte> bytes, uint64_t frame_bytes) {
  RecordedFrame f;
  if (!codif::decode(bytes, format.syncs, f.h)) return std::nullopt;
  const uint64_t size = frame_bytes != 0 ? frame_bytes : f.h.frame_bytes();
  if (codif::validate(f.h, size, f.t) != codif::Invalid::ok) return std::nullopt;
  f.index = codif::absolute_index(f.h, f.t);
  f.frame_bytes = size;
  f.header_bytes = codif::kHeaderBytes;
  f.invalid = f.h.invalid;
  return f;
}

std::optional<RecordedFrame> decode_vdif(const FrameFormat& format,
                                         std::span<const std::byte> bytes, uint64_t frame_bytes) {
  RecordedFrame f;
  if (!vdif::decode(bytes, f.vh)) return std::nullopt;
  const uint64_t size = frame_bytes != 0 ? frame_bytes : f.vh.frame_bytes();
  if (vdif::validate(f.vh, size, format.rate, f.vt) != vdif::Invalid::ok) return std::nullopt;
  vdif::sequencer_view(f.vh, f.vt, f.h, f.t);
  f.index = vdif::absolute_index(f.vh, f.vt);
  f.frame_bytes = size;
  f.header_bytes = f.vh.header_bytes();
  f.invalid = f.vh.invalid;
  return f;
}

}  // namespace

std::optional<RecordedFrame> decode_recorded(const FrameFormat& format,
                                             std::span<const std::byte> bytes,
                                             uint64_t frame_bytes) {
  if (format.format == capture::StreamFormat::vdif) return decode_vdif(format, bytes, frame_bytes);
  return decode_codif(format, bytes, frame_bytes);
}

bool is_fill_frame(const RecordedFrame& f, std::span<const std::byte> frame) noexcept {
  if (!f.invalid || frame.size() < f.frame_bytes) return false;
  const auto data = frame.subspan(f.header_bytes, f.frame_bytes - f.header_bytes);
  return std::all_of(data.begin(), data.end(), [](std::byte b) { return b == std::byte{0}; });
}

FrameFile::FrameFile(std::filesystem::path path, const FrameFormat& format)
    : path_(std::move(path)), format_(format) {
  fd_.reset(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd_.get() < 0) throw ExtractError(path_.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_.get(), &st) != 0)
    throw ExtractError(path_.string() + ": " + std::strerror(errno));
  if (st.st_size == 0) return;  // opened, nothing written yet: no frames
  std::array<std::byte, kHeadBytes> head{};
  const ssize_t n = ::pread(fd_.get(), head.data(), head.size(), 0);
  if (n < 0) throw ExtractError(path_.string() + ": " + std::strerror(errno));
  const auto got = std::span<const std::byte>(head).first(static_cast<std::size_t>(n));
  const std::optional<RecordedFrame> f = decode_recorded(format_, got);
  if (!f) {
    throw ExtractError(path_.string() + ": its first bytes are not a " +
                       (format.format == capture::StreamFormat::vdif ? "VDIF" : "CODIF") +
                       " frame of this run (raw files without headers, output.strip_headers, "
                       "cannot be extracted from)");
  }
  first_ = *f;
  const auto size = static_cast<uint64_t>(st.st_size);
  frames_ = size / first_.frame_bytes;
  trailing_ = size % first_.frame_bytes;
  last_index_ = first_.index;
  if (frames_ > 1) {
    const std::optional<RecordedFrame> last = at(frames_ - 1);
    if (!last)
      throw ExtractError(path_.string() + ": its last whole frame is not a frame of this run");
    last_index_ = last->index;
  }
}

std::optional<RecordedFrame> FrameFile::at(uint64_t k) const {
  std::array<std::byte, kHeadBytes> head{};
  const std::size_t want = std::min<uint64_t>(head.size(), first_.frame_bytes);
  const ssize_t n = ::pread(fd_.get(), head.data(), want, static_cast<off_t>(k * frame_bytes()));
  if (n != static_cast<ssize_t>(want)) return std::nullopt;
  return decode_recorded(format_, std::span<const std::byte>(head).first(want), frame_bytes());
}

uint64_t FrameFile::seek(uint64_t index, uint64_t* reads) const {
  if (index <= first_.index) return 0;
  if (index > last_index_) return frames_;
  auto count = [&] {
    if (reads != nullptr) ++*reads;
  };
  const uint64_t guess = index - first_.index;
  if (guess < frames_) {
    count();
    const std::optional<RecordedFrame> f = at(guess);
    if (f && f->index == index) return guess;
  }
  // Frame 0 is below `index`, the last frame is not: bisect between them.
  uint64_t lo = 0, hi = frames_ - 1;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    count();
    const std::optional<RecordedFrame> f = at(mid);
    (f && f->index >= index ? hi : lo) = mid;
  }
  return hi;
}

void FrameFile::read(uint64_t k, uint64_t n, std::span<std::byte> out) const {
  const uint64_t bytes = n * frame_bytes();
  std::size_t done = 0;
  while (done < bytes) {
    const ssize_t r = ::pread(fd_.get(), out.data() + done, bytes - done,
                              static_cast<off_t>(k * frame_bytes() + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      throw ExtractError(path_.string() + ": " +
                         (r < 0 ? std::strerror(errno) : "shorter than when it was opened"));
    }
    done += static_cast<std::size_t>(r);
  }
}

}  // namespace rocecap::daemon
