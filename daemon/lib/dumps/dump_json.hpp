// The pieces of a dump's answer and dump.json that triggered dumps (dump_service.cpp) and
// `rocecap extract` (daemon/lib/extract) write alike, so that an extract of a window names its
// files, ranges, dispersion and outcome exactly as a dump of that window does (doc/dumps.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "config/run_config.hpp"
#include "writers/dump_writer.hpp"

namespace rocecap::daemon {

// {"first_frame", "last_frame", "frames"} and, when given, "reason".
nlohmann::json range_json(uint64_t first, uint64_t last, const std::string& reason = {});

// A dump file's extension: codif/vdif (raw), chead, vhead, pcap.
const char* dump_extension(config::OutputFormat f, bool vdif);

// <interface>_<group>_<port>_<antenna>[_t<thread>]: the name of a stream's dump files before
// the extension.
std::string dump_file_stem(const config::RunConfig& config, const config::StreamRef& ref);

// The stream's dump file names for `formats` (relative to the dump directory).
writers::DumpFiles dump_file_names(const config::RunConfig& config, const config::StreamRef& ref,
                                   const std::vector<config::OutputFormat>& formats, bool vdif);

// "a.b.c.d:port antenna" (log lines and errors).
std::string dump_stream_name(const config::RunConfig& config, const config::StreamRef& ref);

// dump.json's "dispersion": the request's dm, the reference frequency and the formula.
nlohmann::json dispersion_json(double dm, double ref_mhz, bool ref_is_top_of_band);

// What a stream's dump wrote (frames, fill_frames, bytes, gaps, not_written, write_error_lost,
// files, errors) added to `s`.
nlohmann::json stream_outcome_json(const writers::StreamDumpResult& res, nlohmann::json s);

}  // namespace rocecap::daemon
