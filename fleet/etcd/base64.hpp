// Base64 (RFC 4648, with padding): etcd's JSON gateway carries keys and values as the proto3
// JSON mapping of `bytes` fields, which is standard base64.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace rocecap::fleet {

std::string base64_encode(std::string_view bytes);
// nullopt when `text` is not padded base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace rocecap::fleet
