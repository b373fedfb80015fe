#include "daemon/lib/signals.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string>

namespace rocecap {
namespace {

sigset_t watched() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

SignalWatcher::SignalWatcher() {
  // A closed pipe or socket must be an error return, not process death.
  std::signal(SIGPIPE, SIG_IGN);
  const sigset_t set = watched();
  if (const int rc = pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0) {
    throw std::runtime_error(std::string("pthread_sigmask: ") + std::strerror(rc));
  }
  fd_ = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));
}

SignalWatcher::~SignalWatcher() {
  // A stop signal that came twice (GNU timeout forwards SIGTERM to the child and again to its
  // process group) is still pending here: taken from the fd, it does not kill the process with
  // status 143 after a clean stop once the mask is lifted.
  signalfd_siginfo info{};
  while (::read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
  }
  ::close(fd_);
  const sigset_t set = watched();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

SignalWatcher::Event SignalWatcher::wait(std::chrono::milliseconds timeout) noexcept {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return Event::none;
  signalfd_siginfo info{};
  if (::read(fd_, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) return Event::none;
  last_ = static_cast<int>(info.ssi_signo);
  return last_ == SIGHUP ? Event::rotate : Event::stop;
}

}  // namespace rocecap
