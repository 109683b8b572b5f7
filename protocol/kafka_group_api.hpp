// Kafka's consumer-group offset APIs in their non-flexible versions, field
// by field as Kafka's message schemas define them: OffsetCommit (key 8,
// v0-7) and OffsetFetch (key 9, v0-5) (docs/kafka-protocol.md §Offsets).
// Pure: no CAF, no sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/kafka_txn_api.hpp"
#include "protocol/kafka_wire.hpp"

namespace caftx::kafka {

// -- OffsetCommit (8) ------------------------------------------------------------------

struct offset_commit_partition {
  int32_t index = 0;
  int64_t committed_offset = -1;
  int32_t committed_leader_epoch = -1; // v6+
  int64_t commit_timestamp = -1;       // v1 only
  std::optional<std::string> committed_metadata;
};

struct offset_commit_topic {
  std::string name;
  std::vector<offset_commit_partition> partitions;
};

/// OffsetCommitRequest v0-7: the group, from v1 the generation and member
/// id (-1 and "" from a consumer outside group management), from v7 the
/// static member's instance id, v2-4 a retention time, then the offsets.
struct offset_commit_request {
  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
  int64_t retention_time_ms = -1;
  std::vector<offset_commit_topic> topics;
};

offset_commit_request read_offset_commit_request(reader& r, int16_t version);

/// OffsetCommitResponse v0-7: the throttle time from v3, then per topic
/// and partition an error.
std::string encode_offset_commit_response(const std::vector<topic_partition_errors>& topics,
                                          int16_t version, int32_t throttle_time_ms = 0);

// -- OffsetFetch (9) -------------------------------------------------------------------

struct offset_fetch_topic {
  std::string name;
  std::vector<int32_t> partitions;
};

/// OffsetFetchRequest v0-5: the group and its topics' partitions; from v2
/// a null topic list asks for every offset the group has.
struct offset_fetch_request {
  std::string group_id;
  std::optional<std::vector<offset_fetch_topic>> topics;
};

offset_fetch_request read_offset_fetch_request(reader& r, int16_t version);

struct offset_fetch_partition {
  int32_t index = 0;
  int64_t committed_offset = -1;
  int32_t committed_leader_epoch = -1; // v5+
  std::optional<std::string> metadata;
  int16_t error = 0;
};

struct offset_fetch_topic_response {
  std::string name;
  std::vector<offset_fetch_partition> partitions;
};

/// OffsetFetchResponse v0-5: the throttle time from v3, the topics, then
/// from v2 a top-level error.
struct offset_fetch_response {
  int32_t throttle_time_ms = 0;
  std::vector<offset_fetch_topic_response> topics;
  int16_t error = 0;
};

std::string encode_offset_fetch_response(const offset_fetch_response& f, int16_t version);

} // namespace caftx::kafka
