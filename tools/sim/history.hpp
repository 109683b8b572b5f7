// The history of one simulated run: what clients were told and what
// servers did, in the order it was observed, plus the cluster's final
// state. A deterministic simulator records it; history_checker.hpp judges
// it. Plain value types: no CAF, no clock, no disk; thread-compatible.
//
// Records are told apart by a value id that the workload assigns, unique
// over the whole run: every record value a producer sends is a distinct
// value id, so the final log, the acks and the polls can all be joined on
// it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "runtime/error_code.hpp"
#include "runtime/ids.hpp"
#include "runtime/record_batch.hpp"

namespace caftx::sim {

/// The workload's id of one record value, unique over the run.
using value_id = uint64_t;

/// Number of a transaction of one transactional id: 0 for the first
/// transaction the workload begins with that id, then 1, 2, ... (counted
/// over every producer instance of the id, not per instance).
using txn_number = uint64_t;

// -- client events -------------------------------------------------------------

/// The application called send() for one record (before any reply).
struct send_event {
  std::string client_id;
  /// The producer's transactional.id; nullopt for an idempotent producer.
  std::optional<std::string> transactional_id;
  /// Producer id and epoch the producer held when it sent.
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  topic_partition tp;
  value_id value = 0;
  /// The transaction the record belongs to; nullopt outside transactions.
  std::optional<txn_number> txn;
};

/// The send of `value` was acknowledged at `offset` (produce reply NONE,
/// or a duplicate answered with the original offset).
struct ack_event {
  value_id value = 0;
  int64_t offset = -1;
};

/// The send of `value` failed with `error` (delivery timeout, fatal or
/// abortable error). The record may still have been written.
struct send_failed_event {
  value_id value = 0;
  error_code error = error_code::none;
};

/// init_transactions() returned: InitProducerId gave this producer id and
/// epoch to `transactional_id`.
struct init_transactions_event {
  std::string transactional_id;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
};

/// begin_transaction() returned for transaction `txn`.
struct txn_begin_event {
  std::string transactional_id;
  txn_number txn = 0;
};

/// send_offsets_to_transaction() returned without error: `offset` (the
/// next offset to consume) of input partition `tp` for consumer group
/// `group` is part of transaction `txn`.
struct txn_offsets_event {
  std::string transactional_id;
  txn_number txn = 0;
  std::string group;
  topic_partition tp;
  int64_t offset = -1;
};

/// commit_transaction() or abort_transaction() returned. `error` none is
/// Kafka's commit_ok / abort_ok; any other code is a failed call whose
/// outcome the application does not know. caftx bumps the producer epoch at
/// every EndTxn: an ok reply carries the producer id and epoch to continue
/// with (a new producer id with epoch 0 once the epoch is exhausted);
/// no_producer_id when not known or not ok.
struct end_txn_event {
  std::string transactional_id;
  txn_number txn = 0;
  control_type result = control_type::commit; // what was asked for
  error_code error = error_code::none;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;

  bool ok() const { return error == error_code::none; }
  bool commit_ok() const { return ok() && result == control_type::commit; }
  bool abort_ok() const { return ok() && result == control_type::abort; }
};

// -- server events -------------------------------------------------------------

/// A partition leader appended a client's data batch at offsets
/// [base_offset, last_offset] (not a duplicate; never a control batch).
struct write_accepted_event {
  topic_partition tp;
  int64_t base_offset = -1;
  int64_t last_offset = -1;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  bool transactional = false;
};

/// One record an application received from poll(): its offset and value.
struct polled_record {
  int64_t offset = -1;
  value_id value = 0;
};

/// A consumer's poll() of one partition returned `records` (in offset
/// order, after the client's read_committed filtering: what the application
/// saw). `fetch_offset` is the consumer's position before the poll (-1 if
/// not known); `last_stable_offset` and `high_watermark` are those of the
/// fetch response. A reader id names one consumer instance that reads each
/// partition forward from its first position, without seeking.
struct poll_event {
  std::string reader_id;
  isolation_level isolation = isolation_level::read_uncommitted;
  topic_partition tp;
  int64_t fetch_offset = -1;
  std::vector<polled_record> records;
  int64_t last_stable_offset = -1;
  int64_t high_watermark = -1;
};

/// OffsetFetch for `group` returned `committed_offset` for input partition
/// `tp` (-1: no committed offset).
struct offset_fetch_event {
  std::string group;
  topic_partition tp;
  int64_t committed_offset = -1;
};

using event_body =
  std::variant<send_event, ack_event, send_failed_event, init_transactions_event,
               txn_begin_event, txn_offsets_event, end_txn_event, write_accepted_event,
               poll_event, offset_fetch_event>;

/// One observation: `seq` orders observations (strictly increasing in a
/// history), `time_ms` is simulated time.
struct event {
  uint64_t seq = 0;
  int64_t time_ms = 0;
  event_body body;
};

// -- final state ---------------------------------------------------------------

/// One offset of a partition's log at the end: a data record (its value
/// id, and the producer id, epoch and transactional bit of its batch) or a
/// control record (the commit/abort marker of producer id `pid`, written
/// with epoch `epoch`).
struct log_entry {
  int64_t offset = -1;
  bool is_control = false;
  value_id value = 0;                 // data only
  control_type marker = control_type::abort; // control only
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  bool transactional = false;         // data only; control records are transactional

