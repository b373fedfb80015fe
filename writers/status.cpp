#include "writers/status.hpp"

#include <fmt/format.h>

#include <system_error>

namespace rocecap::writers {

Status sys_error(int err, std::string_view op, const std::filesystem::path& path) {
  return Status::error(
      err, fmt::format("{} {}: {}", op, path.string(), std::generic_category().message(err)), path);
}

}  // namespace rocecap::writers
