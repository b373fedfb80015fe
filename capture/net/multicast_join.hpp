// IGMP membership for a set of groups on one interface.
//
// Neither a verbs flow rule nor a libpcap capture tells the switch to forward a group: the kernel
// must send IGMP reports, which it does for memberships held by an ordinary UDP socket. Linux
// caps the memberships one socket may hold at net.ipv4.igmp_max_memberships (default 20;
// ip_mc_join_group in net/ipv4/igmp.c returns ENOBUFS beyond it), so the groups are spread over
// as many sockets as that needs. The sockets hold every group for the whole run; the destructor
// leaves them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rocecap::capture::net {

// The per-socket membership limit: /proc/sys/net/ipv4/igmp_max_memberships of this process's
// network namespace, or Linux's default of 20 where it cannot be read. Never below 1.
unsigned igmp_max_memberships(const std::string& proc_root = "/proc");

class MulticastJoin {
 public:
  // Joins every group on `interface` (by index, so the choice never depends on routes), at
  // most `per_socket` groups per socket (0: igmp_max_memberships()). Throws std::runtime_error
  // naming the interface and group on failure (start-up only).
  MulticastJoin(const std::string& interface, const std::vector<uint32_t>& groups,
                unsigned per_socket = 0);
  ~MulticastJoin();
  MulticastJoin(const MulticastJoin&) = delete;
  MulticastJoin& operator=(const MulticastJoin&) = delete;
  MulticastJoin(MulticastJoin&& other) noexcept;
  MulticastJoin& operator=(MulticastJoin&&) = delete;

  const std::vector<uint32_t>& groups() const noexcept { return groups_; }
  unsigned ifindex() const noexcept { return ifindex_; }
  std::size_t sockets() const noexcept { return fds_.size(); }

 private:
  void leave_all() noexcept;

  std::vector<int> fds_;  // owned; group i is held by fds_[i / per_socket_]
  unsigned per_socket_ = 1;
  unsigned ifindex_ = 0;
  std::vector<uint32_t> groups_;
};

}  // namespace rocecap::capture::net
