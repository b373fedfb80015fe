// Facts about this host that a run file is checked against.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace rocecap::config {

// CPU ids this process may pin threads to (its affinity mask; all online CPUs as fallback).
std::vector<unsigned> usable_cpus();

// "0-3,8,10-11".
std::string format_cpu_list(const std::vector<unsigned>& cpus);

// Empty when the directory exists and this process can create files in it, or when it does not
// exist and its nearest existing ancestor is such a directory (it can be created); else why not.
// Writability is probed by creating an unnamed O_TMPFILE file (nothing is left behind), which
// also catches read-only mounts and ACLs; where the file system lacks O_TMPFILE it falls back
// to faccessat(W_OK|X_OK, AT_EACCESS).
std::string check_writable_directory(const std::string& directory);

// This host's memory and this process's locking rights, read from a proc file system
// (proc(5)); each is nullopt when its file or line cannot be read.
struct MemoryFacts {
  std::optional<uint64_t> available_bytes;  // meminfo MemAvailable
  std::optional<uint64_t> memlock_bytes;    // self/limits "Max locked memory", soft; max: unlimited
  std::optional<bool> ipc_lock;             // self/status CapEff has CAP_IPC_LOCK (bit 14)
};
MemoryFacts read_memory_facts(const std::string& proc_root);

// Empty when path is a regular file this process can open for reading; else why not.
std::string check_readable_file(const std::string& path);

// ROCECAP_SYSFS_ROOT when set (tests point it at a fake tree, as the verbs backend does), else
// "/sys".
std::string default_sysfs_root();

// The MTU of netdev `name` from <sysfs_root>/class/net/<name>/mtu; nullopt when the file is
// missing or does not hold a number (no such interface on this host).
std::optional<uint32_t> interface_mtu(const std::string& sysfs_root, const std::string& name);

}  // namespace rocecap::config
