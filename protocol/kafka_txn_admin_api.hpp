// KIP-664's APIs for hanging transactions, flexible from v0 (KIP-482):
// DescribeProducers (key 61, v0), DescribeTransactions (key 65, v0) and
// ListTransactions (key 66, v0-1; v1 adds the duration filter, KIP-994),
// and WriteTxnMarkers (key 27, v0-1, flexible from v1), which
// `kafka-transactions.sh abort` sends to a partition's leader,
// field by field as Kafka's message schemas define them
// (docs/kafka-protocol.md §Transactions admin). Kafka's own
// kafka-transactions.sh sends them. Pure: no CAF, no sockets.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/kafka_txn_api.hpp"
#include "protocol/kafka_wire.hpp"

namespace caftx::kafka {

/// DescribeProducersRequest v0: the partitions whose producers to list.
struct describe_producers_request {
  std::vector<txn_topic> topics;
};

describe_producers_request read_describe_producers_request(reader& r, int16_t version);

struct producer_state {
  int64_t producer_id = -1;
  int32_t producer_epoch = -1;
  int32_t last_sequence = -1;
  int64_t last_timestamp = -1;
  int32_t coordinator_epoch = -1;
  int64_t current_txn_start_offset = -1;
};

struct describe_producers_partition {
  int32_t index = 0;
  int16_t error = 0;
  std::optional<std::string> message;
  std::vector<producer_state> active_producers;
};

struct describe_producers_topic {
  std::string name;
  std::vector<describe_producers_partition> partitions;
};

/// DescribeProducersResponse v0: the throttle time, then per partition
/// its error, message and active producers.
std::string encode_describe_producers_response(const std::vector<describe_producers_topic>& topics,
                                               int16_t version, int32_t throttle_time_ms = 0);

/// DescribeTransactionsRequest v0: the transactional ids.
struct describe_transactions_request {
  std::vector<std::string> transactional_ids;
};

describe_transactions_request read_describe_transactions_request(reader& r, int16_t version);

struct transaction_state_description {
  int16_t error = 0;
  std::string transactional_id;
  std::string state;
  int32_t timeout_ms = 0;
  int64_t start_time_ms = -1;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  std::vector<txn_topic> topics;
};

/// DescribeTransactionsResponse v0: the throttle time, then per id.
std::string encode_describe_transactions_response(
  const std::vector<transaction_state_description>& states, int16_t version,
  int32_t throttle_time_ms = 0);

/// ListTransactionsRequest v0-1.
struct list_transactions_request {
  std::vector<std::string> state_filters;
  std::vector<int64_t> producer_id_filters;
  int64_t duration_filter_ms = -1; // v1
};

list_transactions_request read_list_transactions_request(reader& r, int16_t version);

struct listed_transaction {
  std::string transactional_id;
  int64_t producer_id = -1;
  std::string state;
};

struct list_transactions_response {
  int16_t error = 0;
  std::vector<std::string> unknown_state_filters;
  std::vector<listed_transaction> transactions;
};

/// ListTransactionsResponse v0-1: throttle time, error, the state filters
/// that name no state, the transactions.
std::string encode_list_transactions_response(const list_transactions_response& resp,
                                              int16_t version, int32_t throttle_time_ms = 0);

/// One marker of a WriteTxnMarkersRequest: a producer's transaction
/// result for the partitions named.
struct writable_txn_marker {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  bool committed = false;
  std::vector<txn_topic> topics;
  int32_t coordinator_epoch = 0;
};

/// WriteTxnMarkersRequest v0-1 (v1 is v0, flexible).
struct write_txn_markers_request {
  std::vector<writable_txn_marker> markers;
};

write_txn_markers_request read_write_txn_markers_request(reader& r, int16_t version);

/// One marker's result: its producer id and each partition's error.
struct txn_marker_result {
  int64_t producer_id = -1;
  std::vector<topic_partition_errors> topics;
};

/// WriteTxnMarkersResponse v0-1: per marker its producer id and each
/// partition's error (no throttle time).
std::string encode_write_txn_markers_response(const std::vector<txn_marker_result>& markers,
                                              int16_t version);

} // namespace caftx::kafka
