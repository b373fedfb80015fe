// IGMP membership for a set of groups on one interface.
//
// Neither a verbs flow rule nor a libpcap capture tells the switch to forward a group: the kernel
// must send IGMP reports, which it does for memberships held by an ordinary UDP socket. One
// socket per interface holds every group for the whole run; its destructor leaves them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rocecap::net {

class MulticastJoin {
 public:
  // Joins every group on `interface` (by index, so the choice never depends on routes).
  // Throws std::runtime_error naming the interface and group on failure (start-up only).
  MulticastJoin(const std::string& interface, const std::vector<uint32_t>& groups);
  ~MulticastJoin();
  MulticastJoin(const MulticastJoin&) = delete;
  MulticastJoin& operator=(const MulticastJoin&) = delete;
  MulticastJoin(MulticastJoin&& other) noexcept;
  MulticastJoin& operator=(MulticastJoin&&) = delete;

  const std::vector<uint32_t>& groups() const noexcept { return groups_; }
  unsigned ifindex() const noexcept { return ifindex_; }

 private:
  void leave_all() noexcept;

  int fd_ = -1;
  unsigned ifindex_ = 0;
  std::vector<uint32_t> groups_;
};

}  // namespace rocecap::net
