// caftx::consumer — Kafka's consumer API: isolation.level, group.id,
// assign (manual assignment) or subscribe (group membership with
// rebalancing, docs/consumer-groups.md), poll, position, seek, commit,
// committed.
//
// Thread-safety: calls are serialized by an internal (recursive) mutex;
// they block the calling thread. A rebalance listener runs on the thread
// that called poll() and may call the consumer (commit() say). Errors: kafka_exception with Kafka's error code
// (UNKNOWN_TOPIC_OR_PARTITION, OFFSET_OUT_OF_RANGE with
// auto.offset.reset=none, INVALID_REQUEST without group.id, REQUEST_TIMED_OUT).
//
// Committed offsets are always fetched with require_stable, as Kafka's
// consumer does (KIP-447): while a transaction holds offsets of the group
// for a partition — open, or committed with its marker still on its way to
// the group coordinator — the coordinator answers UNSTABLE_OFFSET_COMMIT
// and the consumer asks again every retry.backoff.ms, so a consumer started
// right after commit_transaction() returned starts at the offsets that
// transaction committed, never at the older ones.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/client/client.hpp"
#include "config/config.hpp"

namespace caftx {

namespace detail {
class remote_cluster;
} // namespace detail

/// Told of a subscribed consumer's assignment changes (Kafka's
/// ConsumerRebalanceListener), inside poll(). Eager protocol: every
/// partition is revoked before the consumer joins again, then the new
/// assignment is given.
class consumer_rebalance_listener {
public:
  virtual ~consumer_rebalance_listener() = default;
  /// Before the consumer rejoins (or leaves): commit what was processed.
  virtual void on_partitions_revoked(const std::vector<topic_partition>&) {}
  /// After the group's leader assigned these partitions to this consumer.
  virtual void on_partitions_assigned(const std::vector<topic_partition>&) {}
};

class consumer {
public:
  /// Throws kafka_exception(INVALID_CONFIG) when `props` does not parse.
  consumer(caf::actor_system& sys, caf::actor broker, const properties& props);
  consumer(caf::actor_system& sys, caf::actor broker, consumer_config config);
  /// A consumer in a process of its own (Kafka's KafkaConsumer(Properties)),
  /// from `bootstrap.servers` and the connection keys of producer's
  /// properties-only constructor (docs/node.md §Clients), with the same
  /// reconnection and metadata refresh. Throws kafka_exception(INVALID_CONFIG).
  explicit consumer(const properties& props);
  ~consumer();

  /// Replaces the assignment. Positions of newly assigned partitions start
  /// at the group's committed offset (once stable, see above), else at
  /// auto.offset.reset; they are looked up by the next poll() or
  /// position(). Throws UNKNOWN_TOPIC_OR_PARTITION.
  void assign(const std::vector<topic_partition>& partitions);
  std::vector<topic_partition> assignment() const;
  /// Joins group.id's group (JoinGroup, SyncGroup) on the next poll() and
  /// consumes the partitions of `topics` its leader assigns, with
  /// partition.assignment.strategy (range, roundrobin; any member of the
  /// group may lead, a Kafka client too). poll() sends heartbeats every
  /// heartbeat.interval.ms, takes part in rebalances (blocking until the
  /// consumer has its new assignment) and calls `listener`. Call poll()
  /// at least every session.timeout.ms: heartbeats are sent from it, not
  /// from a thread of their own. Throws INVALID_REQUEST without group.id
  /// or while partitions are assigned with assign().
  void subscribe(const std::vector<std::string>& topics,
                 std::shared_ptr<consumer_rebalance_listener> listener = nullptr);
  /// Leaves the group (LeaveGroup) and drops the assignment.
  void unsubscribe();
  std::vector<std::string> subscription() const;
  /// The consumer's group, generation and member id, for
  /// producer::send_offsets_to_transaction (KIP-447); generation -1 and
  /// no member id while not in a group.
  consumer_group_metadata group_metadata() const;

  /// Fetches from the assigned partitions with isolation.level, waiting up
  /// to `timeout` for at least one record; returns at most
  /// max.poll.records. Every assigned partition without kept records goes
  /// into ONE fetch per node (node_fetch_request, as Kafka's fetcher sends
  /// one Fetch per node with all its partitions); the node holds it until
  /// its partitions have fetch.min.bytes of records, or fetch.max.wait.ms
  /// (at most the time left of `timeout`) passed. A fetch brings up to
  /// max.partition.fetch.bytes of a partition and fetch.max.bytes in all
  /// (at least one batch); what a poll does not return is kept and
  /// returned by the next polls before that partition is fetched again
  /// (seek() drops it). A partition whose leader did not answer is looked
  /// up again and fetched in the next round.
  /// read_committed never returns records of aborted or open transactions,
  /// nor anything at or above the last stable offset; control records are
  /// never returned in either level. A partition whose committed offset is
  /// still held by a transaction when `timeout` passes returns nothing
  /// (no error); the next poll asks again.
  std::vector<consumer_record> poll(std::chrono::milliseconds timeout);

  /// The offset of the next record poll() returns for `tp`. Throws
  /// REQUEST_TIMED_OUT (retriable) if the group's committed offset is still
  /// held by a transaction after default.api.timeout.ms.
  int64_t position(const topic_partition& tp);
  void seek(const topic_partition& tp, int64_t offset);

  /// ListOffsets latest: the last stable offset under read_committed, the
  /// high watermark under read_uncommitted.
  int64_t end_offset(const topic_partition& tp);

  /// Commits the current positions of all assigned partitions (or the
  /// given offsets) for group.id. Throws INVALID_REQUEST without group.id;
  /// position()'s errors while a position is looked up. A subscribed
  /// consumer commits as its member and generation: after a rebalance it
  /// missed, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or REBALANCE_IN_PROGRESS
  /// (Kafka's CommitFailedException), and the next poll() rejoins.
  void commit();
  void commit(const std::map<topic_partition, int64_t>& offsets);

  /// The group's committed offset, or nullopt if none; waits while a
  /// transaction holds one (REQUEST_TIMED_OUT, retriable, after
  /// default.api.timeout.ms).
  std::optional<int64_t> committed(const topic_partition& tp);

  /// Leaves the group if subscribed (its listener's revocation first).
  void close();
  /// Replaces how the consumer tells time and waits (see client_driver);
  /// call before any other call. For CAF's deterministic test scheduler.
  void set_driver(client_driver driver);

private:
  struct impl;
  // Declared first: destroyed after impl_.
  std::shared_ptr<detail::remote_cluster> cluster_;
  std::unique_ptr<impl> impl_;
};

} // namespace caftx
