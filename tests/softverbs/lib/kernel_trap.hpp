// Opt-in model (SOFTVERBS_TRAP=nft) of mlx5 flow steering taking frames away from the kernel:
// a trapping rule installs an nftables drop rule on the netdev's ingress hook. AF_PACKET taps
// (softverbs' receive ring) see frames before that hook, so softverbs still receives them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace sv {

struct Device;
struct Match;

// SOFTVERBS_TRAP is "nft" (read once; any other non-empty value is said on stderr).
bool kernel_trap_enabled();

// One nft drop rule, deleted (by its handle) when this object goes.
class KernelTrap {
 public:
  // Installs the rule for `m` on d's netdev; nullptr with errno set (and a stderr line) on failure.
  static std::unique_ptr<KernelTrap> install(Device& d, const Match& m);
  ~KernelTrap();
  KernelTrap(const KernelTrap&) = delete;
  KernelTrap& operator=(const KernelTrap&) = delete;

 private:
  KernelTrap(std::string table, uint64_t handle) : table_(std::move(table)), handle_(handle) {}
  std::string table_;
  uint64_t handle_;
};

// Deletes the device's nft table (if this process made one): its last context closed.
void kernel_trap_close(Device& d);

}  // namespace sv
