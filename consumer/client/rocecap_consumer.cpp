// rocecap consumer client (rocecap_consumer.hpp): the socket handshake with rocecapd, the
// read-only mappings of each stream's control memory and slabs, and the lock-free reader of the
// descriptor log. Only the C++20 standard library and Linux.
#include "rocecap_consumer.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace rocecap::consumer {
namespace {

// How long the constructor waits for each handshake message of rocecapd.
constexpr int kHandshakeTimeoutSeconds = 30;
// Most descriptors accepted with one message (a stream message carries 2 or 3).
constexpr int kMaxFdsPerMessage = 8;

std::string errno_text(int err) {
  return std::strerror(err);
}

// Closes a file descriptor it owns.
class Fd {
 public:
  explicit Fd(int fd = -1) noexcept : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// One message of rocecapd with the descriptors that came with it (closed with the message).
struct Message {
  std::string text;
  std::vector<Fd> fds;
  bool eof = false;
};

// Receives one message. flags: MSG_DONTWAIT or 0. Returns false when nothing is there
// (EAGAIN/EWOULDBLOCK); throws std::runtime_error on other errors, a truncated message or
// truncated descriptors (whatever arrived is closed).
bool receive(int fd, int flags, Message& m, const std::string& path) {
  m = Message{};
  char buf[abi::kMessageBytes + 1];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(fd, &msg, flags | MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if (flags & MSG_DONTWAIT) return false;
      throw std::runtime_error("rocecap consumer: no answer from rocecapd at " + path + " within " +
                               std::to_string(kHandshakeTimeoutSeconds) + " s");
    }
    throw std::runtime_error("rocecap consumer: receiving from rocecapd at " + path + ": " +
                             errno_text(err));
  }
  // Take ownership of every descriptor first, so that none leaks whatever comes next.
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int received;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      m.fds.emplace_back(received);
    }
  }
  if (msg.msg_flags & MSG_CTRUNC) {
    throw std::runtime_error("rocecap consumer: rocecapd at " + path +
                             " sent more file descriptors with one message than expected");
  }
  if ((msg.msg_flags & MSG_TRUNC) || static_cast<std::size_t>(n) > abi::kMessageBytes) {
    throw std::runtime_error("rocecap consumer: rocecapd at " + path +
                             " sent a message longer than " + std::to_string(abi::kMessageBytes) +
                             " bytes");
  }
  m.eof = n == 0;
  m.text.assign(buf, static_cast<std::size_t>(n));
  while (!m.text.empty() && (m.text.back() == '\n' || m.text.back() == '\0'))
    m.text.pop_back();
  return true;
}

// "word key=value key=value": the first word and the pairs.
std::string_view first_word(std::string_view s) {
  return s.substr(0, s.find(' '));
}

std::map<std::string, std::string, std::less<>> pairs(std::string_view s) {
  std::map<std::string, std::string, std::less<>> out;
  std::size_t at = s.find(' ');
  while (at != std::string_view::npos && at < s.size()) {
    const std::size_t start = s.find_first_not_of(' ', at);
    if (start == std::string_view::npos) break;
    const std::size_t end = std::min(s.find(' ', start), s.size());
    const std::string_view token = s.substr(start, end - start);
    const std::size_t eq = token.find('=');
    if (eq != std::string_view::npos) {
      out.emplace(std::string(token.substr(0, eq)), std::string(token.substr(eq + 1)));
    }
    at = end;
  }
  return out;
}

uint64_t to_u64(const std::map<std::string, std::string, std::less<>>& kv, std::string_view key,
                const std::string& what) {
  const auto it = kv.find(key);
  if (it == kv.end() || it->second.empty() ||
      it->second.find_first_not_of("0123456789") != std::string::npos) {
    throw std::runtime_error(what + ": no number " + std::string(key) + "=");
  }
  return std::stoull(it->second);
}

std::string value(const std::map<std::string, std::string, std::less<>>& kv, std::string_view key) {
  const auto it = kv.find(key);
  return it == kv.end() ? std::string() : it->second;
}

// A word of the hello message: no blanks, no '=' or ',' (which separate), printable ASCII.
bool plain_word(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return c > ' ' && c < 127 && c != ',' && c != '=';
  });
}

