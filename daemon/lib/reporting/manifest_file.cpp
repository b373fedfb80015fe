#include "daemon/lib/reporting/manifest_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/lib/reporting/atomic_file.hpp"
#include "rundir/attempts.hpp"

namespace rocecap::daemon {
namespace {

constexpr const char* kManifestName = "manifest.json";
constexpr const char* kReserveName = ".manifest-reserve";

}  // namespace

ManifestFile::ManifestFile(const std::filesystem::path& run_dir, std::size_t reserve_bytes)
    : path_(run_dir / kManifestName), reserve_(run_dir / kReserveName) {
  dirfd_ = ::open(run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirfd_ < 0) {
    open_error_ = "cannot open the run directory " + run_dir.string() + ": " + std::strerror(errno);
    struct stat st {};
    // O_NOFOLLOW|O_DIRECTORY on a symlink fails with ENOTDIR (or ELOOP): say which it was.
    if (::lstat(run_dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      open_error_ += " (it is a symlink: refused, the manifest stays inside the run directory)";
    }
    return;
  }
  ::unlinkat(dirfd_, kReserveName, 0);  // a reserve left by a killed run is ours to reuse
  const int fd =
      ::openat(dirfd_, kReserveName, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;  // no reserve: the manifest is written as usual, without the promise
  // posix_fallocate really takes the blocks (tmpfs and ext4 alike); a sparse file would not.
  reserved_ =
      reserve_bytes == 0 || ::posix_fallocate(fd, 0, static_cast<off_t>(reserve_bytes)) == 0;
  ::close(fd);
  if (!reserved_) ::unlinkat(dirfd_, kReserveName, 0);
}

ManifestFile::~ManifestFile() {
  release_reserve();
  if (dirfd_ >= 0) ::close(dirfd_);
}

void ManifestFile::release_reserve() noexcept {
  if (reserved_) ::unlinkat(dirfd_, kReserveName, 0);
  reserved_ = false;
}

void ManifestFile::continue_run(nlohmann::json previous, int attempt) {
  previous_ = std::move(previous);
  attempt_ = attempt;
}

std::string ManifestFile::write(const Manifest& m, bool final, bool durable) {
  if (dirfd_ < 0) return open_error_;
  nlohmann::json j = to_json(m);
  j["attempt"] = attempt_;
  if (!previous_.is_null()) j = rundir::merge_attempts(previous_, j, attempt_);
  if (!m.triggers.is_null()) j["triggers"] = m.triggers;     // this attempt's (doc/dumps.md)
  if (!m.consumers.is_null()) j["consumers"] = m.consumers;  // doc/consumers.md
  const std::string text = j.dump(2) + "\n";
  std::string err =
      replace_file_atomically_at(dirfd_, kManifestName, text, path_.string(), 0640, durable);
  if (err.empty() || !final || !reserved_) return err;
  release_reserve();
  err = replace_file_atomically_at(dirfd_, kManifestName, text, path_.string());
  return err;
}

}  // namespace rocecap::daemon
