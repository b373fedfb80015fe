#include "tools/lib/verify_counts.hpp"

#include <string>

namespace rocecap::tools {

void compare_count(StreamVerdict& v, const char* what, uint64_t actual, uint64_t expected) {
  v.expected[what] = expected;
  v.actual[what] = actual;
  if (actual != expected) {
    v.problems.push_back(std::string(what) + " " + std::to_string(actual) + ", expected " +
                         std::to_string(expected));
  }
}

void compare_sequencing(StreamVerdict& v, const nlohmann::json& m, const StreamExpectation& e,
                        uint64_t frame_bytes) {
  auto get = [&](const char* key) { return m.at(key).get<uint64_t>(); };
  compare_count(v, "packets", get("packets"), e.packets);
  compare_count(v, "bytes", get("bytes"), e.packets * frame_bytes);
  compare_count(v, "lost", get("lost"), e.lost);
  compare_count(v, "duplicate", get("duplicate"), e.duplicate);
  compare_count(v, "late", get("late"), e.late);
  compare_count(v, "late_dropped", get("late_dropped"), e.late_dropped);
  compare_count(v, "invalid", get("invalid"), e.invalid);
  compare_count(v, "resync", get("resync"), 0);
}

}  // namespace rocecap::tools
