// Every message type crosses CAF's binary serializer (what the middleman
// uses between nodes) unchanged, and every registered type is covered.
#include <gtest/gtest.h>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/deep_to_string.hpp>
#include <caf/message.hpp>

#include <set>

#include "message_samples.hpp"

namespace caftx {
namespace {

struct config : caf::actor_system_config {
  config() { register_message_types(*this); }
};

using testing::sample_batch;
using testing::samples;

TEST(Messages, EveryMessageTypeRoundTripsThroughTheBinarySerializer) {
  config cfg;
  caf::actor_system sys{cfg};
  for (auto& msg : samples()) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    auto msg_copy = msg;
    ASSERT_FALSE(sink(msg_copy)) << caf::deep_to_string(msg);
    // An unregistered type writes nothing (CAF 0.17 only prints to stderr).
    ASSERT_GT(buf.size(), 8u) << caf::deep_to_string(msg);
    caf::message back;
    caf::binary_deserializer source{sys, buf};
    ASSERT_FALSE(source(back)) << caf::deep_to_string(msg);
    EXPECT_EQ(caf::deep_to_string(back), caf::deep_to_string(msg));
    EXPECT_EQ(back.type_token(), msg.type_token());
  }
}

TEST(Messages, SamplesCoverEveryRegisteredType) {
  config cfg;
  caf::actor_system sys{cfg};
  std::set<std::string> covered;
  for (auto& msg : samples())
    covered.insert(sys.types().portable_name(msg.type(0)));
  auto names = registered_message_type_names();
  EXPECT_EQ(covered, std::set<std::string>(names.begin(), names.end()));
}

// A batch crosses the middleman as its RecordBatch v2 bytes inside the
// produce request: what arrives decodes to the original, field by field.
TEST(Messages, DeserializedBatchEqualsTheOriginalFieldByField) {
  config cfg;
  caf::actor_system sys{cfg};
  auto b = sample_batch();
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  produce_request req{{"t", 1}, "tx", v2::encode(b)};
  ASSERT_FALSE(sink(req));
  produce_request got;
  caf::binary_deserializer source{sys, buf};
  ASSERT_FALSE(source(got));
  EXPECT_EQ(got.records, req.records);
  auto decoded = v2::decode(got.records);
  ASSERT_TRUE(decoded.ok()) << decoded.error().to_string();
  auto& back = *decoded;
  EXPECT_EQ(back.base_offset, 17);
  EXPECT_EQ(back.pid, producer_id{4000});
  EXPECT_EQ(back.epoch, producer_epoch{3});
  EXPECT_EQ(back.base_sequence, 2147483646);
  EXPECT_TRUE(back.is_transactional());
  ASSERT_EQ(back.records.size(), 2u);
  EXPECT_EQ(back.records[0].value, std::string("v\0al", 4));
  EXPECT_EQ(back.records[0].headers.at(0).value, "x");
  EXPECT_EQ(back.last_sequence(), 2147483647); // two records: 2147483646, 2147483647
}

} // namespace
} // namespace caftx
