// The consumer client (consumer/client/rocecap_consumer.*) against a fake rocecapd that follows
// the contract of the header exactly: control memory, header and payload slabs in memfds, sent
// O_RDONLY over a SOCK_SEQPACKET socket bound in a temporary directory.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "consumer/client/rocecap_consumer.hpp"

namespace rc = rocecap::consumer;
namespace cabi = rocecap::consumer::abi;

namespace {

uint64_t round64(uint64_t v) {
  return (v + 63) / 64 * 64;
}

int count_fds() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
    ++n;
  return n;
}

// A memfd of `size` bytes, mapped read-write for the producer.
struct Region {
  int fd = -1;
  std::byte* p = nullptr;
  std::size_t size = 0;
  explicit Region(std::size_t bytes, const char* name) : size(bytes) {
    fd = ::memfd_create(name, MFD_CLOEXEC);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0)
      throw std::runtime_error("memfd");
    if (bytes > 0) {
      void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) throw std::runtime_error("mmap");
      p = static_cast<std::byte*>(m);
    }
  }
  ~Region() {
    if (p) ::munmap(p, size);
    if (fd >= 0) ::close(fd);
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  // A new O_RDONLY descriptor of the same memory, as rocecapd sends it.
  int read_only() const {
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    return ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  }
};

// The producer side of one stream, as rocecapd lays it out.
class FakeStream {
 public:
  FakeStream(uint32_t slots, uint32_t log_capacity, bool gpu = false, uint32_t header_stride = 256,
             uint32_t payload_stride = 1024)
      : gens_off_(round64(sizeof(cabi::ControlHeader))),
        log_off_(round64(gens_off_ + uint64_t{slots} * 8)),
        control_(log_off_ + uint64_t{log_capacity} * sizeof(cabi::Descriptor), "control"),
        header_(uint64_t{slots} * header_stride, "header"),
        payload_(gpu ? 0 : uint64_t{slots} * payload_stride, "payload"),
        gpu_(gpu) {
    auto* c = ctl();
    c->magic = cabi::kMagic;
    c->version = cabi::kVersion;
    c->header_size = sizeof(cabi::ControlHeader);
    c->slots = slots;
    c->log_capacity = log_capacity;
    c->header_stride = header_stride;
    c->payload_stride = payload_stride;
    c->header_slab_bytes = header_.size;
    c->payload_slab_bytes = gpu ? uint64_t{slots} * payload_stride : payload_.size;
    c->payload_memory = gpu ? 1 : 0;
    c->format = 0;
    c->generations_offset = gens_off_;
    c->log_offset = log_off_;
    c->control_bytes = control_.size;
  }
  cabi::ControlHeader* ctl() { return reinterpret_cast<cabi::ControlHeader*>(control_.p); }
  std::atomic<uint64_t>* gens() {
    return reinterpret_cast<std::atomic<uint64_t>*>(control_.p + gens_off_);
  }
  cabi::Descriptor* log() { return reinterpret_cast<cabi::Descriptor*>(control_.p + log_off_); }
  bool gpu() const { return gpu_; }
  const Region& control() const { return control_; }
  const Region& header_slab() const { return header_; }
  const Region& payload_slab() const { return payload_; }

