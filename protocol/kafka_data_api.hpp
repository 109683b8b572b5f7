// Kafka's data APIs, field by field as Kafka's message schemas define them
// (ProduceRequest.json, FetchResponse.json, ListOffsetsRequest.json, ...):
// Produce (key 0, v3-7), Fetch (key 1, v4-11) and ListOffsets (key 2,
// v0-3), the non-flexible versions every Kafka client of the last years
// sends (docs/kafka-protocol.md §Produce, §Fetch, §ListOffsets). Records
// travel as the RecordBatch v2 bytes a client sent and a partition stores.
// Pure: no CAF, no sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/kafka_wire.hpp"

namespace caftx::kafka {

// -- Produce (0) --------------------------------------------------------------------

struct produce_partition_data {
  int32_t index = 0;
  /// One RecordBatch v2 (v3+: exactly one batch of magic 2, else Kafka's
  /// INVALID_RECORD); null is read as is and refused the same way.
  std::optional<std::string> records;
};

struct produce_topic_data {
  std::string name;
  std::vector<produce_partition_data> partitions;
};

/// ProduceRequest v3-7 (v3 added the transactional id; v4-7 change only
/// what a broker may answer: KAFKA_STORAGE_ERROR from v4, zstd from v7).
struct produce_request {
  std::optional<std::string> transactional_id;
  /// -1 all in-sync replicas, 1 the leader, 0 no response at all.
  int16_t acks = -1;
  /// How long the broker waits for the acks, in milliseconds.
  int32_t timeout_ms = 30000;
  std::vector<produce_topic_data> topics;
};

produce_request read_produce_request(reader& r, int16_t version);

struct produce_partition_response {
  int32_t index = 0;
  int16_t error = 0;
  int64_t base_offset = -1;
  /// -1: the topic keeps CreateTime (caftx's only timestamp type).
  int64_t log_append_time_ms = -1;
  int64_t log_start_offset = -1; // v5+
};

struct produce_topic_response {
  std::string name;
  std::vector<produce_partition_response> partitions;
};

/// ProduceResponse v3-7: per topic and partition error, base offset, log
/// append time, log start offset (v5+); the throttle time after them.
std::string encode_produce_response(const std::vector<produce_topic_response>& topics,
                                    int16_t version, int32_t throttle_time_ms = 0);

// -- Fetch (1) -------------------------------------------------------------------------

struct fetch_partition {
  int32_t index = 0;
  /// KIP-320 (v9+): the leader epoch the client knows; -1 none.
  int32_t current_leader_epoch = -1;
  int64_t fetch_offset = 0;
  /// v5+: a follower's log start offset; consumers send -1.
  int64_t log_start_offset = -1;
  /// max.partition.fetch.bytes.
  int32_t max_bytes = 0;
};

struct fetch_topic {
  std::string name;
  std::vector<fetch_partition> partitions;
};

struct forgotten_topic {
  std::string name;
  std::vector<int32_t> partitions;
};

/// FetchRequest v4-11. Fetch sessions (KIP-227, v7+): session id 0 with
/// epoch -1 is a sessionless full fetch (what librdkafka and KafkaJS
/// send); caftx creates no sessions.
struct fetch_request {
  /// -1 a consumer; a broker id for a follower's fetch.
  int32_t replica_id = -1;
  int32_t max_wait_ms = 0;
  int32_t min_bytes = 0;
  int32_t max_bytes = 0x7fffffff;
  /// 0 read_uncommitted, 1 read_committed.
  int8_t isolation_level = 0;
  int32_t session_id = 0;
  int32_t session_epoch = -1;
  std::vector<fetch_topic> topics;
  std::vector<forgotten_topic> forgotten; // v7+
  std::string rack_id;                    // v11+
};

fetch_request read_fetch_request(reader& r, int16_t version);

struct fetch_aborted_transaction {
  int64_t producer_id = -1;
  int64_t first_offset = -1;
};

struct fetch_partition_response {
  int32_t index = 0;
  int16_t error = 0;
  int64_t high_watermark = -1;
  int64_t last_stable_offset = -1;
  int64_t log_start_offset = -1; // v5+
  /// Sorted by first offset for read_committed; null (Kafka's answer) for
  /// read_uncommitted.
  std::optional<std::vector<fetch_aborted_transaction>> aborted_transactions;
  /// v11+: always -1 here (KIP-392 follower fetching is not offered).
  int32_t preferred_read_replica = -1;
  /// Whole batches as stored (empty on an error).
  std::string records;
};

struct fetch_topic_response {
  std::string name;
  std::vector<fetch_partition_response> partitions;
};

/// FetchResponse v4-11: throttle time, then (v7+) a top-level error and
/// the session id, then the topics. Nothing follows the last topic
/// (librdkafka refuses a response with bytes left over).
struct fetch_response {
  int32_t throttle_time_ms = 0;
  int16_t error = 0;     // v7+
  int32_t session_id = 0; // v7+
  std::vector<fetch_topic_response> topics;
};

std::string encode_fetch_response(const fetch_response& f, int16_t version);

// -- ListOffsets (2) ---------------------------------------------------------------------

struct list_offsets_partition {
  int32_t index = 0;
  /// -1 latest, -2 earliest, else a timestamp in milliseconds.
  int64_t timestamp = -1;
  int32_t max_num_offsets = 1; // v0 only
};

struct list_offsets_topic {
  std::string name;
  std::vector<list_offsets_partition> partitions;
};

/// ListOffsetsRequest v0-3 (v1 dropped max_num_offsets, v2 added the
/// isolation level, v3 is v2).
struct list_offsets_request {
  int32_t replica_id = -1;
  int8_t isolation_level = 0; // v2+
  std::vector<list_offsets_topic> topics;
};

list_offsets_request read_list_offsets_request(reader& r, int16_t version);

struct list_offsets_partition_response {
  int32_t index = 0;
  int16_t error = 0;
  /// v1+: the found record's timestamp, -1 for latest and earliest.
  int64_t timestamp = -1;
  /// -1: none (v0 answers an empty old-style offset list then).
  int64_t offset = -1;
};

struct list_offsets_topic_response {
  std::string name;
  std::vector<list_offsets_partition_response> partitions;
};

/// ListOffsetsResponse v0-3: throttle time first from v2; v0 answers each
/// partition's offset as a one-element old-style offset list.
std::string encode_list_offsets_response(const std::vector<list_offsets_topic_response>& topics,
                                         int16_t version, int32_t throttle_time_ms = 0);

// -- DeleteRecords (21) --------------------------------------------------------------

struct delete_records_partition {
  int32_t index = 0;
  /// The new log start offset; -1: the high watermark.
  int64_t offset = -1;
};

struct delete_records_topic {
  std::string name;
  std::vector<delete_records_partition> partitions;
};

/// DeleteRecordsRequest v0-1 (KIP-107; v1 is v0): the partitions and the
/// offsets before which their records go, and the timeout in milliseconds.
struct delete_records_request {
  std::vector<delete_records_topic> topics;
  int32_t timeout_ms = 0;
};

delete_records_request read_delete_records_request(reader& r, int16_t version);

struct delete_records_partition_response {
  int32_t index = 0;
  int64_t low_watermark = -1;
  int16_t error = 0;
};

struct delete_records_topic_response {
  std::string name;
  std::vector<delete_records_partition_response> partitions;
};

/// DeleteRecordsResponse v0-1: the throttle time, then per topic and
/// partition the low watermark (the new log start offset) and an error.
std::string encode_delete_records_response(
  const std::vector<delete_records_topic_response>& topics, int32_t throttle_time_ms = 0);

} // namespace caftx::kafka
