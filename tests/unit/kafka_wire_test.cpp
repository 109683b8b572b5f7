// Kafka's wire primitives and the first APIs of a connection
// (protocol/kafka_wire.hpp, protocol/kafka_api.hpp) against bytes written
// out by hand from Kafka's protocol guide and message schemas: what
// librdkafka, KafkaJS and kafka-python send and read.
#include <gtest/gtest.h>

#include "protocol/kafka_api.hpp"
#include "protocol/kafka_data_api.hpp"
#include "protocol/kafka_txn_admin_api.hpp"
#include "protocol/kafka_txn_api.hpp"
#include "protocol/kafka_admin_api.hpp"
#include "protocol/kafka_group_api.hpp"

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
  EXPECT_EQ(supported(api::produce), (version_range{0, 0, 7}));
  EXPECT_EQ(supported(57), std::nullopt); // UpdateFeatures
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

// librdkafka's ProduceRequest v7: a transactional id, acks -1, the
// timeout, one topic with one partition and its batch bytes.
TEST(KafkaDataApi, ProduceV7RequestAndResponse) {
  auto body = bytes({0, 2}) + "tx" + bytes({0xff, 0xff, 0, 0, 0x75, 0x30, 0, 0, 0, 1, 0, 1}) + "t"
              + bytes({0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 'a', 'b', 'c'});
  reader r{body};
  auto req = read_produce_request(r, 7);
  EXPECT_TRUE(r.ok()) << r.what();
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(req.transactional_id, std::optional<std::string>{"tx"});
  EXPECT_EQ(req.acks, -1);
  EXPECT_EQ(req.timeout_ms, 30000);
  ASSERT_EQ(req.topics.size(), 1u);
  EXPECT_EQ(req.topics[0].name, "t");
  ASSERT_EQ(req.topics[0].partitions.size(), 1u);
  EXPECT_EQ(req.topics[0].partitions[0].index, 2);
  EXPECT_EQ(req.topics[0].partitions[0].records, std::optional<std::string>{"abc"});
  // A null partition array is a malformed request.
  auto null_partitions = bytes({0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1}) + "t"
                         + bytes({0xff, 0xff, 0xff, 0xff});
  reader bad{null_partitions};
  read_produce_request(bad, 7);
  EXPECT_EQ(bad.what(), "null where an array is required");

  // v7: error, base offset, log append time, log start offset, then the
  // throttle time after the topics; v3 has no log start offset.
  std::vector<produce_topic_response> out{{"t", {{2, 0, 5, -1, 0}}}};
  auto common = bytes({0, 0, 0, 1, 0, 1}) + "t"
                + bytes({0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0xff, 0xff, 0xff,
                         0xff, 0xff, 0xff, 0xff, 0xff});
  EXPECT_EQ(encode_produce_response(out, 7),
            common + bytes({0, 0, 0, 0, 0, 0, 0, 0}) + bytes({0, 0, 0, 0}));
  EXPECT_EQ(encode_produce_response(out, 3), common + bytes({0, 0, 0, 0}));
}

// librdkafka's FetchRequest v11: a sessionless full fetch (session 0,
// epoch -1), read_committed, one partition, no forgotten topics, a rack.
TEST(KafkaDataApi, FetchV11RequestAndV4AndV11Responses) {
  auto body = bytes({0xff, 0xff, 0xff, 0xff, 0, 0, 1, 0xf4, 0, 0, 0, 1, 0, 0x10, 0, 0, 1, 0, 0, 0,
                     0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 1})
              + "t"
              + bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 9, 0xff, 0xff,
                       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2})
              + "r1";
  reader r{body};
  auto req = read_fetch_request(r, 11);
  EXPECT_TRUE(r.ok()) << r.what();
  EXPECT_EQ(r.remaining(), 0u);
  EXPECT_EQ(req.replica_id, -1);
  EXPECT_EQ(req.max_wait_ms, 500);
  EXPECT_EQ(req.min_bytes, 1);
  EXPECT_EQ(req.max_bytes, 0x00100000);
  EXPECT_EQ(req.isolation_level, 1);
  EXPECT_EQ(req.session_id, 0);
  EXPECT_EQ(req.session_epoch, -1);
  ASSERT_EQ(req.topics.size(), 1u);
  ASSERT_EQ(req.topics[0].partitions.size(), 1u);
  auto& p = req.topics[0].partitions[0];
  EXPECT_EQ(p.index, 0);
  EXPECT_EQ(p.current_leader_epoch, 4);
  EXPECT_EQ(p.fetch_offset, 9);
  EXPECT_EQ(p.log_start_offset, -1);
  EXPECT_EQ(p.max_bytes, 0x00010000);
  EXPECT_EQ(req.rack_id, "r1");

  fetch_response f;
  fetch_partition_response part;
  part.index = 0;
  part.high_watermark = 7;
  part.last_stable_offset = 6;
  part.log_start_offset = 0;
  part.aborted_transactions = std::vector<fetch_aborted_transaction>{{9, 2}};
  part.records = "R";
  f.topics.push_back({"t", {part}});
  auto head = bytes({0, 0, 0, 1, 0, 1}) + "t" + bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  auto hw_lso = bytes({0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 6});
  auto aborted = bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 2});
  auto records = bytes({0, 0, 0, 1}) + "R";
  // v4: throttle, topics; per partition no log start offset, no replica.
  EXPECT_EQ(encode_fetch_response(f, 4), bytes({0, 0, 0, 0}) + head + hw_lso + aborted + records);
  // v11: throttle, error, session id; log start offset; preferred read
  // replica -1 before the records.
  EXPECT_EQ(encode_fetch_response(f, 11),
            bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) + head + hw_lso + std::string(8, '\0') + aborted
              + bytes({0xff, 0xff, 0xff, 0xff}) + records);
  // read_uncommitted: a null aborted list.
  f.topics[0].partitions[0].aborted_transactions.reset();
  EXPECT_EQ(encode_fetch_response(f, 4),
            bytes({0, 0, 0, 0}) + head + hw_lso + bytes({0xff, 0xff, 0xff, 0xff}) + records);
}

