// Scalar parsers of the run file: sizes, durations, integers, hex words, addresses.
#include <gtest/gtest.h>

#include "config/units.hpp"

namespace rocecap::config {
namespace {

std::optional<uint64_t> size(std::string_view text, std::string* why = nullptr) {
  std::string error;
  auto v = parse_size(text, error);
  if (why) *why = error;
  return v;
}

TEST(ConfigUnits, SizesUseBinaryUnits) {
  EXPECT_EQ(size("4096"), 4096u);
  EXPECT_EQ(size("512B"), 512u);
  EXPECT_EQ(size("64KiB"), 65536u);
  EXPECT_EQ(size("8MiB"), 8u << 20);
  EXPECT_EQ(size("4GiB"), uint64_t{4} << 30);
  EXPECT_EQ(size("4 GiB"), uint64_t{4} << 30);
  EXPECT_EQ(size("2TiB"), uint64_t{2} << 40);
  EXPECT_EQ(size("0"), 0u);
}

TEST(ConfigUnits, DecimalAndBadSizesAreRefusedWithAHint) {
  std::string why;
  EXPECT_FALSE(size("4GB", &why));
  EXPECT_EQ(why, "'4GB' is not a size; use e.g. 4GiB");
  EXPECT_FALSE(size("16M", &why));
  EXPECT_EQ(why, "'16M' is not a size; use e.g. 16MiB");
  EXPECT_FALSE(size("10kB", &why));
  EXPECT_EQ(why, "'10kB' is not a size; use e.g. 10KiB");
  EXPECT_FALSE(size("1.5GiB", &why));
  EXPECT_EQ(why, "'1.5GiB' is not a size; use e.g. 1GiB");
  EXPECT_FALSE(size("GiB", &why));
  EXPECT_FALSE(size("-1", &why));
  EXPECT_FALSE(size("", &why));
  EXPECT_FALSE(size("20000000PiB", &why));
  EXPECT_EQ(why, "'20000000PiB' is too large");
  EXPECT_FALSE(size("99999999999999999999", &why));
}

std::optional<int64_t> ms(std::string_view text) {
  std::string error;
  const auto d = parse_duration(text, error);
  if (!d) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::milliseconds>(*d).count();
}

TEST(ConfigUnits, Durations) {
  EXPECT_EQ(ms("500ms"), 500);
  EXPECT_EQ(ms("10s"), 10'000);
  EXPECT_EQ(ms("5m"), 300'000);
  EXPECT_EQ(ms("1h30m"), 5'400'000);
  EXPECT_EQ(ms("2d"), 172'800'000);
  EXPECT_EQ(ms("1h0m5s250ms"), 3'605'250);
  EXPECT_EQ(ms("90m"), 5'400'000);
  for (const char* bad : {"", "10", "s", "1m1h", "1h1h", "5 m", "1.5h", "-5s", "10sec", "3w"}) {
    EXPECT_FALSE(ms(bad).has_value()) << bad;
  }
  std::string why;
  EXPECT_FALSE(parse_duration("10", why));
  EXPECT_EQ(why, "'10' is not a duration; use e.g. 30s, 5m or 1h30m");
  EXPECT_FALSE(parse_duration("999999999d", why));
  EXPECT_EQ(why, "'999999999d' is too long");
}

TEST(ConfigUnits, WholeNumbersAndHexWords) {
  std::string why;
  EXPECT_EQ(parse_uint("65535", 65535, why), 65535u);
  EXPECT_FALSE(parse_uint("65536", 65535, why));
  EXPECT_EQ(why, "65536 is too large (at most 65535)");
  EXPECT_FALSE(parse_uint("+1", 10, why));
  EXPECT_FALSE(parse_uint("0x10", 100, why));
  EXPECT_FALSE(parse_uint("1e3", 10000, why));
  EXPECT_EQ(parse_hex32("0xFEEDCAFE", why), 0xFEEDCAFEu);
  EXPECT_EQ(parse_hex32("0xabaddeed", why), 0xABADDEEDu);
  EXPECT_EQ(parse_hex32("0x1", why), 1u);
  for (const char* bad : {"FEEDCAFE", "0x", "0x1FEEDCAFE", "0xFEEDCAFG", "4277009102"}) {
    EXPECT_FALSE(parse_hex32(bad, why)) << bad;
  }
}

TEST(ConfigUnits, Ipv4AddressesAndEndpoints) {
  std::string why;
  EXPECT_EQ(parse_ipv4("239.17.0.1", why), 0xEF110001u);
  EXPECT_EQ(parse_ipv4("0.0.0.0", why), 0u);
  EXPECT_EQ(parse_ipv4("255.255.255.255", why), 0xFFFFFFFFu);
  for (const char* bad : {"239.17.0", "239.17.0.1.2", "239.17.0.256", "239.017.0.1", "a.b.c.d",
                          "239..0.1", "", " 1.2.3.4"}) {
    EXPECT_FALSE(parse_ipv4(bad, why)) << bad;
  }
  EXPECT_EQ(why, "' 1.2.3.4' is not an IPv4 address");
  const auto e = parse_endpoint("127.0.0.1:9464", why);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->address, 0x7F000001u);
  EXPECT_EQ(e->port, 9464);
  EXPECT_FALSE(parse_endpoint("localhost:9464", why));
  EXPECT_FALSE(parse_endpoint("127.0.0.1:65536", why));
  EXPECT_FALSE(parse_endpoint("127.0.0.1:", why));
}

TEST(ConfigUnits, UtcSecondsOfRunStart) {
  std::string why;
  EXPECT_EQ(parse_utc_second("1970-01-01T00:00:00Z", why), 0);
  EXPECT_EQ(parse_utc_second("2026-11-28T02:00:05Z", why), int64_t{1795831205} * 1'000'000'000);
  EXPECT_EQ(parse_utc_second("2028-02-29T23:59:59Z", why), int64_t{1835481599} * 1'000'000'000);
  for (const char* bad : {"2026-11-28T02:00:05", "2026-11-28T02:00:05.5Z", "2026-02-30T00:00:00Z",
                          "2026-11-28 02:00:05Z", "2026-13-01T00:00:00Z", "2026-11-28T24:00:00Z",
                          "1969-12-31T23:59:59Z", "+026-11-28T02:00:05Z", ""}) {
    EXPECT_FALSE(parse_utc_second(bad, why)) << bad;
  }
  EXPECT_EQ(why, "'' is not a UTC time on a whole second, e.g. 2026-11-28T02:00:05Z");
  EXPECT_EQ(format_utc_second(int64_t{1795831205} * 1'000'000'000 + 999), "2026-11-28T02:00:05Z");
}

TEST(ConfigUnits, Formatting) {
  EXPECT_EQ(format_ipv4(0xEF110001u), "239.17.0.1");
  EXPECT_EQ(format_size(100), "100 B");
  EXPECT_EQ(format_size(uint64_t{4} << 30), "4 GiB");
  EXPECT_EQ(format_size(3 << 19), "1.5 MiB");
  EXPECT_EQ(format_duration(std::chrono::minutes(90)), "1h30m");
  EXPECT_EQ(format_duration(std::chrono::milliseconds(2500)), "2s500ms");
  EXPECT_EQ(format_duration(std::chrono::hours(48)), "2d");
}

}  // namespace
}  // namespace rocecap::config
