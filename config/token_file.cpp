#include "config/token_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace rocecap::config {

TokenFile read_token_file(const std::string& path) {
  TokenFile t;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    t.error = path + ": " + std::strerror(errno);
    return t;
  }
  char buf[512];
  const std::size_t n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  t.token.assign(buf, n);
  while (!t.token.empty() &&
         (t.token.back() == '\n' || t.token.back() == '\r' || t.token.back() == ' '))
    t.token.pop_back();
  if (t.token.empty()) t.error = path + " is empty";
  return t;
}

}  // namespace rocecap::config
