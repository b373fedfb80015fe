// The part of HTTP/1.1 (RFC 9112) the metrics listener needs: the request head of GET /metrics
// and POST /trigger, bodies by Content-Length only, and the bearer token of an Authorization
// header (RFC 6750; the scheme is case-insensitive, RFC 7235 section 2.1).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace rocecap::daemon {

inline constexpr std::size_t kMaxHttpHead = 16 * 1024;  // request line and headers

struct HttpHead {
  std::size_t size = 0;  // bytes of the head, its closing empty line included
  int error = 0;         // non-zero: the request is refused with this status ...
  std::string why;       // ... and these words
  std::string method, target;
  std::optional<std::size_t> content_length;
  bool expect_continue = false;  // "Expect: 100-continue"
  std::string authorization;     // the first Authorization header's value, trimmed
  std::string path() const { return target.substr(0, target.find('?')); }
};

// The head at the start of `received`; nullopt while it is incomplete (and within
// kMaxHttpHead: a longer one is an error 431).
std::optional<HttpHead> parse_http_head(std::string_view received);

// The token of "Bearer <token>" in any case of "Bearer", with any spaces or tabs around; empty
// for another scheme or no token.
std::string bearer_token(std::string_view authorization);

}  // namespace rocecap::daemon
