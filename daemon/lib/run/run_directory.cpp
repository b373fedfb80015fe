#include "daemon/lib/run/run_directory.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "writers/output_path.hpp"

namespace rocecap::daemon {

RunDirectory::RunDirectory(const std::filesystem::path& output_dir,
                           const std::filesystem::path& run_dir)
    : path_(run_dir) {
  if (const writers::Status s = writers::make_directories(run_dir); !s) {
    throw std::runtime_error("cannot create the run directory: " + s.message());
  }
  struct stat st {};
  if (::lstat(run_dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(run_dir, ec);
    throw std::runtime_error("run directory " + run_dir.string() + " is a symlink (to " +
                             target.string() +
                             "): refused, every file of a run stays inside output.directory");
  }
  std::string why;
  if (!writers::resolves_inside(run_dir, output_dir, why)) {
    throw std::runtime_error("run directory refused: " + why);
  }
  fd_ = ::open(run_dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) {
    const std::string err = std::strerror(errno);
    if (fd_ >= 0) ::close(fd_);
    throw std::runtime_error("cannot open the run directory " + run_dir.string() + ": " + err);
  }
  dev_ = st.st_dev;
  ino_ = st.st_ino;
}

RunDirectory::~RunDirectory() {
  if (fd_ >= 0) ::close(fd_);
}

std::string RunDirectory::check() const {
  struct stat open_st {};
  if (::fstat(fd_, &open_st) == 0 && open_st.st_nlink == 0) {
    return "the run directory " + path_.string() + " was removed";
  }
  struct stat now {};
  if (::stat(path_.c_str(), &now) != 0) {
    return "the run directory " + path_.string() + " is gone: " + std::strerror(errno);
  }
  if (now.st_dev != dev_ || now.st_ino != ino_) {
    return "the run directory " + path_.string() +
           " was replaced (another directory now has its name)";
  }
  return {};
}

void StorageLoss::report(const std::string& why) noexcept {
  if (claimed_.exchange(true)) return;
  try {
    why_ = why;
  } catch (...) {  // out of memory: the flag still says it
  }
  lost_.store(true, std::memory_order_release);
}

void StorageLoss::report_files_lost(const std::string& why) noexcept {
  if (files_claimed_.exchange(true)) return;
  try {
    files_why_ = why;
  } catch (...) {  // out of memory: the flag still says it
  }
  files_lost_.store(true, std::memory_order_release);
}

}  // namespace rocecap::daemon