// kafka-python's ListOffsets v0 (max_num_offsets, old-style offsets) and
// librdkafka's v2 (isolation level, throttle time first).
TEST(KafkaDataApi, ListOffsetsV0AndV2) {
  auto v0 = bytes({0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 1}) + "t"
            + bytes({0, 0, 0, 1, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0, 0,
                     0, 1});
  reader r0{v0};
  auto req0 = read_list_offsets_request(r0, 0);
  EXPECT_TRUE(r0.ok() && r0.remaining() == 0) << r0.what();
  ASSERT_EQ(req0.topics.at(0).partitions.size(), 1u);
  EXPECT_EQ(req0.topics[0].partitions[0].index, 3);
  EXPECT_EQ(req0.topics[0].partitions[0].timestamp, -2);
  EXPECT_EQ(req0.topics[0].partitions[0].max_num_offsets, 1);

  auto v2 = bytes({0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 1, 0, 1}) + "t"
            + bytes({0, 0, 0, 1, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  reader r2{v2};
  auto req2 = read_list_offsets_request(r2, 2);
  EXPECT_TRUE(r2.ok() && r2.remaining() == 0) << r2.what();
  EXPECT_EQ(req2.isolation_level, 1);
  EXPECT_EQ(req2.topics.at(0).partitions.at(0).timestamp, -1);

  std::vector<list_offsets_topic_response> out{{"t", {{0, 0, -1, 6}, {1, 3, -1, -1}}}};
  auto head = bytes({0, 0, 0, 1, 0, 1}) + "t" + bytes({0, 0, 0, 2});
  EXPECT_EQ(encode_list_offsets_response(out, 0),
            head + bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 6})
              + bytes({0, 0, 0, 1, 0, 3, 0, 0, 0, 0}));
  auto minus1 = bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  EXPECT_EQ(encode_list_offsets_response(out, 2),
            bytes({0, 0, 0, 0}) + head + bytes({0, 0, 0, 0, 0, 0}) + minus1
              + bytes({0, 0, 0, 0, 0, 0, 0, 6}) + bytes({0, 0, 0, 1, 0, 3}) + minus1 + minus1);
}

// librdkafka's transactional producer: FindCoordinator v2 (key type 1),
// InitProducerId v1, AddPartitionsToTxn v0, AddOffsetsToTxn v0,
// TxnOffsetCommit v2, EndTxn v1, as it writes them.
TEST(KafkaTxnApi, RequestsAsLibrdkafkaSendsThem) {
  auto fc = bytes({0, 2}) + "tx" + bytes({1});
  reader r1{fc};
  auto find = read_find_coordinator_request(r1, 2);
  EXPECT_TRUE(r1.ok() && r1.remaining() == 0);
  EXPECT_EQ(find.key, "tx");
  EXPECT_EQ(find.key_type, 1);
  auto fc0 = bytes({0, 1}) + "g";
  reader r0{fc0};
  EXPECT_EQ(read_find_coordinator_request(r0, 0).key_type, 0); // v0: a group
  EXPECT_TRUE(r0.ok() && r0.remaining() == 0);

  auto ipi = bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
  reader r2{ipi};
  auto init = read_init_producer_id_request(r2, 1);
  EXPECT_TRUE(r2.ok() && r2.remaining() == 0);
  EXPECT_EQ(init.transactional_id, std::nullopt); // idempotent only
  EXPECT_EQ(init.transaction_timeout_ms, -1);

  auto apt = bytes({0, 2}) + "tx" + bytes({0, 0, 0, 0, 0, 0, 0x13, 0x88, 0, 3, 0, 0, 0, 1, 0, 1})
             + "t" + bytes({0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 4});
  reader r3{apt};
  auto add = read_add_partitions_to_txn_request(r3, 0);
  EXPECT_TRUE(r3.ok() && r3.remaining() == 0) << r3.what();
  EXPECT_EQ(add.transactional_id, "tx");
  EXPECT_EQ(add.producer_id, 5000);
  EXPECT_EQ(add.producer_epoch, 3);
  ASSERT_EQ(add.topics.size(), 1u);
  EXPECT_EQ(add.topics[0].partitions, (std::vector<int32_t>{0, 4}));

  auto aot = bytes({0, 2}) + "tx" + bytes({0, 0, 0, 0, 0, 0, 0x13, 0x88, 0, 3, 0, 1}) + "g";
  reader r4{aot};
  auto offsets = read_add_offsets_to_txn_request(r4, 0);
  EXPECT_TRUE(r4.ok() && r4.remaining() == 0);
  EXPECT_EQ(offsets.group_id, "g");

  auto toc = bytes({0, 2}) + "tx" + bytes({0, 1}) + "g"
             + bytes({0, 0, 0, 0, 0, 0, 0x13, 0x88, 0, 3, 0, 0, 0, 1, 0, 1}) + "t"
             + bytes({0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9, 0xff, 0xff, 0xff, 0xff,
                      0xff, 0xff});
  reader r5{toc};
  auto commit = read_txn_offset_commit_request(r5, 2);
  EXPECT_TRUE(r5.ok() && r5.remaining() == 0) << r5.what();
  ASSERT_EQ(commit.topics.at(0).partitions.size(), 1u);
  auto& p = commit.topics[0].partitions[0];
  EXPECT_EQ(p.index, 2);
  EXPECT_EQ(p.committed_offset, 9);
  EXPECT_EQ(p.committed_leader_epoch, -1);
  EXPECT_EQ(p.committed_metadata, std::nullopt);

  auto et = bytes({0, 2}) + "tx" + bytes({0, 0, 0, 0, 0, 0, 0x13, 0x88, 0, 3, 1});
  reader r6{et};
  auto end = read_end_txn_request(r6, 1);
  EXPECT_TRUE(r6.ok() && r6.remaining() == 0);
  EXPECT_TRUE(end.committed);
  EXPECT_EQ(end.producer_epoch, 3);
}

