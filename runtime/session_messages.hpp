// What a producer session receives from its producer
// (actors/client/producer_session.hpp): its identity, records, flushes and
// its own timers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/actor.hpp>

#include "runtime/common_messages.hpp"
#include "runtime/partition_messages.hpp"
#include "runtime/record_batch.hpp"

namespace caftx {

/// The producer's identity after InitProducerId (or a local epoch bump):
/// sequences of every partition restart at 0.
struct session_identity {
  producer_id pid = no_producer_id;
  producer_epoch epoch = no_producer_epoch;
};

/// One record for partition `tp`, led by `leader` (no reply). `add_to_txn`
/// marks a transactional producer's first record for `tp` in the current
/// transaction: the session sends AddPartitionsToTxn for it (batched with
/// other new partitions) and holds the partition's batches until it is
/// added, as Kafka's Sender does.
struct session_record {
  uint64_t id = 0; // the facade's handle for its callback
  topic_partition tp;
  partition_actor leader;
  record rec;
  bool add_to_txn = false;
};

/// What became of one record. `add_failed`: the record was never sent
/// because AddPartitionsToTxn for its partition failed with `error`.
struct session_completion {
  uint64_t id = 0;
  error_code error = error_code::none;
  std::string message;
  int64_t offset = -1;
  bool add_failed = false;
};

/// Seal every open batch and reply once every record received so far is
/// acknowledged or failed (discard = drop what was not sent yet, for an
/// abort).
struct session_flush {
  bool discard = false;
};

struct session_flush_result {
  std::vector<session_completion> completions;
  producer_epoch epoch = no_producer_epoch; // after local KIP-360 bumps
};

/// Internal timers of the session: linger.ms of a partition's open batch,
/// and the retry backoff.
struct session_linger {
  topic_partition tp;
  uint64_t generation = 0;
};

struct session_retry {};

/// The session's AddPartitionsToTxn backoff elapsed (`generation` of the
/// request it retries; stale timers are ignored), or, with generation 0,
/// new partitions wait for a request.
struct session_add_retry {
  uint64_t generation = 0;
};

// -- inspectors ----------------------------------------------------------------

CAFTX_INSPECT(session_identity, x.pid, x.epoch)
CAFTX_INSPECT(session_record, x.id, x.tp, x.leader, x.rec, x.add_to_txn)
CAFTX_INSPECT(session_completion, x.id, x.error, x.message, x.offset, x.add_failed)
CAFTX_INSPECT(session_flush, x.discard)
CAFTX_INSPECT(session_flush_result, x.completions, x.epoch)
CAFTX_INSPECT(session_linger, x.tp, x.generation)
CAFTX_INSPECT(session_add_retry, x.generation)
CAFTX_INSPECT_EMPTY(session_retry)

} // namespace caftx
