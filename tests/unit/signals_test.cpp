#include "daemon/lib/signals.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

namespace rocecap {
namespace {

using namespace std::chrono_literals;

TEST(SignalWatcher, MapsSignalsToEventsWithoutKillingTheProcess) {
  SignalWatcher w;
  EXPECT_EQ(w.wait(10ms), SignalWatcher::Event::none);
  ASSERT_EQ(kill(getpid(), SIGHUP), 0);
  EXPECT_EQ(w.wait(1000ms), SignalWatcher::Event::rotate);
  EXPECT_EQ(w.last_signal(), SIGHUP);
  ASSERT_EQ(kill(getpid(), SIGTERM), 0);
  EXPECT_EQ(w.wait(1000ms), SignalWatcher::Event::stop);
  EXPECT_EQ(w.last_signal(), SIGTERM);
  ASSERT_EQ(kill(getpid(), SIGINT), 0);
  EXPECT_EQ(w.wait(1000ms), SignalWatcher::Event::stop);
  EXPECT_EQ(w.last_signal(), SIGINT);
}

TEST(SignalWatcher, ThreadsStartedLaterDoNotTakeTheSignal) {
  SignalWatcher w;
  std::thread worker([] { std::this_thread::sleep_for(50ms); });
  ASSERT_EQ(kill(getpid(), SIGTERM), 0);  // process-directed: any unblocking thread could take it
  EXPECT_EQ(w.wait(1000ms), SignalWatcher::Event::stop);
  worker.join();
}

// GNU timeout sends SIGTERM to the child and then to its process group: the second one is
// still pending when the watcher goes and must not kill the process after its clean stop.
TEST(SignalWatcher, ARepeatedStopSignalDoesNotKillTheProcessAtTheEnd) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    {
      SignalWatcher w;
      kill(getpid(), SIGTERM);
      if (w.wait(1000ms) != SignalWatcher::Event::stop) _exit(2);
      kill(getpid(), SIGTERM);  // pending: nobody reads it
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status)) << "killed by signal "
                                 << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

}  // namespace
}  // namespace rocecap
