// The Kafka request readers (protocol/kafka_*_api.hpp) against hostile
// bytes: for every API and version a node serves, arbitrary bytes and
// valid requests with a byte changed never read past their input or
// crash, and every proper prefix of a valid request fails to parse (no
// field is optional at its end, so a truncated request is never taken for
// a whole one).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "../kafka_request_samples.hpp"

namespace caftx::kafka {
namespace {

using testing::reader_of;
using testing::valid_body;


TEST(KafkaCodecProperty, EveryServedApiHasAReaderAndAValidBody) {
  for (auto& range : supported_apis()) {
    ASSERT_TRUE(reader_of(range.api_key)) << range.api_key;
    auto body = valid_body(range.api_key);
    reader r{body};
    reader_of(range.api_key)(r, range.max_version);
    EXPECT_TRUE(r.ok()) << range.api_key << ": " << r.what();
    EXPECT_EQ(r.remaining(), 0u) << range.api_key;
  }
}

RC_GTEST_PROP(KafkaCodecProperty, ArbitraryBytesNeverReadPastTheirInput, ()) {
  auto range = *rc::gen::elementOf(supported_apis());
  auto version = *rc::gen::inRange<int16_t>(range.min_version, range.max_version + 1);
  auto bytes = *rc::gen::resize(300, rc::gen::container<std::string>(rc::gen::arbitrary<char>()));
  reader r{bytes};
  reader_of(range.api_key)(r, version);
  RC_ASSERT(r.remaining() <= bytes.size()); // remaining() wraps if it read past the end
}

// The APIs whose requests have fields (ListGroups v0-2 has none).
std::vector<version_range> apis_with_fields() {
  std::vector<version_range> out;
  for (auto& range : supported_apis())
    if (!valid_body(range.api_key).empty())
      out.push_back(range);
  return out;
}

RC_GTEST_PROP(KafkaCodecProperty, EveryProperPrefixOfAValidRequestFails, ()) {
  auto range = *rc::gen::elementOf(apis_with_fields());
  auto body = valid_body(range.api_key);
  auto cut = *rc::gen::inRange<size_t>(0, body.size());
  auto prefix = body.substr(0, cut);
  reader r{prefix};
  reader_of(range.api_key)(r, range.max_version);
  RC_ASSERT(!r.ok());
}

RC_GTEST_PROP(KafkaCodecProperty, AValidRequestWithOneByteChangedIsReadSafely, ()) {
  auto range = *rc::gen::elementOf(apis_with_fields());
  auto body = valid_body(range.api_key);
  auto at = *rc::gen::inRange<size_t>(0, body.size());
  body[at] = *rc::gen::arbitrary<char>();
  reader r{body};
  reader_of(range.api_key)(r, range.max_version);
  RC_ASSERT(r.remaining() <= body.size());
}

} // namespace
} // namespace caftx::kafka