// Maps `fd` read-only and shared, its size from fstat; an empty file gives an empty span.
std::span<const std::byte> map_fd(int fd, const std::string& what) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    throw std::runtime_error("rocecap consumer: fstat of " + what + ": " + errno_text(errno));
  }
  if (st.st_size <= 0) return {};
  const auto size = static_cast<std::size_t>(st.st_size);
  // Prefaulted: the slabs are rocecapd's (already resident), so this only builds the page
  // tables now; otherwise the first read of every page takes a fault on the reading path (a
  // consumer read one frame in two page faults: 9x slower than memcpy, bench/consumer_bench).
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) {
    throw std::runtime_error("rocecap consumer: mmap of " + what + " (" + std::to_string(size) +
                             " bytes): " + errno_text(errno));
  }
  return {static_cast<const std::byte*>(p), size};
}

void unmap_span(std::span<const std::byte>& s) noexcept {
  if (!s.empty()) ::munmap(const_cast<std::byte*>(s.data()), s.size());
  s = {};
}

// The non-atomic part of a descriptor, copied out under the sequence lock.
struct DescriptorCopy {
  uint64_t frame_index;
  int64_t timestamp_ns;
  uint64_t generation;
  uint32_t slot;
  uint16_t flags;
  uint16_t header_len;
  uint32_t data0_off, data0_len;
  uint32_t data1_off, data1_len;
  uint64_t retention_pos;
  uint8_t header[64];
};
static_assert(sizeof(DescriptorCopy) == sizeof(abi::Descriptor) - sizeof(uint64_t));
static_assert(offsetof(abi::Descriptor, frame_index) == sizeof(uint64_t));
static_assert(offsetof(abi::Descriptor, header) - sizeof(uint64_t) ==
              offsetof(DescriptorCopy, header));

}  // namespace

// ---------------------------------------------------------------------------------------
// Stream
// ---------------------------------------------------------------------------------------

Stream::Stream(StreamInfo info, int control_fd, int header_fd, int payload_fd)
    : info_(std::move(info)) {
  const std::string& n = info_.name;
  try {
    control_ = map_fd(control_fd, "the control memory of stream " + n);
    if (control_.size() < sizeof(abi::ControlHeader)) {
      throw std::runtime_error("rocecap consumer: stream " + n + ": control memory of " +
                               std::to_string(control_.size()) + " bytes, less than its header");
    }
    ctl_ = reinterpret_cast<const abi::ControlHeader*>(control_.data());
    const abi::ControlHeader& c = *ctl_;
    auto bad = [&](const std::string& why) {
      return std::runtime_error("rocecap consumer: stream " + n + ": control memory: " + why);
    };
    if (c.magic != abi::kMagic) {
      char hex[64];
      std::snprintf(hex, sizeof hex, "magic 0x%016llx, expected 0x%016llx",
                    static_cast<unsigned long long>(c.magic),
                    static_cast<unsigned long long>(abi::kMagic));
      throw bad(hex);
    }
    if (c.version != abi::kVersion) {
      throw bad("version " + std::to_string(c.version) + ", this client speaks version " +
                std::to_string(abi::kVersion));
    }
    if (c.header_size != sizeof(abi::ControlHeader)) {
      throw bad("header_size " + std::to_string(c.header_size) + ", expected " +
                std::to_string(sizeof(abi::ControlHeader)));
    }
    if (c.control_bytes > control_.size()) {
      throw bad("control_bytes " + std::to_string(c.control_bytes) + " beyond the mapping of " +
                std::to_string(control_.size()) + " bytes");
    }
    if (c.log_capacity == 0 || (c.log_capacity & (c.log_capacity - 1)) != 0) {
      throw bad("log_capacity " + std::to_string(c.log_capacity) + " is not a power of two");
    }
    const uint64_t size = control_.size();
    if (c.generations_offset % alignof(uint64_t) != 0 ||
        c.generations_offset < sizeof(abi::ControlHeader) || c.generations_offset > size ||
        uint64_t{c.slots} * sizeof(uint64_t) > size - c.generations_offset) {
      throw bad("generations_offset " + std::to_string(c.generations_offset) + " for " +
                std::to_string(c.slots) + " slots outside the mapping of " + std::to_string(size) +
                " bytes");
    }
    if (c.log_offset % alignof(abi::Descriptor) != 0 || c.log_offset % alignof(uint64_t) != 0 ||
        c.log_offset < sizeof(abi::ControlHeader) || c.log_offset > size ||
        uint64_t{c.log_capacity} * sizeof(abi::Descriptor) > size - c.log_offset) {
      throw bad("log_offset " + std::to_string(c.log_offset) + " for " +
                std::to_string(c.log_capacity) + " descriptors outside the mapping of " +
                std::to_string(size) + " bytes");
    }
    const bool gpu_message = info_.payload_memory == "gpu";
    if ((c.payload_memory == 1) != gpu_message) {
      throw bad("payload_memory " + std::to_string(c.payload_memory) +
                " differs from the stream message (" + info_.payload_memory + ")");
    }
    gens_ = reinterpret_cast<const std::atomic<uint64_t>*>(control_.data() + c.generations_offset);
    log_ = reinterpret_cast<const abi::Descriptor*>(control_.data() + c.log_offset);

    header_ = map_fd(header_fd, "the header slab of stream " + n);
    if (c.header_slab_bytes > header_.size()) {
      throw bad("header_slab_bytes " + std::to_string(c.header_slab_bytes) +
                " beyond the mapped header slab of " + std::to_string(header_.size()) + " bytes");
    }
    if (!gpu_message) {
      if (payload_fd < 0) throw bad("host payload memory but no payload slab descriptor");
      payload_ = map_fd(payload_fd, "the payload slab of stream " + n);
      if (c.payload_slab_bytes > payload_.size()) {
        throw bad("payload_slab_bytes " + std::to_string(c.payload_slab_bytes) +
                  " beyond the mapped payload slab of " + std::to_string(payload_.size()) +
                  " bytes");
      }
    }
  } catch (...) {
    unmap();
    throw;
  }
}

