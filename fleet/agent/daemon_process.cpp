#include "fleet/agent/daemon_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace rocecap::fleet {
namespace {

constexpr std::size_t kMaxOutput = 64 * 1024;

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// In the child after fork: only async-signal-safe calls until exec.
[[noreturn]] void exec_child(const std::vector<std::string>& argv, int out_fd) {
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, 0);
  ::dup2(out_fd, 1);
  ::dup2(out_fd, 2);
  // A clean signal mask: whatever the agent blocks is inherited across exec otherwise.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execv(args[0], args.data());
  const char msg[] = "exec failed\n";
  (void)!::write(2, msg, sizeof msg - 1);
  ::_exit(127);
}

void read_available(int fd, std::string& out, bool& open) {
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    if (out.size() < kMaxOutput)
      out.append(buf, std::min<std::size_t>(static_cast<std::size_t>(n), kMaxOutput - out.size()));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    open = false;
  }
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  CommandResult r;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.output = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.output = std::string("fork: ") + std::strerror(errno);
    ::close(fds[0]);
    ::close(fds[1]);
    return r;
  }
  if (pid == 0) exec_child(argv, fds[1]);
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool open = true, killed = false;
  while (open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      killed = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000))) > 0)
      read_available(fds[0], r.output, open);
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = exit_code_of(status);
  if (killed) r.output += "\n(killed after " + std::to_string(timeout.count()) + " s)";
  return r;
}

DaemonProcess DaemonProcess::launch(const std::vector<std::string>& argv,
                                    const std::string& log_path) {
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
  if (log_fd < 0)
    throw std::system_error(errno, std::generic_category(), "cannot open " + log_path);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(log_fd);
    throw std::system_error(e, std::generic_category(), "fork");
  }
  if (pid == 0) {
    // Its own session: a terminal hang-up or the agent's process group being signalled does
    // not reach rocecapd; with KillMode=process (systemd/rocecap-agent.service) neither does
    // a restart of the agent.
    ::setsid();
    exec_child(argv, log_fd);
  }
  ::close(log_fd);
  return DaemonProcess(pid, true);
}

std::optional<DaemonProcess> DaemonProcess::adopt(pid_t pid, const std::string& marker) {
  if (pid <= 1 || ::kill(pid, 0) != 0) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().find(marker) == std::string::npos) return std::nullopt;
  return DaemonProcess(pid, false);
}

std::optional<int> DaemonProcess::poll() {
  if (exit_) return exit_;
  if (child_) {
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_)
      exit_ = exit_code_of(status);
    else if (r < 0 && errno == ECHILD)
      exit_ = -1;
  } else if (::kill(pid_, 0) != 0 && errno == ESRCH) {
    exit_ = -1;
  }
  return exit_;
}

void DaemonProcess::signal(int sig) const {
  if (!exit_) ::kill(pid_, sig);
}

}  // namespace rocecap::fleet
