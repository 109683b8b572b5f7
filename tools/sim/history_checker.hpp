// Judges a simulated run's history (history.hpp) against the guarantees of
// Kafka's exactly-once machinery as caftx implements it: durability of
// acknowledged writes, dense offsets, read_committed isolation
// (docs/producer-state.md §LSO, §Aborted-index), offsets committed inside
// transactions (docs/transactions.md §TxnOffsetCommit,
// §Consume-transform-produce), fencing of zombie producers and of late
// requests (KIP-890, with caftx's producer-epoch bump at every EndTxn),
// and liveness of the last stable offset after quiescence. Pure function: no CAF, no clock, no
// disk; thread-safe.
//
// Terms used by the rules
// -----------------------
// * Truth. The final log is the truth for data (what a reader can ever
//   see); client events are the truth for what the application was told.
// * Transaction T = (transactional id, transaction number). T's values are
//   the values whose send names T.
// * Run. On one partition, the transactional data records of one producer
//   id after its previous control record up to its next one, the run's
//   closing marker (Kafka's producer state: one open transaction per
//   producer id and partition). A run without a closing marker is open.
//   Non-transactional (idempotent) data is committed when appended.
// * Decided at a poll. A run is decided at a poll if its closing marker
//   sits below the high watermark the poll reported (docs/producer-state.md
//   §LSO: the LSO passes a
//   transaction only once its marker is below the HW).
// * Late value. A value of T is late if its run also holds a value of a
//   later transaction of the same transactional id, or if it sits in a run
//   after the first run on that partition that holds values of T (a
//   transaction occupies one range per partition). The runs where T's
//   values are not late are T's own runs.
// * committed(T): commit_transaction() returned ok for T, or — unless
//   abort_transaction() returned ok for T — one of T's own runs is closed by
//   a COMMIT marker. aborted(T): not committed(T), and abort ok for T or one
//   of T's own runs closed by an ABORT marker. Otherwise T is undecided.
// * Epochs handed to a producer id P: the (P, epoch) returned by
//   init_transactions and by ok EndTxn replies (caftx bumps at every
//   EndTxn).
// * Quiescent for the bound: final.quiescent_since_ms >= 0 and
//   final.time_ms - quiescent_since_ms >= final.liveness_bound_ms.
//
// Each violation carries the sequence number of the event it is about, as
// listed per rule; "final" is final.seq. Violations come sorted by that
// sequence number, then by kind; within one kind and event, by partition,
// then value id or transactional id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tools/sim/history.hpp"