  // Publishes one frame into `slot` (header 64 bytes, data0_len bytes in the header slot after
  // it, data1_len bytes in the payload slot) whose bytes are a function of frame_index.
  uint64_t publish(uint64_t frame_index, uint32_t slot, uint32_t data0_len = 32,
                   uint32_t data1_len = 512, uint16_t flags = 0) {
    const uint64_t gen = gens()[slot].fetch_add(1, std::memory_order_release) + 1;
    std::byte* h = header_.p + uint64_t{slot} * ctl()->header_stride;
    for (uint32_t i = 0; i < data0_len; ++i)
      h[64 + i] = byte_of(frame_index, i);
    if (!gpu_) {
      std::byte* d = payload_.p + uint64_t{slot} * ctl()->payload_stride;
      for (uint32_t i = 0; i < data1_len; ++i)
        d[i] = byte_of(frame_index, 1000 + i);
    }
    cabi::Descriptor& d = begin();
    d.frame_index = frame_index;
    d.timestamp_ns = static_cast<int64_t>(frame_index) * 1000;
    d.generation = gen;
    d.slot = slot;
    d.flags = flags;
    d.header_len = 64;
    d.data0_off = 64;
    d.data0_len = data0_len;
    d.data1_off = 0;
    d.data1_len = data1_len;
    d.retention_pos = 10'000 + frame_index;
    for (int i = 0; i < 64; ++i)
      d.header[i] = static_cast<uint8_t>(frame_index + i);
    return finish();
  }
  uint64_t fill(uint64_t frame_index, uint32_t data1_len = 544) {
    cabi::Descriptor& d = begin();
    d.frame_index = frame_index;
    d.timestamp_ns = 0;
    d.generation = 0;
    d.slot = cabi::kNoSlot;
    d.flags = cabi::kFill;
    d.header_len = 64;
    d.data0_off = d.data0_len = d.data1_off = 0;
    d.data1_len = data1_len;
    d.retention_pos = 0;
    for (int i = 0; i < 64; ++i)
      d.header[i] = static_cast<uint8_t>(0xF0 + i);
    return finish();
  }
  void tear(uint32_t slot) { gens()[slot].fetch_add(1, std::memory_order_release); }
  void end() { ctl()->state.store(cabi::kEnded, std::memory_order_release); }

  static std::byte byte_of(uint64_t frame_index, uint32_t i) {
    return static_cast<std::byte>((frame_index * 31 + i * 7) & 0xff);
  }

 private:
  cabi::Descriptor& begin() {
    pos_ = ctl()->write_pos.load(std::memory_order_relaxed);
    cabi::Descriptor& d = log()[pos_ % ctl()->log_capacity];
    d.seq.store(cabi::kWriting, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    return d;
  }
  uint64_t finish() {
    log()[pos_ % ctl()->log_capacity].seq.store(pos_, std::memory_order_release);
    ctl()->write_pos.store(pos_ + 1, std::memory_order_release);
    return pos_;
  }

  uint64_t gens_off_, log_off_;
  Region control_, header_, payload_;
  bool gpu_;
  uint64_t pos_ = 0;
};

bool send_message(int fd, const std::string& text, const std::vector<int>& fds = {}) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)]{};
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    if (c == nullptr) return false;
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  return ::sendmsg(fd, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
}

std::string receive_message(int fd) {
  char buf[cabi::kMessageBytes + 1];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  return n <= 0 ? std::string() : std::string(buf, static_cast<std::size_t>(n));
}

// Sends one stream message with its descriptors, opened O_RDONLY and closed again.
void send_stream(int conn, const FakeStream& s, uint32_t index, const std::string& name) {
  std::vector<int> fds{s.control().read_only(), s.header_slab().read_only()};
  std::string text = "stream index=" + std::to_string(index) + " name=" + name + " format=codif";
  if (s.gpu()) {
    text += " payload_memory=gpu cuda_ipc=00ff gpu_device=1";
  } else {
    text += " payload_memory=host";
    fds.push_back(s.payload_slab().read_only());
  }
  send_message(conn, text, fds);
  for (int fd : fds)
    ::close(fd);
}

// A fake rocecapd: a SOCK_SEQPACKET socket bound in a temporary directory; the first connection
// is served by `serve` in a thread (the hello message is handed to it).
class FakeServer {
 public:
  using Serve = std::function<void(int conn, const std::string& hello)>;
  FakeServer() {
    char tmpl[] = "/tmp/rocecap-consumer-test-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp");
    dir_ = tmpl;
    path_ = dir_ + "/consumers.sock";
    listen_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    if (::bind(listen_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_, 4) != 0) {
      throw std::runtime_error("bind/listen");
    }
  }
  ~FakeServer() {
    join();
    ::close(listen_);
    std::filesystem::remove_all(dir_);
  }
  void start(Serve serve) {
    thread_ = std::thread([this, serve = std::move(serve)] {
      const int conn = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) return;
      hello_ = receive_message(conn);
      serve(conn, hello_);
      ::close(conn);
    });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  const std::string& path() const { return path_; }
  const std::string& hello() const { return hello_; }

 private:
  std::string dir_, path_, hello_;
  int listen_ = -1;
  std::thread thread_;
};

