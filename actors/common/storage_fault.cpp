#include "actors/common/storage_fault.hpp"

#include <caf/atom.hpp>
#include <caf/scheduled_actor.hpp>

#include <utility>

#include "runtime/messages.hpp"
#include "storage/node_store.hpp"

namespace caftx {

namespace {

constexpr caf::atom_value storage_category = caf::atom("caftx_stor");

} // namespace

caf::error storage_exit(storage_fault kind, const std::string& message) {
  return caf::error(static_cast<uint8_t>(kind), storage_category, caf::make_message(message));
}

std::optional<storage_exit_info> storage_exit_of(const caf::error& reason) {
  if (reason.category() != storage_category)
    return std::nullopt;
  storage_exit_info info{static_cast<storage_fault>(reason.code()), {}};
  if (reason.context().match_elements<std::string>())
    info.message = reason.context().get_as<std::string>(0);
  return info;
}

void stop_on_storage_faults(caf::scheduled_actor* self, std::string component) {
  self->set_exception_handler(
    [component = std::move(component)](caf::scheduled_actor* ptr,
                                       std::exception_ptr& eptr) -> caf::error {
      try {
        std::rethrow_exception(eptr);
      } catch (const storage_closed_error& e) {
        // Not the bytes: the database is closed until the disk writes.
        return storage_exit(storage_fault::write_failed, component + ": " + e.reason());
      } catch (const storage_read_error& e) {
        return storage_exit(storage_fault::corrupt, component + ": " + e.reason());
      } catch (...) {
        return caf::scheduled_actor::default_exception_handler(ptr, eptr);
      }
    });
}

std::optional<caf::message> error_reply_for(const caf::message& request, const status& why) {
  auto code = why.code();
  auto& msg = why.message();
  if (request.match_elements<produce_request>())
    return caf::make_message(produce_response{code, msg, -1, -1});
  if (request.match_elements<fetch_request>()) {
    fetch_response r;
    r.error = code;
    r.message = msg;
    return caf::make_message(std::move(r));
  }
  if (request.match_elements<list_offsets_request>())
    return caf::make_message(list_offsets_response{code, -1});
  if (request.match_elements<become_leader_request>())
    return caf::make_message(become_leader_response{code, msg});
  if (request.match_elements<describe_producers_request>())
    return caf::make_message(describe_producers_response{code, msg, {}});
  if (request.match_elements<init_producer_id_request>())
    return caf::make_message(init_producer_id_response{code, msg});
  if (request.match_elements<end_txn_request>())
    return caf::make_message(end_txn_response{code, msg});
  if (request.match_elements<describe_transaction_request>()) {
    describe_transaction_response r;
    r.error = code;
    return caf::make_message(std::move(r));
  }
  if (request.match_elements<list_transactions_request>())
    return caf::make_message(list_transactions_response{code, msg, {}, {}});
  if (request.match_elements<offset_fetch_request>())
    return caf::make_message(offset_fetch_response{code, {}, {}});
  if (request.match_elements<write_txn_marker_request>()
      || request.match_elements<add_partitions_to_txn_request>()
      || request.match_elements<add_offsets_to_txn_request>()
      || request.match_elements<txn_offset_commit_request>()
      || request.match_elements<offset_commit_request>())
    return caf::make_message(txn_response{code, msg});
  return std::nullopt;
}

caf::message error_reply_as(const caf::message& reply, const status& why) {
  if (reply.match_elements<produce_response>())
    return caf::make_message(produce_response{why.code(), why.message(), -1, -1});
  return caf::make_message(txn_response{why.code(), why.message()});
}

} // namespace caftx
