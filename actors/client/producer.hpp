// caftx::producer — Kafka's transactional / idempotent producer API for C++
// applications: init_transactions, begin_transaction, send,
// send_offsets_to_transaction, commit_transaction, abort_transaction,
// flush, close. Configured by Kafka's names (producer_config).
//
// Thread-safety: every call is serialized by an internal mutex, so a
// producer may be shared between threads; calls block the calling thread
// (never an actor scheduler thread) until the cluster answered.
// Errors: calls throw kafka_exception (see client.hpp) with Kafka's error
// code and its fatal / abortable / retriable class.
//
// Batching: send() hands the record to the producer's session actor and
// returns; the session seals a partition's batch at batch.size bytes or
// after linger.ms, keeps up to max.in.flight.requests.per.connection
// batches in flight per partition (one until the partition acknowledged a
// batch of the producer's current producer id, docs/producer-state.md
// §First-batches), and retries retriable errors in order
// with the same sequences until delivery.timeout.ms (see
// actors/client/producer_session.hpp). In a transaction the session also
// adds each new partition (AddPartitionsToTxn, one request for the new
// partitions of a burst) before the partition's first batch, so send()
// does not wait for the coordinator. flush() and commit_transaction() wait
// for every record sent before them.
#pragma once

#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "actors/client/client.hpp"
#include "config/config.hpp"

namespace caftx {

namespace detail {
class remote_cluster;
} // namespace detail

class producer {
public:
  /// Called with a record's metadata (or a non-ok status, the offset -1)
  /// as soon as its batch is acknowledged or failed, on the producer's own
  /// thread (its session actor's, as Kafka's producer I/O thread), not at
  /// the next flush; callbacks of one partition run in offset order. A
  /// callback must be quick and must not call this producer (Kafka's rule:
  /// it would block the thread that completes the producer's requests).
  using send_callback = std::function<void(const record_metadata&, const status&)>;

  /// A producer bootstrapping from `broker` (node::broker(), or a remote
  /// broker handle). Throws kafka_exception(INVALID_CONFIG, fatal) when
  /// `props` does not parse.
  producer(caf::actor_system& sys, caf::actor broker, const properties& props);
  producer(caf::actor_system& sys, caf::actor broker, producer_config config);
  /// A producer in a process of its own (Kafka's KafkaProducer(Properties)):
  /// `props` names the cluster with `bootstrap.servers` (host:port,...) and
  /// may set metadata.max.age.ms, reconnect.backoff.ms,
  /// reconnect.backoff.max.ms, socket.connection.setup.timeout.ms and
  /// caftx.middleman.* (docs/node.md §Clients). The producer owns a CAF
  /// actor system with the middleman; it reconnects after a lost
  /// connection (retriable errors meanwhile) and looks metadata up again
  /// then, after NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR /
  /// UNKNOWN_TOPIC_OR_PARTITION / no reply, and every metadata.max.age.ms.
  /// Throws kafka_exception(INVALID_CONFIG, fatal) for a bad config.
  explicit producer(const properties& props);

  /// Drops the producer without finishing an open transaction, as a
  /// crashed process would: the coordinator aborts it when it times out or
  /// when the next producer with the same transactional.id initializes.
  ~producer();

  /// InitProducerId: registers transactional.id with its coordinator, which
  /// fences older producers of the same id (their epoch is bumped) and
  /// finishes any transaction they left. Retries retriable errors
  /// (CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, no coordinator,
  /// ...) until max.block.ms, then throws REQUEST_TIMED_OUT (Kafka's
  /// TimeoutException, retriable: the call may be repeated). Throws fatal: INVALID_TRANSACTION_TIMEOUT when
  /// transaction.timeout.ms exceeds the broker's transaction.max.timeout.ms,
  /// PRODUCER_FENCED; INVALID_TXN_STATE without transactional.id.
  void init_transactions();

  /// Starts a transaction locally (no request). Throws INVALID_TXN_STATE
  /// out of order.
  void begin_transaction();

  /// Hands a record to the session (see Batching above) and returns the
  /// future of its metadata (topic, partition, offset, timestamp), which
  /// becomes ready when `callback` runs: with the metadata, or with the
  /// record's failure as a kafka_exception (abortable for a transactional
  /// producer). Blocks to look up metadata and while the records not yet
  /// resolved and this one would take more than buffer.memory bytes (as
  /// Kafka's BufferPool): after max.block.ms it throws REQUEST_TIMED_OUT
  /// ("Failed to allocate memory within the configured max blocking
  /// time", Kafka's TimeoutException; retriable, abortable in a
  /// transaction). A record larger than max.request.size or buffer.memory
  /// (its v2 encoding with a batch header, upper bound) throws
  /// MESSAGE_TOO_LARGE with Kafka's RecordTooLargeException message, and
  /// nothing of it is sent. Also throws UNKNOWN_TOPIC_OR_PARTITION (abortable: the
  /// transaction must be aborted, as after Kafka's metadata timeout in
  /// send()) for an unknown topic or partition, INVALID_TXN_STATE outside a
  /// transaction of a transactional producer, or the stored error after a
  /// fatal or abortable one. Errors of the batch reach `callback` and the
  /// next flush() or commit_transaction(); so do those of AddPartitionsToTxn
  /// for the record's partition: classified as AddPartitionsToTxn's
  /// (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE fatal), and
  /// a retriable one still failing after delivery.timeout.ms
  /// (REQUEST_TIMED_OUT, COORDINATOR_NOT_AVAILABLE, ...) abortable: the
  /// record is not in the transaction, so it must be aborted (Kafka's
  /// maybeTransitionToErrorState).
  std::future<record_metadata> send(const producer_record& record,
                                    send_callback callback = {});

