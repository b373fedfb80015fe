#include "tools/lib/gen_sinks.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "capture/net/packet.hpp"
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
  const int64_t t = *start_ns_ + offset_ns;
  const timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
  // Absolute deadlines: oversleeping one batch does not delay the next, so the average rate
  // is exact. A signal interrupts the sleep (EINTR) and ends the wait when it raised `stop`.
  while (!stop.load() && ::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
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
  int busy = 0;
  while (done < n) {
    const int r = ::sendmmsg(fd, msgs + done, n - done, 0);
    if (r > 0) {
      done += static_cast<unsigned>(r);
      continue;
    }
    const int err = r < 0 ? errno : EIO;
    if (err == EINTR) continue;
    if ((err == ENOBUFS || err == EAGAIN) && ++busy < 10000) {
      ::usleep(50);  // the device queue is full: give it a moment, bounded
      continue;
    }
    throw sys_error("send to " + dotted(ntohl(to[done].sin_addr.s_addr)) + ":" +
                        std::to_string(ntohs(to[done].sin_port)),
                    err);
  }
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
