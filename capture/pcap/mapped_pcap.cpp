#include "capture/pcap/mapped_pcap.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace rocecap::pcapsrc {
namespace {

constexpr std::size_t kFileHeader = 24;
constexpr std::size_t kRecordHeader = 16;
constexpr uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr uint32_t kMagicNano = 0xa1b23c4d;

}  // namespace

std::optional<MappedPcap> MappedPcap::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  void* p = MAP_FAILED;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::size_t>(st.st_size) >= kFileHeader) {
    p = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  }
  ::close(fd);  // the mapping keeps the file
  if (p == MAP_FAILED) return std::nullopt;
  const auto size = static_cast<std::size_t>(st.st_size);
  // Read once, front to back: let the kernel read ahead and drop pages behind.
  ::madvise(p, size, MADV_SEQUENTIAL);
  uint32_t magic = 0;
  std::memcpy(&magic, p, sizeof magic);
  const uint32_t swapped_magic = __builtin_bswap32(magic);
  const bool swapped = swapped_magic == kMagicMicro || swapped_magic == kMagicNano;
  if (!swapped && magic != kMagicMicro && magic != kMagicNano) {
    ::munmap(p, size);
    return std::nullopt;
  }
  const bool nano = (swapped ? swapped_magic : magic) == kMagicNano;
  return MappedPcap(static_cast<const std::byte*>(p), size, swapped, nano);
}

MappedPcap::~MappedPcap() {
  if (base_ != nullptr) ::munmap(const_cast<std::byte*>(base_), size_);
}

MappedPcap::MappedPcap(MappedPcap&& o) noexcept
    : base_(o.base_), size_(o.size_), pos_(o.pos_), swapped_(o.swapped_), nano_(o.nano_) {
  o.base_ = nullptr;
}

uint32_t MappedPcap::u32(std::size_t at) const noexcept {
  uint32_t v;
  std::memcpy(&v, base_ + at, sizeof v);
  return swapped_ ? __builtin_bswap32(v) : v;
}

MappedPcap::Next MappedPcap::next(MappedRecord& out) noexcept {
  if (pos_ == size_) return Next::end;
  if (size_ - pos_ < kRecordHeader) return Next::truncated;
  const uint32_t caplen = u32(pos_ + 8);
  if (size_ - pos_ - kRecordHeader < caplen) return Next::truncated;
  const int64_t frac = u32(pos_ + 4);
  out.timestamp_ns = int64_t{u32(pos_)} * 1'000'000'000 + (nano_ ? frac : frac * 1000);
  out.wire_bytes = u32(pos_ + 12);
  out.captured = {base_ + pos_ + kRecordHeader, caplen};
  pos_ += kRecordHeader + caplen;
  return Next::record;
}

}  // namespace rocecap::pcapsrc
