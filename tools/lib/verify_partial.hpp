// `rocecap verify` on a run that did not capture everything the generator sent because its
// process was killed: a recovered run (state "recovered", `rocecap recover` or a restart) or a
// run continued by later attempts (manifest "attempts"). Its files hold, per attempt, the
// frames of one window of the stream; its counters are snapshots or sums over attempts, not
// what one process counted from the first frame to the last. So for such a run verify checks
// what can be checked exactly: each attempt's files of a stream are whole frames and equal,
// byte for byte, the generator's time-aligned frames over the window they cover (fill frames
// included), and pcap records are the generator's frames; it reports how many expected frames
// the windows hold and how many were not captured, and compares no counter with the generator.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/lib/verify_files.hpp"

namespace rocecap::tools {

// True for a recovered run or one with more than one attempt.
bool is_partial_run(const nlohmann::json& manifest);

struct PartialFiles {
  const nlohmann::json* files = nullptr;  // the stream's "files" list
  const char* format = "raw";
  std::filesystem::path root;  // the output directory
  SequenceSpec spec;           // expect: the whole stream's expectation
};

struct PartialVerdict {
  std::vector<std::string> problems;
  std::string checked;    // e.g. "raw: attempt 1 frames [a, b], attempt 2 [c, d] byte-identical"
  uint64_t captured = 0;  // expected frame slots inside the windows
  uint64_t expected = 0;  // expected frame slots of the whole stream
};

PartialVerdict compare_partial(const PartialFiles& in);

}  // namespace rocecap::tools
