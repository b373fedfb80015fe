#include "daemon/lib/run/signals.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

namespace rocecap::daemon {
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

// A second SIGTERM during the drain (coreutils `timeout` sends one to its child and one to its
// process group) used to be delivered with the default disposition once the watcher unblocked
// the signals: the process died by signal after a clean stop. The test binary is that process.
TEST(SignalWatcher, AStopSignalAfterTheStopIsNotADeath) {
  {
    SignalWatcher w;
    ASSERT_EQ(kill(getpid(), SIGTERM), 0);
    EXPECT_EQ(w.wait(1000ms), SignalWatcher::Event::stop);
    ASSERT_EQ(kill(getpid(), SIGTERM), 0);  // the second, pending while the run drains
    ASSERT_EQ(kill(getpid(), SIGINT), 0);
  }
  ASSERT_EQ(kill(getpid(), SIGTERM), 0);  // and one after the watcher is gone
  std::this_thread::sleep_for(10ms);
  sigset_t pending;
  sigpending(&pending);
  EXPECT_EQ(sigismember(&pending, SIGTERM), 1);  // held, not delivered
  // A later watcher starts with the late one, as a fresh run would see a real stop request.
  SignalWatcher next;
  EXPECT_EQ(next.wait(1000ms), SignalWatcher::Event::stop);
  EXPECT_EQ(next.wait(10ms), SignalWatcher::Event::none);  // the drained ones are gone
}

}  // namespace
}  // namespace rocecap::daemon