std::string ready(int streams, const char* mode = "lossy") {
  return "ready streams=" + std::to_string(streams) + " mode=" + mode + " hold_frames=0 hold_ms=0";
}

// Serves `streams`, then acknowledges what arrives until the client closes.
FakeServer::Serve serve_streams(std::vector<FakeStream*> streams, const char* mode = "lossy") {
  return [streams, mode](int conn, const std::string&) {
    for (std::size_t i = 0; i < streams.size(); ++i) {
      send_stream(conn, *streams[i], static_cast<uint32_t>(3 + i),
                  "ant0" + std::to_string(i + 1) + "@239.17.0.1:36001");
    }
    send_message(conn, ready(static_cast<int>(streams.size()), mode));
    while (!receive_message(conn).empty()) {
    }
  };
}

rc::ConnectOptions options(const FakeServer& server) {
  rc::ConnectOptions o;
  o.socket = server.path();
  o.name = "test";
  return o;
}

std::vector<std::byte> expected_frame(const FakeStream&, uint64_t index, uint32_t d0, uint32_t d1) {
  std::vector<std::byte> out;
  for (int i = 0; i < 64; ++i)
    out.push_back(static_cast<std::byte>(index + i));
  for (uint32_t i = 0; i < d0; ++i)
    out.push_back(FakeStream::byte_of(index, i));
  for (uint32_t i = 0; i < d1; ++i)
    out.push_back(FakeStream::byte_of(index, 1000 + i));
  return out;
}

}  // namespace

TEST(ConsumerClient, ReadsFramesFillsTornFramesAndEnd) {
  FakeStream s(8, 16);
  FakeServer server;
  server.start(serve_streams({&s}));
  rc::Client client(options(server));
  ASSERT_EQ(client.streams().size(), 1u);
  rc::Stream& st = client.streams()[0];
  EXPECT_EQ(st.info().index, 3u);
  EXPECT_EQ(st.info().name, "ant01@239.17.0.1:36001");
  EXPECT_EQ(st.info().format, "codif");
  EXPECT_EQ(st.info().payload_memory, "host");
  EXPECT_EQ(server.hello(), "hello version=1 mode=lossy streams=all name=test");

  rc::Frame f;
  EXPECT_EQ(st.next(f), rc::Event::none);  // nothing published yet
  for (uint64_t i = 0; i < 5; ++i)
    s.publish(100 + i, static_cast<uint32_t>(i));
  s.fill(105);
  s.publish(106, 5);
  s.tear(5);  // the slot was reused after publishing: 106 must never come out as a frame
  s.publish(107, 6, 16, 100);

  std::vector<std::byte> buf(4096);
  for (uint64_t i = 0; i < 5; ++i) {
    ASSERT_EQ(st.next(f), rc::Event::frame);
    EXPECT_EQ(f.position, i);
    EXPECT_EQ(f.frame_index, 100 + i);
    EXPECT_EQ(f.timestamp_ns, static_cast<int64_t>((100 + i) * 1000));
    EXPECT_FALSE(f.fill());
    EXPECT_EQ(f.header.size(), 64u);
    EXPECT_EQ(f.data0.size(), 32u);
    EXPECT_EQ(f.data1.size(), 512u);
    EXPECT_EQ(f.data1_len, 512u);
    EXPECT_EQ(f.data1_offset, i * 1024);
    EXPECT_EQ(f.size(), 64u + 32 + 512);
    EXPECT_TRUE(st.still_valid(f));
    ASSERT_TRUE(st.copy(f, buf));
    const auto want = expected_frame(s, 100 + i, 32, 512);
    EXPECT_TRUE(std::equal(want.begin(), want.end(), buf.begin())) << "frame " << 100 + i;
  }
  ASSERT_EQ(st.next(f), rc::Event::frame);  // the fill frame
  EXPECT_TRUE(f.fill());
  EXPECT_EQ(f.frame_index, 105u);
  EXPECT_EQ(f.slot, cabi::kNoSlot);
  EXPECT_TRUE(f.data0.empty());
  EXPECT_TRUE(f.data1.empty());
  EXPECT_EQ(f.data1_len, 544u);
  EXPECT_EQ(f.size(), 64u + 544);
  EXPECT_TRUE(st.still_valid(f));
  std::fill(buf.begin(), buf.end(), std::byte{0x55});
  ASSERT_TRUE(st.copy(f, buf));
  EXPECT_EQ(buf[0], std::byte{0xF0});
  EXPECT_TRUE(std::all_of(buf.begin() + 64, buf.begin() + 64 + 544,
                          [](std::byte b) { return b == std::byte{0}; }));

  ASSERT_EQ(st.next(f), rc::Event::missed);  // 106: torn
  EXPECT_EQ(f.frame_index, 106u);
  EXPECT_EQ(st.last_missed(), 1u);
  ASSERT_EQ(st.next(f), rc::Event::frame);
  EXPECT_EQ(f.frame_index, 107u);
  EXPECT_EQ(f.data0.size(), 16u);
  EXPECT_EQ(f.data1.size(), 100u);
  EXPECT_EQ(st.next(f), rc::Event::none);
  EXPECT_EQ(st.frames_read(), 7u);
  EXPECT_EQ(st.frames_missed(), 1u);
  EXPECT_EQ(st.position(), 8u);
  EXPECT_EQ(st.published(), 8u);
  EXPECT_EQ(st.lag(), 0u);

  // 107's slot reused while it was read: copy() says so and counts it missed instead of read.
  s.tear(6);
  EXPECT_FALSE(st.still_valid(f));
  EXPECT_FALSE(st.copy(f, buf));
  EXPECT_EQ(st.frames_read(), 6u);
  EXPECT_EQ(st.frames_missed(), 2u);

  s.publish(108, 7);
  s.end();
  ASSERT_EQ(st.next(f), rc::Event::frame);  // what was published before the end comes first
  EXPECT_EQ(f.frame_index, 108u);
  EXPECT_EQ(st.next(f), rc::Event::ended);
  EXPECT_EQ(st.next(f), rc::Event::ended);
}

