#include "capture/memory/host_memory.hpp"

#include <fcntl.h>
#include <numaif.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace rocecap::capture::memory {
namespace {

std::size_t round_up(std::size_t n, std::size_t unit) {
  return (n + unit - 1) / unit * unit;
}

// The memory is a memfd mapped shared, not an anonymous private mapping, so that a consumer
// process (doc/consumers.md) can be handed a read-only descriptor of the same pages. Without a
// NUMA node the kernel prefaults at mmap time; with one, pages must be faulted in only after
// mbind, so that they land on that node. Returns MAP_FAILED with errno set, and the memfd in
// `fd` (closed on failure).
void* map(std::size_t bytes, bool huge, bool populate, int& fd) {
  fd = memfd_create(huge ? "rocecap-slab-huge" : "rocecap-slab",
                    MFD_CLOEXEC | MFD_ALLOW_SEALING | (huge ? MFD_HUGETLB : 0u));
  if (fd < 0) return MAP_FAILED;
  int flags = MAP_SHARED;
  if (populate) flags |= MAP_POPULATE;
  void* p = MAP_FAILED;
  if (ftruncate(fd, static_cast<off_t>(bytes)) == 0)
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    close(fd);
    fd = -1;
    errno = err;
  }
  return p;
}

// Once mapped, nobody may write the memory any other way than through this mapping: not a
// consumer handed a read-only descriptor that reopens /proc/self/fd/N read-write (another uid,
// or this one), nor anyone who maps it shared and writable, nor write(2). memfd_create(2) and
// fcntl(2): F_SEAL_FUTURE_WRITE refuses new writable shared mappings and writes while existing
// writable mappings go on working (Linux 5.1); F_SEAL_SEAL keeps the seals from being undone.
// Mode 0400 besides: only the owner may even reopen it, and only for reading. 0 or the errno.
int seal(int fd) {
  int err = 0;
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0)
    err = errno;
  if (fchmod(fd, 0400) != 0 && err == 0) err = errno;
  return err;
}

[[noreturn]] void fail(int err, const std::string& what, std::size_t bytes) {
  throw std::system_error(err, std::generic_category(),
                          what + " of " + std::to_string(bytes) + " bytes");
}

// The raw system call: libnuma's wrapper would add a link dependency for one call.
int prefer_node(void* p, std::size_t bytes, int node) {
  constexpr int kMaskBits = 1024;
  if (node < 0 || node >= kMaskBits) return EINVAL;
  unsigned long mask[kMaskBits / (8 * sizeof(unsigned long))] = {};
  mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
  if (syscall(SYS_mbind, p, bytes, MPOL_PREFERRED, mask, kMaskBits + 1, 0) == 0) return 0;
  return errno;
}

void touch_pages(std::byte* p, std::size_t bytes, std::size_t step) {
  for (std::size_t off = 0; off < bytes; off += step) {
    *reinterpret_cast<volatile std::byte*>(p + off) = std::byte{0};
  }
}

std::string errno_name(int err) {
  const char* name = strerrorname_np(err);
  return name != nullptr ? name : std::to_string(err);
}

}  // namespace

HostMemory::HostMemory(std::size_t bytes, const HostMemoryOptions& options) {
  if (bytes == 0) bytes = 1;
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const bool populate = options.numa_node < 0;
  void* p = MAP_FAILED;
  if (options.huge_pages != Want::no) {
    size_ = round_up(bytes, kHugePageBytes);
    p = map(size_, true, populate, fd_);
    if (p == MAP_FAILED) {
      huge_errno_ = errno;
      if (options.huge_pages == Want::require) fail(huge_errno_, "mmap(MAP_HUGETLB)", size_);
    }
  }
  huge_pages_ = p != MAP_FAILED;
  if (!huge_pages_) {
    size_ = round_up(bytes, page);
    p = map(size_, false, populate, fd_);
    if (p == MAP_FAILED) fail(errno, "mmap", size_);
  }
  data_ = static_cast<std::byte*>(p);
  seal_errno_ = seal(fd_);
  if (!populate) {
    numa_errno_ = prefer_node(data_, size_, options.numa_node);
    touch_pages(data_, size_, huge_pages_ ? kHugePageBytes : page);
  }
  if (options.lock == Want::no) return;
  locked_ = mlock(data_, size_) == 0;
  if (locked_) return;
  lock_errno_ = errno;
  if (options.lock == Want::require) {
    munmap(data_, size_);
    close(fd_);
    fail(lock_errno_, "mlock (needs CAP_IPC_LOCK or a larger RLIMIT_MEMLOCK)", size_);
  }
}

HostMemory::~HostMemory() {
  if (data_ != nullptr) munmap(data_, size_);  // also unlocks
  if (fd_ >= 0) close(fd_);
}

std::string HostMemory::describe() const {
  const double mib = static_cast<double>(size_) / double(1 << 20);
  std::string s = std::to_string(mib);
  s.resize(s.find('.') + 2);
  s += " MiB, huge pages: ";
  s += huge_pages_ ? "yes" : "no";
  if (huge_errno_ != 0) s += " (" + errno_name(huge_errno_) + ")";
  s += ", locked: ";
  s += locked_ ? "yes" : "no";
  if (lock_errno_ != 0) s += " (" + errno_name(lock_errno_) + ")";
  if (numa_errno_ != 0) s += ", numa node: not bound (" + errno_name(numa_errno_) + ")";
  if (seal_errno_ != 0) s += ", not sealed against writes (" + errno_name(seal_errno_) + ")";
  return s;
}

}  // namespace rocecap::capture::memory
