// Kafka's wire primitives and the first APIs of a connection
// (protocol/kafka_wire.hpp, protocol/kafka_api.hpp) against bytes written
// out by hand from Kafka's protocol guide and message schemas: what
// librdkafka, KafkaJS and kafka-python send and read.
#include <gtest/gtest.h>

#include "protocol/kafka_api.hpp"

namespace caftx::kafka {
namespace {

std::string bytes(std::initializer_list<int> xs) {
  std::string out;
  for (int x : xs)
    out.push_back(static_cast<char>(x));
  return out;
}

TEST(KafkaWire, FixedWidthIntegersAreBigEndian) {
  writer w;
  w.int16(-2);
  w.int32(0x01020304);
  w.int64(-1);
  EXPECT_EQ(w.bytes(), bytes({0xff, 0xfe, 1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}));
  reader r{w.bytes()};
  EXPECT_EQ(r.int16(), -2);
  EXPECT_EQ(r.int32(), 0x01020304);
  EXPECT_EQ(r.int64(), -1);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
}

// Kafka's ByteUtils: unsigned LEB128, zig-zag for signed values.
TEST(KafkaWire, VarintsAreLeb128AndZigZag) {
  writer w;
  w.uvarint(300);
  w.varint(-1);
  w.varint(1);
  w.varint(-64);
  EXPECT_EQ(w.bytes(), bytes({0xac, 0x02, 0x01, 0x02, 0x7f}));
  reader r{w.bytes()};
  EXPECT_EQ(r.uvarint(), 300u);
  EXPECT_EQ(r.varint(), -1);
  EXPECT_EQ(r.varint(), 1);
  EXPECT_EQ(r.varint(), -64);
  EXPECT_TRUE(r.ok());
  const auto too_long_bytes = bytes({0x80, 0x80, 0x80, 0x80, 0x80, 0x01});
  reader too_long{too_long_bytes};
  too_long.uvarint();
  EXPECT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.what(), "varint longer than 5 bytes");
}

TEST(KafkaWire, StringsNullsAndCompactForms) {
  writer w;
  w.string("ab");
  w.nullable_string(std::nullopt);
  w.compact_string("ab");
  w.compact_nullable_string(std::nullopt);
  w.array_length(2, true);
  w.array_length(-1, false);
  EXPECT_EQ(w.bytes(), bytes({0, 2, 'a', 'b', 0xff, 0xff, 3, 'a', 'b', 0, 3, 0xff, 0xff, 0xff, 0xff}));
  reader r{w.bytes()};
  EXPECT_EQ(r.string(), "ab");
  EXPECT_EQ(r.nullable_string(), std::nullopt);
  EXPECT_EQ(r.compact_string(), "ab");
  EXPECT_EQ(r.compact_nullable_string(), std::nullopt);
  EXPECT_EQ(r.array_length(true), 2);
  EXPECT_EQ(r.array_length(false), std::nullopt);
  EXPECT_TRUE(r.ok());
}

// Truncated input and hostile lengths fail the reader instead of reading
// past the end or allocating what the length claims.
TEST(KafkaWire, TruncatedInputAndHostileLengthsFailTheReader) {
  const auto short_string_bytes = bytes({0, 5, 'a', 'b'});
  reader short_string{short_string_bytes};
  EXPECT_EQ(short_string.string(), "");
  EXPECT_FALSE(short_string.ok());
  EXPECT_EQ(short_string.what(), "truncated: 5 bytes needed at byte 2, 2 left");
  EXPECT_EQ(short_string.int32(), 0); // later reads give zero values

  const auto huge_array_bytes = bytes({0x7f, 0xff, 0xff, 0xff, 1, 2});

  reader huge_array{huge_array_bytes};
  EXPECT_EQ(huge_array.array_length(false), std::nullopt);
  EXPECT_EQ(huge_array.what(), "array length 2147483647 above the 2 bytes left");

  const auto negative_bytes = bytes({0xff, 0xfe});

  reader negative{negative_bytes};
  negative.nullable_string();
  EXPECT_EQ(negative.what(), "string length -2");

  const auto null_required_bytes = bytes({0xff, 0xff});

  reader null_required{null_required_bytes};
  null_required.string();
  EXPECT_EQ(null_required.what(), "null where a string is required");

  // A tagged field whose size runs past the end.
  const auto tags_bytes = bytes({1, 0, 9, 'x'});
  reader tags{tags_bytes};
  tags.skip_tagged_fields();
  EXPECT_FALSE(tags.ok());
}

// kafka-python's first request: ApiVersions v0, request header v1.
TEST(KafkaApi, ApiVersionsV0RequestHeaderAndResponse) {
  auto frame = bytes({0, 18, 0, 0, 0, 0, 0, 7, 0, 12}) + "kafka-python";
  reader r{frame};
  auto h = read_request_header(r);
  EXPECT_EQ(h.api_key, 18);
  EXPECT_EQ(h.api_version, 0);
  EXPECT_EQ(h.correlation_id, 7);
  EXPECT_EQ(h.client_id, std::optional<std::string>{"kafka-python"});
  read_api_versions_request(r, 0);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.remaining(), 0u);
  auto body = encode_api_versions_response(0, 0, {{3, 0, 4}, {18, 0, 3}});
  EXPECT_EQ(body, bytes({0, 0, 0, 0, 0, 2, 0, 3, 0, 0, 0, 4, 0, 18, 0, 0, 0, 3}));
  // Framed: size, correlation id (header v0), body.
  EXPECT_EQ(frame_response(h, body), bytes({0, 0, 0, 22, 0, 0, 0, 7}) + body);
}

