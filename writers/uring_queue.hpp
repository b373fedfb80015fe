// io_uring for the output files: a small submission queue per writer that keeps several
// O_DIRECT writes of one file in flight (liburing, Debian's liburing-dev). Built only where
// liburing was found at configure time (ROCECAP_HAVE_URING); elsewhere, and where the kernel
// refuses io_uring_setup (ENOSYS on old kernels, EPERM under seccomp or with
// kernel.io_uring_disabled), create() says why and the file is written with write() instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace rocecap::writers {

class UringQueue {
 public:
  // A queue for `depth` writes in flight; null with the reason in `why` when io_uring cannot
  // be used (not built, refused by the kernel, forced off by ROCECAP_IO_URING=off).
  static std::unique_ptr<UringQueue> create(unsigned depth, std::string& why);
  virtual ~UringQueue() = default;

  // Queues and submits one write of `n` bytes at `offset`; false (errno in `error`) when the
  // kernel refused the submission (the write was not started).
  virtual bool write(int fd, const void* data, std::size_t n, uint64_t offset, uint64_t tag,
                     int& error) = 0;
  // Waits for one completion: the tag given to write() and the result (bytes written, or
  // -errno). False when nothing is in flight.
  virtual bool wait(uint64_t& tag, int64_t& result) = 0;
  virtual unsigned in_flight() const noexcept = 0;
};

// Whether output files can use io_uring here, and if not why: probed once per process (a ring
// of depth 1 is set up and torn down). For the run log.
struct IoEngineProbe {
  bool uring = false;
  std::string reason;  // "io_uring" or why not: "not built with liburing", "io_uring_setup: ..."
};
const IoEngineProbe& probe_io_engine();

// ROCECAP_IO_URING=off (or 0, no, false) forces the write() path: tests and comparisons.
bool io_uring_forced_off() noexcept;
// ROCECAP_WRITEV=off: CaptureWriter copies every byte into the staging buffer (the path before
// writev from ring slots), for comparisons; the files are the same bytes.
bool writev_forced_off() noexcept;

}  // namespace rocecap::writers
