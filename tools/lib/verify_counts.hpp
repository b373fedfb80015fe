// A stream's manifest counters against what the generator's summary implies (verify_model.hpp),
// shared by the CODIF and VDIF checks of `rocecap verify`.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "tools/lib/verify.hpp"
#include "tools/lib/verify_model.hpp"

namespace rocecap::tools {

// Records one counter in the verdict's expected/actual tables; a problem when they differ.
void compare_count(StreamVerdict& v, const char* what, uint64_t actual, uint64_t expected);

// The sequencing counters every format has: packets, bytes (packets x `frame_bytes`), lost,
// duplicate, late, late_dropped, invalid, and resync (0) of manifest stream entry `m`.
void compare_sequencing(StreamVerdict& v, const nlohmann::json& m, const StreamExpectation& e,
                        uint64_t frame_bytes);

}  // namespace rocecap::tools
