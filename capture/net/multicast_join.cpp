#include "capture/net/multicast_join.hpp"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "capture/net/packet.hpp"

namespace rocecap::capture::net {
namespace {

// Linux's default for net.ipv4.igmp_max_memberships (IP_MAX_MEMBERSHIPS, include/linux/igmp.h).
constexpr unsigned kDefaultMaxMemberships = 20;

ip_mreqn membership(uint32_t group, unsigned ifindex) {
  ip_mreqn m{};
  m.imr_multiaddr.s_addr = htonl(group);
  m.imr_address.s_addr = htonl(INADDR_ANY);
  m.imr_ifindex = static_cast<int>(ifindex);
  return m;
}

std::string join_error(uint32_t group, const std::string& interface, int err, unsigned per_socket) {
  std::string msg = "multicast join: group " + std::string(format_ipv4(group).data()) + " on " +
                    interface + ": " + std::strerror(err);
  if (err == ENOBUFS) {
    msg += " (" + std::to_string(per_socket) +
           " groups per socket, net.ipv4.igmp_max_memberships; the kernel's IGMP memory "
           "(net.core.optmem_max) may be exhausted)";
  }
  return msg;
}

}  // namespace

unsigned igmp_max_memberships(const std::string& proc_root) {
  std::ifstream in(proc_root + "/sys/net/ipv4/igmp_max_memberships");
  long value = 0;
  if (!(in >> value) || value <= 0) return kDefaultMaxMemberships;
  return value > 1'000'000 ? 1'000'000u : static_cast<unsigned>(value);
}

MulticastJoin::MulticastJoin(const std::string& interface, const std::vector<uint32_t>& groups,
                             unsigned per_socket)
    : per_socket_(per_socket == 0 ? igmp_max_memberships() : per_socket) {
  ifindex_ = if_nametoindex(interface.c_str());
  if (ifindex_ == 0) {
    throw std::runtime_error("multicast join: no interface '" + interface + "'");
  }
  for (uint32_t group : groups) {
    if (groups_.size() == fds_.size() * per_socket_) {
      const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        const int err = errno;
        leave_all();
        throw std::runtime_error(std::string("multicast join: socket: ") + std::strerror(err));
      }
      fds_.push_back(fd);
    }
    const ip_mreqn m = membership(group, ifindex_);
    if (::setsockopt(fds_.back(), IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) != 0) {
      const int err = errno;
      leave_all();
      throw std::runtime_error(join_error(group, interface, err, per_socket_));
    }
    groups_.push_back(group);
  }
}

MulticastJoin::MulticastJoin(MulticastJoin&& other) noexcept
    : fds_(std::move(other.fds_)),
      per_socket_(other.per_socket_),
      ifindex_(other.ifindex_),
      groups_(std::move(other.groups_)) {
  other.fds_.clear();
  other.groups_.clear();
}

// Leaving explicitly sends the IGMP leave now (closing would leave too), then closes.
void MulticastJoin::leave_all() noexcept {
  for (std::size_t i = 0; i < groups_.size(); ++i) {
    const ip_mreqn m = membership(groups_[i], ifindex_);
    ::setsockopt(fds_[i / per_socket_], IPPROTO_IP, IP_DROP_MEMBERSHIP, &m, sizeof m);
  }
  groups_.clear();
  for (int fd : fds_)
    ::close(fd);
  fds_.clear();
}

MulticastJoin::~MulticastJoin() {
  leave_all();
}

}  // namespace rocecap::capture::net