namespace caftx::sim {

enum class violation_kind : uint8_t {
  /// A value that must be in the final log as committed is not: an
  /// acknowledged value sent outside a transaction is absent; or a value of
  /// a committed transaction that is not late, and was acknowledged, or
  /// belongs to a transaction whose commit returned ok (commit flushes every
  /// send first), or is in the log at all, is in no committed run (absent,
  /// or only in runs closed by ABORT). A value in an open run is left to
  /// stuck_lso. Seq: the value's first ack, else its send.
  lost_write,
  /// A value id sits at more than one offset of the final log (any
  /// partitions). Seq: the value's first send, else final.
  duplicate_write,
  /// ack(v, o), where the final log of v's partition (the partition of v's
  /// send) holds offset o or v is somewhere in the final logs, and the
  /// record at o is not v. (An acknowledged value absent from every log is
  /// lost_write's concern.) Seq: the ack.
  ack_offset_mismatch,
  /// A partition's final log is not dense: an offset is not one above the
  /// previous one (gap or overlap). Once per partition, at the first such
  /// place. Seq: final.
  non_dense_offsets,
  /// A poll returned at offset o of a partition a value other than the
  /// final log's record at o (or an offset the final log does not hold);
  /// for a partition absent from the final state, a value other than the
  /// first poll's at o. Once per offset and per poll. Seq: the poll.
  readers_disagree,
  /// A read_committed poll returned a record of a run closed by ABORT and
  /// decided at the poll (docs/producer-state.md §read_committed: the consumer
  /// must skip it). Once per poll.
  /// Seq: the poll.
  aborted_read,
  /// A read_committed poll returned a record at or above the last stable
  /// offset it reported, or a record of a run not decided at the poll (open
  /// then, or still open at the end). Takes precedence over aborted_read
  /// and partial_transaction_read for that record. Once per poll. Seq: the
  /// poll.
  uncommitted_read,
  /// A read_committed poll returned a record of a run closed by COMMIT
  /// while the same reader had not been given, on that partition, every
  /// data record of that run between its start and that record. The
  /// reader's start is the fetch offset of its first poll of the partition
  /// (or the first offset returned there if that is unknown). Once per
  /// reader and run. Seq: the poll.
  partial_transaction_read,
  /// An offset_fetch returned offset x, at least one txn_offsets event
  /// before it put x for that group and partition, and every transaction
  /// that did is aborted and has no own run closed by COMMIT: the offsets of
  /// a transaction became visible without its outputs. Offsets committed
  /// outside transactions are not in the history; an x no transaction put
  /// there is not judged. Once per group, partition and offset. Seq: the
  /// offset_fetch.
  offsets_without_outputs,
  /// At the end, a committed transaction's offsets are missing: the last
  /// offset_fetch of a group and partition, made when the run had been
  /// quiescent for the bound, returned an offset below one that a
  /// committed transaction put there (offsets move forward). Once per group
  /// and partition. Seq: that offset_fetch.
  outputs_without_offsets,
  /// A transactional id was handed (P, e) — by init_transactions or an ok
  /// EndTxn — with e not above an epoch P had already been handed for that
  /// id: every InitProducerId and every EndTxn bumps the epoch, so an older
  /// instance is fenced. Seq: the event that handed the epoch.
  epoch_regression,
  /// A partition accepted a write (write_accepted) of producer id P with
  /// epoch e although (a) the final log holds, below the write, a record of
  /// P with an epoch above e (the partition already knew a newer epoch,
  /// docs/producer-state.md §Append), or (b) P had already been handed an
  /// epoch above e, and the write is not a straggler of the transaction
  /// being ended: the first control record of P after it on that partition does not carry the
  /// lowest epoch P had been handed above e (the marker of the EndTxn that
  /// ended the write's own transaction). Seq: the write_accepted.
  zombie_write,
  /// A request of a finished transaction took effect: a value of
  /// transaction k is late (it sits inside a later transaction's range, or
  /// in a second range of k on a partition), or a value of k is in a run
  /// closed by COMMIT although abort_transaction() returned ok for k. Seq:
  /// the value's send.
  late_request_effect,
  /// Liveness, when quiescent for the bound: a partition's last stable
  /// offset is below its high watermark (once per partition), or the
  /// transaction coordinator still holds a transaction open (once per
  /// transactional id). Seq: final.
  stuck_lso,
  /// When quiescent for the bound: a partition has an open transaction of
  /// producer id P while no open transaction of the coordinator with
  /// producer id P lists that partition (a hanging transaction). The
  /// converse is not a disagreement: a coordinator lists a partition as
  /// soon as AddPartitionsToTxn returned, before any write. Once per
  /// partition and producer id. Seq: final.
  open_state_disagreement,
  /// With replicas: a replica's log holds, below the final high watermark,
  /// a record that differs from the leader's at that offset (replicas
  /// diverged), or, when quiescent for the bound, lacks one of the leader's
  /// records below it (its ISR is not whole again). Records above the high
  /// watermark are not judged (a follower truncates them). Once per
  /// replica. Seq: final.
  replica_divergence,
  /// Progress: once the faults stopped (final.progress_since_ms), no
  /// commit_transaction() returned ok within final.progress_bound_ms: a
  /// cluster that healed must commit again, and a run that commits nothing
  /// must not pass. Not judged when progress_since_ms is -1. Seq: the first
  /// event at or after the bound's end, else final.
  no_progress,
};

/// The rule's stable name, e.g. "lost_write".
const char* to_string(violation_kind kind);

/// One broken rule.
struct violation {
  violation_kind kind = violation_kind::lost_write;
  /// Sequence number of the event the violation is about (see the kind).
  uint64_t seq = 0;
  std::string message;
};

/// "<kind> at seq <seq>: <message>".
std::string to_string(const violation& v);

/// Checks `h` against every rule of violation_kind. Events are taken in
/// order of their sequence numbers. Events about values never sent are
/// ignored by the rules that need the send. Returns no violations for a
/// history that keeps every guarantee.
std::vector<violation> check_history(const history& h);

} // namespace caftx::sim