TEST(KafkaTxnApi, ResponsesByVersion) {
  find_coordinator_response f;
  f.node_id = 2;
  f.host = "h";
  f.port = 9092;
  // v0: error, node, host, port; v1+: throttle first, then a nullable message.
  EXPECT_EQ(encode_find_coordinator_response(f, 0),
            bytes({0, 0, 0, 0, 0, 2, 0, 1, 'h', 0, 0, 0x23, 0x84}));
  EXPECT_EQ(encode_find_coordinator_response(f, 2),
            bytes({0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 2, 0, 1, 'h', 0, 0, 0x23, 0x84}));
  EXPECT_EQ(encode_init_producer_id_response({0, 0, 5000, 3}, 1),
            bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x13, 0x88, 0, 3}));
  EXPECT_EQ(encode_partition_errors_response({{"t", {{0, 0}, {4, 3}}}}),
            bytes({0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0,
                   3}));
  EXPECT_EQ(encode_error_response(47), bytes({0, 0, 0, 0, 0, 47}));
}

// librdkafka's OffsetCommit v7 (generation -1, empty member, null
// instance id) and kafka-python's v2 (with a retention time); the v2 and
// v3 responses.
TEST(KafkaGroupApi, OffsetCommitByVersion) {
  auto v7 = bytes({0, 1}) + "g" + bytes({0xff, 0xff, 0xff, 0xff, 0, 0, 0xff, 0xff, 0, 0, 0, 1, 0, 1})
            + "t" + bytes({0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9, 0xff, 0xff, 0xff, 0xff, 0, 2})
            + "md";
  reader r7{v7};
  auto c7 = read_offset_commit_request(r7, 7);
  EXPECT_TRUE(r7.ok() && r7.remaining() == 0) << r7.what();
  EXPECT_EQ(c7.generation_id, -1);
  EXPECT_EQ(c7.member_id, "");
  EXPECT_EQ(c7.group_instance_id, std::nullopt);
  ASSERT_EQ(c7.topics.at(0).partitions.size(), 1u);
  EXPECT_EQ(c7.topics[0].partitions[0].committed_offset, 9);
  EXPECT_EQ(c7.topics[0].partitions[0].committed_leader_epoch, -1);
  EXPECT_EQ(c7.topics[0].partitions[0].committed_metadata, std::optional<std::string>{"md"});

  auto v2 = bytes({0, 1}) + "g" + bytes({0, 0, 0, 3, 0, 1}) + "m"
            + bytes({0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0, 0, 0, 1, 0, 1}) + "t"
            + bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0xff, 0xff});
  reader r2{v2};
  auto c2 = read_offset_commit_request(r2, 2);
  EXPECT_TRUE(r2.ok() && r2.remaining() == 0) << r2.what();
  EXPECT_EQ(c2.generation_id, 3);
  EXPECT_EQ(c2.member_id, "m");
  EXPECT_EQ(c2.retention_time_ms, 1000);
  EXPECT_EQ(c2.topics.at(0).partitions.at(0).committed_metadata, std::nullopt);

  std::vector<topic_partition_errors> out{{"t", {{2, 22}}}};
  auto body = bytes({0, 0, 0, 1, 0, 1}) + "t" + bytes({0, 0, 0, 1, 0, 0, 0, 2, 0, 22});
  EXPECT_EQ(encode_offset_commit_response(out, 2), body);
  EXPECT_EQ(encode_offset_commit_response(out, 3), bytes({0, 0, 0, 0}) + body);
}