Stream::~Stream() {
  unmap();
}

Stream::Stream(Stream&& o) noexcept
    : info_(std::move(o.info_)),
      control_(std::exchange(o.control_, {})),
      header_(std::exchange(o.header_, {})),
      payload_(std::exchange(o.payload_, {})),
      ctl_(std::exchange(o.ctl_, nullptr)),
      gens_(std::exchange(o.gens_, nullptr)),
      log_(std::exchange(o.log_, nullptr)),
      next_pos_(o.next_pos_),
      expect_index_(o.expect_index_),
      have_index_(o.have_index_),
      read_(o.read_),
      missed_(o.missed_),
      last_missed_(o.last_missed_),
      ack_pos_(o.ack_pos_) {}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    unmap();
    info_ = std::move(o.info_);
    control_ = std::exchange(o.control_, {});
    header_ = std::exchange(o.header_, {});
    payload_ = std::exchange(o.payload_, {});
    ctl_ = std::exchange(o.ctl_, nullptr);
    gens_ = std::exchange(o.gens_, nullptr);
    log_ = std::exchange(o.log_, nullptr);
    next_pos_ = o.next_pos_;
    expect_index_ = o.expect_index_;
    have_index_ = o.have_index_;
    read_ = o.read_;
    missed_ = o.missed_;
    last_missed_ = o.last_missed_;
    ack_pos_ = o.ack_pos_;
  }
  return *this;
}

void Stream::unmap() noexcept {
  unmap_span(control_);
  unmap_span(header_);
  unmap_span(payload_);
  ctl_ = nullptr;
  gens_ = nullptr;
  log_ = nullptr;
}

const abi::ControlHeader& Stream::control() const noexcept {
  return *ctl_;
}

void Stream::seek_live() noexcept {
  next_pos_ = published();
  have_index_ = false;
}

// Live from where rocecapd attached us: what it published since (capture may start the moment
// we count as attached) is ours too.
void Stream::seek_attached() noexcept {
  next_pos_ = std::min(info_.position, published());
  have_index_ = false;
}

void Stream::seek_oldest() noexcept {
  const uint64_t wp = published();
  const uint64_t cap = ctl_ == nullptr ? 0 : ctl_->log_capacity;
  // The entry of wp - cap may be being overwritten by the writer's next one.
  next_pos_ = wp >= cap ? wp - cap + 1 : 0;
  have_index_ = false;
}

uint64_t Stream::published() const noexcept {
  return ctl_ == nullptr ? 0 : ctl_->write_pos.load(std::memory_order_acquire);
}

