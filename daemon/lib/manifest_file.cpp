#include "daemon/lib/manifest_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include "rundir/attempts.hpp"

namespace rocecap::daemon {

ManifestFile::ManifestFile(const std::filesystem::path& run_dir, std::size_t reserve_bytes)
    : path_(run_dir / "manifest.json"), reserve_(run_dir / ".manifest-reserve") {
  ::unlink(reserve_.c_str());  // a reserve left by a killed run is ours to reuse
  const int fd = ::open(reserve_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;  // no reserve: the manifest is written as usual, without the promise
  // posix_fallocate really takes the blocks (tmpfs and ext4 alike); a sparse file would not.
  reserved_ =
      reserve_bytes == 0 || ::posix_fallocate(fd, 0, static_cast<off_t>(reserve_bytes)) == 0;
  ::close(fd);
  if (!reserved_) ::unlink(reserve_.c_str());
}

ManifestFile::~ManifestFile() {
  release_reserve();
}

void ManifestFile::release_reserve() noexcept {
  if (reserved_) ::unlink(reserve_.c_str());
  reserved_ = false;
}

void ManifestFile::continue_run(nlohmann::json previous, int attempt) {
  previous_ = std::move(previous);
  attempt_ = attempt;
}

std::string ManifestFile::write(const Manifest& m, bool final) {
  nlohmann::json j = to_json(m);
  j["attempt"] = attempt_;
  if (!previous_.is_null()) j = rundir::merge_attempts(previous_, j, attempt_);
  std::string err = write_manifest(path_.string(), j);
  if (err.empty() || !final || !reserved_) return err;
  release_reserve();
  err = write_manifest(path_.string(), j);
  return err;
}

}  // namespace rocecap::daemon
