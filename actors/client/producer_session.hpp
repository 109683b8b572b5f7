// The producer session actor: the send side of one producer. It collects
// records into one open batch per partition, seals a batch when it reaches
// batch.size bytes, when linger.ms passes or on a flush, assigns base
// sequences, and keeps up to max.in.flight.requests.per.connection batches
// in flight per partition. Retriable errors (and OUT_OF_ORDER_SEQUENCE_NUMBER
// caused by an earlier batch that failed) resend the same batches, in
// sequence order, with the same sequences, until delivery.timeout.ms or
// `retries` runs out, so a retry is deduplicated by the partition and order
// is kept. A batch that fails for good fails every later batch of its
// partition; an idempotent producer then bumps its epoch locally and
// restarts its sequences (KIP-360) once nothing is in flight, re-sequencing
// only batches that were never sent, so nothing acknowledged is duplicated
// or reordered. The logic is the pure core record_accumulator; this actor
// only sends, arms timers and answers flushes. Used by caftx::producer; not
// part of the public API.
#pragma once

#include <caf/fwd.hpp>

#include "config/config.hpp"

namespace caftx {

/// Spawns a session. Handles session_identity, session_record (no reply),
/// session_flush -> session_flush_result.
caf::actor spawn_producer_session(caf::actor_system& sys, const producer_config& cfg);

} // namespace caftx
