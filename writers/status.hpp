// Result of a writer operation. Writers never throw on the data path: a failed write comes back
// as a Status carrying the errno and a message that names the file, so the caller can count it
// and log it once. An ok Status holds an empty string (no allocation).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>

namespace rocecap::writers {

class Status {
 public:
  Status() = default;
  // `path`: the file or directory the error is about, when there is one (for the manifest).
  static Status error(int code, std::string message, std::filesystem::path path = {}) {
    return Status(code, std::move(message), std::move(path));
  }

  bool ok() const noexcept { return code_ == 0; }
  explicit operator bool() const noexcept { return ok(); }
  int code() const noexcept { return code_; }  // errno value; 0 when ok
  const std::string& message() const noexcept { return message_; }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  Status(int code, std::string message, std::filesystem::path path)
      : code_(code), message_(std::move(message)), path_(std::move(path)) {}
  int code_ = 0;
  std::string message_;
  std::filesystem::path path_;
};

// "<op> <path>: <strerror(err)>", e.g. "write /data/run1/a.0001.codif: No space left on device".
Status sys_error(int err, std::string_view op, const std::filesystem::path& path);

// Errors that mean the storage itself is gone or failing rather than full: EIO (the device
// failed), EROFS (the file system was remounted read-only, as ext4 errors=remount-ro does),
// ENOENT (a file or directory vanished under the writer), ESTALE, ENODEV, ENXIO. A run that met
// one could not be recorded as asked (rocecapd exit 5). ENOSPC, EDQUOT and EFBIG are "full":
// the writer retries and the run goes on.
bool is_storage_loss(int err) noexcept;

}  // namespace rocecap::writers