  static log_entry data(int64_t offset, value_id value, producer_id pid, producer_epoch epoch,
                        bool transactional) {
    return {offset, false, value, control_type::abort, pid, epoch, transactional};
  }
  static log_entry control(int64_t offset, control_type marker, producer_id pid,
                           producer_epoch epoch) {
    return {offset, true, 0, marker, pid, epoch, true};
  }
};

/// Appends the offsets of `b` to `log`: one control entry for a control
/// batch, else one data entry per record with `value_of(record, offset)`
/// as its value id. Used by every collector of final logs (the simulator,
/// caftx-drill).
inline void append_log_entries(const record_batch& b, std::vector<log_entry>& log,
                               const std::function<value_id(const record&, int64_t)>& value_of) {
  if (b.is_control()) {
    auto m = parse_control_batch(b);
    log.push_back(log_entry::control(b.base_offset, m ? m->type : control_type::abort, b.pid,
                                     b.epoch));
    return;
  }
  for (size_t k = 0; k < b.records.size(); ++k)
    log.push_back(log_entry::data(b.offset_of(k), value_of(b.records[k], b.offset_of(k)), b.pid,
                                  b.epoch, b.is_transactional()));
}

/// A partition at the end of the run.
/// The log one replica of a partition holds at the end (read from that
/// node's storage once every node stopped), in log order.
struct replica_log {
  int32_t node = -1;
  std::vector<log_entry> log;
};

struct partition_final_state {
  topic_partition tp;
  std::vector<log_entry> log; // in log order, the whole log (the leader's)
  int64_t high_watermark = 0;
  int64_t last_stable_offset = 0;
  /// Producer ids with an open transaction on this partition (its
  /// producer state).
  std::vector<producer_id> open_transactions;
  /// With several nodes: every replica's log (the leader's among them);
  /// empty for the single node.
  std::vector<replica_log> replicas;
};

/// A transaction the transaction coordinator holds open at the end
/// (Ongoing, PrepareCommit or PrepareAbort): its transactional id, producer
/// id and epoch and its partitions (data and offsets partitions).
struct coordinator_open_txn {
  std::string transactional_id;
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
  std::vector<topic_partition> partitions;
};

/// The cluster at the end, observed after every event (`seq` above each
/// event's). The run was quiescent — no produce, no transactional request,
/// no offset commit, no fault; reads such as poll and offset_fetch may go
/// on — from `quiescent_since_ms` (-1: never) to `time_ms`; the liveness
/// rules apply once that lasted at least `liveness_bound_ms`. One entry per
/// partition.
struct final_state {
  uint64_t seq = 0;
  int64_t time_ms = 0;
  std::vector<partition_final_state> partitions;
  std::vector<coordinator_open_txn> coordinator_open_transactions;
  int64_t quiescent_since_ms = -1;
  int64_t liveness_bound_ms = 0;
  /// Progress: from `progress_since_ms` (faults over; -1: not judged) a
  /// transaction must commit within `progress_bound_ms`.
  int64_t progress_since_ms = -1;
  int64_t progress_bound_ms = 0;
};

/// A whole run: events in observation order and the final state.
struct history {
  std::vector<event> events;
  final_state final;

  /// Appends an observation with the next sequence number (1 for the
  /// first, then one above the last) and returns that number.
  uint64_t record(int64_t time_ms, event_body body) {
    uint64_t seq = events.empty() ? 1 : events.back().seq + 1;
    events.push_back(event{seq, time_ms, std::move(body)});
    return seq;
  }
};

} // namespace caftx::sim
