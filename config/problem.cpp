#include "config/problem.hpp"

#include <fmt/format.h>

namespace rocecap::config {

std::string format_problem(const Problem& p) {
  std::string out = p.line > 0 ? fmt::format("{}:{}:{}: ", p.file, p.line, p.column)
                               : fmt::format("{}: ", p.file);
  if (!p.key_path.empty()) out += p.key_path + ": ";
  out += p.message;
  return out;
}

}  // namespace rocecap::config
