// Fault injection in the file layer, for tests of a whole rocecapd run (issue 12: "EIO on one
// target mid-run ... the run goes on, the data reaches another target, nothing is lost").
//
// A test cannot make a real disk answer EIO on demand (dm-flakey and friends need a block device
// and root in the initial namespace); this seam makes OutputFile answer as such a disk would:
// every file under one directory fails with EIO once a bound is passed. rocecapd installs it only
// when the environment asks (ROCECAP_FAULT_EIO, read once at start-up, the directory must be one
// of the run's output targets, logged as an error: "fault injection active: ..."); nothing else
// installs it, so a capture host does not trip it by accident.
//
//   ROCECAP_FAULT_EIO=after_bytes=N:DIRECTORY   writes of files under DIRECTORY fail once the
//                                               bytes written there would pass N
//   ROCECAP_FAULT_EIO=after_files=N:DIRECTORY   the (N+1)th file opened there fails to open
//
// Once tripped the directory behaves as a dead device: every later open and every write there
// (write(), writev(), an io_uring completion) fails with EIO, the message ending with
// " (injected: ROCECAP_FAULT_EIO)" so that the log and the manifest never pass it off as a real
// disk failure. fsync is not affected (the writes are where the seam is).
//
// Cost when not installed: one relaxed load per file opened; the per-write check is only made on
// files opened under the directory while installed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "writers/status.hpp"

namespace rocecap::writers::fault {

inline constexpr const char* kEnvironment = "ROCECAP_FAULT_EIO";

struct Spec {
  std::filesystem::path directory;  // absolute
  std::optional<uint64_t> after_bytes;
  std::optional<uint64_t> after_files;
};

// Parses the value of ROCECAP_FAULT_EIO; nullopt with the reason in `error` when malformed.
std::optional<Spec> parse(std::string_view text, std::string& error);
// "writes under DIR fail with EIO once N bytes were written there" (for the log).
std::string describe(const Spec& spec);

// Process-wide; install before the writers start, clear after they stopped (not thread-safe
// against writers running).
void install(const Spec& spec);
void clear() noexcept;

// OutputFile's side (thread-safe). Whether a file at `path` is under the faulty directory.
bool covers(const std::filesystem::path& path);
// A file under it is being opened: true when the open must fail (the directory tripped).
bool fail_open() noexcept;
// `n` bytes are about to be written under it: true when the write must fail; false counts them.
bool fail_write(uint64_t n) noexcept;
// EIO for `op` on `path`, marked as injected.
Status error(std::string_view op, const std::filesystem::path& path);

}  // namespace rocecap::writers::fault
