// The producer session actor: the send side of one producer. It collects
// records into one open batch per partition, seals a batch when it reaches
// batch.size bytes, when linger.ms passes or on a flush, assigns base
// sequences, and keeps up to max.in.flight.requests.per.connection batches
// in flight per partition (one until a batch of the current producer id is
// acknowledged there, docs/producer-state.md §First-batches). Retriable
// errors (and OUT_OF_ORDER_SEQUENCE_NUMBER caused by an earlier batch that
// failed) resend the same batches, in
// sequence order, with the same sequences, until delivery.timeout.ms or
// `retries` runs out, so a retry is deduplicated by the partition and order
// is kept. A batch that fails for good fails every later batch of its
// partition; an idempotent producer then bumps its epoch locally and
// restarts its sequences (KIP-360) once nothing is in flight, re-sequencing
// only batches that were never sent, so nothing acknowledged is duplicated
// or reordered. For a transactional producer it also adds the partitions
// of the transaction (AddPartitionsToTxn) in the background, as Kafka's
// Sender does: every partition new to the transaction is held until the
// coordinator has added it, and all partitions that became new while a
// request was out go in the next one, so send() never waits for the
// coordinator. Retriable errors are retried (CONCURRENT_TRANSACTIONS from
// 1 ms doubling to 20 ms, the coordinator looked up again after
// NOT_COORDINATOR or no reply) until delivery.timeout.ms; then, or on any
// other error, the held records fail with it (add_failed). The logic is
// the pure core record_accumulator; this actor only sends, arms timers and
// answers flushes. Used by caftx::producer; not part of the public API.
#pragma once

#include <functional>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "config/config.hpp"

namespace caftx {

struct session_completion;

/// Called by the session, on its own thread, with the records resolved by
/// an event (a reply, a failure, an abort), as soon as they are resolved:
/// Kafka's producer completes a batch's callbacks on its I/O thread when
/// the batch is acknowledged, not at the next flush. Before a flush is
/// answered, every completion it waited for has been passed here.
using completion_sink = std::function<void(const std::vector<session_completion>&)>;

/// Spawns a session. Handles session_identity, session_record (no reply),
/// session_flush -> session_flush_result. `broker` answers FindCoordinator
/// for the transaction coordinator (transactional producers only). A
/// request waits for its reply request.timeout.ms, and never past its
/// batch's delivery.timeout.ms (Kafka's Sender expires in-flight batches,
/// KIP-91), so a batch sent to a node that went away fails in time; a
/// request to another node fails at once when the connection to it is
/// lost (actors/common/lost_connection.hpp). `broker_target`, for a broker
/// that is a client's relay, names the broker it forwards to now.
caf::actor spawn_producer_session(caf::actor_system& sys, const producer_config& cfg,
                                  caf::actor broker, completion_sink sink = {},
                                  std::function<caf::strong_actor_ptr()> broker_target = {});

} // namespace caftx