// OffsetFetch: v1 needs a topic list, v2+ may send null (every offset);
// v5 answers the leader epoch, v2+ a top-level error after the topics.
TEST(KafkaGroupApi, OffsetFetchByVersion) {
  auto all = bytes({0, 1}) + "g" + bytes({0xff, 0xff, 0xff, 0xff});
  reader r5{all};
  EXPECT_EQ(read_offset_fetch_request(r5, 5).topics, std::nullopt);
  EXPECT_TRUE(r5.ok());
  reader r1{all};
  read_offset_fetch_request(r1, 1);
  EXPECT_EQ(r1.what(), "null topics in OffsetFetch v1");

  offset_fetch_response f;
  f.topics.push_back({"t", {{0, 7, -1, std::string(""), 0}}});
  auto topic = bytes({0, 0, 0, 1, 0, 1}) + "t" + bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7});
  auto tail = bytes({0, 0, 0, 0});  // empty metadata, no error
  EXPECT_EQ(encode_offset_fetch_response(f, 1), topic + tail);
  EXPECT_EQ(encode_offset_fetch_response(f, 5),
            bytes({0, 0, 0, 0}) + topic + bytes({0xff, 0xff, 0xff, 0xff}) + tail + bytes({0, 0}));
}

// librdkafka's CreateTopics v4 (-1 partitions and replication factor: the
// broker's defaults; one config) and DeleteTopics v1.
TEST(KafkaAdminApi, CreateAndDeleteTopics) {
  auto ct = bytes({0, 0, 0, 1, 0, 1}) + "t"
            + bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0, 12})
            + "retention.ms" + bytes({0, 4}) + "1000" + bytes({0, 0, 0x75, 0x30, 1});
  reader r{ct};
  auto req = read_create_topics_request(r, 4);
  EXPECT_TRUE(r.ok() && r.remaining() == 0) << r.what();
  ASSERT_EQ(req.topics.size(), 1u);
  EXPECT_EQ(req.topics[0].num_partitions, -1);
  EXPECT_EQ(req.topics[0].replication_factor, -1);
  ASSERT_EQ(req.topics[0].configs.size(), 1u);
  EXPECT_EQ(req.topics[0].configs[0].value, std::optional<std::string>{"1000"});
  EXPECT_EQ(req.timeout_ms, 30000);
  EXPECT_TRUE(req.validate_only);

  std::vector<topic_error> errors{{"t", 36, std::string("exists")}};
  auto v0 = bytes({0, 0, 0, 1, 0, 1}) + "t" + bytes({0, 36});
  EXPECT_EQ(encode_create_topics_response(errors, 0), v0);
  EXPECT_EQ(encode_create_topics_response(errors, 1), v0 + bytes({0, 6}) + "exists");
  EXPECT_EQ(encode_create_topics_response(errors, 4),
            bytes({0, 0, 0, 0}) + v0 + bytes({0, 6}) + "exists");

  auto dt = bytes({0, 0, 0, 2, 0, 1}) + "a" + bytes({0, 1}) + "b" + bytes({0, 0, 0x13, 0x88});
  reader rd{dt};
  auto del = read_delete_topics_request(rd, 1);
  EXPECT_TRUE(rd.ok() && rd.remaining() == 0);
  EXPECT_EQ(del.names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(del.timeout_ms, 5000);
  EXPECT_EQ(encode_delete_topics_response({{"a", 3, std::nullopt}}, 1),
            bytes({0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 'a', 0, 3}));
}

// CreatePartitions v1 (KIP-195): one topic without assignments (null, -1)
// and one with two new partitions' replicas; the response's message is
// nullable.
TEST(KafkaAdminApi, CreatePartitions) {
  auto body = bytes({0, 0, 0, 2, 0, 1}) + "a" + bytes({0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff})
              + bytes({0, 1}) + "b" + bytes({0, 0, 0, 3, 0, 0, 0, 2})
              + bytes({0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2}) + bytes({0, 0, 0, 1, 0, 0, 0, 3})
              + bytes({0, 0, 0x75, 0x30, 1});
  reader r{body};
  auto req = read_create_partitions_request(r, 1);
  EXPECT_TRUE(r.ok() && r.remaining() == 0) << r.what();
  ASSERT_EQ(req.topics.size(), 2u);
  EXPECT_EQ(req.topics[0].name, "a");
  EXPECT_EQ(req.topics[0].count, 4);
  EXPECT_FALSE(req.topics[0].assignments.has_value());
  EXPECT_EQ(req.topics[1].count, 3);
  EXPECT_EQ(req.topics[1].assignments,
            (std::optional<std::vector<std::vector<int32_t>>>{{{1, 2}, {3}}}));
  EXPECT_EQ(req.timeout_ms, 30000);
  EXPECT_TRUE(req.validate_only);
  // A hostile assignment count is refused before anything is allocated.
  auto hostile = bytes({0, 0, 0, 1, 0, 1}) + "a" + bytes({0, 0, 0, 4, 0x7f, 0xff, 0xff, 0xff});
  reader rh{hostile};
  read_create_partitions_request(rh, 1);
  EXPECT_FALSE(rh.ok());

  EXPECT_EQ(encode_create_partitions_response({{"a", 0, std::nullopt}, {"b", 37, std::string("no")}}, 1),
            bytes({0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 'a', 0, 0, 0xff, 0xff, 0, 1, 'b', 0, 37, 0, 2, 'n',
                   'o'}));
}