Event Stream::next(Frame& f) noexcept {
  if (ctl_ == nullptr) return Event::ended;
  const uint64_t cap = ctl_->log_capacity;
  // Reports `count` positions from next_pos_ on as missed and moves past them.
  auto missed = [&](uint64_t first_index, uint64_t count) {
    f = Frame{};
    f.position = next_pos_;
    f.frame_index = first_index;
    next_pos_ += count;
    expect_index_ = first_index + count;
    have_index_ = true;
    missed_ += count;
    last_missed_ = count;
    return Event::missed;
  };
  // Reads the descriptor at `pos` under its sequence lock; false if it is not (or no longer)
  // the one of `pos`.
  auto read_at = [&](uint64_t pos, DescriptorCopy& out) {
    const abi::Descriptor& d = log_[pos & (cap - 1)];
    if (d.seq.load(std::memory_order_acquire) != pos) return false;
    std::memcpy(&out, reinterpret_cast<const std::byte*>(&d) + sizeof(uint64_t), sizeof out);
    std::atomic_thread_fence(std::memory_order_acquire);
    return d.seq.load(std::memory_order_relaxed) == pos;
  };

  uint64_t wp = ctl_->write_pos.load(std::memory_order_acquire);
  if (next_pos_ >= wp) {
    if (ctl_->state.load(std::memory_order_acquire) != abi::kEnded) return Event::none;
    wp = ctl_->write_pos.load(std::memory_order_acquire);  // final once kEnded is seen
    if (next_pos_ >= wp) return Event::ended;
  }
  const uint64_t p = next_pos_;
  DescriptorCopy d;
  if (!read_at(p, d)) {
    wp = ctl_->write_pos.load(std::memory_order_acquire);
    // Being written and not published yet: come back later.
    if (p + cap > wp) return Event::none;
    // Overwritten (before or while it was copied): go on at the oldest entry the writer is not
    // about to overwrite.
    const uint64_t resume = std::max(p + 1, wp - cap + 1);
    const uint64_t count = resume - p;
    if (have_index_) return missed(expect_index_, count);
    // Nothing handed out yet: the index follows from the first readable descriptor (or, when
    // that one is gone too, from the informational index of descriptor 0).
    DescriptorCopy first;
    if (resume < wp && read_at(resume, first)) return missed(first.frame_index - count, count);
    return missed(ctl_->frame_index_base.load(std::memory_order_relaxed) + p, count);
  }

  const bool fill = (d.flags & abi::kFill) != 0 || d.slot == abi::kNoSlot;
  bool usable = d.header_len <= sizeof d.header;
  const std::byte* data0 = nullptr;
  const std::byte* data1 = nullptr;
  uint64_t data1_offset = 0;
  if (usable && !fill) {
    const uint64_t slot = d.slot;
    usable = slot < ctl_->slots && gens_[slot].load(std::memory_order_acquire) == d.generation;
    // A slot reused already (torn), or a descriptor outside the slabs: missed, never read.
    const uint64_t h = slot * ctl_->header_stride + d.data0_off;
    if (usable && d.data0_len > 0) {
      usable = uint64_t{d.data0_off} + d.data0_len <= ctl_->header_stride &&
               h + d.data0_len <= header_.size();
      if (usable) data0 = header_.data() + h;
    }
    data1_offset = slot * ctl_->payload_stride + d.data1_off;
    if (usable && !payload_.empty() && d.data1_len > 0) {
      usable = uint64_t{d.data1_off} + d.data1_len <= ctl_->payload_stride &&
               data1_offset + d.data1_len <= payload_.size();
      if (usable) data1 = payload_.data() + data1_offset;
    }
  }
  if (!usable) return missed(d.frame_index, 1);

  f.position = p;
  f.frame_index = d.frame_index;
  f.timestamp_ns = d.timestamp_ns;
  f.flags = d.flags;
  std::memcpy(f.header_copy.data(), d.header, sizeof d.header);
  f.header = std::span<const std::byte>(f.header_copy.data(), d.header_len);
  f.data0 = data0 ? std::span<const std::byte>(data0, d.data0_len) : std::span<const std::byte>();
  f.data1 = data1 ? std::span<const std::byte>(data1, d.data1_len) : std::span<const std::byte>();
  f.data1_offset = data1_offset;
  f.data1_len = d.data1_len;
  f.slot = fill ? abi::kNoSlot : d.slot;
  f.generation = d.generation;
  f.retention_pos = d.retention_pos;
  ++next_pos_;
  expect_index_ = d.frame_index + 1;
  have_index_ = true;
  ++read_;
  return Event::frame;
}

