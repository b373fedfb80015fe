// The two messages a consumer sends (doc/consumers.md): the hello that names its streams and
// mode, and the acks that report its progress. Parsed strictly: a consumer is another
// process, maybe a hostile one, so every field is bounded and anything unexpected is an error
// (hello) or ignored (ack), never a crash.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rocecap::daemon {

struct Hello {
  bool hold = false;
  bool all = false;
  std::vector<std::string> streams;  // names or antenna names (when !all)
  std::string name = "consumer";     // [A-Za-z0-9_.-]{1,32}
};

// "hello version=1 mode=lossy|hold streams=all|NAME[,NAME...] [name=WORD]": an error text for
// the consumer, or empty when `out` is filled.
std::string parse_hello(const std::string& text, Hello& out);

struct Ack {
  uint32_t stream = 0;
  uint64_t next = 0, read = 0, missed = 0, ack = 0;
};

// "ack K NEXT_POS READ MISSED ACK_POS"; false for anything else.
bool parse_ack(const std::string& line, Ack& out);

}  // namespace rocecap::daemon
