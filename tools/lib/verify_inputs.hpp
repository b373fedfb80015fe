// What `rocecap verify` is given: the run's manifest (--manifest) and the generator's summary
// (--expect), each read and checked to be what it claims before anything is compared. A file
// of the other kind, `{}` or a pcap would otherwise be read as a summary of defaults, whose
// first complaint named a generator option (--total-samples) the user never gave.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tools/lib/gen_summary.hpp"

namespace rocecap::tools {

// Throw VerifyInputError naming the file and what it is instead (not JSON, the other kind of
// file, neither).
nlohmann::json read_manifest_json(const std::filesystem::path& path);
GenSummary read_gen_summary(const std::filesystem::path& path);

}  // namespace rocecap::tools
