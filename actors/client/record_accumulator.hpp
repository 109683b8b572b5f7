// The pure core of the producer session (Kafka's RecordAccumulator plus
// the sequence bookkeeping of its TransactionManager): one open batch per
// partition, sealed at batch.size bytes, on linger or on flush; base
// sequences; at most max.in.flight batches in flight per partition (one
// until a batch of the current producer id is acknowledged there,
// docs/producer-state.md §First-batches); retries in sequence order with
// the same sequences; failure of a batch for good
// fails every later batch of its partition; for an idempotent producer a
// local epoch bump (KIP-360) once nothing is in flight, re-sequencing only
// batches never sent. No CAF, no clock (now_ms is a parameter). Owned by
// one producer session actor; not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/record_batch.hpp"
#include "runtime/status.hpp"

namespace caftx {

struct accumulator_settings {
  int32_t batch_size = 16384;        // bytes
  int32_t max_in_flight = 5;         // per partition
  int32_t retries = 2147483647;      // resends of one batch
  int64_t delivery_timeout_ms = 120000;
  bool transactional = false;
};

/// Bytes a record is counted for in batch.size, buffer.memory and
/// max.request.size: an upper bound of its RecordBatch v2 encoding in a
/// batch of its own (Kafka's AbstractRecords.estimateSizeInBytesUpperBound:
/// the 61-byte batch header, key, value, headers and at most 21 bytes of
/// varint framing per record, 10 per header).
size_t record_size_upper_bound(size_t key_bytes, size_t value_bytes,
                                const std::vector<record_header>& headers);

/// What became of one record handed to the accumulator.
struct record_outcome {
  uint64_t id = 0;
  error_code error = error_code::none;
  std::string message;
  int64_t offset = -1; // -1: failed, or written at an unknown offset
  bool add_failed = false; // never sent: AddPartitionsToTxn failed (fail_held)
};

/// A batch to send now; `generation` identifies this send in on_reply.
struct batch_to_send {
  topic_partition tp;
  uint64_t generation = 0;
  record_batch batch;
  int64_t deadline_ms = 0; // delivery.timeout.ms of the batch: no reply is awaited longer
};

class record_accumulator {
public:
  explicit record_accumulator(accumulator_settings settings) : settings_(settings) {}

  /// A new producer id/epoch (InitProducerId): sequences restart at 0.
  void set_identity(producer_id pid, producer_epoch epoch);

  /// Adds a record to `tp`'s open batch. Returns true if it is the open
  /// batch's first record (the caller arms linger.ms for `tp` with
  /// linger_generation(tp)); seals the batch when it reaches batch.size.
  /// A record that would take a non-empty open batch past batch.size
  /// first seals it and opens the next, as Kafka's RecordAccumulator
  /// (a batch is never larger than batch.size unless its one record is).
  bool append(const topic_partition& tp, uint64_t id, record rec, int64_t now_ms);

  /// linger.ms of `tp` fired for `generation`: seals if still current.
  void linger_expired(const topic_partition& tp, uint64_t generation, int64_t now_ms);
  uint64_t linger_generation(const topic_partition& tp) const;

  /// Seals every open batch (flush, commit).
  void seal_all(int64_t now_ms);

  /// Drops everything not sent yet (abort): their records fail with
  /// INVALID_TXN_STATE. Batches in flight still resolve. Releases every
  /// held partition.
  void discard_unsent();

  /// A transactional producer's partition waiting for AddPartitionsToTxn:
  /// its batches are sealed and sequenced as usual but not sent until
  /// release(tp). Hold before the partition's first record of the
  /// transaction; nothing of it may be in flight.
  void hold(const topic_partition& tp);
  void release(const topic_partition& tp);
  bool held(const topic_partition& tp) const;
  /// AddPartitionsToTxn for held `tp` failed for good: every record of
  /// `tp` (all unsent) fails with `error`, marked add_failed, and the
  /// partition's sequence restarts where it was before them.
  void fail_held(const topic_partition& tp, error_code error, const std::string& message);

  /// Batches to send now, in sequence order per partition, within the
  /// in-flight window. Costs the partitions whose state changed since the
  /// last call (a sealed batch, a reply, a release, an elapsed backoff),
  /// not every partition the producer ever wrote: one send to each of N
  /// partitions costs O(N log N) in all, not O(N^2).
  /// The window: max.in.flight, but 1 at a partition until a batch of
  /// the current producer id is acknowledged there (an idempotent or
  /// transactional producer; docs/producer-state.md §First-batches), so
  /// that a partition without state for the producer never sees a later
  /// first batch before the earliest. A new epoch of the same producer id
  /// keeps the window: the partition knows the id and takes a new epoch
  /// only from sequence 0. Nothing while a retry backoff or an epoch bump
  /// is pending for them.
  std::vector<batch_to_send> ready();

  /// The reply (or no reply: REQUEST_TIMED_OUT) for a send.
  void on_reply(const topic_partition& tp, uint64_t generation, error_code error,
                const std::string& message, int64_t base_offset, int64_t now_ms);

  /// A failed batch waits for retry.backoff.ms: the caller arms a timer
  /// when this is true and calls retry_backoff_elapsed() when it fires.
  bool wants_retry_timer();
  void retry_backoff_elapsed();

  /// Outcomes since the last call.
  std::vector<record_outcome> take_outcomes();

  size_t unresolved() const { return unresolved_; }
  /// Partitions ready() has looked at so far (its cost, for tests and
  /// benchmarks).
  uint64_t partitions_visited() const { return partitions_visited_; }
  producer_epoch epoch() const { return epoch_; }

private:
  struct sealed {
    record_batch batch;
    std::vector<uint64_t> ids;
    bool in_flight = false;
    bool ever_sent = false;
    int32_t attempts = 0;
    int64_t deadline_ms = 0;
    uint64_t generation = 0; // of the current send; 0 = replies are ignored
  };
  struct partition {
    record_batch open;
    std::vector<uint64_t> open_ids;
    size_t open_bytes = 0;
    uint64_t linger_generation = 0;
    std::deque<sealed> queue; // sealed, in sequence order
    int32_t next_sequence = 0;
    bool held = false; // waiting for AddPartitionsToTxn
    // A batch of the current producer id was acknowledged here: the
    // partition has state for it, so batches may be pipelined.
    bool pid_acknowledged = false;
  };

  void seal(const topic_partition& tp, partition& p, int64_t now_ms);
  // Fails the open batch's records and releases the partition.
  void drop_open(partition& p, error_code error, const std::string& message, bool add_failed);
  void complete(const sealed& b, error_code error, const std::string& message, int64_t base_offset,
                bool add_failed = false);
  void fail_from(partition& p, size_t from, error_code error, const std::string& message);
  void maybe_bump();

  accumulator_settings settings_;
  producer_id pid_ = no_producer_id;
  producer_epoch epoch_ = no_producer_epoch;
  std::map<topic_partition, partition> partitions_;
  std::vector<record_outcome> outcomes_;
  std::set<uint64_t> orphaned_; // sends of failed batches still awaiting a reply
  size_t unresolved_ = 0;
  bool bump_pending_ = false;
  // Partitions that may have something to send (see ready()), and those
  // with a batch waiting for the retry backoff.
  std::set<topic_partition> dirty_;
  std::set<topic_partition> retrying_;
  bool retry_waiting_ = false;  // a failed batch waits for its backoff
  bool timer_requested_ = false;
  uint64_t next_generation_ = 1;
  uint64_t partitions_visited_ = 0;
};

} // namespace caftx
