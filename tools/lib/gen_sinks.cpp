#include "tools/lib/gen_sinks.hpp"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "capture/net/packet.hpp"
#include "capture/net/udp_builder.hpp"
#include "tools/lib/udp_frame.hpp"

namespace rocecap::tools {
namespace {

std::string dotted(uint32_t ip) {
  return capture::net::format_ipv4(ip).data();
}

std::runtime_error sys_error(const std::string& what, int err) {
  return std::runtime_error(what + ": " + std::strerror(err));
}

void set_opt(int fd, int level, int name, const void* value, socklen_t len, const char* what) {
  if (::setsockopt(fd, level, name, value, len) != 0) throw sys_error(what, errno);
}

Fd open_bound_socket(uint32_t source, const UdpOptions& o) {
  Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) throw sys_error("cannot create a UDP socket", errno);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(source);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    const int err = errno;
    if (err == EADDRNOTAVAIL) {
      throw std::runtime_error("source " + dotted(source) + " is not an address of this host");
    }
    throw sys_error("cannot bind to source " + dotted(source), err);
  }
  const int ttl = o.ttl;
  set_opt(fd.get(), IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl, "--ttl: IP_MULTICAST_TTL");
  const int loop = o.loopback ? 1 : 0;
  set_opt(fd.get(), IPPROTO_IP, IP_MULTICAST_LOOP, &loop, sizeof loop, "IP_MULTICAST_LOOP");
  // A larger buffer absorbs a batch without blocking; the kernel may cap it (not an error).
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDBUF, &o.sndbuf, sizeof o.sndbuf);
  if (!o.interface.empty()) {
    ip_mreqn m{};
    m.imr_ifindex = static_cast<int>(::if_nametoindex(o.interface.c_str()));
    if (m.imr_ifindex == 0)
      throw std::runtime_error("--interface " + o.interface + ": no such interface");
    m.imr_address.s_addr = htonl(source);
    set_opt(fd.get(), IPPROTO_IP, IP_MULTICAST_IF, &m, sizeof m,
            ("--interface " + o.interface + ": IP_MULTICAST_IF").c_str());
  }
  return fd;
}

int64_t monotonic_ns() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// Sleeps until start_ns + offset_ns (CLOCK_MONOTONIC). Absolute deadlines: oversleeping one
// batch does not delay the next, so the average rate is exact. A signal interrupts the sleep
// (EINTR) and ends the wait when it raised `stop`.
void sleep_until(int64_t start_ns, int64_t offset_ns, const std::atomic<bool>& stop) {
  const int64_t t = start_ns + offset_ns;
  const timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
  while (!stop.load() && ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// sendmmsg until all n messages are sent. A full device queue (ENOBUFS/EAGAIN) is waited out in
// 50 us steps, at most 10000 of them (half a second), so a wedged interface ends in an error.
// Returns 0, or the error with `done` at the first message not sent.
int send_batch(int fd, mmsghdr* msgs, unsigned n, unsigned& done) {
  int busy = 0;
  done = 0;
  while (done < n) {
    const int r = ::sendmmsg(fd, msgs + done, n - done, 0);
    if (r > 0) {
      done += static_cast<unsigned>(r);
      continue;
    }
    const int err = r < 0 ? errno : EIO;
    if (err == EINTR) continue;
    if ((err == ENOBUFS || err == EAGAIN) && ++busy < 10000) {
      ::usleep(50);
      continue;
    }
    return err;
  }
  return 0;
}

}  // namespace

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

UdpSink::UdpSink(const std::vector<uint32_t>& senders, const UdpOptions& options) {
  for (uint32_t s : senders)
    sockets_.push_back(open_bound_socket(s, options));
}

void UdpSink::wait_until(int64_t offset_ns, const std::atomic<bool>& stop) const {
  sleep_until(*start_ns_, offset_ns, stop);
}

void UdpSink::deliver(std::span<const OutDatagram> batch, const std::atomic<bool>& stop) {
  if (batch.empty()) return;
  if (!start_ns_) start_ns_ = monotonic_ns() - batch.front().offset_ns;
  wait_until(batch.front().offset_ns, stop);
  for (uint32_t k = 0; k < sockets_.size(); ++k)
    send_all(sockets_[k].get(), batch, k);
}

void UdpSink::send_all(int fd, std::span<const OutDatagram> batch, uint32_t sender) {
  // The datagrams of one sender, in batch order (each stream's order is kept).
  sockaddr_in to[kMaxBatch + 2];
  iovec iov[kMaxBatch + 2];
  mmsghdr msgs[kMaxBatch + 2];
  unsigned n = 0;
  for (const auto& d : batch) {
    if (d.sender != sender || n == kMaxBatch + 2) continue;
    to[n] = sockaddr_in{};
    to[n].sin_family = AF_INET;
    to[n].sin_addr.s_addr = htonl(d.dst_ip);
    to[n].sin_port = htons(d.dst_port);
    iov[n].iov_base = const_cast<std::byte*>(d.payload.data());
    iov[n].iov_len = d.payload.size();
    msgs[n] = mmsghdr{};
    msgs[n].msg_hdr.msg_name = &to[n];
    msgs[n].msg_hdr.msg_namelen = sizeof to[n];
    msgs[n].msg_hdr.msg_iov = &iov[n];
    msgs[n].msg_hdr.msg_iovlen = 1;
    ++n;
  }
  unsigned done = 0;
  if (const int err = send_batch(fd, msgs, n, done)) {
    throw sys_error("send to " + dotted(ntohl(to[done].sin_addr.s_addr)) + ":" +
                        std::to_string(ntohs(to[done].sin_port)),
                    err);
  }
}

PacketSink::PacketSink(const std::string& interface, const std::vector<uint32_t>& senders,
                       uint8_t ttl)
    : ttl_(ttl), ip_ids_(senders.size(), 0) {
  if (interface.empty()) throw std::runtime_error("--af-packet needs --interface");
  const int index = static_cast<int>(::if_nametoindex(interface.c_str()));
  if (index == 0) throw std::runtime_error("--interface " + interface + ": no such interface");
  // Protocol 0: a send-only socket, no receive hook on the interface (packet(7)).
  fd_ = Fd(::socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0));
  if (fd_.get() < 0) throw sys_error("--af-packet: cannot create an AF_PACKET socket", errno);
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, interface.c_str(), IFNAMSIZ - 1);
  if (::ioctl(fd_.get(), SIOCGIFHWADDR, &ifr) != 0)
    throw sys_error("--interface " + interface + ": SIOCGIFHWADDR", errno);
  // Loopback takes Ethernet headers too (drivers/net/loopback.c: eth_header_ops).
  if (ifr.ifr_hwaddr.sa_family != ARPHRD_ETHER && ifr.ifr_hwaddr.sa_family != ARPHRD_LOOPBACK)
    throw std::runtime_error("--af-packet: " + interface + " is not an Ethernet interface");
  std::memcpy(src_mac_.data(), ifr.ifr_hwaddr.sa_data, 6);
  sockaddr_ll a{};
  a.sll_family = AF_PACKET;
  a.sll_ifindex = index;
  if (::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
    throw sys_error("--af-packet: cannot bind to " + interface, errno);
  // Straight to the driver's xmit, no qdisc (packet(7), PACKET_QDISC_BYPASS): the generator
  // paces itself, and a full device answers ENOBUFS/EAGAIN, handled as for UdpSink.
  const int one = 1;
  set_opt(fd_.get(), SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof one, "PACKET_QDISC_BYPASS");
  const int sndbuf = 16 << 20;  // a batch of 8 KB frames in flight; as root beyond wmem_max
  if (::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf) != 0)
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
  heads_.resize(kMaxBatch + 2);
}