// DescribeConfigs v1: a topic with one key asked for, a broker with all
// (null keys); the response's v0 IsDefault becomes v1's ConfigSource and
// the synonyms.
TEST(KafkaAdminApi, DescribeConfigs) {
  auto body = bytes({0, 0, 0, 2, 2, 0, 1}) + "t" + bytes({0, 0, 0, 1, 0, 2}) + "rm"
              + bytes({4, 0, 1}) + "1" + bytes({0xff, 0xff, 0xff, 0xff, 1});
  reader r{body};
  auto req = read_describe_configs_request(r, 1);
  EXPECT_TRUE(r.ok() && r.remaining() == 0) << r.what();
  ASSERT_EQ(req.resources.size(), 2u);
  EXPECT_EQ(req.resources[0].type, 2);
  EXPECT_EQ(req.resources[0].keys, (std::optional<std::vector<std::string>>{{"rm"}}));
  EXPECT_EQ(req.resources[1].type, 4);
  EXPECT_EQ(req.resources[1].name, "1");
  EXPECT_FALSE(req.resources[1].keys.has_value());
  EXPECT_TRUE(req.include_synonyms);
  auto v0_body = body.substr(0, body.size() - 1); // v0: no include_synonyms
  reader r0{v0_body};
  read_describe_configs_request(r0, 0);
  EXPECT_TRUE(r0.ok() && r0.remaining() == 0);

  describe_configs_result res{0, std::nullopt, 2, "t", {}};
  res.configs.push_back({"rm", std::string("5"), false, true, 5, false, {{"x", std::string("5"), 5}}});
  auto head = bytes({0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0xff, 0xff, 2, 0, 1, 't', 0, 0, 0, 1, 0, 2, 'r',
                     'm', 0, 1, '5', 0});
  EXPECT_EQ(encode_describe_configs_response({res}, 0), head + bytes({1, 0}));
  EXPECT_EQ(encode_describe_configs_response({res}, 1),
            head + bytes({5, 0, 0, 0, 0, 1, 0, 1, 'x', 0, 1, '5', 5}));
}

