// The consumer's messages (daemon/lib/consumers/hello.hpp), read strictly: a consumer is
// another process, maybe a hostile one.
#include <gtest/gtest.h>

#include <string>

#include "daemon/lib/consumers/hello.hpp"

namespace rocecap::daemon {
namespace {

TEST(ConsumerHello, AWellFormedHelloIsRead) {
  Hello h;
  EXPECT_EQ(parse_hello("hello version=1 mode=hold streams=a1,a2@239.1.0.1:36001 name=beam", h),
            "");
  EXPECT_TRUE(h.hold);
  EXPECT_FALSE(h.all);
  EXPECT_EQ(h.streams, (std::vector<std::string>{"a1", "a2@239.1.0.1:36001"}));
  EXPECT_EQ(h.name, "beam");
  Hello all;
  EXPECT_EQ(parse_hello("hello version=1 mode=lossy streams=all", all), "");
  EXPECT_TRUE(all.all);
  EXPECT_FALSE(all.hold);
  EXPECT_EQ(all.name, "consumer");
}

TEST(ConsumerHello, AnythingElseIsRefusedWithAReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "malformed"},
      {"GET / HTTP/1.1", "malformed"},
      {"hello version=2 mode=lossy streams=all", "version 2"},
      {"hello version=1 mode=greedy streams=all", "mode must be lossy or hold"},
      {"hello version=1 mode=lossy", "needs version=, mode= and streams="},
      {"hello version=1 mode=lossy streams=a1,,a2", "malformed stream name"},
      {"hello version=1 mode=lossy streams=a\x01", "malformed stream name"},
      {"hello version=1 mode=lossy streams=all name=", "name must be"},
      {"hello version=1 mode=lossy streams=all junk", "is not key=value"},
  };
  for (const auto& [text, words] : cases) {
    Hello h;
    const std::string e = parse_hello(text, h);
    EXPECT_NE(e.find(words), std::string::npos) << "'" << text << "' -> '" << e << "'";
  }
  std::string many = "hello version=1 mode=lossy streams=a";
  for (int i = 0; i < 5000; ++i)
    many += ",a";
  Hello h;
  EXPECT_NE(parse_hello(many, h).find("more than 4096"), std::string::npos);
}

TEST(ConsumerHello, AcksAreNumbersOrNothing) {
  Ack a;
  ASSERT_TRUE(parse_ack("ack 3 100 90 10 55", a));
  EXPECT_EQ(a.stream, 3u);
  EXPECT_EQ(a.next, 100u);
  EXPECT_EQ(a.read, 90u);
  EXPECT_EQ(a.missed, 10u);
  EXPECT_EQ(a.ack, 55u);
  for (const char* bad : {"ack 3 100 90 10", "ack -1 1 1 1 1", "ack 4294967296 1 1 1 1",
                          "nak 1 1 1 1 1", "ack 1 1 1 1 x", "ack 1 99999999999999999999 1 1 1"}) {
    Ack b;
    EXPECT_FALSE(parse_ack(bad, b)) << bad;
  }
}

}  // namespace
}  // namespace rocecap::daemon
