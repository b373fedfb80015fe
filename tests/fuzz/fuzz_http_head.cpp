// The metrics listener's HTTP request head parser and bearer-token reader on arbitrary bytes
// (daemon/lib/listeners/http_request.hpp): whatever a network client sends, no crash, and what
// comes back is consistent with the input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "daemon/lib/listeners/http_request.hpp"
#include "fuzz_check.hpp"

namespace d = rocecap::daemon;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const auto head = d::parse_http_head(in);
  if (!head) {
    FUZZ_CHECK(size <= d::kMaxHttpHead);  // a longer unfinished head is refused (431)
  } else if (head->error == 0) {
    FUZZ_CHECK(head->size > 0 && head->size <= size && head->size <= d::kMaxHttpHead + 4);
    FUZZ_CHECK(!head->method.empty() && !head->target.empty() && head->target.front() == '/');
    FUZZ_CHECK(head->path().size() <= head->target.size());
  } else {
    FUZZ_CHECK(head->error >= 400 && head->error < 600 && !head->why.empty());
  }
  const std::string token = d::bearer_token(in);
  if (!token.empty()) {
    FUZZ_CHECK(in.find(token) != std::string_view::npos);
    FUZZ_CHECK(token.front() != ' ' && token.front() != '\t');
    FUZZ_CHECK(token.back() != ' ' && token.back() != '\t');
  }
  return 0;
}