// KIP-664's requests are flexible from v0: compact strings and arrays,
// tagged fields after every struct; ListTransactions v1 adds the duration.
TEST(KafkaTxnAdminApi, RequestsAndResponsesAreFlexible) {
  auto dt_body = bytes({3, 2, 'a', 2, 'b', 0});
  reader dt{dt_body};
  EXPECT_EQ(read_describe_transactions_request(dt, 0).transactional_ids,
            (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(dt.ok() && dt.remaining() == 0);
  auto lt0 = bytes({2, 8}) + "Ongoing" + bytes({2, 0, 0, 0, 0, 0, 0, 0, 7});
  auto lt0_body = lt0 + bytes({0});
  reader r0{lt0_body};
  auto l0 = read_list_transactions_request(r0, 0);
  EXPECT_TRUE(r0.ok() && r0.remaining() == 0);
  EXPECT_EQ(l0.state_filters, (std::vector<std::string>{"Ongoing"}));
  EXPECT_EQ(l0.producer_id_filters, (std::vector<int64_t>{7}));
  EXPECT_EQ(l0.duration_filter_ms, -1);
  auto lt1_body = lt0 + bytes({0, 0, 0, 0, 0, 0, 0xea, 0x60, 0});
  reader r1{lt1_body};
  EXPECT_EQ(read_list_transactions_request(r1, 1).duration_filter_ms, 60000);
  EXPECT_TRUE(r1.ok() && r1.remaining() == 0);
  auto dp_body = bytes({2, 2, 't', 3, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0});
  reader dp{dp_body};
  auto producers = read_describe_producers_request(dp, 0);
  EXPECT_TRUE(dp.ok() && dp.remaining() == 0);
  ASSERT_EQ(producers.topics.size(), 1u);
  EXPECT_EQ(producers.topics[0].partitions, (std::vector<int32_t>{1, 2}));

  EXPECT_EQ(encode_list_transactions_response({0, {"Nope"}, {{"a", 9, "Ongoing"}}}, 1),
            bytes({0, 0, 0, 0, 0, 0, 2, 5}) + "Nope" + bytes({2, 2, 'a', 0, 0, 0, 0, 0, 0, 0, 9, 8})
              + "Ongoing" + bytes({0, 0}));
  EXPECT_EQ(encode_describe_producers_response({{"t", {{1, 0, std::nullopt, {{9, 2, 4, 5, 3, -1}}}}}},
                                               0),
            bytes({0, 0, 0, 0, 2, 2, 't', 2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9, 0,
                   0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff,
                   0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}));
  transaction_state_description d{0, "a", "Ongoing", 60000, 5, 9, 1, {{"t", {0}}}};
  EXPECT_EQ(encode_describe_transactions_response({d}, 0),
            bytes({0, 0, 0, 0, 2, 0, 0, 2, 'a', 8}) + "Ongoing"
              + bytes({0, 0, 0xea, 0x60, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 2, 2,
                       't', 2, 0, 0, 0, 0, 0, 0, 0}));
}

// WriteTxnMarkers v0 is not flexible, v1 is (kafka-transactions.sh abort).
TEST(KafkaTxnAdminApi, WriteTxnMarkersV0AndV1) {
  auto v0 = bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 2, 0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1,
                   0, 0, 0, 3, 0, 0, 0, 5});
  reader r0{v0};
  auto m0 = read_write_txn_markers_request(r0, 0);
  EXPECT_TRUE(r0.ok() && r0.remaining() == 0) << r0.what();
  auto v1 = bytes({2, 0, 0, 0, 0, 0, 0, 0, 9, 0, 2, 0, 2, 2, 't', 2, 0, 0, 0, 3, 0, 0, 0, 0, 5, 0,
                   0});
  reader r1{v1};
  auto m1 = read_write_txn_markers_request(r1, 1);
  EXPECT_TRUE(r1.ok() && r1.remaining() == 0) << r1.what();
  for (auto* m : {&m0, &m1}) {
    ASSERT_EQ(m->markers.size(), 1u);
    EXPECT_EQ(m->markers[0].producer_id, 9);
    EXPECT_EQ(m->markers[0].producer_epoch, 2);
    EXPECT_FALSE(m->markers[0].committed);
    ASSERT_EQ(m->markers[0].topics.size(), 1u);
    EXPECT_EQ(m->markers[0].topics[0].name, "t");
    EXPECT_EQ(m->markers[0].topics[0].partitions, (std::vector<int32_t>{3}));
    EXPECT_EQ(m->markers[0].coordinator_epoch, 5);
  }
  std::vector<txn_marker_result> result{{9, {{"t", {{3, 47}}}}}};
  EXPECT_EQ(encode_write_txn_markers_response(result, 0),
            bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1, 0, 0, 0,
                   3, 0, 47}));
  EXPECT_EQ(encode_write_txn_markers_response(result, 1),
            bytes({2, 0, 0, 0, 0, 0, 0, 0, 9, 2, 2, 't', 2, 0, 0, 0, 3, 0, 47, 0, 0, 0, 0}));
}

// librdkafka's InitProducerId v4 (KIP-360 and KIP-588): flexible, with the
// producer id and epoch it holds; the response ends with tagged fields.
TEST(KafkaTxnApi, InitProducerIdV4IsFlexibleWithTheProducersIdentity) {
  auto body = bytes({3, 't', 'x', 0, 0, 0xea, 0x60, 0, 0, 0, 0, 0, 0, 0x13, 0x88, 0, 3, 0});
  reader r{body};
  auto req = read_init_producer_id_request(r, 4);
  EXPECT_TRUE(r.ok() && r.remaining() == 0) << r.what();
  EXPECT_EQ(req.transactional_id, std::optional<std::string>{"tx"});
  EXPECT_EQ(req.transaction_timeout_ms, 60000);
  EXPECT_EQ(req.producer_id, 5000);
  EXPECT_EQ(req.producer_epoch, 3);
  // v2: flexible, no identity yet.
  auto v2 = bytes({0, 0xff, 0xff, 0xff, 0xff, 0});
  reader r2{v2};
  auto idempotent = read_init_producer_id_request(r2, 2);
  EXPECT_TRUE(r2.ok() && r2.remaining() == 0) << r2.what();
  EXPECT_EQ(idempotent.transactional_id, std::nullopt);
  EXPECT_EQ(idempotent.producer_id, -1);
  EXPECT_EQ(encode_init_producer_id_response({0, 90, -1, -1}, 4),
            bytes({0, 0, 0, 0, 0, 90, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                   0}));
  EXPECT_TRUE(is_flexible(api::init_producer_id, 2));
  EXPECT_FALSE(is_flexible(api::init_producer_id, 1));
}