  /// Waits until every record sent so far is acknowledged or failed; a
  /// record fails at the latest delivery.timeout.ms after its batch was
  /// sealed (no request is awaited past it, KIP-91), so flush() returns
  /// within about that bound even when its node went away.
  /// Throws the first failure (abortable for a transactional producer: the
  /// transaction must then be aborted; an idempotent producer has already
  /// bumped its epoch, KIP-360, and goes on).
  void flush();

  /// Adds the consumer group's offsets to the transaction
  /// (AddOffsetsToTxn, then TxnOffsetCommit to the group coordinator): they
  /// become the group's committed offsets exactly when the transaction
  /// commits. `offsets` maps a partition to the next offset to consume.
  /// Retriable errors (an unreachable coordinator, an unknown topic's
  /// UNKNOWN_TOPIC_OR_PARTITION) are retried until max.block.ms, then
  /// REQUEST_TIMED_OUT (retriable; or abort the transaction).
  void send_offsets_to_transaction(const std::map<topic_partition, int64_t>& offsets,
                                   const std::string& group_id);
  /// The same for a subscribed consumer's group (KIP-447): the group
  /// coordinator also checks the member's generation and id, and a member
  /// a rebalance replaced gets ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID,
  /// abortable (Kafka's CommitFailedException): abort, and go on with the
  /// consumer's new assignment.
  void send_offsets_to_transaction(const std::map<topic_partition, int64_t>& offsets,
                                   const consumer_group_metadata& group);

  /// Flushes, then EndTxn(commit), both within max.block.ms: if the
  /// records are not acknowledged or the coordinator does not answer by
  /// then (busy, unreachable, its node stopped), the call throws
  /// REQUEST_TIMED_OUT (Kafka's TimeoutException), retriable: it may
  /// simply be called again (KIP-588). Once its EndTxn went out the outcome
  /// is the coordinator's: abort_transaction() is then refused with
  /// INVALID_TXN_STATE ("cannot abort in state COMMITTING_TRANSACTION", as
  /// Java's invalid transition) and the producer stays usable; repeat the
  /// commit. Returns once the coordinator decided
  /// (PrepareCommit durable); markers follow asynchronously and make the
  /// data visible to read_committed consumers. Throws the abortable error
  /// of a failed batch (call abort_transaction()), fatal PRODUCER_FENCED /
  /// INVALID_TXN_STATE.
  void commit_transaction();

  /// Drops records not sent yet, waits for those in flight, then
  /// EndTxn(abort), within max.block.ms (else REQUEST_TIMED_OUT,
  /// retriable: call it again). After an error that left the sequences unusable it also
  /// bumps the producer epoch (KIP-360: InitProducerId with the current
  /// producer id and epoch). After INVALID_PRODUCER_ID_MAPPING (the
  /// transactional id expired at its coordinator,
  /// transactional.id.expiration.ms) it skips EndTxn, which could only
  /// fail the same way, and the InitProducerId gives the producer a new
  /// producer id at epoch 0, as Kafka's producer does. Throws fatal
  /// PRODUCER_FENCED if another producer took the id meanwhile.
  void abort_transaction();

  /// Flushes (except records of an open transaction) and releases the
  /// producer; later calls throw INVALID_TXN_STATE.
  void close();

  /// Test and drill hook: called at named points ("after_add_offsets",
  /// "after_send_offsets", "before_end_txn", "after_end_txn_sent"); a
  /// throwing hook makes the producer behave as if the process died there.
  void set_fault_hook(std::function<void(const char* point)> hook);

  /// Replaces how the producer tells time and waits (see client_driver);
  /// call before any other call. For CAF's deterministic test scheduler.
  void set_driver(client_driver driver);
  /// Drills: the producer's session actor. Killing it simulates its crash:
  /// the producer starts a new session at its next call, fails the records
  /// not yet acknowledged (UNKNOWN_SERVER_ERROR to their callbacks; an open
  /// transaction becomes abortable) and continues with a bumped epoch.
  caf::actor session_actor() const;
  /// The current producer id and epoch (-1 before initialization).
  std::pair<int64_t, int16_t> producer_identity() const;

private:
  struct impl;
  // Declared first: destroyed after impl_, whose actors run on its system.
  std::shared_ptr<detail::remote_cluster> cluster_;
  std::unique_ptr<impl> impl_;
};

} // namespace caftx
