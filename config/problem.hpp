// One thing wrong with a run file, located at file:line:column (1-based; 0 when the problem
// concerns the file as a whole, e.g. it cannot be read).
#pragma once

#include <string>

namespace rocecap::config {

struct Problem {
  std::string file;
  int line = 0;
  int column = 0;
  std::string key_path;  // "output.rotate", "capture.interfaces[1].groups[0].port"; may be empty
  std::string message;   // "'4GB' is not a size; use e.g. 4GiB"
};

// "run.yaml:12:5: output.rotate: '4GB' is not a size; use e.g. 4GiB".
// Without a position: "run.yaml: ..."; without a key path the message follows the position.
std::string format_problem(const Problem& problem);

}  // namespace rocecap::config