bool Stream::still_valid(const Frame& f) const noexcept {
  std::atomic_thread_fence(std::memory_order_acquire);
  if (f.fill() || f.slot == abi::kNoSlot) return true;
  if (ctl_ == nullptr || f.slot >= ctl_->slots) return false;
  return gens_[f.slot].load(std::memory_order_relaxed) == f.generation;
}

bool Stream::copy(const Frame& f, std::span<std::byte> out) noexcept {
  if (out.size() < f.size()) return false;
  std::byte* at = out.data();
  if (!f.header.empty()) std::memcpy(at, f.header.data(), f.header.size());
  at += f.header.size();
  if (!f.data0.empty()) std::memcpy(at, f.data0.data(), f.data0.size());
  at += f.data0.size();
  if (!f.data1.empty()) {
    std::memcpy(at, f.data1.data(), f.data1.size());
  } else if (f.data1_len > 0) {
    std::memset(at, 0, f.data1_len);  // fill frame (or GPU payload: not in host memory)
  }
  if (still_valid(f)) return true;
  count_torn(f);
  return false;
}

void Stream::count_torn(const Frame&) noexcept {
  // It was counted read when next() handed it out; it is missed instead.
  if (read_ > 0) --read_;
  ++missed_;
}

void Stream::done_with(const Frame& f) noexcept {
  if (f.fill() || f.slot == abi::kNoSlot) return;  // no slot held, nothing to release
  ack_pos_ = std::max(ack_pos_, f.retention_pos + 1);
}

// ---------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------

