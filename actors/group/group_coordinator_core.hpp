// The pure core of a group coordinator for one `__consumer_offsets`
// partition: committed offsets per (group, topic-partition), and offsets
// committed inside a transaction (TxnOffsetCommit), held pending per
// producer id until the commit or abort marker (docs/transactions.md
// §TxnOffsetCommit, §Consume-transform-produce).
//
// Every change is a record of the partition (Kafka's GroupMetadataManager):
// the shell checks a request (check_*), appends its records, and applies
// them (apply_*) once they are durable; a load applies the partition's
// records in log order through the same functions, so memory is always
// what replaying the log gives. Each committed or pending offset keeps the
// log offset of its record: a commit marker makes a pending offset the
// committed one only if its record is later in the log than the committed
// one's (Kafka's CommitRecordMetadataAndOffset.olderThan).
// No CAF, no clock, no disk. Owned by one group coordinator actor; not
// thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/group_offsets.hpp"
#include "runtime/record_batch.hpp"
#include "runtime/status.hpp"

namespace caftx {

/// An offset with the record that wrote it.
struct offset_record {
  offset_and_metadata value;
  int64_t commit_timestamp_ms = -1;
  int64_t log_offset = -1; // offset of its record in `__consumer_offsets-N`
};

/// The offsets one producer committed in its open transaction.
struct producer_pending_offsets {
  producer_epoch epoch = no_producer_epoch;
  std::map<group_offset_key, offset_record> offsets;
};

class group_coordinator_core {
public:
  // -- checks (never mutate) ------------------------------------------------

  /// TxnOffsetCommit at `epoch`: an epoch older than the pending offsets'
  /// or than the last marker seen for `pid` is INVALID_PRODUCER_EPOCH (a
  /// late commit of a finished transaction).
  status check_txn_offset_commit(producer_id pid, producer_epoch epoch) const;

  /// KIP-890 part 1: true unless `pid` already has offsets pending at
  /// `epoch`, i.e. the transaction coordinator has not yet confirmed that
  /// this offsets partition is in the producer's ongoing transaction.
  bool needs_verification(producer_id pid, producer_epoch epoch) const;

  /// A WriteTxnMarkers entry for `pid`: INVALID_PRODUCER_EPOCH for a marker
  /// epoch below the pending offsets' or, with transaction_version 2
  /// (KIP-890 part 2: the coordinator bumps the epoch at every EndTxn),
  /// equal to it: such a marker is a delayed one of an earlier transaction
  /// and must not end this one.
  status check_marker(producer_id pid, producer_epoch epoch, int8_t transaction_version = 2) const;

  // -- records of the partition, applied in log order -------------------------

  /// An offset commit record (OffsetCommit outside a transaction) at log
  /// offset `log_offset`: the committed offset from now on.
  void apply_commit(const group_offset_key& key, offset_and_metadata value,
                    int64_t commit_timestamp_ms, int64_t log_offset);

  /// A null-value offset record (deleted or expired): no committed offset.
  void apply_tombstone(const group_offset_key& key);

  /// An offset record of a transactional batch of (`pid`, `epoch`): pending
  /// for `pid`. A higher epoch first drops what an older (fenced) epoch
  /// left pending; its abort marker comes before the new transaction.
  void apply_txn_offset_commit(producer_id pid, producer_epoch epoch, const group_offset_key& key,
                               offset_and_metadata value, int64_t commit_timestamp_ms,
                               int64_t log_offset);

  /// A commit or abort marker of `pid` written at `now_ms`: a commit makes
  /// each pending offset the committed one unless the committed one's
  /// record is later in the log; an abort drops them. Returns the keys
  /// whose committed offset changed. Records the marker's epoch (checked
  /// by check_txn_offset_commit) until the producer expires.
  std::vector<group_offset_key> apply_marker(producer_id pid, producer_epoch epoch,
                                             control_type result, int64_t now_ms);

  // -- expiration ---------------------------------------------------------------

  /// Committed offsets whose commit timestamp is `retention_ms` or more
  /// before `now_ms` (Kafka's offsets.retention.minutes; every group here
  /// is empty, having no members), except those with a plain commit still
  /// being written (begin_commit). Pending offsets never expire. The shell
  /// appends their tombstones, then apply_tombstone()s them.
  std::vector<group_offset_key> expired_offsets(int64_t now_ms, int64_t retention_ms) const;

  /// Committed offsets of partitions of `topics` (Kafka's
  /// GroupCoordinator.onPartitionsDeleted: the topics were deleted), except
  /// those with a plain commit being written; the shell appends their
  /// tombstones, then apply_tombstone()s them.
  std::vector<group_offset_key> offsets_of_topics(const std::set<std::string>& topics) const;

  /// A plain commit of `keys` is being written (ended by end_commit): keeps
  /// expired_offsets() from writing a tombstone behind it.
  void begin_commit(const std::vector<group_offset_key>& keys);
  void end_commit(const std::vector<group_offset_key>& keys);

  /// Forgets the marker epochs of producers idle (no marker) for
  /// `expiration_ms` (producer.id.expiration.ms) with nothing pending, so
  /// the state stays bounded; returns how many were dropped.
  size_t expire_producers(int64_t now_ms, int64_t expiration_ms);

  // -- reads --------------------------------------------------------------------

  /// OffsetFetch: the committed offset (offset -1 if none); pending
  /// transactional offsets are invisible.
  offset_and_metadata fetch(const group_offset_key& key) const;
  /// True while some open transaction holds an offset for `key` (what
  /// KIP-447's require_stable answers UNSTABLE_OFFSET_COMMIT for).
  bool has_pending(const group_offset_key& key) const;

  const std::map<group_offset_key, offset_record>& committed() const { return committed_; }
  const std::map<producer_id, producer_pending_offsets>& pending() const { return pending_; }
  /// Producers whose last marker epoch is remembered.
  size_t marker_epoch_count() const { return marker_epochs_.size(); }

private:
  struct marker_seen {
    producer_epoch epoch = no_producer_epoch;
    int64_t last_ms = 0;
  };
  std::map<group_offset_key, offset_record> committed_;
  std::map<producer_id, producer_pending_offsets> pending_;
  std::map<producer_id, marker_seen> marker_epochs_;
  std::map<group_offset_key, int32_t> committing_; // plain commits being written
};

} // namespace caftx
