// The open-files limit (RLIMIT_NOFILE) the trigger listeners need: each connection is a file
// descriptor, and a login shell's default soft limit of 1024 cannot hold both listeners' full
// complement (1024 + 256) beside the run's own files and sockets.
#pragma once

#include <sys/resource.h>

#include <string>

namespace rocecap::daemon {

// Descriptors rocecapd wants: both listeners full, plus room for the run's own.
rlim_t open_files_wanted();

// Raises the soft RLIMIT_NOFILE to the hard one when the soft one is below `wanted` (an
// unprivileged process may; the hard limit is the administrator's). Returns what to log:
// {false, words} for an info line, {true, words} for a warning (the hard limit is too low, or
// setrlimit failed); empty words when nothing needed doing.
struct OpenFilesNote {
  bool warning = false;
  std::string words;
};
OpenFilesNote raise_open_files_limit(rlim_t wanted = open_files_wanted());

}  // namespace rocecap::daemon
