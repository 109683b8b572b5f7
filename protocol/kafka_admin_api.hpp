// Kafka's topic admin APIs in their non-flexible versions, field by field
// as Kafka's message schemas define them: CreateTopics (key 19, v0-4),
// DeleteTopics (key 20, v0-1), CreatePartitions (key 37, v0-1) and
// DescribeConfigs (key 32, v0-2) (docs/kafka-protocol.md §Topics). Pure:
// no CAF, no sockets.
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

/// One topic of a CreatePartitionsRequest: its new partition count and,
/// when not null, the replicas of each new partition.
struct create_partitions_topic {
  std::string name;
  int32_t count = 0;
  std::optional<std::vector<std::vector<int32_t>>> assignments;
};

/// CreatePartitionsRequest v0-1 (KIP-195; v1 is v0): the topics, the
/// timeout in milliseconds, validate_only.
struct create_partitions_request {
  std::vector<create_partitions_topic> topics;
  int32_t timeout_ms = 0;
  bool validate_only = false;
};

create_partitions_request read_create_partitions_request(reader& r, int16_t version);

/// CreatePartitionsResponse v0-1: the throttle time, then per topic its
/// error and message (null when none).
std::string encode_create_partitions_response(const std::vector<topic_error>& topics,
                                              int16_t version, int32_t throttle_time_ms = 0);

/// One resource of a DescribeConfigsRequest: Kafka's ResourceType (2
/// TOPIC, 4 BROKER), its name, and the keys asked for (null: all).
struct describe_configs_resource {
  int8_t type = 0;
  std::string name;
  std::optional<std::vector<std::string>> keys;
};

/// DescribeConfigsRequest v0-2 (KIP-133; v1 adds include_synonyms, KIP-226;
/// v2 is v1).
struct describe_configs_request {
  std::vector<describe_configs_resource> resources;
  bool include_synonyms = false;
};

describe_configs_request read_describe_configs_request(reader& r, int16_t version);

struct describe_configs_synonym {
  std::string name;
  std::optional<std::string> value;
  int8_t source = 0;
};

struct describe_configs_entry {
  std::string name;
  std::optional<std::string> value;
  bool read_only = false;
  /// v0's IsDefault; v1+ send `source` instead.
  bool is_default = false;
  int8_t source = -1;
  bool is_sensitive = false;
  std::vector<describe_configs_synonym> synonyms; // v1+
};

struct describe_configs_result {
  int16_t error = 0;
  std::optional<std::string> message;
  int8_t type = 0;
  std::string name;
  std::vector<describe_configs_entry> configs;
};

/// DescribeConfigsResponse v0-2: the throttle time, then per resource its
/// error, message, type, name and configs (v0 IsDefault; v1+ ConfigSource
/// and the synonyms).
std::string encode_describe_configs_response(const std::vector<describe_configs_result>& results,
                                             int16_t version, int32_t throttle_time_ms = 0);

} // namespace caftx::kafka
