// What a transaction coordinator shard receives
// (actors/coordinator/txn_coordinator_actor.hpp): InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, DescribeTransactions,
// ListTransactions, and its own timers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/actor_interfaces.hpp"
#include "runtime/common_messages.hpp"
#include "runtime/transaction_admin.hpp"

namespace caftx {

/// InitProducerId (docs/transactions.md §InitProducerId). has_transactional_id = false asks for
/// a producer id for an idempotent producer.
struct init_producer_id_request {
  bool has_transactional_id = false;
  std::string transactional_id;
  int32_t transaction_timeout_ms = 60000;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
};

struct init_producer_id_response {
  error_code error = error_code::none;
  std::string message;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
};

/// AddPartitionsToTxn (docs/transactions.md §AddPartitionsToTxn; verify_only: §Verification). With `verify_only` (KIP-890
/// part 1, sent by a partition leader or group coordinator before the first
/// transactional write of a producer there) nothing is added: the reply is
/// NONE if every partition is in the producer's ongoing transaction,
/// TRANSACTION_ABORTABLE if one is not, INVALID_PRODUCER_ID_MAPPING,
/// PRODUCER_FENCED or CONCURRENT_TRANSACTIONS (Prepare*) otherwise.
struct add_partitions_to_txn_request {
  std::string transactional_id;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  std::vector<topic_partition> partitions;
  bool verify_only = false;
};

/// AddOffsetsToTxn (docs/transactions.md §AddOffsetsToTxn).
struct add_offsets_to_txn_request {
  std::string transactional_id;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  std::string group_id;
};

/// EndTxn (docs/transactions.md §EndTxn).
struct end_txn_request {
  std::string transactional_id;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  bool committed = false;
  /// 2: caftx's producer (KIP-890 part 2, the epoch bumps at every end);
  /// 1: a Kafka client's EndTxn v0-4 through the Kafka listener (the
  /// epoch stays; txn_coordinator_core::end_txn).
  int16_t client_transaction_version = 2;
};

/// Reply of EndTxn (docs/transactions.md §EndTxn, KIP-890 part 2 / EndTxn v5): the
/// producer id and epoch the producer must use from now on; every ended
/// transaction bumps the epoch (or rotates the producer id when the epoch
/// is exhausted). -1/-1 on error.
struct end_txn_response {
  error_code error = error_code::none;
  std::string message;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
};

/// DescribeTransactions (docs/transactions.md §Admin, KIP-664): the current card.
/// Errors: INVALID_REQUEST (""), TRANSACTIONAL_ID_NOT_FOUND (absent or
/// Dead), COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
struct describe_transaction_request {
  std::string transactional_id;
};

struct describe_transaction_response {
  error_code error = error_code::none;
  std::string state; // Kafka's state name, e.g. "CompleteCommit"
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  std::vector<topic_partition> partitions;
  int32_t coordinator_epoch = -1;
  int32_t transaction_timeout_ms = 0;
  int64_t transaction_start_ms = -1; // -1 while Empty
};

/// ListTransactions, sent to a broker, which asks every coordinator shard
/// of its node and merges the listings (docs/transactions.md §Admin).
struct list_transactions_request {
  list_transactions_filter filter;
};

/// Rows sorted by transactional id. COORDINATOR_LOAD_IN_PROGRESS or
/// COORDINATOR_NOT_AVAILABLE (no rows) if a shard is loading or down.
struct list_transactions_response {
  error_code error = error_code::none;
  std::string message;
  std::vector<std::string> unknown_state_filters;
  std::vector<transaction_listing> transactions;
};

/// Periodic timer of a coordinator shard: abort timed-out transactions.
struct coordinator_tick {};

/// Periodic timer of a coordinator shard: expire idle transactional ids
/// (transaction.remove.expired.transaction.cleanup.interval.ms).
struct txn_expiration_tick {};

/// Re-send the markers of a transaction that are not acknowledged yet.
struct marker_retry {
  std::string transactional_id;
};

/// A request the coordinator parked (AddPartitionsToTxn / AddOffsetsToTxn
/// while the previous transaction completes) has waited long enough: it is
/// answered CONCURRENT_TRANSACTIONS if still parked.
struct parked_request_expired {
  std::string transactional_id;
  uint64_t id = 0;
};

// -- inspectors ----------------------------------------------------------------

CAFTX_INSPECT(list_transactions_filter, x.states, x.producer_ids, x.duration_ms)
CAFTX_INSPECT(transaction_listing, x.transactional_id, x.pid, x.state)
CAFTX_INSPECT(init_producer_id_request, x.has_transactional_id, x.transactional_id,
              x.transaction_timeout_ms, x.pid, x.epoch)
CAFTX_INSPECT(init_producer_id_response, x.error, x.message, x.pid, x.epoch)
CAFTX_INSPECT(add_partitions_to_txn_request, x.transactional_id, x.pid, x.epoch, x.partitions,
              x.verify_only)
CAFTX_INSPECT(add_offsets_to_txn_request, x.transactional_id, x.pid, x.epoch, x.group_id)
CAFTX_INSPECT(end_txn_request, x.transactional_id, x.pid, x.epoch, x.committed,
              x.client_transaction_version)
CAFTX_INSPECT(end_txn_response, x.error, x.message, x.pid, x.epoch)
CAFTX_INSPECT(describe_transaction_request, x.transactional_id)
CAFTX_INSPECT(describe_transaction_response, x.error, x.state, x.pid, x.epoch, x.partitions,
              x.coordinator_epoch, x.transaction_timeout_ms, x.transaction_start_ms)
CAFTX_INSPECT(list_transactions_request, x.filter)
CAFTX_INSPECT(list_transactions_response, x.error, x.message, x.unknown_state_filters,
              x.transactions)
CAFTX_INSPECT(marker_retry, x.transactional_id)
CAFTX_INSPECT(parked_request_expired, x.transactional_id, x.id)
CAFTX_INSPECT_EMPTY(coordinator_tick)
CAFTX_INSPECT_EMPTY(txn_expiration_tick)

} // namespace caftx