void PacketSink::deliver(std::span<const OutDatagram> batch, const std::atomic<bool>& stop) {
  if (batch.empty()) return;
  if (!start_ns_) start_ns_ = monotonic_ns() - batch.front().offset_ns;
  sleep_until(*start_ns_, batch.front().offset_ns, stop);
  if (heads_.size() < batch.size()) heads_.resize(batch.size());  // set-up size covers a batch
  iovec iov[2 * (kMaxBatch + 2)];
  mmsghdr msgs[kMaxBatch + 2];
  unsigned n = 0;
  for (const auto& d : batch) {  // one socket: the batch order, so every stream's, is kept
    if (n == kMaxBatch + 2) break;
    capture::net::UdpFrameSpec spec;
    spec.dst_mac = capture::net::multicast_mac(d.dst_ip);
    if (!capture::net::is_multicast(d.dst_ip)) spec.dst_mac = source_mac(d.dst_ip);
    spec.src_mac = src_mac_;
    spec.ttl = ttl_;
    spec.ip_id = ip_ids_[d.sender]++;
    spec.src_ip = d.src_ip;
    spec.dst_ip = d.dst_ip;
    spec.src_port = PcapSink::source_port(d.sender);
    spec.dst_port = d.dst_port;
    (void)capture::net::write_udp_headers(spec, d.payload.size(), heads_[n]);  // UDP sum 0
    iov[2 * n] = iovec{heads_[n].data(), heads_[n].size()};
    iov[2 * n + 1] = iovec{const_cast<std::byte*>(d.payload.data()), d.payload.size()};
    msgs[n] = mmsghdr{};
    msgs[n].msg_hdr.msg_iov = &iov[2 * n];
    msgs[n].msg_hdr.msg_iovlen = 2;
    ++n;
  }
  unsigned done = 0;
  if (const int err = send_batch(fd_.get(), msgs, n, done))
    throw sys_error("--af-packet: send", err);
}

PcapSink::PcapSink(const std::string& path, const std::vector<uint32_t>& senders,
                   int64_t start_unix_ns, uint8_t ttl)
    : file_(path), start_unix_ns_(start_unix_ns), ttl_(ttl), ip_ids_(senders.size(), 0) {}

void PcapSink::deliver(std::span<const OutDatagram> batch, const std::atomic<bool>&) {
  std::array<std::byte, kEthIpv4UdpBytes> head;
  for (const auto& d : batch) {
    const UdpEndpoints ep{d.src_ip, d.dst_ip, source_port(d.sender), d.dst_port};
    write_udp_headers(ep, ip_ids_[d.sender]++, ttl_, d.payload, head);
    file_.write(start_unix_ns_ + d.offset_ns, head, d.payload);
  }
}

}  // namespace rocecap::tools
