#include "daemon/lib/signals.hpp"

#include <gtest/gtest.h>
#include <signal.h>
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

}  // namespace
}  // namespace rocecap
