#include "writers/uring_queue.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <system_error>

#ifdef ROCECAP_HAVE_URING
#include <liburing.h>
#endif

namespace rocecap::writers {

namespace {
bool env_off(const char* name) noexcept {
  const char* v = std::getenv(name);
  if (v == nullptr) return false;
  const std::string_view s(v);
  return s == "off" || s == "0" || s == "no" || s == "false";
}
}  // namespace

bool io_uring_forced_off() noexcept {
  return env_off("ROCECAP_IO_URING");
}

bool writev_forced_off() noexcept {
  return env_off("ROCECAP_WRITEV");
}

#ifdef ROCECAP_HAVE_URING
namespace {

class LiburingQueue final : public UringQueue {
 public:
  explicit LiburingQueue(unsigned depth) : depth_(depth) {}
  ~LiburingQueue() override {
    // Writes still in flight reference the caller's buffers: wait for them before the ring
    // (and, after us, the buffers) go away. OutputFile drains before closing; this is the
    // backstop for an exception path.
    uint64_t tag;
    int64_t res;
    while (in_flight_ > 0 && wait(tag, res)) {
    }
    if (ready_) io_uring_queue_exit(&ring_);
  }
  int init() {
    const int rc = io_uring_queue_init(depth_, &ring_, 0);
    ready_ = rc == 0;
    return rc;
  }
  bool write(int fd, const void* data, std::size_t n, uint64_t offset, uint64_t tag,
             int& error) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) {  // more than `depth` in flight: the caller's bug, refused
      error = EBUSY;
      return false;
    }
    io_uring_prep_write(sqe, fd, data, static_cast<unsigned>(n), offset);
    io_uring_sqe_set_data64(sqe, tag);
    int rc;
    do {
      rc = io_uring_submit(&ring_);
    } while (rc == -EINTR);
    if (rc < 1) {
      error = rc < 0 ? -rc : EAGAIN;
      return false;
    }
    ++in_flight_;
    return true;
  }
  bool wait(uint64_t& tag, int64_t& result) override {
    if (in_flight_ == 0) return false;
    io_uring_cqe* cqe = nullptr;
    int rc;
    do {
      rc = io_uring_wait_cqe(&ring_, &cqe);
    } while (rc == -EINTR);
    if (rc < 0 || cqe == nullptr) {
      // Cannot happen with a live ring; report it as an I/O error on an unknown write.
      tag = UINT64_MAX;
      result = rc < 0 ? rc : -EIO;
      return true;
    }
    tag = io_uring_cqe_get_data64(cqe);
    result = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    --in_flight_;
    return true;
  }
  unsigned in_flight() const noexcept override { return in_flight_; }

 private:
  unsigned depth_;
  io_uring ring_{};
  bool ready_ = false;
  unsigned in_flight_ = 0;
};

}  // namespace

std::unique_ptr<UringQueue> UringQueue::create(unsigned depth, std::string& why) {
  if (io_uring_forced_off()) {
    why = "io_uring forced off (ROCECAP_IO_URING=off)";
    return nullptr;
  }
  auto q = std::make_unique<LiburingQueue>(depth == 0 ? 1 : depth);
  // ENOSYS: kernel before 5.1 or built without CONFIG_IO_URING; EPERM: seccomp (containers'
  // default profiles deny io_uring_setup) or sysctl kernel.io_uring_disabled=2 (Linux 6.6).
  if (const int rc = q->init(); rc < 0) {
    why = "io_uring_setup: " + std::generic_category().message(-rc);
    return nullptr;
  }
  return q;
}

const IoEngineProbe& probe_io_engine() {
  static const IoEngineProbe probe = [] {
    IoEngineProbe p;
    std::string why;
    p.uring = UringQueue::create(1, why) != nullptr;
    p.reason = p.uring ? "io_uring" : why;
    return p;
  }();
  return probe;
}

#else  // built without liburing

std::unique_ptr<UringQueue> UringQueue::create(unsigned, std::string& why) {
  why = "built without liburing (apt-get install liburing-dev and rebuild)";
  return nullptr;
}

const IoEngineProbe& probe_io_engine() {
  static const IoEngineProbe probe{false, "built without liburing"};
  return probe;
}

#endif

}  // namespace rocecap::writers
