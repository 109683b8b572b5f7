// The pure core of Kafka's ISR replication for one partition (Kafka's
// Partition and AbstractFetcherThread logic, docs/replication.md):
// - leader_replication: what a leader knows of its followers (log end
//   offsets, last caught-up times), the ISR with at most one change in
//   flight to the controller (Kafka 2.7+'s AlterIsr: PendingExpandIsr /
//   PendingShrinkIsr), the high watermark, the acks=all checks against
//   min.insync.replicas, and the check of a follower's fetch against the
//   leader epoch cache (KIP-320 fencing, the diverging epoch of IBP 2.7);
// - follower_truncation(): where a follower truncates when the leader
//   answers with a diverging epoch (KIP-101, KIP-279).
// No CAF, no clock (times are passed in ms), no disk. Owned by one
// partition actor; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "actors/partition/leader_epoch_cache.hpp"
#include "runtime/status.hpp"

namespace caftx::replication {

/// A node's id (Kafka's broker.id).
using node_id = int32_t;

/// Kafka's acks: 0 (no reply), 1 (the leader has it), -1 (all of the ISR).
enum class acks : int8_t { none = 0, leader = 1, all = -1 };

/// What the leader knows of one follower (Kafka's Replica /
/// ReplicaState). log_end_offset is -1 until its first fetch.
struct follower_state {
  int64_t log_end_offset = -1;
  int64_t last_caught_up_time_ms = 0;
  int64_t last_fetch_leader_log_end_offset = 0;
  int64_t last_fetch_time_ms = 0;
  /// The controller refused it in the ISR (INELIGIBLE_REPLICA: its node is
  /// not live or shuts down): until a fetch of it at or after this time
  /// (ms), it neither counts for the HW nor is proposed. -1: eligible.
  int64_t ineligible_until_ms = -1;
};

/// A proposed ISR for the controller (Kafka's AlterIsr / AlterPartition
/// request for one partition): the full new ISR with the leader epoch and
/// the partition epoch (the state znode's version) it is based on.
struct isr_proposal {
  std::vector<node_id> isr;
  int32_t leader_epoch = 0;
  int32_t partition_epoch = 0;
  friend bool operator==(const isr_proposal& a, const isr_proposal& b) {
    return a.isr == b.isr && a.leader_epoch == b.leader_epoch
           && a.partition_epoch == b.partition_epoch;
  }
};

/// One follower fetch as the leader checks it (Kafka's FetchRequest
/// partition fields for a replica).
struct follower_fetch {
  node_id follower = -1;
  int64_t fetch_offset = 0;               // the follower's log end offset
  int32_t last_fetched_epoch = undefined_epoch;   // epoch of its last record
  int32_t current_leader_epoch = undefined_epoch; // the leader epoch it follows
};

/// How an acks=all produce stands (Kafka's checkEnoughReplicasReachOffset).
enum class acks_state : uint8_t {
  waiting,                          // the HW has not reached the batch yet
  done,                             // the HW passed it with enough replicas
  not_enough_replicas_after_append, // passed, but the ISR is below min.insync.replicas
};

class leader_replication {
public:
  /// Becoming leader at `leader_epoch` (Kafka's Partition.makeLeader):
  /// `replicas` is the assignment, `isr` the ISR the controller wrote at
  /// `partition_epoch`, `leader_epoch_start_offset` the log end offset at
  /// the election. Every follower's fetch state starts unknown.
  /// `replica_lag_time_max_ms` is Kafka's replica.lag.time.max.ms.
  leader_replication(node_id self, int32_t leader_epoch, int32_t partition_epoch,
                     std::vector<node_id> replicas, std::vector<node_id> isr,
                     int64_t leader_epoch_start_offset, int64_t now_ms,
                     int64_t replica_lag_time_max_ms = 30000);

  // -- follower fetches --------------------------------------------------

