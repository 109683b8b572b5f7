// Kafka's coordinator and transaction APIs in their non-flexible versions,
// field by field as Kafka's message schemas define them:
// FindCoordinator (key 10, v0-2), InitProducerId (22, v0-1),
// AddPartitionsToTxn (24, v0-1), AddOffsetsToTxn (25, v0-1), EndTxn (26,
// v0-1) and TxnOffsetCommit (28, v0-2) (docs/kafka-protocol.md
// §Transactions). Pure: no CAF, no sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/kafka_wire.hpp"

namespace caftx::kafka {

// -- FindCoordinator (10) -----------------------------------------------------------

/// FindCoordinatorRequest v0-2: the key (a group id or transactional id)
/// and from v1 its type (0 group, 1 transaction; v0 is always a group).
struct find_coordinator_request {
  std::string key;
  int8_t key_type = 0;
};

find_coordinator_request read_find_coordinator_request(reader& r, int16_t version);

struct find_coordinator_response {
  int32_t throttle_time_ms = 0; // v1+
  int16_t error = 0;
  std::optional<std::string> error_message; // v1+
  int32_t node_id = -1;
  std::string host;
  int32_t port = -1;
};

std::string encode_find_coordinator_response(const find_coordinator_response& f,
                                             int16_t version);

// -- InitProducerId (22) -------------------------------------------------------------

/// InitProducerIdRequest v0-4: a transactional id (null for an idempotent
/// producer) and the transaction timeout in milliseconds; flexible from v2
/// (KIP-482); from v3 the producer id and epoch the producer holds (-1 and
/// -1 for a new one: KIP-360, a bump of that epoch instead of a fence).
struct init_producer_id_request {
  std::optional<std::string> transactional_id;
  int32_t transaction_timeout_ms = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
};

init_producer_id_request read_init_producer_id_request(reader& r, int16_t version);

struct init_producer_id_response {
  int32_t throttle_time_ms = 0;
  int16_t error = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
};

std::string encode_init_producer_id_response(const init_producer_id_response& i, int16_t version);

// -- AddPartitionsToTxn (24) ----------------------------------------------------------

/// A topic and partition indexes, as transaction requests name them.
struct txn_topic {
  std::string name;
  std::vector<int32_t> partitions;
};

/// An array of txn_topic; `flexible` (KIP-482): compact strings and
/// arrays, tagged fields after each topic.
std::vector<txn_topic> read_txn_topics(reader& r, bool flexible = false);
void write_txn_topics(writer& w, const std::vector<txn_topic>& topics, bool flexible = false);

/// AddPartitionsToTxnRequest v0-1 (v1 is v0; v4+ batches transactions and
/// is broker-to-broker).
struct add_partitions_to_txn_request {
  std::string transactional_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  std::vector<txn_topic> topics;
};

add_partitions_to_txn_request read_add_partitions_to_txn_request(reader& r, int16_t version);

struct partition_error {
  int32_t index = 0;
  int16_t error = 0;
};

struct topic_partition_errors {
  std::string name;
  std::vector<partition_error> partitions;
};

/// Per topic and partition an error (the body of AddPartitionsToTxn's,
/// TxnOffsetCommit's and OffsetCommit's responses after the throttle time,
/// and of each WriteTxnMarkers result); `flexible` as read_txn_topics.
void write_partition_errors(writer& w, const std::vector<topic_partition_errors>& topics,
                            bool flexible = false);

/// AddPartitionsToTxnResponse v0-1 and TxnOffsetCommitResponse v0-2 share
/// this shape: the throttle time, then per topic and partition an error.
std::string encode_partition_errors_response(const std::vector<topic_partition_errors>& topics,
                                             int32_t throttle_time_ms = 0);

// -- AddOffsetsToTxn (25) --------------------------------------------------------------

struct add_offsets_to_txn_request {
  std::string transactional_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  std::string group_id;
};

add_offsets_to_txn_request read_add_offsets_to_txn_request(reader& r, int16_t version);

// -- EndTxn (26) -----------------------------------------------------------------------

struct end_txn_request {
  std::string transactional_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  bool committed = false;
};

end_txn_request read_end_txn_request(reader& r, int16_t version);

/// AddOffsetsToTxnResponse v0-1 and EndTxnResponse v0-1: the throttle time
/// and an error.
std::string encode_error_response(int16_t error, int32_t throttle_time_ms = 0);

// -- TxnOffsetCommit (28) --------------------------------------------------------------

struct txn_offset_commit_partition {
  int32_t index = 0;
  int64_t committed_offset = -1;
  int32_t committed_leader_epoch = -1; // v2+
  std::optional<std::string> committed_metadata;
};

struct txn_offset_commit_topic {
  std::string name;
  std::vector<txn_offset_commit_partition> partitions;
};

/// TxnOffsetCommitRequest v0-3 (v2 added the committed leader epoch; v3,
/// flexible, KIP-447's generation, member id and instance id).
struct txn_offset_commit_request {
  std::string transactional_id;
  std::string group_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::vector<txn_offset_commit_topic> topics;
};

txn_offset_commit_request read_txn_offset_commit_request(reader& r, int16_t version);

/// TxnOffsetCommitResponse: the throttle time, then per topic and
/// partition an error; compact arrays and tagged fields from v3.
std::string encode_txn_offset_commit_response(const std::vector<topic_partition_errors>& topics,
                                              int16_t version);

} // namespace caftx::kafka