// librdkafka's TxnOffsetCommit v3 (flexible, KIP-447): compact strings,
// the consumer's generation, member id and null instance id, tagged
// fields after each partition, topic and the request; the v3 answer in
// kind.
TEST(KafkaTxnApi, TxnOffsetCommitV3CarriesTheConsumersGeneration) {
  auto body = bytes({3}) + "tx" + bytes({2}) + "g" + bytes({0, 0, 0, 0, 0, 0, 0x13, 0x88, 0, 3})
              + bytes({0, 0, 0, 7}) + bytes({3}) + "m1" + bytes({0}) // generation 7, "m1", null
              + bytes({2, 2}) + "t" + bytes({2})                       // one topic "t", one partition
              + bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff, 3}) + "md"
              + bytes({0, 0, 0});
  reader r{body};
  auto req = read_txn_offset_commit_request(r, 3);
  ASSERT_TRUE(r.ok() && r.remaining() == 0) << r.what();
  EXPECT_EQ(req.transactional_id, "tx");
  EXPECT_EQ(req.group_id, "g");
  EXPECT_EQ(req.producer_id, 5000);
  EXPECT_EQ(req.generation_id, 7);
  EXPECT_EQ(req.member_id, "m1");
  EXPECT_EQ(req.group_instance_id, std::nullopt);
  ASSERT_EQ(req.topics.size(), 1u);
  EXPECT_EQ(req.topics[0].name, "t");
  auto& p = req.topics[0].partitions.at(0);
  EXPECT_EQ(p.index, 1);
  EXPECT_EQ(p.committed_offset, 4);
  EXPECT_EQ(p.committed_metadata, std::string("md"));
  EXPECT_EQ(encode_txn_offset_commit_response({{"t", {{1, 22}}}}, 3),
            bytes({0, 0, 0, 0, 2, 2}) + "t" + bytes({2, 0, 0, 0, 1, 0, 22, 0, 0, 0}));
  EXPECT_EQ(encode_txn_offset_commit_response({{"t", {{1, 0}}}}, 2),
            bytes({0, 0, 0, 0, 0, 0, 0, 1, 0, 1}) + "t" + bytes({0, 0, 0, 1, 0, 0, 0, 1, 0, 0}));
}

// JoinGroup v0 has no rebalance timeout (the session timeout stands in)
// and no MEMBER_ID_REQUIRED round; v4 has both.
TEST(KafkaGroupApi, JoinGroupByVersion) {
  auto v0 = bytes({0, 1}) + "g" + bytes({0, 0, 0x27, 0x10, 0, 0, 0, 8}) + "consumer"
            + bytes({0, 0, 0, 1, 0, 5}) + "range" + bytes({0, 0, 0, 2, 0xab, 0xcd});
  reader r0{v0};
  auto j0 = read_join_group_request(r0, 0);
  ASSERT_TRUE(r0.ok() && r0.remaining() == 0) << r0.what();
  EXPECT_EQ(j0.group.session_timeout_ms, 10000);
  EXPECT_EQ(j0.group.rebalance_timeout_ms, 10000);
  EXPECT_EQ(j0.group.member_id, "");
  EXPECT_EQ(j0.group.protocol_type, "consumer");
  ASSERT_EQ(j0.group.protocols.size(), 1u);
  EXPECT_EQ(j0.group.protocols[0].metadata, bytes({0xab, 0xcd}));
  EXPECT_FALSE(j0.group.require_known_member_id);
  auto v4 = bytes({0, 1}) + "g" + bytes({0, 0, 0x27, 0x10, 0, 0, 0x75, 0x30, 0, 0, 0, 8})
            + "consumer" + bytes({0, 0, 0, 0});
  reader r4{v4};
  auto j4 = read_join_group_request(r4, 4);
  ASSERT_TRUE(r4.ok() && r4.remaining() == 0) << r4.what();
  EXPECT_EQ(j4.group.rebalance_timeout_ms, 30000);
  EXPECT_TRUE(j4.group.require_known_member_id);

  caftx::join_group_response resp;
  resp.generation_id = 1;
  resp.protocol_name = "range";
  resp.leader_id = "m";
  resp.member_id = "m";
  resp.members = {{"m", "x"}};
  EXPECT_EQ(encode_join_group_response(resp, 2),
            bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 5}) + "range" + bytes({0, 1}) + "m"
              + bytes({0, 1}) + "m" + bytes({0, 0, 0, 1, 0, 1}) + "m" + bytes({0, 0, 0, 1}) + "x");
  EXPECT_EQ(encode_join_group_response(resp, 0).substr(0, 2), bytes({0, 0})); // no throttle time
}

// JoinGroup v5 (KIP-345): the instance id after the member id; a static
// member is not asked for MEMBER_ID_REQUIRED; the answer lists each
// member's instance id, null for a dynamic one.
TEST(KafkaGroupApi, JoinGroupV5CarriesTheInstanceId) {
  auto body = [](const std::string& instance_field) {
    return bytes({0, 1}) + "g" + bytes({0, 0, 0x27, 0x10, 0, 0, 0x75, 0x30, 0, 0}) + instance_field
           + bytes({0, 8}) + "consumer" + bytes({0, 0, 0, 0});
  };
  auto v5 = body(bytes({0, 3}) + "i-1");
  reader r5{v5};
  auto j5 = read_join_group_request(r5, 5);
  ASSERT_TRUE(r5.ok() && r5.remaining() == 0) << r5.what();
  EXPECT_EQ(j5.group.group_instance_id, "i-1");
  EXPECT_FALSE(j5.group.require_known_member_id);
  auto dynamic = body(bytes({0xff, 0xff}));
  reader rd{dynamic};
  auto jd = read_join_group_request(rd, 5);
  ASSERT_TRUE(rd.ok() && rd.remaining() == 0) << rd.what();
  EXPECT_EQ(jd.group.group_instance_id, "");
  EXPECT_TRUE(jd.group.require_known_member_id);

  caftx::join_group_response resp;
  resp.generation_id = 1;
  resp.protocol_name = "range";
  resp.leader_id = "m";
  resp.member_id = "m";
  resp.members = {{"m", "x", "i-1"}, {"d", "y", ""}};
  EXPECT_EQ(encode_join_group_response(resp, 5),
            bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 5}) + "range" + bytes({0, 1}) + "m"
              + bytes({0, 1}) + "m" + bytes({0, 0, 0, 2, 0, 1}) + "m" + bytes({0, 3}) + "i-1"
              + bytes({0, 0, 0, 1}) + "x" + bytes({0, 1}) + "d" + bytes({0xff, 0xff, 0, 0, 0, 1})
              + "y");
  EXPECT_EQ(supported(api::join_group), (version_range{api::join_group, 0, 5}));
}

