#include "daemon/lib/run/signals.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <stdexcept>
#include <string>

namespace rocecap::daemon {
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

// The signals stay blocked: unblocking them would deliver a stop signal that came during the
// drain (a second SIGTERM, e.g. from coreutils `timeout`, which sends it to its child and to its
// process group) with the default disposition, turning a clean stop into a death by signal
// (exit 143) after the manifest said "complete". Pending ones are read and dropped here, and
// one arriving later stays pending until the process exits: signal(7), "a blocked signal
// remains pending until it is unblocked".
SignalWatcher::~SignalWatcher() {
  signalfd_siginfo info{};
  while (::read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
  }
  ::close(fd_);
}

SignalWatcher::Event SignalWatcher::wait(std::chrono::milliseconds timeout) noexcept {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return Event::none;
  signalfd_siginfo info{};
  if (::read(fd_, &info, sizeof info) != static_cast<ssize_t>(sizeof info)) return Event::none;
  last_ = static_cast<int>(info.ssi_signo);
  return last_ == SIGHUP ? Event::rotate : Event::stop;
}

}  // namespace rocecap::daemon
