#include "daemon/lib/reporting/logging.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace rocecap::daemon {
namespace {

// Points fd 2 at a temporary file for the test's duration.
class CapturedStderr {
 public:
  CapturedStderr() : path_("/tmp/rocecap_logging_" + std::to_string(getpid())) {
    saved_ = dup(STDERR_FILENO);
    const int fd = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, STDERR_FILENO);
    close(fd);
  }
  ~CapturedStderr() {
    restore();
    unlink(path_.c_str());
  }
  void restore() {
    if (saved_ < 0) return;
    dup2(saved_, STDERR_FILENO);
    close(saved_);
    saved_ = -1;
  }
  std::string text() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

TEST(Logging, JournalStreamMatchingStderrIsDetected) {
  CapturedStderr cap;
  struct stat st {};
  ASSERT_EQ(fstat(STDERR_FILENO, &st), 0);
  const std::string value = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  setenv("JOURNAL_STREAM", value.c_str(), 1);
  EXPECT_TRUE(stderr_is_journal());
  setenv("JOURNAL_STREAM", "1:2", 1);
  EXPECT_FALSE(stderr_is_journal());
  unsetenv("JOURNAL_STREAM");
  EXPECT_FALSE(stderr_is_journal());
}

TEST(Logging, JournalLinesCarrySyslogPriorities) {
  CapturedStderr cap;
  auto log = make_logger("debug", true);
  log->error("disk full on /data/x");
  log->warn("late frame");
  log->info("started");
  log->debug("detail");
  log->flush();
  cap.restore();
  EXPECT_EQ(cap.text(), "<3>disk full on /data/x\n<4>late frame\n<6>started\n<7>detail\n");
}

TEST(Logging, LevelFiltersAndUnknownLevelIsRefused) {
  CapturedStderr cap;
  auto log = make_logger("warn", false);
  log->info("hidden");
  log->warn("shown");
  log->flush();
  cap.restore();
  const std::string text = cap.text();
  EXPECT_EQ(text.find("hidden"), std::string::npos);
  EXPECT_NE(text.find("shown"), std::string::npos);
  EXPECT_THROW(make_logger("loud", false), std::invalid_argument);
}

}  // namespace
}  // namespace rocecap::daemon
