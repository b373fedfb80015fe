#include "config/host_checks.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

namespace rocecap::config {
namespace {

// Owns a file descriptor opened only to probe access.
class ProbeFd {
 public:
  explicit ProbeFd(int fd) : fd_(fd) {}
  ProbeFd(const ProbeFd&) = delete;
  ProbeFd& operator=(const ProbeFd&) = delete;
  ~ProbeFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_;
};

// 0 when files can be created in dir, else an errno value.
int probe_create(const std::string& dir) {
  const ProbeFd fd(::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
  if (fd.ok()) return 0;
  const int err = errno;
  if (err != EOPNOTSUPP && err != EISDIR && err != EINVAL) return err;
  return ::faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) == 0 ? 0 : errno;
}

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

std::vector<unsigned> usable_cpus() {
  std::vector<unsigned> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
    return cpus;
  }
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  for (long cpu = 0; cpu < online; ++cpu)
    cpus.push_back(static_cast<unsigned>(cpu));
  return cpus;
}

std::string format_cpu_list(const std::vector<unsigned>& cpus) {
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
      ++j;
    if (!out.empty()) out += ',';
    out += j == i ? fmt::format("{}", cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

std::string check_writable_directory(const std::string& directory) {
  std::string path = directory;
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  bool exists = true;
  while (true) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        return exists ? fmt::format("'{}' exists and is not a directory", path)
                      : fmt::format("cannot be created: '{}' is not a directory", path);
      }
      const int err = probe_create(path);
      if (err == 0) return {};
      return exists ? fmt::format("'{}' is not writable: {}", path, std::strerror(err))
                    : fmt::format("cannot be created: '{}' is not writable: {}", path,
                                  std::strerror(err));
    }
    const int err = errno;
    if (err == ENOTDIR) return "cannot be created: a component of the path is not a directory";
    if (err != ENOENT) return fmt::format("'{}': {}", path, std::strerror(err));
    exists = false;
    if (path == "/") return "cannot be created: no existing parent";
    path = parent_of(path);
  }
}

// The first line of a proc file starting with `key`, without the key; nullopt if none.
std::optional<std::string> proc_line(const std::string& path, std::string_view key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) == 0) return line.substr(key.size());
  }
  return std::nullopt;
}

MemoryFacts read_memory_facts(const std::string& proc_root) {
  MemoryFacts f;
  if (const auto v = proc_line(proc_root + "/meminfo", "MemAvailable:")) {
    std::istringstream in(*v);
    uint64_t kib = 0;
    std::string unit;
    if (in >> kib >> unit && unit == "kB") f.available_bytes = kib * 1024;
  }
  if (const auto v = proc_line(proc_root + "/self/limits", "Max locked memory")) {
    std::istringstream in(*v);
    std::string soft;
    if (in >> soft) {
      if (soft == "unlimited") {
        f.memlock_bytes = UINT64_MAX;
      } else if (soft.find_first_not_of("0123456789") == std::string::npos) {
        f.memlock_bytes = std::stoull(soft);
      }
    }
  }
  if (const auto v = proc_line(proc_root + "/self/status", "CapEff:")) {
    std::istringstream in(*v);
    uint64_t caps = 0;
    constexpr int kCapIpcLock = 14;  // linux/capability.h
    if (in >> std::hex >> caps) f.ipc_lock = ((caps >> kCapIpcLock) & 1) != 0;
  }
  return f;
}

std::string check_readable_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return fmt::format("'{}': {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return fmt::format("'{}' is not a regular file", path);
  const ProbeFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) return fmt::format("'{}' cannot be read: {}", path, std::strerror(errno));
  return {};
}

std::string default_sysfs_root() {
  const char* env = std::getenv("ROCECAP_SYSFS_ROOT");
  return env != nullptr && *env != '\0' ? env : "/sys";
}

std::optional<uint32_t> interface_mtu(const std::string& sysfs_root, const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos) return std::nullopt;
  std::ifstream in(sysfs_root + "/class/net/" + name + "/mtu");
  uint32_t mtu = 0;
  if (!(in >> mtu) || mtu == 0) return std::nullopt;
  return mtu;
}

}  // namespace rocecap::config
