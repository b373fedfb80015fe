#include "daemon/lib/reporting/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace rocecap::daemon {
namespace {

int syslog_priority(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::critical:
      return 2;
    case spdlog::level::err:
      return 3;
    case spdlog::level::warn:
      return 4;
    case spdlog::level::info:
      return 6;
    default:
      return 7;
  }
}

// "<N>message\n" straight to stderr: the journal parses the prefix.
class JournalStderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t text;
    formatter_->format(msg, text);
    std::fprintf(stderr, "<%d>%.*s", syslog_priority(msg.level), static_cast<int>(text.size()),
                 text.data());
  }
  void flush_() override { std::fflush(stderr); }
};

}  // namespace

bool stderr_is_journal() {
  const char* env = std::getenv("JOURNAL_STREAM");
  if (env == nullptr) return false;
  unsigned long long dev = 0, ino = 0;
  if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
  struct stat st {};
  return fstat(STDERR_FILENO, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

std::shared_ptr<spdlog::logger> make_logger(const std::string& level, bool journal) {
  const auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") {
    throw std::invalid_argument("unknown log level '" + level + "'");
  }
  std::shared_ptr<spdlog::logger> logger;
  if (journal) {
    logger = std::make_shared<spdlog::logger>("rocecapd", std::make_shared<JournalStderrSink>());
    logger->set_pattern("%v");
  } else {
    logger = std::make_shared<spdlog::logger>("rocecapd",
                                              std::make_shared<spdlog::sinks::stderr_sink_mt>());
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%-5l%$ %v");
  }
  logger->set_level(lvl);
  logger->flush_on(spdlog::level::info);
  return logger;
}

}  // namespace rocecap::daemon