// DescribeGroups v4 names each member's instance id (null if dynamic).
TEST(KafkaGroupApi, DescribeGroupsV4NamesInstanceIds) {
  caftx::group_description g;
  g.group_id = "g";
  g.state = "Stable";
  g.protocol_type = "consumer";
  g.protocol = "range";
  g.members = {{"m", "i", "c", "/h", "x", "y"}};
  auto member = bytes({0, 1}) + "m" + bytes({0, 1}) + "i" + bytes({0, 1}) + "c" + bytes({0, 2})
                + "/h" + bytes({0, 0, 0, 1}) + "x" + bytes({0, 0, 0, 1}) + "y";
  auto group = bytes({0, 0, 0, 1}) + "g" + bytes({0, 6}) + "Stable" + bytes({0, 8}) + "consumer"
               + bytes({0, 5}) + "range" + bytes({0, 0, 0, 1});
  EXPECT_EQ(encode_describe_groups_response({g}, 4),
            bytes({0, 0, 0, 0, 0, 0, 0, 1}) + group + member + bytes({0x80, 0, 0, 0}));
  g.members[0].group_instance_id = "";
  EXPECT_EQ(encode_describe_groups_response({g}, 4).find(bytes({0, 1}) + "m" + bytes({0xff, 0xff})),
            8 + group.size());
}

// SyncGroup v3 and Heartbeat v3 carry the instance id into the core
// request; null is "".
TEST(KafkaGroupApi, SyncGroupAndHeartbeatV3CarryTheInstanceId) {
  auto sync = bytes({0, 1}) + "g" + bytes({0, 0, 0, 2, 0, 1}) + "m" + bytes({0, 1}) + "i"
              + bytes({0, 0, 0, 0});
  reader rs{sync};
  auto s3 = read_sync_group_request(rs, 3);
  ASSERT_TRUE(rs.ok() && rs.remaining() == 0) << rs.what();
  EXPECT_EQ(s3.group.generation_id, 2);
  EXPECT_EQ(s3.group.group_instance_id, "i");
  auto hb = bytes({0, 1}) + "g" + bytes({0, 0, 0, 2, 0, 1}) + "m" + bytes({0xff, 0xff});
  reader rh{hb};
  auto h3 = read_heartbeat_request(rh, 3);
  ASSERT_TRUE(rh.ok() && rh.remaining() == 0) << rh.what();
  EXPECT_EQ(h3.group.member_id, "m");
  EXPECT_EQ(h3.group.group_instance_id, "");
}

// LeaveGroup v0-2 answers its one member's error at the top; v3 each
// member's, with its instance id echoed.
TEST(KafkaGroupApi, LeaveGroupByVersion) {
  auto v1 = bytes({0, 1}) + "g" + bytes({0, 1}) + "m";
  reader r1{v1};
  auto l1 = read_leave_group_request(r1, 1);
  ASSERT_TRUE(r1.ok() && r1.remaining() == 0);
  EXPECT_EQ(l1.group.member_ids, std::vector<std::string>{"m"});
  EXPECT_EQ(encode_leave_group_response({error_code::none, {error_code::unknown_member_id}}, l1, 1),
            bytes({0, 0, 0, 0, 0, 25}));
  auto v3 = bytes({0, 1}) + "g" + bytes({0, 0, 0, 2, 0, 1}) + "a" + bytes({0xff, 0xff, 0, 1}) + "b"
            + bytes({0, 1}) + "i";
  reader r3{v3};
  auto l3 = read_leave_group_request(r3, 3);
  ASSERT_TRUE(r3.ok() && r3.remaining() == 0) << r3.what();
  EXPECT_EQ(l3.group.member_ids, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(l3.group.group_instance_ids, (std::vector<std::string>{"", "i"}));
  EXPECT_EQ(encode_leave_group_response({error_code::none, {error_code::none, error_code::unknown_member_id}},
                                        l3, 3),
            bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1}) + "a" + bytes({0xff, 0xff, 0, 0, 0, 1}) + "b"
              + bytes({0, 1}) + "i" + bytes({0, 25}));
}

} // namespace
} // namespace caftx::kafka