TEST(ConsumerClient, WrapAroundIsReportedMissedWithTheFirstIndex) {
  FakeStream s(64, 8);
  FakeServer server;
  server.start(serve_streams({&s}));
  rc::Client client(options(server));
  rc::Stream& st = client.streams()[0];
  for (uint64_t i = 0; i < 20; ++i)
    s.publish(1000 + i, static_cast<uint32_t>(i % 64));

  rc::Frame f;
  // 20 published, 8 kept: positions 0..12 are gone (12 overwritten, 12 the next to go).
  ASSERT_EQ(st.next(f), rc::Event::missed);
  EXPECT_EQ(st.last_missed(), 13u);
  EXPECT_EQ(f.frame_index, 1000u);
  for (uint64_t i = 13; i < 20; ++i) {
    ASSERT_EQ(st.next(f), rc::Event::frame);
    EXPECT_EQ(f.frame_index, 1000 + i);
    EXPECT_EQ(f.position, i);
  }
  EXPECT_EQ(st.next(f), rc::Event::none);

  // A second wrap after frames were read: the missed run starts at the next expected index.
  for (uint64_t i = 20; i < 40; ++i)
    s.publish(1000 + i, static_cast<uint32_t>(i % 64));
  ASSERT_EQ(st.next(f), rc::Event::missed);
  EXPECT_EQ(f.frame_index, 1020u);
  EXPECT_EQ(st.last_missed(), 13u);  // 20..32
  ASSERT_EQ(st.next(f), rc::Event::frame);
  EXPECT_EQ(f.frame_index, 1033u);
  EXPECT_EQ(st.frames_read(), 8u);
  EXPECT_EQ(st.frames_missed(), 26u);
  EXPECT_EQ(st.position(), 34u);
}

