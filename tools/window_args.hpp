// The window options `rocecap trigger` and `rocecap extract` share, and the trigger request
// (doc/dumps.md) they make: both send the same JSON, one to a daemon, one to the extractor.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace rocecap::tools {

struct WindowArgs {
  std::string start, end, label;
  std::vector<std::string> antennas, groups;
  std::optional<double> dm, ref_freq;

  // A time argument: Unix nanoseconds when all digits, else UTC text (checked by the reader).
  static nlohmann::json time_value(const std::string& s) {
    if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos)
      return nlohmann::json(std::stoll(s));
    return nlohmann::json(s);
  }
  nlohmann::json request() const {
    nlohmann::json j{{"start", time_value(start)}, {"end", time_value(end)}};
    if (!antennas.empty()) j["antennas"] = antennas;
    if (!groups.empty()) j["groups"] = groups;
    if (!label.empty()) j["label"] = label;
    if (dm) j["dm"] = *dm;
    if (ref_freq) j["ref_freq"] = *ref_freq;
    return j;
  }
};

}  // namespace rocecap::tools
