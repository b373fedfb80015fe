#include "capture/net/multicast_join.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "capture/net/packet.hpp"

namespace rocecap::net {
namespace {

ip_mreqn membership(uint32_t group, unsigned ifindex) {
  ip_mreqn m{};
  m.imr_multiaddr.s_addr = htonl(group);
  m.imr_address.s_addr = htonl(INADDR_ANY);
  m.imr_ifindex = static_cast<int>(ifindex);
  return m;
}

}  // namespace

MulticastJoin::MulticastJoin(const std::string& interface, const std::vector<uint32_t>& groups) {
  ifindex_ = if_nametoindex(interface.c_str());
  if (ifindex_ == 0) {
    throw std::runtime_error("multicast join: no interface '" + interface + "'");
  }
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    throw std::runtime_error(std::string("multicast join: socket: ") + std::strerror(errno));
  }
  for (uint32_t group : groups) {
    const ip_mreqn m = membership(group, ifindex_);
    if (::setsockopt(fd_, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) != 0) {
      const int err = errno;
      leave_all();
      ::close(fd_);
      fd_ = -1;
      throw std::runtime_error("multicast join: group " + std::string(format_ipv4(group).data()) +
                               " on " + interface + ": " + std::strerror(err));
    }
    groups_.push_back(group);
  }
}

MulticastJoin::MulticastJoin(MulticastJoin&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      ifindex_(other.ifindex_),
      groups_(std::move(other.groups_)) {}

void MulticastJoin::leave_all() noexcept {
  for (uint32_t group : groups_) {
    const ip_mreqn m = membership(group, ifindex_);
    ::setsockopt(fd_, IPPROTO_IP, IP_DROP_MEMBERSHIP, &m, sizeof m);
  }
  groups_.clear();
}

MulticastJoin::~MulticastJoin() {
  if (fd_ < 0) return;
  leave_all();  // closing would leave too; leaving explicitly sends the IGMP leave now
  ::close(fd_);
}

}  // namespace rocecap::net
