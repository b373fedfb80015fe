// rocecapd's log: spdlog to stderr. Under systemd, when JOURNAL_STREAM names our stderr, each
// line is prefixed "<N>" with its syslog priority (sd-daemon(3)) and carries no timestamp of
// its own, so the journal records the right priority and time. Never used per packet.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace rocecap::daemon {

// True when JOURNAL_STREAM ("dev:inode") is the device and inode of file descriptor 2.
bool stderr_is_journal();

// The logger for the daemon and its threads. Throws std::invalid_argument for an unknown level
// (trace, debug, info, warn, error, critical, off).
std::shared_ptr<spdlog::logger> make_logger(const std::string& level, bool journal);

}  // namespace rocecap::daemon
