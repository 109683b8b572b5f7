// The client transaction manager (Kafka's producer TransactionManager):
// the producer's state machine, its producer id and epoch, and the
// partitions added to the current transaction (sequence numbers belong to
// the producer session, actors/client/producer_session.hpp).
// Pure: the producer facade performs the requests and reports outcomes.
// Not thread-safe (the facade serializes calls).
//
//   uninitialized -> initializing -> ready -> in_transaction -> committing_transaction -> ready
//                                       ^            |        -> aborting_transaction ---^
//                                       |            v
//                                       +--- abortable_error (only abort allowed)
//   any state -> fatal_error (terminal: every call fails with the same error)
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "runtime/ids.hpp"
#include "runtime/status.hpp"

namespace caftx {

enum class client_txn_state : uint8_t {
  uninitialized,
  initializing,
  ready,
  in_transaction,
  committing_transaction,
  aborting_transaction,
  abortable_error,
  fatal_error,
};

const char* to_string(client_txn_state s);

/// Milliseconds to wait before resending a coordinator request that failed
/// with retriable `error`. CONCURRENT_TRANSACTIONS means the previous
/// transaction's markers are still being written, a matter of two
/// group-committed fsyncs: Kafka's client waits 20 ms at once; here the
/// wait starts at 1 ms and doubles (counted in `concurrent_waits`) up to
/// 20 ms, never above retry.backoff.ms. Any other error: retry.backoff.ms.
int32_t coordinator_backoff_ms(error_code error, int32_t retry_backoff_ms, int& concurrent_waits);

/// Errors after which the coordinator is looked up again (FindCoordinator):
/// NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, and no reply.
bool needs_coordinator_rediscovery(error_code e);

class transaction_manager {
public:
  explicit transaction_manager(bool transactional) : transactional_(transactional) {}

  // -- transitions (each returns INVALID_TXN_STATE for a call out of order,
  //    or the stored error in fatal_error / abortable_error) ---------------

  status begin_init();
  /// InitProducerId succeeded: new identity, nothing added yet.
  void init_succeeded(producer_id pid, producer_epoch epoch);
  status begin_transaction();
  /// May records be sent now? (in_transaction for a transactional producer,
  /// after init for an idempotent one)
  status check_send() const;
  status begin_commit();
  status begin_abort();
  /// EndTxn succeeded (or nothing had to be sent): back to ready.
  void end_succeeded();
  /// EndTxn answered the producer id and epoch to continue with (KIP-890
  /// part 2); the state is unchanged.
  void identity_changed(producer_id pid, producer_epoch epoch) {
    pid_ = pid;
    epoch_ = epoch;
  }
  /// Records an error from a request with its classification: abortable
  /// moves to abortable_error (fatal if not in a transaction), fatal to
  /// fatal_error. Retriable errors are not reported here. An abortable
  /// UNKNOWN_PRODUCER_ID or INVALID_PRODUCER_ID_MAPPING also requires the
  /// epoch bump after the abort (KIP-360, docs/errors.md §Classification);
  /// the latter sets pid_mapping_lost() too.
  void fail(error_class cls, status error);

  // -- partitions of the transaction ----------------------------------------
  // "Added" = handed to the session to be added (AddPartitionsToTxn runs in
  // the background; a failure reaches the records, and the transaction
  // becomes abortable), so that an abort always goes to the coordinator.

  bool is_added(const topic_partition& tp) const { return added_.count(tp) > 0; }
  void mark_added(const topic_partition& tp) { added_.insert(tp); }
  bool offsets_added() const { return offsets_added_; }
  void mark_offsets_added() { offsets_added_ = true; }
  /// True once something was added to the coordinator's transaction, so
  /// EndTxn must be sent (the Java client completes empty ones locally) —
  /// unless the coordinator no longer maps the transactional id to this
  /// producer id (pid_mapping_lost()): it could only answer EndTxn with
  /// INVALID_PRODUCER_ID_MAPPING again.
  bool needs_end_txn() const { return (!added_.empty() || offsets_added_) && !pid_mapping_lost_; }
  /// A produce error left sequences or epoch unusable: the next abort is
  /// followed by an epoch bump (KIP-360).
  void require_epoch_bump() { epoch_bump_required_ = true; }
  bool epoch_bump_required() const { return epoch_bump_required_; }
  /// Set by an abortable INVALID_PRODUCER_ID_MAPPING (the transactional id
  /// expired at its coordinator, transactional.id.expiration.ms, or was
  /// never known), until the next init_succeeded(): the abort skips EndTxn
  /// and goes straight to InitProducerId with the current producer id and
  /// epoch, which for an unknown id answers a new producer id at epoch 0
  /// (Kafka's TransactionManager.beginCompletingTransaction, KIP-360).
  bool pid_mapping_lost() const { return pid_mapping_lost_; }

  // -- observers -------------------------------------------------------------

  client_txn_state state() const { return state_; }
  bool transactional() const { return transactional_; }
  producer_id pid() const { return pid_; }
  producer_epoch epoch() const { return epoch_; }
  const status& last_error() const { return last_error_; }

private:
  status transition(client_txn_state from_a, client_txn_state to);
  status invalid(const char* action) const;

  bool transactional_;
  client_txn_state state_ = client_txn_state::uninitialized;
  producer_id pid_ = no_producer_id;
  producer_epoch epoch_ = no_producer_epoch;
  std::set<topic_partition> added_;
  bool offsets_added_ = false;
  bool epoch_bump_required_ = false;
  bool pid_mapping_lost_ = false;
  status last_error_;
};

} // namespace caftx
