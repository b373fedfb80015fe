// The sd_notify messages rocecapd sends, read from a NOTIFY_SOCKET datagram socket as systemd
// would read them.
#include "daemon/lib/run/service_notifier.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace rocecap::daemon {
namespace {

using namespace std::chrono_literals;

class NotifySocket {
 public:
  NotifySocket()
      : path_(std::filesystem::temp_directory_path() /
              ("rocecap_notify_" + std::to_string(getpid()))) {
    std::filesystem::remove(path_);
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    path_.string().copy(a.sun_path, sizeof a.sun_path - 1);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    setenv("NOTIFY_SOCKET", path_.c_str(), 1);
    setenv("WATCHDOG_USEC", "200000", 1);
    unsetenv("WATCHDOG_PID");
  }
  ~NotifySocket() {
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    close(fd_);
    std::filesystem::remove(path_);
  }
  // The next datagram, or "" when none is waiting.
  std::string next() {
    char buf[1024];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, std::size_t(n)) : std::string();
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

std::unique_ptr<Runtime> runtime_with_one_interface() {
  auto rt = std::make_unique<Runtime>();
  rt->interfaces.push_back(std::make_unique<InterfaceRuntime>());
  rt->interfaces[0]->progress.nic_drops.set(3);
  return rt;
}

TEST(ServiceNotifier, ReadyStatusWatchdogAndStopping) {
  NotifySocket sock;
  const auto owned = runtime_with_one_interface();
  Runtime& rt = *owned;
  auto& iterations = rt.interfaces[0]->progress.iterations;
  ServiceNotifier n;
  ASSERT_TRUE(n.enabled());
  EXPECT_EQ(n.watchdog_interval(), 200ms);
  const auto t0 = ServiceNotifier::Clock::now();
  n.ready(rt);
  EXPECT_EQ(sock.next(), "READY=1\nSTATUS=capturing 0 streams: 0 packets, 0 lost, 3 dropped");

  iterations += 5;
  n.tick(rt, t0 + 50ms);  // before half the watchdog period: nothing
  EXPECT_EQ(sock.next(), "");
  n.tick(rt, t0 + 150ms);
  EXPECT_EQ(sock.next(), "WATCHDOG=1");
  // The capture loop stalls: no ping, however often the main thread ticks.
  for (auto t = 260ms; t < 1000ms; t += 100ms)
    n.tick(rt, t0 + t);
  EXPECT_EQ(sock.next(), "");
  iterations += 1;  // it resumes: pinged at the next tick
  n.tick(rt, t0 + 1050ms);
  EXPECT_EQ(sock.next(), "WATCHDOG=1");
  // A loop that has ended is not stuck.
  rt.interfaces[0]->progress.done = true;
  n.tick(rt, t0 + 1200ms);
  EXPECT_EQ(sock.next(), "WATCHDOG=1");

  n.tick(rt, t0 + ServiceNotifier::kStatusInterval + 1500ms);
  EXPECT_EQ(sock.next(), "STATUS=capturing 0 streams: 0 packets, 0 lost, 3 dropped");
  EXPECT_EQ(sock.next(), "WATCHDOG=1");
  n.stopping("SIGTERM");
  EXPECT_EQ(sock.next(), "STOPPING=1\nSTATUS=stopping: SIGTERM");
}

TEST(ServiceNotifier, NoWatchdogWhenSystemdAskedForNone) {
  NotifySocket sock;
  unsetenv("WATCHDOG_USEC");
  const auto owned = runtime_with_one_interface();
  Runtime& rt = *owned;
  ServiceNotifier n;
  EXPECT_EQ(n.watchdog_interval(), 0us);
  n.ready(rt);
  EXPECT_NE(sock.next().find("READY=1"), std::string::npos);
  rt.interfaces[0]->progress.iterations += 1;
  n.tick(rt, ServiceNotifier::Clock::now() + 1s);
  EXPECT_EQ(sock.next(), "");
}

TEST(ServiceNotifier, OutsideSystemdNothingIsSent) {
  unsetenv("NOTIFY_SOCKET");
  ServiceNotifier n;
  EXPECT_FALSE(n.enabled());
  const auto owned = runtime_with_one_interface();
  Runtime& rt = *owned;
  n.ready(rt);  // must not fail
  n.stopping("SIGINT");
}

}  // namespace
}  // namespace rocecap::daemon
