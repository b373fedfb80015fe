#include "writers/status.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <system_error>

namespace rocecap::writers {

Status sys_error(int err, std::string_view op, const std::filesystem::path& path) {
  return Status::error(
      err, fmt::format("{} {}: {}", op, path.string(), std::generic_category().message(err)), path);
}

bool is_storage_loss(int err) noexcept {
  return err == EIO || err == EROFS || err == ENOENT || err == ESTALE || err == ENODEV ||
         err == ENXIO;
}

}  // namespace rocecap::writers
