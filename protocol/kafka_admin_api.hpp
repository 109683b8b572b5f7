// Kafka's topic admin APIs in their non-flexible versions, field by field
// as Kafka's message schemas define them: CreateTopics (key 19, v0-4) and
// DeleteTopics (key 20, v0-1) (docs/kafka-protocol.md §Topics). Pure: no
// CAF, no sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/kafka_wire.hpp"

namespace caftx::kafka {

struct creatable_topic_config {
  std::string name;
  std::optional<std::string> value;
};

struct creatable_replica_assignment {
  int32_t partition_index = 0;
  std::vector<int32_t> broker_ids;
};

struct creatable_topic {
  std::string name;
  /// -1 (v4+): the broker's num.partitions.
  int32_t num_partitions = -1;
  /// -1 (v4+): the broker's default.replication.factor.
  int16_t replication_factor = -1;
  std::vector<creatable_replica_assignment> assignments;
  std::vector<creatable_topic_config> configs;
};

/// CreateTopicsRequest v0-4: the topics, the timeout in milliseconds, from
/// v1 validate_only.
struct create_topics_request {
  std::vector<creatable_topic> topics;
  int32_t timeout_ms = 0;
  bool validate_only = false;
};

create_topics_request read_create_topics_request(reader& r, int16_t version);

struct topic_error {
  std::string name;
  int16_t error = 0;
  std::optional<std::string> message; // CreateTopics v1+
};

/// CreateTopicsResponse v0-4: the throttle time from v2, then per topic
/// its error and from v1 its message.
std::string encode_create_topics_response(const std::vector<topic_error>& topics, int16_t version,
                                          int32_t throttle_time_ms = 0);

/// DeleteTopicsRequest v0-1: the names and the timeout in milliseconds.
struct delete_topics_request {
  std::vector<std::string> names;
  int32_t timeout_ms = 0;
};

delete_topics_request read_delete_topics_request(reader& r, int16_t version);

/// DeleteTopicsResponse v0-1: the throttle time from v1, then per topic
/// its error (no message before v5).
std::string encode_delete_topics_response(const std::vector<topic_error>& topics, int16_t version,
                                          int32_t throttle_time_ms = 0);

} // namespace caftx::kafka
