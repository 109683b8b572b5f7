#include "actors/client/transaction_manager.hpp"

#include <algorithm>

namespace caftx {

int32_t coordinator_backoff_ms(error_code error, int32_t retry_backoff_ms, int& concurrent_waits) {
  if (error != error_code::concurrent_transactions)
    return retry_backoff_ms;
  return std::min({retry_backoff_ms, 20, 1 << std::min(concurrent_waits++, 5)});
}

bool needs_coordinator_rediscovery(error_code e) {
  return e == error_code::not_coordinator || e == error_code::coordinator_not_available
         || e == error_code::request_timed_out;
}

const char* to_string(client_txn_state s) {
  switch (s) {
    case client_txn_state::uninitialized: return "UNINITIALIZED";
    case client_txn_state::initializing: return "INITIALIZING";
    case client_txn_state::ready: return "READY";
    case client_txn_state::in_transaction: return "IN_TRANSACTION";
    case client_txn_state::committing_transaction: return "COMMITTING_TRANSACTION";
    case client_txn_state::aborting_transaction: return "ABORTING_TRANSACTION";
    case client_txn_state::abortable_error: return "ABORTABLE_ERROR";
    case client_txn_state::fatal_error: return "FATAL_ERROR";
  }
  return "UNKNOWN";
}

status transaction_manager::invalid(const char* action) const {
  if (state_ == client_txn_state::fatal_error)
    return last_error_;
  if (state_ == client_txn_state::abortable_error)
    return {last_error_.code(), std::string("transaction must be aborted first: ")
                                  + last_error_.to_string()};
  return {error_code::invalid_txn_state,
          std::string("cannot ") + action + " in state " + to_string(state_)};
}

status transaction_manager::begin_init() {
  if (state_ != client_txn_state::uninitialized && state_ != client_txn_state::ready
      && state_ != client_txn_state::initializing)
    return invalid("initialize");
  state_ = client_txn_state::initializing;
  return {};
}

void transaction_manager::init_succeeded(producer_id pid, producer_epoch epoch) {
  pid_ = pid;
  epoch_ = epoch;
  added_.clear();
  offsets_added_ = false;
  epoch_bump_required_ = false;
  pid_mapping_lost_ = false;
  state_ = client_txn_state::ready;
}

status transaction_manager::begin_transaction() {
  if (!transactional_)
    return {error_code::invalid_txn_state, "transactional.id is not set"};
  if (state_ != client_txn_state::ready)
    return invalid("begin a transaction");
  state_ = client_txn_state::in_transaction;
  return {};
}

status transaction_manager::check_send() const {
  if (transactional_) {
    if (state_ != client_txn_state::in_transaction)
      return invalid("send outside a transaction");
    return {};
  }
  if (state_ != client_txn_state::ready)
    return invalid("send");
  return {};
}

status transaction_manager::begin_commit() {
  // Repeating a commit that timed out is allowed (KIP-588).
  if (state_ != client_txn_state::in_transaction
      && state_ != client_txn_state::committing_transaction)
    return invalid("commit");
  state_ = client_txn_state::committing_transaction;
  return {};
}

status transaction_manager::begin_abort() {
  if (state_ != client_txn_state::in_transaction && state_ != client_txn_state::abortable_error
      && state_ != client_txn_state::aborting_transaction)
    return invalid("abort");
  state_ = client_txn_state::aborting_transaction;
  return {};
}

void transaction_manager::end_succeeded() {
  added_.clear();
  offsets_added_ = false;
  state_ = client_txn_state::ready;
}

void transaction_manager::fail(error_class cls, status error) {
  if (state_ == client_txn_state::fatal_error)
    return;
  last_error_ = std::move(error);
  bool in_txn = state_ == client_txn_state::in_transaction
                || state_ == client_txn_state::committing_transaction
                || state_ == client_txn_state::aborting_transaction
                || state_ == client_txn_state::abortable_error;
  if (cls == error_class::abortable && transactional_ && in_txn) {
    state_ = client_txn_state::abortable_error;
    auto code = last_error_.code();
    if (code == error_code::unknown_producer_id || code == error_code::invalid_producer_id_mapping)
      epoch_bump_required_ = true;
    if (code == error_code::invalid_producer_id_mapping)
      pid_mapping_lost_ = true;
  } else if (cls == error_class::abortable && !transactional_)
    return; // idempotent producer: the failed send reports it, state stays
  else
    state_ = client_txn_state::fatal_error;
}

} // namespace caftx