Client::Client(const ConnectOptions& options) {
  const std::string& path = options.socket;
  const std::string at = "rocecapd at " + path;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    throw std::runtime_error("rocecap consumer: socket path '" + path +
                             "' is empty or longer than " +
                             std::to_string(sizeof addr.sun_path - 1) + " bytes");
  }
  std::memcpy(addr.sun_path, path.data(), path.size());

  std::string hello = "hello version=" + std::to_string(abi::kVersion) +
                      " mode=" + (options.mode == Mode::hold ? "hold" : "lossy") + " streams=";
  if (options.streams.empty()) {
    hello += "all";
  } else {
    for (std::size_t i = 0; i < options.streams.size(); ++i) {
      if (!plain_word(options.streams[i])) {
        throw std::runtime_error("rocecap consumer: stream name '" + options.streams[i] +
                                 "' is empty or has a blank, ',' or '='");
      }
      hello += (i ? "," : "") + options.streams[i];
    }
  }
  const std::string name = options.name.empty() ? "client" : options.name;
  if (!plain_word(name)) {
    throw std::runtime_error("rocecap consumer: client name '" + name +
                             "' must be one word without ',' or '='");
  }
  hello += " name=" + name;
  if (hello.size() > abi::kMessageBytes) {
    throw std::runtime_error("rocecap consumer: hello message longer than " +
                             std::to_string(abi::kMessageBytes) + " bytes (too many streams)");
  }

  Fd sock(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (sock.get() < 0) {
    throw std::runtime_error("rocecap consumer: socket for " + path + ": " + errno_text(errno));
  }
  int rc;
  do {
    rc = ::connect(sock.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    throw std::runtime_error("rocecap consumer: cannot connect to " + path + ": " +
                             errno_text(errno));
  }
  timeval tv{kHandshakeTimeoutSeconds, 0};
  ::setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(sock.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (::send(sock.get(), hello.data(), hello.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(hello.size())) {
    throw std::runtime_error("rocecap consumer: sending hello to " + at + ": " + errno_text(errno));
  }

  Message m;
  for (;;) {
    receive(sock.get(), 0, m, path);
    if (m.eof) {
      throw std::runtime_error("rocecap consumer: " + at +
                               " closed the connection before it was ready");
    }
    const std::string_view word = first_word(m.text);
    if (word == "error") {
      const std::string text = m.text.size() > 6 ? m.text.substr(6) : std::string("(no reason)");
      throw std::runtime_error("rocecap consumer: " + at + " refused: " + text);
    }
    const auto kv = pairs(m.text);
    if (word == "stream") {
      const std::string what = "rocecap consumer: " + at + ": stream message '" + m.text + "'";
      StreamInfo info;
      info.index = static_cast<uint32_t>(to_u64(kv, "index", what));
      info.name = value(kv, "name");
      info.format = value(kv, "format");
      info.payload_memory = value(kv, "payload_memory");
      info.cuda_ipc_handle = value(kv, "cuda_ipc");
      if (kv.count("cuda_offset")) info.cuda_offset = to_u64(kv, "cuda_offset", what);
      if (kv.count("position")) info.position = to_u64(kv, "position", what);
      if (kv.count("gpu_device"))
        info.gpu_device = static_cast<int>(to_u64(kv, "gpu_device", what));
      if (info.name.empty()) throw std::runtime_error(what + ": no name=");
      if (info.payload_memory != "host" && info.payload_memory != "gpu") {
        throw std::runtime_error(what + ": payload_memory is neither host nor gpu");
      }
      const std::size_t want = info.payload_memory == "gpu" ? 2 : 3;
      if (m.fds.size() != want) {
        throw std::runtime_error(what + ": came with " + std::to_string(m.fds.size()) +
                                 " file descriptors, expected " + std::to_string(want));
      }
      streams_.emplace_back(std::move(info), m.fds[0].get(), m.fds[1].get(),
                            want == 3 ? m.fds[2].get() : -1);
      m.fds.clear();  // mapped: the descriptors are not needed any more
      continue;
    }
    if (!m.fds.empty()) {
      throw std::runtime_error("rocecap consumer: " + at +
                               " sent file descriptors with a message other than stream: '" +
                               m.text + "'");
    }
    if (word == "ready") {
      const std::string what = "rocecap consumer: " + at + ": ready message '" + m.text + "'";
      const uint64_t count = to_u64(kv, "streams", what);
      if (count != streams_.size()) {
        throw std::runtime_error(what + ": " + std::to_string(streams_.size()) +
                                 " streams were sent");
      }
      const std::string mode = value(kv, "mode");
      if (!mode.empty() && mode != (options.mode == Mode::hold ? "hold" : "lossy")) {
        throw std::runtime_error(what + ": not the mode asked for");
      }
      break;
    }
    throw std::runtime_error("rocecap consumer: " + at + " sent an unexpected message: '" + m.text +
                             "'");
  }
  if (options.start == Start::live) {
    for (Stream& s : streams_)
      s.seek_attached();
  }
  timeval none{0, 0};
  ::setsockopt(sock.get(), SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
  ::setsockopt(sock.get(), SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
  fd_ = sock.release();
}

Client::~Client() {
  if (fd_ >= 0) ::close(fd_);
}

bool Client::report() {
  if (fd_ < 0) return false;
  auto close_with = [&](std::string reason) {
    if (detach_reason_.empty()) detach_reason_ = std::move(reason);
    ::close(fd_);
    fd_ = -1;
    return false;
  };
  // What rocecapd said meanwhile: a detach, or the end of the connection.
  for (;;) {
    Message m;
    bool got;
    try {
      got = receive(fd_, MSG_DONTWAIT, m, "");
    } catch (const std::exception& e) {
      return close_with(e.what());
    }
    if (!got) break;
    if (m.eof) return close_with("rocecapd closed the connection");
    if (first_word(m.text) == "detached") {
      std::string reason = m.text.size() > 9 ? m.text.substr(9) : std::string("(no reason)");
      return close_with(std::move(reason));
    }
    // Anything else (a later protocol's message) is not for this client: ignored.
  }
  // One line per stream, as many messages as the lines need.
  std::vector<std::string> messages(1);
  for (const Stream& s : streams_) {
    const std::string line = "ack " + std::to_string(s.info().index) + ' ' +
                             std::to_string(s.position()) + ' ' + std::to_string(s.frames_read()) +
                             ' ' + std::to_string(s.frames_missed()) + ' ' +
                             std::to_string(s.ack_position()) + '\n';
    if (messages.back().size() + line.size() > abi::kMessageBytes) messages.emplace_back();
    messages.back() += line;
  }
  for (const std::string& text : messages) {
    if (text.empty()) continue;
    ssize_t n;
    do {
      n = ::send(fd_, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS) break;  // next report
      return close_with("connection lost: " + errno_text(err));
    }
  }
  return true;
}

}  // namespace rocecap::consumer
