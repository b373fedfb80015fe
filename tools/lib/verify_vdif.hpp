// `rocecap verify` for runs of `rocecap gen --format vdif` (doc/vdif.md). Streams are matched by
// (group, port, source, thread); each one's counters are compared with the sequencing model of
// verify_model.hpp (format-neutral) and its raw and vdifhdr files byte for byte with the frames
// the generator built: the VDIF frames without the VTP number, fill frames (the expected header
// with the invalid bit set, zero data) for the missing indices.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tools/lib/gen_frame.hpp"
#include "tools/lib/verify.hpp"
#include "tools/lib/verify_run_settings.hpp"

namespace rocecap::tools {

// Fills r.streams and r.run_problems; `root` is the output directory the manifest lists files in.
void verify_vdif_streams(const nlohmann::json& manifest, const GenSummary& summary,
                         const FrameBuilder& frames, const RunSettings& run,
                         const std::filesystem::path& root, VerifyResult& r);

}  // namespace rocecap::tools
