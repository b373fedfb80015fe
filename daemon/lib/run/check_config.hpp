// `rocecapd --check-config FILE`: validate a run file without starting anything.
#pragma once

#include <ostream>
#include <string>

#include "config/loader.hpp"

namespace rocecap::daemon {

// Exit codes of --check-config.
inline constexpr int kCheckConfigOk = 0;       // valid; the summary went to out
inline constexpr int kCheckConfigInvalid = 2;  // problems (or unreadable file); listed on err

// Loads path; prints every problem, one per line as "file:line:column: key: message", then a
// count, to err and returns kCheckConfigInvalid; or prints render_summary() to out and returns
// kCheckConfigOk. host selects what the host checks consult (tests pass a fixed CPU list).
int run_check_config(const std::string& path, std::ostream& out, std::ostream& err,
                     const config::HostChecks& host = {});

}  // namespace rocecap::daemon
