// retention.http_token_file (doc/dumps.md): the secret the HTTP trigger endpoint requires. One
// reader for `rocecapd --check-config`, the start-up log and the dump service, so all three
// agree on what the token is and what is wrong with the file.
#pragma once

#include <string>

namespace rocecap::config {

struct TokenFile {
  std::string token;    // the secret; empty when `error` is set
  std::string error;    // why the file gives no usable token (a problem of the key)
  std::string warning;  // usable, but others may read it
};

// Reads `path`, a regular file of at most 512 bytes: the token is its contents without the
// whitespace around it (a trailing newline from `echo`); whitespace only, a control character
// inside (a second line) or an unreadable file is an error. A file every user may read or
// write gets a warning; group access is the service group's and is not warned about.
TokenFile read_token_file(const std::string& path);

}  // namespace rocecap::config
