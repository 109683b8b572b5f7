// Messages every actor kind shares: the one-error reply, the storage
// writer's completion, the supervisor's requests and the coordinators'
// load step (runtime/message_inspect.hpp for the conventions).
#pragma once

#include <cstdint>
#include <string>

#include "runtime/error_code.hpp"
#include "runtime/message_inspect.hpp"

namespace caftx {

/// Reply of AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit,
/// OffsetCommit and WriteTxnMarkers: one error for the whole request.
struct txn_response {
  error_code error = error_code::none;
  std::string message;
};

/// A durable write finished (sent by the storage writer to the actor that
/// queued it).
struct storage_done {
  uint64_t ticket = 0;
  error_code error = error_code::none;
  std::string message;
};

/// A loading coordinator shard reads and installs its next chunk of cards.
struct coordinator_load_chunk {};

/// Ask a supervisor for its restart count.
struct supervisor_stats_request {};

struct supervisor_stats {
  int32_t restarts = 0;
  bool gave_up = false;
};

/// Drill: a supervisor kills its current child (exit_reason::kill).
struct kill_child_request {};

/// To a supervisor: every write its dead child had queued is settled; the
/// next child may load.
struct supervisor_settled {};

// -- inspectors ----------------------------------------------------------------

CAFTX_INSPECT(txn_response, x.error, x.message)
CAFTX_INSPECT(storage_done, x.ticket, x.error, x.message)
CAFTX_INSPECT(supervisor_stats, x.restarts, x.gave_up)
CAFTX_INSPECT_EMPTY(coordinator_load_chunk)
CAFTX_INSPECT_EMPTY(supervisor_stats_request)
CAFTX_INSPECT_EMPTY(kill_child_request)
CAFTX_INSPECT_EMPTY(supervisor_settled)

} // namespace caftx
