// The run's manifest.json and the disk space it is promised. A full output disk is the usual
// way a capture ends badly, and it must not also cost the record of what happened: at start a
// reserve file is allocated beside the manifest, and when the final manifest cannot be written
// the reserve is given back and the write tried once more. (Periodic writes never spend it:
// the writers would fill the freed space before the final write.) Used by one thread at a time (the
// main thread before and after the writer thread, the writer thread while it runs).
#pragma once

#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "daemon/lib/reporting/manifest.hpp"

namespace rocecap::daemon {

class ManifestFile {
 public:
  // 1 MiB holds the manifest of a large run with thousands of gaps listed.
  static constexpr std::size_t kDefaultReserve = std::size_t{1} << 20;

  // Opens run_dir itself (O_DIRECTORY|O_NOFOLLOW): every later write goes into that directory,
  // never through a symlink put in its place. A run_dir that is a symlink cannot be opened;
  // each write then fails, naming it.
  explicit ManifestFile(const std::filesystem::path& run_dir,
                        std::size_t reserve_bytes = kDefaultReserve);
  ~ManifestFile();  // gives the reserve back
  ManifestFile(const ManifestFile&) = delete;
  ManifestFile& operator=(const ManifestFile&) = delete;

  // This attempt continues a run: every write merges `previous` (the run's manifest before it)
  // with this attempt's own (rundir/attempts.hpp). Without it, a first attempt ("attempt": 1).
  void continue_run(nlohmann::json previous, int attempt);

  // Writes atomically; empty on success, else the error (after the retry, if any).
  // `final`: the run's last write, which may spend the reserve. `durable` false: without fsync
  // (the running snapshots; reporting/atomic_file.hpp says what that saves and risks).
  std::string write(const Manifest& m, bool final, bool durable = true);

  const std::filesystem::path& path() const noexcept { return path_; }
  bool reserve_held() const noexcept { return reserved_; }

 private:
  void release_reserve() noexcept;

  std::filesystem::path path_;
  std::filesystem::path reserve_;
  int dirfd_ = -1;
  std::string open_error_;
  bool reserved_ = false;
  nlohmann::json previous_;
  int attempt_ = 1;
};

}  // namespace rocecap::daemon
