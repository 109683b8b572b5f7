// Kafka's request and response framing and the first APIs a Kafka client
// sends on a new connection: ApiVersions (key 18, v0-3, KIP-511's
// v0-framed UNSUPPORTED_VERSION answer) and Metadata (key 3, v0-4), field
// by field as Kafka's message schemas (ApiVersionsRequest.json,
// MetadataResponse.json, ...) define them. docs/kafka-protocol.md.
// Pure: no CAF, no sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/kafka_wire.hpp"
#include "runtime/error_code.hpp"

namespace caftx::kafka {

/// Kafka's ApiKeys numbers of the APIs caftx knows.
namespace api {
inline constexpr int16_t produce = 0;
inline constexpr int16_t fetch = 1;
inline constexpr int16_t list_offsets = 2;
inline constexpr int16_t metadata = 3;
inline constexpr int16_t offset_commit = 8;
inline constexpr int16_t offset_fetch = 9;
inline constexpr int16_t find_coordinator = 10;
inline constexpr int16_t join_group = 11;
inline constexpr int16_t heartbeat = 12;
inline constexpr int16_t leave_group = 13;
inline constexpr int16_t sync_group = 14;
inline constexpr int16_t describe_groups = 15;
inline constexpr int16_t list_groups = 16;
inline constexpr int16_t api_versions = 18;
inline constexpr int16_t create_topics = 19;
inline constexpr int16_t delete_topics = 20;
inline constexpr int16_t delete_records = 21;
inline constexpr int16_t init_producer_id = 22;
inline constexpr int16_t add_partitions_to_txn = 24;
inline constexpr int16_t add_offsets_to_txn = 25;
inline constexpr int16_t end_txn = 26;
inline constexpr int16_t write_txn_markers = 27;
inline constexpr int16_t txn_offset_commit = 28;
inline constexpr int16_t describe_configs = 32;
inline constexpr int16_t create_partitions = 37;
inline constexpr int16_t describe_producers = 61;
inline constexpr int16_t describe_transactions = 65;
inline constexpr int16_t list_transactions = 66;
inline constexpr int16_t delete_groups = 42;
} // namespace api

/// An API key with the versions a node answers, both ends inclusive.
struct version_range {
  int16_t api_key = 0;
  int16_t min_version = 0;
  int16_t max_version = 0;
  friend bool operator==(const version_range& a, const version_range& b) {
    return a.api_key == b.api_key && a.min_version == b.min_version
           && a.max_version == b.max_version;
  }
};

/// What a caftx node answers, in key order: Produce 0-7 (v0-2 only to say
/// that message formats 0 and 1 are not kept: librdkafka up to 2.11
/// compresses with gzip, snappy or lz4 only for a broker whose Produce
/// range starts at 0), Fetch 4-11,
/// ListOffsets 0-3, Metadata 0-4, OffsetCommit 2-7, OffsetFetch 1-7 (the
/// older versions kept offsets in ZooKeeper; v7 has require_stable), FindCoordinator 0-2,
/// JoinGroup 0-5 (v5 brings static membership, KIP-345), Heartbeat 0-3,
/// LeaveGroup 0-3, SyncGroup 0-3,
/// DescribeGroups 0-4, ListGroups 0-2, ApiVersions 0-3, CreateTopics 0-4,
/// DeleteTopics 0-1, DeleteRecords 0-1, InitProducerId 0-4,
/// AddPartitionsToTxn 0-1, AddOffsetsToTxn 0-1, EndTxn 0-1,
/// TxnOffsetCommit 0-3 (v3 flexible, KIP-447's member fields),
/// DescribeConfigs 0-2, CreatePartitions 0-1, DeleteGroups 0-1, and
/// KIP-664's DescribeProducers 0, DescribeTransactions 0, ListTransactions
/// 0-1 (flexible from v0) and WriteTxnMarkers 0-1.
const std::vector<version_range>& supported_apis();
/// The range of `api_key`, or nullopt when the node does not answer it.
std::optional<version_range> supported(int16_t api_key);
/// Whether `version` of `api_key` uses KIP-482's flexible encoding (compact
/// strings and arrays, tagged fields, request header v2): from Metadata 9,
/// ApiVersions 3, Produce 9, Fetch 12, ListOffsets 6, FindCoordinator 3,
/// InitProducerId 2, AddPartitionsToTxn 3, AddOffsetsToTxn 3, EndTxn 3,
/// TxnOffsetCommit 3, JoinGroup 6, Heartbeat 4, LeaveGroup 4, SyncGroup 4,
/// DescribeGroups 5, ListGroups 3, DescribeConfigs 4, CreatePartitions 2,
/// DeleteGroups 2, WriteTxnMarkers 1 on; DescribeProducers,
/// DescribeTransactions and ListTransactions from v0.
bool is_flexible(int16_t api_key, int16_t version);

/// Kafka's wire number of `code` (UNKNOWN_SERVER_ERROR is -1).
int16_t wire_error(error_code code);
/// Kafka's UNSUPPORTED_VERSION (35).
inline constexpr int16_t unsupported_version = 35;

/// Request header v1 (v2 for a flexible version: then a tagged-field
/// section follows the client id, which stays an int16-length string).
struct request_header {
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  std::optional<std::string> client_id;
};

/// Reads the header; the reader is left at the body. Tagged fields of a
/// flexible version are read only for an API this node knows (for an
/// unknown one the version's encoding is unknown).
request_header read_request_header(reader& r);

/// The response header: the correlation id, then an empty tagged-field
/// section for a flexible version, except ApiVersions, whose response
/// header is always v0 (so a client can read it before it knows the
/// broker's versions).
void write_response_header(writer& w, const request_header& h);

/// A response body framed for the wire: int32 size, header, body.
std::string frame_response(const request_header& h, const std::string& body);

// -- ApiVersions (18) -----------------------------------------------------------

/// ApiVersionsRequest: v3 adds the client's software name and version.
struct api_versions_request {
  std::string client_software_name;
  std::string client_software_version;
};

api_versions_request read_api_versions_request(reader& r, int16_t version);

/// ApiVersionsResponse at `version` (0-3): error, the API ranges, the
/// throttle time from v1. For a version this node does not answer
/// (KIP-511), call it with version 0, error UNSUPPORTED_VERSION and
/// ApiVersions' own range: a client reads that from any newer version.
std::string encode_api_versions_response(int16_t version, int16_t error,
                                         const std::vector<version_range>& apis,
                                         int32_t throttle_time_ms = 0);

// -- Metadata (3) -------------------------------------------------------------------

/// MetadataRequest v0-4: the topics (v0: empty = all; v1+: null = all,
/// empty = none) and, from v4, whether the broker may create missing ones.
struct metadata_request {
  std::optional<std::vector<std::string>> topics;
  bool allow_auto_topic_creation = true;
};

metadata_request read_metadata_request(reader& r, int16_t version);

struct metadata_broker {
  int32_t node_id = -1;
  std::string host;
  int32_t port = 0;
  std::optional<std::string> rack;
};

struct metadata_partition {
  int16_t error = 0;
  int32_t index = 0;
  int32_t leader = -1;
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
};

struct metadata_topic {
  int16_t error = 0;
  std::string name;
  bool internal = false;
  std::vector<metadata_partition> partitions;
};

/// MetadataResponse v0-4: throttle time (v3+), brokers (rack v1+),
/// cluster id (v2+), controller id (v1+), topics (is_internal v1+).
struct metadata_response {
  int32_t throttle_time_ms = 0;
  std::vector<metadata_broker> brokers;
  std::optional<std::string> cluster_id;
  int32_t controller_id = -1;
  std::vector<metadata_topic> topics;
};

std::string encode_metadata_response(const metadata_response& m, int16_t version);

} // namespace caftx::kafka
