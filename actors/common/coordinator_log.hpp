// A coordinator's client of its own partition (`__transaction_state-N`,
// `__consumer_offsets-N`), as Kafka's coordinators use the replica manager:
// at start the partition is made leader at the next leader epoch, which
// becomes the coordinator epoch; every write is a record batch appended
// with that epoch (a stale epoch is FENCED_LEADER_EPOCH, nothing written)
// and answered once durable; loading reads the partition from its log
// start to the log end offset the election reported. Used by one actor;
// not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "runtime/ids.hpp"
#include "runtime/partition_messages.hpp"
#include "runtime/status.hpp"

namespace caftx {

// The functions below are defined for the two coordinators' typed selves
// (txn_coordinator_impl_actor, group_coordinator_impl_actor; explicit
// instantiations in coordinator_log.cpp).

struct coordinator_log {
  partition_actor partition; // the partition's supervisor handle
  topic_partition tp;
  /// The leader epoch the partition was elected with: the coordinator
  /// epoch (-1 before elect()).
  int32_t leader_epoch = -1;
  /// The election's load generation, carried by every append (0 before).
  uint64_t load_generation = 0;
  std::chrono::milliseconds timeout{30000}; // request.timeout.ms
};

/// Makes the partition leader at its next leader epoch and records the
/// epoch in `log`; `then` gets the election's answer (log start and end
/// offsets to load from). An actor error (the partition down, the timeout)
/// is COORDINATOR_NOT_AVAILABLE.
template <class... Sigs>
void elect(caf::typed_event_based_actor<Sigs...>* self, coordinator_log& log,
           std::function<void(const status&, const become_leader_response&)> then);

/// Appends one RecordBatch v2 (`records`, producer id -1 or a transactional
/// producer's batch) at the elected epoch; `then` gets the outcome and the
/// base offset once durable. Errors: the partition's (FENCED_LEADER_EPOCH,
/// KAFKA_STORAGE_ERROR, ...), COORDINATOR_NOT_AVAILABLE for an actor
/// error. Whatever the error but one, the record may or may not be in the
/// log: see nothing_appended().
template <class... Sigs>
void append(caf::typed_event_based_actor<Sigs...>* self, const coordinator_log& log,
            std::string records,
            std::function<void(const status&, int64_t base_offset)> then);

/// True for the one append error after which the record is certainly not
/// in the log: NOT_ENOUGH_REPLICAS, the ISR below min.insync.replicas
/// before the append (Kafka's Partition.appendRecordsToLeader checks it
/// first). The coordinator then goes on and answers COORDINATOR_NOT_AVAILABLE
/// (Kafka's TransactionStateManager and GroupMetadataManager map it so), so
/// the client retries; after any other error it reloads from its log.
inline bool nothing_appended(const status& s) {
  return s.code() == error_code::not_enough_replicas;
}

/// The retriable answer for a write refused with nothing_appended().
inline status coordinator_unavailable(const status& s) {
  return {error_code::coordinator_not_available, s.message()};
}

class partition_replay;

/// The start of a coordinator's load: elect()s the partition. If that
/// fails (the partition is down: a storage fault it waits out, or one it
/// stays down for), `load_error` gets the partition's error, which the
/// coordinator answers meanwhile, and a coordinator_load_chunk comes a
/// second later to try again; else `load_error` is cleared and
/// `elected(answer)` starts the replay. `log` and `load_error` must live
/// as long as the actor.
template <class... Sigs>
void elect_for_load(caf::typed_event_based_actor<Sigs...>* self, coordinator_log& log,
                    std::optional<status>& load_error,
                    std::function<void(const become_leader_response&)> elected);

/// Bytes a coordinator's load fetches at a time from its partition.
inline constexpr int32_t load_fetch_bytes = 1 << 20;
/// How long a load waits before it reads again when nothing below the high
/// watermark was left to read (coordinator_load_chunk comes then).
inline constexpr std::chrono::milliseconds load_wait{100};

/// One step of a coordinator's load (docs/transactions.md §Load): `replay`
/// replays the next chunk of what `loader` was fed (true: the fed bytes are
/// used up). While some remain, `next_step` sends the next step as a
/// message to the actor itself (so requests are answered in between);
/// once they are used up, the next load_fetch_bytes of the partition are
/// read and fed, and the step goes on (a read that finds nothing committed
/// yet is tried again after load_wait, with a coordinator_load_chunk); once
/// the loader is done,
/// `finished`. `fail(error, corrupt)`: records that do not decode or a
/// storage error reading them (`corrupt`), or another error of the read.
/// `loader` and `log` must live as long as the actor.
template <class... Sigs>
void load_step(caf::typed_event_based_actor<Sigs...>* self, const coordinator_log& log,
               partition_replay& loader, std::function<status_or<bool>()> replay,
               std::function<void()> next_step, std::function<void(const status&, bool)> fail,
               std::function<void()> finished);

/// Reads batches from `offset` (read_uncommitted, up to `max_bytes`, at
/// least one batch); `then` gets the fetch response or the error.
template <class... Sigs>
void read(caf::typed_event_based_actor<Sigs...>* self, const coordinator_log& log, int64_t offset,
          int32_t max_bytes, std::function<void(status_or<fetch_response>)> then);

} // namespace caftx
