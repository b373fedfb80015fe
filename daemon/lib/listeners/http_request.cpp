#include "daemon/lib/listeners/http_request.hpp"

#include <algorithm>
#include <cctype>

namespace rocecap::daemon {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && (is_space(s.back()) || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

HttpHead refused(int status, std::string why) {
  HttpHead h;
  h.error = status;
  h.why = std::move(why);
  return h;
}

// "METHOD SP target SP HTTP/1.x"
bool parse_request_line(std::string_view line, HttpHead& h) {
  const auto a = line.find(' ');
  const auto b = a == std::string_view::npos ? a : line.find(' ', a + 1);
  if (b == std::string_view::npos || a == 0 || b == a + 1) return false;
  h.method = line.substr(0, a);
  h.target = line.substr(a + 1, b - a - 1);
  const std::string_view version = line.substr(b + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    h.error = 505;
    h.why = "only HTTP/1.0 and HTTP/1.1 are served";
  }
  return h.target.front() == '/' || h.error != 0;
}

bool parse_content_length(std::string_view value, HttpHead& h) {
  if (value.empty() || value.size() > 15 ||
      !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  const std::size_t n = std::stoull(std::string(value));
  if (h.content_length && *h.content_length != n) return false;
  h.content_length = n;
  return true;
}

// One "name: value" line; false when it is not one (or its value is unusable).
bool parse_header(std::string_view line, HttpHead& h) {
  const auto colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0 || is_space(line.front())) return false;
  const std::string_view name = line.substr(0, colon);
  if (std::any_of(name.begin(), name.end(), is_space)) return false;
  const std::string_view value = trim(line.substr(colon + 1));
  if (iequals(name, "Content-Length")) return parse_content_length(value, h);
  if (iequals(name, "Transfer-Encoding")) {
    h.error = 411;
    h.why = "send the body with Content-Length (Transfer-Encoding is not supported)";
  } else if (iequals(name, "Expect")) {
    h.expect_continue = iequals(value, "100-continue");
  } else if (iequals(name, "Authorization") && h.authorization.empty()) {
    h.authorization = value;
  }
  return true;
}

// Where the head ends (after its empty line), accepting bare LF line ends as RFC 9112 2.2
// allows; npos while it has not ended.
std::size_t head_end(std::string_view s) {
  const auto crlf = s.find("\r\n\r\n");
  const auto lf = s.find("\n\n");
  if (crlf == std::string_view::npos && lf == std::string_view::npos) return lf;
  return crlf < lf ? crlf + 4 : lf + 2;
}

}  // namespace

std::optional<HttpHead> parse_http_head(std::string_view received) {
  const std::size_t end = head_end(received.substr(0, kMaxHttpHead + 4));
  if (end == std::string_view::npos) {
    if (received.size() <= kMaxHttpHead) return std::nullopt;
    return refused(431, "the request head is longer than 16 KiB");
  }
  HttpHead h;
  h.size = end;
  std::string_view rest = received.substr(0, end);
  bool first = true;
  while (!rest.empty()) {
    const auto nl = rest.find('\n');
    if (nl == std::string_view::npos) break;
    std::string_view line = rest.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    rest.remove_prefix(nl + 1);
    if (line.empty() && !first) break;
    const bool ok = first ? parse_request_line(line, h) : parse_header(line, h);
    if (!ok) return refused(400, first ? "bad request line" : "bad header line");
    first = false;
  }
  if (h.error != 0) return refused(h.error, h.why);
  return h;
}

std::string bearer_token(std::string_view authorization) {
  const std::string_view a = trim(authorization);
  constexpr std::string_view kScheme = "bearer";
  if (a.size() <= kScheme.size() || !iequals(a.substr(0, kScheme.size()), kScheme) ||
      !is_space(a[kScheme.size()]))
    return {};
  return std::string(trim(a.substr(kScheme.size())));
}

}  // namespace rocecap::daemon