  /// Checks a follower fetch before any read (Kafka's Partition.readRecords
  /// for a follower). Errors: NOT_LEADER_OR_FOLLOWER if the sender is not
  /// an assigned replica; FENCED_LEADER_EPOCH (74) if it follows an older
  /// leader epoch, UNKNOWN_LEADER_EPOCH (75) a newer one (KIP-320);
  /// OFFSET_OUT_OF_RANGE if fetch_offset is above the leader's log end
  /// (after the divergence check: a follower ahead in an old epoch is told
  /// to truncate, not refused). A value means the follower's log diverges
  /// (its last fetched epoch ends here before fetch_offset, or is unknown
  /// here): it gets no records and truncates with follower_truncation()
  /// (IBP 2.7's DivergingEpoch); nullopt means read from fetch_offset.
  status_or<std::optional<epoch_end>> check_fetch(const follower_fetch& f,
                                                  const leader_epoch_cache& epochs,
                                                  int64_t log_end_offset) const;

  /// Records a fetch that was answered with records from fetch_offset
  /// (Kafka's Replica.updateFetchState): the follower's log end offset is
  /// fetch_offset, and it counts as caught up at now_ms if it had the
  /// leader's whole log, or at its previous fetch if it had everything the
  /// leader had then.
  void record_fetch(node_id follower, int64_t fetch_offset, int64_t leader_log_end_offset,
                    int64_t now_ms);

  // -- high watermark ------------------------------------------------------

  /// The high watermark the leader may move to (Kafka's
  /// maybeIncrementLeaderHW): the minimum log end offset over the leader
  /// and every follower that is in the maximal ISR or caught up within
  /// replica.lag.time.max.ms (a follower about to join must hold everything
  /// below the HW). nullopt if that is not above `current_hw`: the HW never
  /// moves backwards.
  std::optional<int64_t> advanced_high_watermark(int64_t current_hw,
                                                 int64_t leader_log_end_offset,
                                                 int64_t now_ms) const;

  // -- ISR changes ---------------------------------------------------------

  /// After a fetch: proposes adding `follower` if it is assigned, not in
  /// the ISR, no change is in flight, and it holds the HW and the start of
  /// the leader's epoch (Kafka's isFollowerInSync; the second condition is
  /// KAFKA-7128's fix). The proposal is then in flight (PendingExpandIsr:
  /// the maximal ISR already counts the follower).
  std::optional<isr_proposal> maybe_expand(node_id follower, int64_t high_watermark);

  /// A leader that starts again at the leader epoch it led at (its actor
  /// restarted by its supervisor) may hold an older ISR than the
  /// controller's: a change its predecessor proposed may have been written
  /// and the answer lost with it. Until an ISR change is answered, every
  /// assigned replica counts as in the maximal ISR (holds the HW) — else
  /// the HW could pass records a replica the controller has in the ISR,
  /// and may elect, does not hold. The returned proposal (the ISR as known
  /// here, in flight from now on) asks the controller to confirm it: it is
  /// written again, or answered INVALID_UPDATE_VERSION with the current
  /// one (found by the multi-node simulation, seed 9734). A refusal
  /// (isr_rejected: no controller yet, say) keeps it in flight, to be sent
  /// again.
  isr_proposal start_unconfirmed();
  bool unconfirmed() const { return unconfirmed_; }

  /// Proposes removing every follower that is not at the leader's log end
  /// and has not been caught up for more than replica.lag.time.max.ms
  /// (Kafka's getOutOfSyncReplicas); never the leader. nullopt if none or
  /// a change is in flight. In flight (PendingShrinkIsr), the maximal ISR
  /// stays the old one, so the HW does not advance early.
  std::optional<isr_proposal> maybe_shrink(int64_t leader_log_end_offset, int64_t now_ms);

  /// The controller wrote `written` (the in-flight proposal, possibly
  /// another one's equal) at `partition_epoch`, or answered a proposal of
  /// the ISR already written with that ISR at the same partition epoch (a
  /// confirmation, see start_unconfirmed). Ignored unless a proposal is in
  /// flight and `written` carries this leader epoch.
  void isr_committed(const std::vector<node_id>& written, int32_t partition_epoch);

  /// The proposal failed (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, a
  /// lost controller): the ISR stays as committed and a later check may
  /// propose again.
  void isr_rejected();

  /// The controller refused the in-flight expand with INELIGIBLE_REPLICA
  /// (KIP-841): its node is not live or shuts down. The proposal is
  /// dropped and the followers it added stop counting for the HW (as
  /// Kafka's leader counts only ISR-eligible caught-up replicas) and are
  /// not proposed again until one of their fetches arrives at or after
  /// `now_ms + retry_after_ms` (a node that left fetches no more; one that
  /// came back is proposed anew). Returns the followers so marked.
  std::vector<node_id> isr_refused_ineligible(int64_t now_ms, int64_t retry_after_ms);

