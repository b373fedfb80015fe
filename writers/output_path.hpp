// Where an output file may go: a relative name (expanded from the run file's templates by
// config/name_template.hpp) placed under the output directory, never outside it.
#pragma once

#include <filesystem>
#include <string>

#include "writers/status.hpp"

namespace rocecap::writers {

// out_dir / relative, with its parent directories created. Refused (EINVAL) when `relative` is
// absolute or has an empty, "." or ".." component; refused (EXDEV) when, once created, its
// directory resolves (symlinks followed) outside out_dir. Does not create the file itself.
Status place_in_directory(const std::filesystem::path& out_dir, const std::string& relative,
                          std::filesystem::path& out);

}  // namespace rocecap::writers