TEST(ConsumerClient, GpuStreamHasNoHostPayload) {
  FakeStream s(4, 8, /*gpu=*/true);
  FakeServer server;
  server.start(serve_streams({&s}));
  rc::Client client(options(server));
  rc::Stream& st = client.streams()[0];
  EXPECT_EQ(st.info().payload_memory, "gpu");
  EXPECT_EQ(st.info().cuda_ipc_handle, "00ff");
  EXPECT_EQ(st.info().gpu_device, 1);
  EXPECT_TRUE(st.payload_slab().empty());
  s.publish(7, 2);
  rc::Frame f;
  ASSERT_EQ(st.next(f), rc::Event::frame);
  EXPECT_TRUE(f.data1.empty());
  EXPECT_EQ(f.data1_len, 512u);
  EXPECT_EQ(f.data1_offset, 2u * 1024);
  EXPECT_EQ(f.data0.size(), 32u);
}

TEST(ConsumerClient, ReceivedDescriptorsAreReadOnly) {
  FakeStream s(4, 8);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  send_stream(sv[0], s, 0, "ant01");
  char buf[512];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ASSERT_GT(::recvmsg(sv[1], &msg, MSG_CMSG_CLOEXEC), 0);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->cmsg_len, CMSG_LEN(sizeof(int) * 3));
  int fds[3];
  std::memcpy(fds, CMSG_DATA(c), sizeof fds);
  for (int fd : fds) {
    errno = 0;
    EXPECT_EQ(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0), MAP_FAILED);
    EXPECT_EQ(errno, EACCES);
    void* p = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
    EXPECT_NE(p, MAP_FAILED);
    if (p != MAP_FAILED) ::munmap(p, 4096);
    ::close(fd);
  }
  ::close(sv[0]);
  ::close(sv[1]);
}

TEST(ConsumerClient, NoDescriptorLeaks) {
  FakeStream a(4, 8), b(4, 8, /*gpu=*/true);
  FakeServer server;
  const int before = count_fds();
  {
    server.start(serve_streams({&a, &b}));
    rc::Client client(options(server));
    EXPECT_EQ(client.streams().size(), 2u);
    EXPECT_EQ(client.streams()[1].info().payload_memory, "gpu");
  }
  server.join();  // the client closed its socket, so the server closed its side
  EXPECT_EQ(count_fds(), before);
}

TEST(ConsumerClient, ErrorMessageThrowsWithItsText) {
  FakeServer server;
  server.start(
      [](int conn, const std::string&) { send_message(conn, "error no stream matches ant99"); });
  rc::ConnectOptions o = options(server);
  o.streams = {"ant99"};
  try {
    rc::Client client(o);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no stream matches ant99"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(server.path()), std::string::npos) << e.what();
  }
  server.join();
  EXPECT_EQ(server.hello(), "hello version=1 mode=lossy streams=ant99 name=test");
}

TEST(ConsumerClient, ConnectFailureNamesThePath) {
  rc::ConnectOptions o;
  o.socket = "/nonexistent/rocecap/consumers.sock";
  try {
    rc::Client client(o);
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(o.socket), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(std::strerror(ENOENT)), std::string::npos) << e.what();
  }
}

TEST(ConsumerClient, BadMagicAndVersionAreRefusedByName) {
  for (int which = 0; which < 2; ++which) {
    FakeStream s(4, 8);
    if (which == 0) s.ctl()->magic = 0x1234;
    if (which == 1) s.ctl()->version = 7;
    FakeServer server;
    server.start(serve_streams({&s}));
    const int before = count_fds();
    try {
      rc::Client client(options(server));
      FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(which == 0 ? "magic" : "version 7"), std::string::npos)
          << e.what();
    }
    server.join();
    EXPECT_EQ(count_fds(), before);  // the received descriptors were closed on the error too
  }
}

