#include "fleet/keys.hpp"

#include <algorithm>

namespace rocecap::fleet {

std::string Keys::leaf(std::string_view key, std::string_view dir) {
  if (key.substr(0, dir.size()) != dir) return {};
  const std::string_view rest = key.substr(dir.size());
  if (rest.empty() || rest.find('/') != std::string_view::npos) return {};
  return std::string(rest);
}

bool valid_name(std::string_view name) {
  if (name.empty() || name == "." || name == ".." || name.size() > 128) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

}  // namespace rocecap::fleet
