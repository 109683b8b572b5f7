// Value types of the admin APIs for hanging transactions (KIP-664,
// docs/transactions.md §Admin): the ListTransactions filter and listing, and the state
// DescribeProducers reports for one producer of a partition. Shared by the
// pure cores and the messages. Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/ids.hpp"

namespace caftx {

/// ListTransactions filters (Kafka's ListTransactionsRequest). Empty
/// vectors and a negative duration filter nothing.
struct list_transactions_filter {
  /// Kafka's state names ("Ongoing", ...). Names that are no state are
  /// echoed back as unknown_state_filters and filter nothing.
  std::vector<std::string> states;
  std::vector<producer_id> producer_ids;
  /// Only transactions with now - txn_start_ms > duration_ms (KIP-994);
  /// -1 = no duration filter.
  int64_t duration_ms = -1;
};

/// One row of ListTransactions.
struct transaction_listing {
  std::string transactional_id;
  producer_id pid = no_producer_id;
  std::string state; // Kafka's state name
  friend bool operator==(const transaction_listing& a, const transaction_listing& b) {
    return a.transactional_id == b.transactional_id && a.pid == b.pid && a.state == b.state;
  }
};

/// One active producer of a partition as DescribeProducers reports it
/// (Kafka's DescribeProducersResponse ProducerState).
struct active_producer {
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  /// Last sequence of the newest retained batch; -1 if the producer only
  /// wrote markers since its last epoch change.
  int32_t last_sequence = no_sequence;
  int64_t last_timestamp_ms = -1;
  /// Highest coordinator epoch of a marker seen for the producer; -1 if none.
  int32_t coordinator_epoch = -1;
  /// First offset of the producer's open transaction; -1 if none is open.
  int64_t current_txn_start_offset = -1;
  friend bool operator==(const active_producer& a, const active_producer& b) {
    return a.pid == b.pid && a.epoch == b.epoch && a.last_sequence == b.last_sequence
           && a.last_timestamp_ms == b.last_timestamp_ms
           && a.coordinator_epoch == b.coordinator_epoch
           && a.current_txn_start_offset == b.current_txn_start_offset;
  }
};

} // namespace caftx