TEST(ConsumerClient, ReportSendsAcksAndSeesTheDetach) {
  FakeStream s(8, 16);
  FakeServer server;
  std::string acks;
  server.start([&](int conn, const std::string&) {
    send_stream(conn, s, 5, "ant01@239.17.0.1:36001");
    send_message(conn, ready(1, "hold"));
    acks = receive_message(conn);
    send_message(conn, "detached held 100 frames longer than hold_frames=64");
  });
  rc::ConnectOptions o = options(server);
  o.mode = rc::Mode::hold;
  o.streams = {"ant01", "ant02@239.17.0.1:36001"};
  rc::Client client(o);
  rc::Stream& st = client.streams()[0];
  s.publish(50, 0);
  s.fill(51);
  s.publish(52, 1);
  rc::Frame f;
  ASSERT_EQ(st.next(f), rc::Event::frame);
  st.done_with(f);
  EXPECT_EQ(st.ack_position(), 10'051u);
  ASSERT_EQ(st.next(f), rc::Event::frame);
  st.done_with(f);  // a fill frame holds no slot: nothing more to release
  EXPECT_EQ(st.ack_position(), 10'051u);
  EXPECT_TRUE(client.report());
  server.join();
  EXPECT_EQ(server.hello(),
            "hello version=1 mode=hold streams=ant01,ant02@239.17.0.1:36001 name=test");
  EXPECT_EQ(acks, "ack 5 2 2 0 10051\n");
  EXPECT_FALSE(client.report());
  EXPECT_FALSE(client.connected());
  EXPECT_EQ(client.detach_reason(), "held 100 frames longer than hold_frames=64");
  EXPECT_FALSE(client.report());
  // The mappings outlive the connection: what is published can still be read.
  ASSERT_EQ(st.next(f), rc::Event::frame);
  EXPECT_EQ(f.frame_index, 52u);
}

TEST(ConsumerClient, ReportSeesTheEndOfTheConnection) {
  FakeStream s(8, 16);
  FakeServer server;
  server.start([&](int conn, const std::string&) {
    send_stream(conn, s, 0, "ant01@239.17.0.1:36001");
    send_message(conn, ready(1));
  });
  rc::Client client(options(server));
  server.join();  // the server closed the connection
  EXPECT_FALSE(client.report());
  EXPECT_FALSE(client.connected());
}

TEST(ConsumerClient, InvalidNamesAreRefusedBeforeConnecting) {
  rc::ConnectOptions o;
  o.socket = "/nonexistent/x.sock";
  o.streams = {"ant 01"};
  EXPECT_THROW(rc::Client{o}, std::runtime_error);
}

// A producer racing the reader on 4 slots and 8 descriptors: every frame that copy() accepts
// has its own bytes, and frames read plus missed account for every position in index order.
TEST(ConsumerClient, RacingProducerNeverYieldsTornBytes) {
  FakeStream s(4, 8);
  FakeServer server;
  server.start(serve_streams({&s}));
  rc::Client client(options(server));
  rc::Stream& st = client.streams()[0];
  constexpr uint64_t kFrames = 200'000;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kFrames; ++i) {
      // About 300 ns a frame, so that the reader keeps up part of the time and falls behind.
      const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(300);
      while (std::chrono::steady_clock::now() < until) {
      }
      if (i % 97 == 0) {
        s.fill(5000 + i, 96);
      } else {
        s.publish(5000 + i, static_cast<uint32_t>(i % 4), 32, 64);
      }
    }
    s.end();
  });
  std::vector<std::byte> buf(256);
  uint64_t expect = 5000, good = 0, torn = 0, bad_bytes = 0, bad_index = 0;
  rc::Frame f;
  for (;;) {
    const rc::Event e = st.next(f);
    if (e == rc::Event::ended) break;
    if (e == rc::Event::none) continue;
    if (e == rc::Event::missed) {
      bad_index += f.frame_index != expect;
      expect = f.frame_index + st.last_missed();
      continue;
    }
    bad_index += f.frame_index != expect;
    expect = f.frame_index + 1;
    if (!st.copy(f, buf)) {
      ++torn;
      continue;
    }
    ++good;
    if (!f.fill()) {
      const auto want = expected_frame(s, f.frame_index, 32, 64);
      bad_bytes += !std::equal(want.begin(), want.end(), buf.begin());
    }
  }
  producer.join();
  EXPECT_EQ(bad_index, 0u);
  EXPECT_EQ(bad_bytes, 0u);
  EXPECT_EQ(expect, 5000 + kFrames);
  EXPECT_EQ(st.frames_read() + st.frames_missed(), kFrames);
  EXPECT_EQ(st.frames_read(), good);
  EXPECT_GT(good, 0u);
  std::printf("racing: %llu read, %llu missed (%llu torn while copied)\n",
              static_cast<unsigned long long>(good),
              static_cast<unsigned long long>(st.frames_missed()),
              static_cast<unsigned long long>(torn));
}
