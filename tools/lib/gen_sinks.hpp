// Where the generator's batches go: UDP multicast sockets paced against a monotonic clock, or
// a pcap file holding the identical datagrams as Ethernet frames stamped with the schedule.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tools/lib/gen_engine.hpp"
#include "tools/lib/pcap_file.hpp"
#include "tools/lib/udp_frame.hpp"

namespace rocecap::tools {

// An owned file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) noexcept : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept;
  int get() const noexcept { return fd_; }

 private:
  int fd_ = -1;
};

struct UdpOptions {
  std::string interface;  // IP_MULTICAST_IF by index when not empty
  int ttl = 1;
  bool loopback = false;  // IP_MULTICAST_LOOP
  int sndbuf = 4 << 20;
};

// One UDP socket per sender address, bound to ADDRESS:0 so every datagram leaves with its
// antenna's source address. Throws std::runtime_error with a clear message when an address is
// not local ("source 192.0.2.12 is not an address of this host") or a socket option fails.
class UdpSink final : public DatagramSink {
 public:
  UdpSink(const std::vector<uint32_t>& senders, const UdpOptions& options);
  void deliver(std::span<const OutDatagram> batch, const std::atomic<bool>& stop) override;

 private:
  void wait_until(int64_t offset_ns, const std::atomic<bool>& stop) const;
  void send_all(int fd, std::span<const OutDatagram> batch, uint32_t sender);

  std::vector<Fd> sockets_;
  std::optional<int64_t> start_ns_;  // CLOCK_MONOTONIC at the first batch
};

// --af-packet: the same datagrams as prebuilt Ethernet frames through one AF_PACKET socket on
// `interface` with PACKET_QDISC_BYPASS, many per sendmmsg. It skips the UDP/IP transmit path
// (socket lookup, routing, multicast loop check, fragmentation) and the qdisc, so one CPU can
// offer several times the rate of UdpSink; what the receiver sees differs only in headers no
// stream depends on: UDP source port 49152 + sender (PcapSink's), IP IDs counted per sender,
// the interface's MAC as source, and UDP checksum 0 ("none", RFC 768; over a veth the socket
// path's is an unfinished offload value anyway). Needs CAP_NET_RAW and an Ethernet interface.
// Throws std::runtime_error naming the step that failed.
class PacketSink final : public DatagramSink {
 public:
  PacketSink(const std::string& interface, const std::vector<uint32_t>& senders, uint8_t ttl);
  void deliver(std::span<const OutDatagram> batch, const std::atomic<bool>& stop) override;

 private:
  Fd fd_;
  std::array<uint8_t, 6> src_mac_{};
  uint8_t ttl_;
  std::vector<uint16_t> ip_ids_;
  std::optional<int64_t> start_ns_;
  std::vector<std::array<std::byte, kEthIpv4UdpBytes>> heads_;  // one per datagram of a batch
};

// Writes Ethernet frames to a pcap file; timestamps are start_unix_ns + the schedule offset.
class PcapSink final : public DatagramSink {
 public:
  PcapSink(const std::string& path, const std::vector<uint32_t>& senders, int64_t start_unix_ns,
           uint8_t ttl);
  void deliver(std::span<const OutDatagram> batch, const std::atomic<bool>& stop) override;
  void finish() override { file_.close(); }

  // The UDP source port datagrams of sender k carry in the file.
  static uint16_t source_port(uint32_t sender) noexcept {
    return static_cast<uint16_t>(49152 + sender);
  }

 private:
  PcapFileWriter file_;
  int64_t start_unix_ns_;
  uint8_t ttl_;
  std::vector<uint16_t> ip_ids_;  // per sender, like a kernel's per-socket counter
};

}  // namespace rocecap::tools
