#include "config/token_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

namespace rocecap::config {
namespace {

constexpr std::size_t kMaxTokenFileBytes = 512;

// Owns the token file's descriptor while it is read.
class TokenFd {
 public:
  explicit TokenFd(int fd) noexcept : fd_(fd) {}
  TokenFd(const TokenFd&) = delete;
  TokenFd& operator=(const TokenFd&) = delete;
  ~TokenFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Written by `echo secret > file` the token ends in a newline; an editor may add spaces. None
// of it can be part of a bearer token (RFC 6750: no whitespace), so both ends are trimmed.
std::string_view trimmed(std::string_view s) noexcept {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

// The token service users share by group (0640, group rocecap) is intended; one every user of
// the host can read (or replace) is not.
std::string mode_warning(const std::string& path, mode_t mode) {
  const char* who = (mode & S_IWOTH) != 0   ? "writable"
                    : (mode & S_IROTH) != 0 ? "readable"
                                            : nullptr;
  if (who == nullptr) return {};
  return fmt::format(
      "{} is {} by every user (mode {:04o}): anyone on this host can start dumps "
      "with it; chmod o-rw (0640 for the service's group, or 0600)",
      path, who, mode & 07777);
}

std::string read_at_most(int fd, std::size_t max, std::string& text) {
  char buffer[kMaxTokenFileBytes + 1];
  while (text.size() <= max) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) return {};
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::strerror(errno);
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return {};
}

}  // namespace

TokenFile read_token_file(const std::string& path) {
  TokenFile t;
  const TokenFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  struct stat st {};
  if (fd.get() < 0 || ::fstat(fd.get(), &st) != 0) {
    t.error = fmt::format("{} cannot be read: {}", path, std::strerror(errno));
    return t;
  }
  if (!S_ISREG(st.st_mode)) {
    t.error = fmt::format("{} is not a regular file", path);
    return t;
  }
  std::string text;
  if (const std::string why = read_at_most(fd.get(), kMaxTokenFileBytes, text); !why.empty()) {
    t.error = fmt::format("{} cannot be read: {}", path, why);
    return t;
  }
  const std::string_view token = trimmed(text);
  if (text.size() > kMaxTokenFileBytes) {
    t.error =
        fmt::format("{} is longer than {} bytes; it holds one token", path, kMaxTokenFileBytes);
  } else if (token.empty()) {
    t.error = fmt::format("{} holds no token (only whitespace)", path);
  }
  for (const char c : token) {
    if (!t.error.empty()) break;
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      t.error = fmt::format(
          "{} holds a control character (0x{:02X}) inside the token; it holds "
          "one token on one line",
          path, u);
    }
  }
  if (!t.error.empty()) return t;
  t.token = std::string(token);
  t.warning = mode_warning(path, st.st_mode);
  return t;
}

}  // namespace rocecap::config