// librdkafka's first request: ApiVersions v3, flexible: request header v2
// (client id still an int16 string, then tags), compact strings in the
// body; the response header stays v0 (no tags), the body is compact.
TEST(KafkaApi, ApiVersionsV3IsFlexibleButItsResponseHeaderIsV0) {
  auto frame = bytes({0, 18, 0, 3, 0, 0, 0, 1, 0, 7}) + "rdkafka" + bytes({0, 11}) + "librdkafka"
               + bytes({6}) + "2.0.2" + bytes({0});
  reader r{frame};
  auto h = read_request_header(r);
  EXPECT_EQ(h.api_version, 3);
  EXPECT_EQ(h.client_id, std::optional<std::string>{"rdkafka"});
  auto req = read_api_versions_request(r, 3);
  EXPECT_TRUE(r.ok()) << r.what();
  EXPECT_EQ(req.client_software_name, "librdkafka");
  EXPECT_EQ(req.client_software_version, "2.0.2");
  EXPECT_EQ(r.remaining(), 0u);
  auto body = encode_api_versions_response(3, 0, {{18, 0, 3}}, 0);
  EXPECT_EQ(body, bytes({0, 0, 2, 0, 18, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(frame_response(h, body).substr(4, 4), bytes({0, 0, 0, 1})); // no tag byte
  EXPECT_EQ(frame_response(h, body).size(), 4u + 4u + body.size());
}

// KIP-511: a version the node does not answer gets a v0 body with
// UNSUPPORTED_VERSION and ApiVersions' own range; librdkafka then retries
// at v0, KafkaJS one version lower.
TEST(KafkaApi, UnsupportedApiVersionsVersionIsAnsweredWithAV0Body) {
  auto body = encode_api_versions_response(0, unsupported_version, {*supported(api::api_versions)});
  EXPECT_EQ(body, bytes({0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 3}));
  EXPECT_EQ(supported(api::metadata), (version_range{3, 0, 4}));
  EXPECT_EQ(supported(api::produce), std::nullopt);
  EXPECT_TRUE(is_flexible(api::metadata, 9));
  EXPECT_FALSE(is_flexible(api::metadata, 4));
  EXPECT_EQ(wire_error(error_code::unknown_server_error), -1);
  EXPECT_EQ(wire_error(error_code::unknown_topic_or_partition), 3);
}

TEST(KafkaApi, MetadataRequestTopicsByVersion) {
  // v0: an empty array is every topic.
  const auto v0_bytes = bytes({0, 0, 0, 0});
  reader v0{v0_bytes};
  EXPECT_EQ(read_metadata_request(v0, 0).topics, std::nullopt);
  // v1: null is every topic, empty is none.
  const auto v1_null_bytes = bytes({0xff, 0xff, 0xff, 0xff});
  reader v1_null{v1_null_bytes};
  EXPECT_EQ(read_metadata_request(v1_null, 1).topics, std::nullopt);
  const auto v1_empty_bytes = bytes({0, 0, 0, 0});
  reader v1_empty{v1_empty_bytes};
  EXPECT_EQ(read_metadata_request(v1_empty, 1).topics, std::vector<std::string>{});
  // v4: names, then AllowAutoTopicCreation.
  const auto v4_bytes = bytes({0, 0, 0, 1, 0, 1, 't', 0});
  reader v4{v4_bytes};
  auto req = read_metadata_request(v4, 4);
  EXPECT_TRUE(v4.ok());
  EXPECT_EQ(req.topics, std::vector<std::string>{"t"});
  EXPECT_FALSE(req.allow_auto_topic_creation);
  const auto v4_truncated_bytes = bytes({0, 0, 0, 1, 0, 1, 't'});
  reader v4_truncated{v4_truncated_bytes};
  read_metadata_request(v4_truncated, 4);
  EXPECT_FALSE(v4_truncated.ok());
}

TEST(KafkaApi, MetadataResponseFieldsAppearByVersion) {
  metadata_response m;
  m.throttle_time_ms = 0;
  m.brokers = {{1, "h", 9092, std::nullopt}};
  m.cluster_id = "c";
  m.controller_id = 1;
  m.topics = {{0, "t", false, {{0, 0, 1, {1}, {1}}}}};
  auto one = bytes({0, 0, 0, 1});
  auto broker = bytes({0, 0, 0, 1, 0, 1, 'h', 0, 0, 0x23, 0x84}); // id 1, "h", 9092
  auto topic = bytes({0, 0, 0, 1, 't'});                          // no error, "t"
  auto partition = bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 1}) // no error, index 0, leader 1
                   + one + one + one + one;                // replicas [1], isr [1]
  auto null_rack = bytes({0xff, 0xff});
  auto not_internal = bytes({0});
  EXPECT_EQ(encode_metadata_response(m, 0), one + broker + one + topic + one + partition);
  EXPECT_EQ(encode_metadata_response(m, 1), one + broker + null_rack + one /* controller */ + one
                                              + topic + not_internal + one + partition);
  EXPECT_EQ(encode_metadata_response(m, 4),
            bytes({0, 0, 0, 0}) /* throttle */ + one + broker + null_rack + bytes({0, 1, 'c'})
              + one + one + topic + not_internal + one + partition);
}

} // namespace
} // namespace caftx::kafka
