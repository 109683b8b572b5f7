// Components stopped by a storage fault, and the replies given in their
// place. Two kinds, told apart by the supervisor (actors/common/supervisor.hpp):
//
//   corrupt       a read or checksum error, or stored bytes that do not
//                 decode: the component stays down (restarting would read
//                 the same bytes again); its requests get KAFKA_STORAGE_ERROR
//                 naming it and the key or file where known, and it is
//                 listed in node::failed_components().
//   write_failed  a durable write failed (ENOSPC, EIO): memory may be ahead
//                 of the disk, so the component stops; its supervisor
//                 answers KAFKA_STORAGE_ERROR meanwhile and restarts it,
//                 rebuilt from disk, once the store writes again (not
//                 counted against the restart intensity).
//
// As Kafka's KafkaStorageException (error 56): the partition is offline on
// this broker, the rest of the node keeps serving.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <caf/error.hpp>
#include <caf/fwd.hpp>
#include <caf/message.hpp>

#include "runtime/status.hpp"

namespace caftx {

enum class storage_fault : uint8_t { corrupt = 1, write_failed = 2 };

/// The exit reason of a component stopped by `kind`; `message` names the
/// component and the cause, without the error's name ("partition
/// orders-0: reading keys ...: Corruption: ...").
caf::error storage_exit(storage_fault kind, const std::string& message);

struct storage_exit_info {
  storage_fault kind;
  std::string message;
};

/// The kind and message of a storage_exit() reason; nullopt for any other.
std::optional<storage_exit_info> storage_exit_of(const caf::error& reason);

/// Makes `self` stop with storage_exit(corrupt, component + ": " + what)
/// when its initialization or a handler throws storage_read_error (a read
/// error or corruption in node_store, or stored bytes that do not decode),
/// with storage_exit(write_failed, ...) for storage_closed_error; other
/// exceptions keep CAF's default (sec::runtime_error, restarted).
void stop_on_storage_faults(caf::scheduled_actor* self, std::string component);

/// The reply `request` would get, carrying error `why` instead: the
/// request's own response type (produce_response for produce_request,
/// fetch_response for fetch_request, ...; txn_response for the requests
/// answered with one). nullopt for a message that is no request of a node
/// component.
std::optional<caf::message> error_reply_for(const caf::message& request, const status& why);

/// `reply` (a produce_response, txn_response or another response with an
/// error and a message) with error `why` in its place: for the replies a
/// component held until a write was durable, when the write failed.
caf::message error_reply_as(const caf::message& reply, const status& why);

} // namespace caftx
