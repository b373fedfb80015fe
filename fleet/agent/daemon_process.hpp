// The processes the agent runs: rocecapd for the run (long-lived, in its own session so that it
// outlives a restart of the agent), and short commands whose output the agent reports
// (`rocecapd --check-config`, `rocecap trigger`).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace rocecap::fleet {

struct CommandResult {
  int exit_code = -1;  // 128 + signal when killed; -1 when it could not be started
  std::string output;  // stdout and stderr together, at most 64 KiB
};

// Runs argv[0] (a path) with stdin from /dev/null; killed (SIGKILL) after `timeout`.
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::seconds timeout);

class DaemonProcess {
 public:
  // fork + setsid + exec, stdout and stderr appended to `log_path`. Throws on failure to fork.
  static DaemonProcess launch(const std::vector<std::string>& argv, const std::string& log_path);
  // A process started by an earlier agent: alive, and its command line holds `marker` (the run
  // file's path), so a recycled pid is not taken for rocecapd.
  static std::optional<DaemonProcess> adopt(pid_t pid, const std::string& marker);

  pid_t pid() const noexcept { return pid_; }
  bool adopted() const noexcept { return !child_; }
  // nullopt while it runs; then its exit code (128 + signal), or -1 when not known (an adopted
  // process is not our child: only that it is gone can be seen).
  std::optional<int> poll();
  void signal(int sig) const;

 private:
  DaemonProcess(pid_t pid, bool child) : pid_(pid), child_(child) {}
  pid_t pid_;
  bool child_;
  std::optional<int> exit_;
};

}  // namespace rocecap::fleet
