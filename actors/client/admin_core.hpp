// The decisions of the admin tooling for hanging transactions (KIP-664,
// Kafka's kafka-transactions.sh `find-hanging` and `abort`,
// docs/transactions.md §Admin and §KIPs): which open transactions of a
// partition are candidates, which candidates are hanging given what the
// coordinators answered, and which producer an abort at a start offset
// means. Pure functions over the
// replies of DescribeProducers, ListTransactions and DescribeTransactions:
// no CAF, no clock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/ids.hpp"
#include "runtime/transaction_admin.hpp"

namespace caftx {

/// find-hanging's default --max-transaction-timeout: 15 minutes, Kafka's
/// default transaction.max.timeout.ms.
inline constexpr int64_t default_max_transaction_timeout_ms = 900000;

/// Why find-hanging reports an open transaction.
enum class hanging_reason : uint8_t {
  /// No transactional id on the coordinators maps to the producer id.
  no_transactional_id,
  /// ListTransactions named an id, then DescribeTransactions answered
  /// TRANSACTIONAL_ID_NOT_FOUND (it expired in between).
  transactional_id_not_found,
  /// The id's current transaction does not contain the partition, so its
  /// coordinator will never write a marker there.
  partition_not_in_transaction,
};

/// "no_transactional_id", "transactional_id_not_found",
/// "partition_not_in_transaction".
const char* to_string(hanging_reason r);

/// A transaction open on a partition: the partition and what
/// DescribeProducers said of its producer there.
struct open_transaction {
  topic_partition tp;
  active_producer producer;
};

/// One row of find-hanging.
struct hanging_transaction {
  topic_partition tp;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  int32_t coordinator_epoch = -1;  // as DescribeProducers reports it (-1: no marker seen)
  int64_t start_offset = -1;       // first offset of the open transaction
  int64_t last_timestamp_ms = -1;  // of the producer's last write to the partition
  std::string transactional_id;    // "" if none maps to the producer id
  hanging_reason reason = hanging_reason::no_transactional_id;
};

/// The candidates among the producers of `tp` (Kafka's
/// collectCandidateOpenTransactions): a producer with an open transaction
/// (current_txn_start_offset >= 0) that wrote nothing there for more than
/// `max_transaction_timeout_ms` (now_ms - last_timestamp_ms >
/// max_transaction_timeout_ms; Kafka's default is 15 minutes). In the order
/// of `producers`.
std::vector<open_transaction> hanging_candidates(const topic_partition& tp,
                                                 const std::vector<active_producer>& producers,
                                                 int64_t now_ms,
                                                 int64_t max_transaction_timeout_ms);

/// The hanging ones among `candidates` (Kafka's filterHangingTransactions),
/// in candidate order. `listings` is the reply of ListTransactions filtered
/// by the candidates' producer ids (rows of other producer ids are
/// ignored). `partitions_by_id` holds, per listed transactional id, the
/// partitions of its current transaction from DescribeTransactions, or
/// nullopt for TRANSACTIONAL_ID_NOT_FOUND; a listed id missing from it
/// counts as not found. A candidate is hanging if no id maps to its
/// producer, the id was not found, or the id's partitions miss its
/// partition.
std::vector<hanging_transaction>
filter_hanging(const std::vector<open_transaction>& candidates,
               const std::vector<transaction_listing>& listings,
               const std::map<std::string, std::optional<std::vector<topic_partition>>>&
                 partitions_by_id);

/// The producer whose open transaction starts at `start_offset` (Kafka's
/// AbortTransactionCommand lookup); nullopt if none does.
std::optional<active_producer> open_transaction_at(const std::vector<active_producer>& producers,
                                                   int64_t start_offset);

} // namespace caftx