  /// A newer partition state from the controller at the same leader epoch
  /// (LeaderAndIsr after a write the leader did not propose): replaces the
  /// ISR and drops any proposal in flight.
  void isr_replaced(std::vector<node_id> isr, int32_t partition_epoch);

  // -- acks ----------------------------------------------------------------

  /// Before an append with `required_acks` (Kafka's appendRecordsToLeader):
  /// acks=all with fewer in the ISR than `min_insync_replicas` is
  /// NOT_ENOUGH_REPLICAS (19) and nothing is appended.
  status check_append(acks required_acks, int32_t min_insync_replicas) const;

  /// Whether an acks=all produce whose batch ends before `required_offset`
  /// (one past its last offset) is complete at `high_watermark`.
  acks_state check_acks(int64_t required_offset, int64_t high_watermark,
                        int32_t min_insync_replicas) const;

  // -- observers -----------------------------------------------------------

  node_id self() const { return self_; }
  int32_t leader_epoch() const { return leader_epoch_; }
  int32_t partition_epoch() const { return partition_epoch_; }
  int64_t leader_epoch_start_offset() const { return leader_epoch_start_offset_; }
  const std::vector<node_id>& replicas() const { return replicas_; }
  /// The ISR the controller wrote last.
  const std::vector<node_id>& isr() const { return isr_; }
  /// The ISR with the change in flight counted the conservative way
  /// (Kafka's maximalIsr): the union for an expand, the old ISR for a shrink.
  std::vector<node_id> maximal_isr() const;
  bool change_in_flight() const { return pending_.has_value(); }
  /// The change in flight, if any (sent again when its outcome is unknown).
  const std::optional<isr_proposal>& pending() const { return pending_; }
  /// A follower's state; nullptr if `id` is not a follower here.
  const follower_state* follower(node_id id) const;
  /// Followers in the assignment but not in the ISR (Kafka's
  /// under-replicated partition when non-empty).
  std::vector<node_id> out_of_isr() const;

private:
  bool in_isr(node_id id) const;
  bool in_maximal_isr(node_id id) const;

  node_id self_;
  bool unconfirmed_ = false;
  int32_t leader_epoch_;
  int32_t partition_epoch_;
  std::vector<node_id> replicas_;
  std::vector<node_id> isr_;
  int64_t leader_epoch_start_offset_;
  int64_t replica_lag_time_max_ms_;
  std::map<node_id, follower_state> followers_;
  std::optional<isr_proposal> pending_;
};

/// Where a follower truncates (Kafka's
/// AbstractFetcherThread.getOffsetTruncationState) when the leader answered
/// its fetch with `diverging` (the leader's end of the follower's last
/// fetched epoch): the offset to truncate to, and whether that is final.
struct truncation {
  int64_t offset = 0;
  /// False when the leader's epoch is unknown here: the follower truncated
  /// to the end of its largest epoch below it and fetches again with that
  /// epoch (KIP-279), until the leader agrees.
  bool completed = true;
  friend bool operator==(const truncation& a, const truncation& b) {
    return a.offset == b.offset && a.completed == b.completed;
  }
};

/// The follower's truncation point: `local` is its epoch cache and
/// `log_end_offset` its log end. Never above log_end_offset. If `local`
/// knows the diverging epoch: min(leader's end, local end of that epoch,
/// log end), completed. If it knows only smaller epochs: the local end of
/// the largest of them (not completed). With no epochs at all: min(leader's
/// end, log end). An undefined diverging epoch (the leader has none at or
/// below the follower's): the leader's end offset (or the log end).
truncation follower_truncation(const epoch_end& diverging, const leader_epoch_cache& local,
                               int64_t log_end_offset);

/// A follower's high watermark (Kafka's Log.updateHighWatermark on a
/// follower): the leader's HW from the fetch answer, bounded by its own
/// log end offset.
inline int64_t follower_high_watermark(int64_t leader_high_watermark, int64_t log_end_offset) {
  return leader_high_watermark < log_end_offset ? leader_high_watermark : log_end_offset;
}

} // namespace caftx::replication
