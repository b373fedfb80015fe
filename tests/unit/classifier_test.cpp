#include "capture/classifier.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace rocecap::capture {
namespace {

TEST(StreamClassifier, FindsEveryConfiguredStreamByIndex) {
  std::vector<StreamKey> keys;
  for (uint32_t g = 0; g < 8; ++g) {
    for (uint32_t a = 0; a < 40; ++a) {
      keys.push_back({0xEF110001u + g, static_cast<uint16_t>(36001 + g), 0xC0000200u + a});
    }
  }
  const StreamClassifier c(keys);
  ASSERT_EQ(c.size(), keys.size());
  for (uint32_t i = 0; i < keys.size(); ++i)
    EXPECT_EQ(c.find(keys[i]), i);
}

TEST(StreamClassifier, RejectsFramesOfNoStream) {
  const StreamClassifier c({{0xEF110001u, 36001, 0xC000020Bu}});
  EXPECT_EQ(c.find({0xEF110001u, 36001, 0xC000020Bu}), 0u);
  EXPECT_EQ(c.find({0xEF110001u, 36001, 0xC000020Cu}), StreamClassifier::kNoStream);  // source
  EXPECT_EQ(c.find({0xEF110001u, 36002, 0xC000020Bu}), StreamClassifier::kNoStream);  // port
  EXPECT_EQ(c.find({0xEF110002u, 36001, 0xC000020Bu}), StreamClassifier::kNoStream);  // group
}

TEST(StreamClassifier, EmptyConfigurationMatchesNothing) {
  const StreamClassifier c({});
  EXPECT_EQ(c.find({1, 2, 3}), StreamClassifier::kNoStream);
}

TEST(StreamClassifier, DuplicateStreamIsAStartUpError) {
  EXPECT_THROW(StreamClassifier({{1, 2, 3}, {1, 2, 3}}), std::invalid_argument);
}

}  // namespace
}  // namespace rocecap::capture
