#include "runtime/txn_card.hpp"

namespace caftx {

const char* to_string(txn_state s) {
  switch (s) {
    case txn_state::empty: return "Empty";
    case txn_state::ongoing: return "Ongoing";
    case txn_state::prepare_commit: return "PrepareCommit";
    case txn_state::prepare_abort: return "PrepareAbort";
    case txn_state::complete_commit: return "CompleteCommit";
    case txn_state::complete_abort: return "CompleteAbort";
    case txn_state::dead: return "Dead";
    case txn_state::prepare_epoch_fence: return "PrepareEpochFence";
  }
  return "Unknown";
}

std::optional<txn_state> txn_state_from_name(const std::string& name) {
  for (int8_t id = 0; id <= static_cast<int8_t>(txn_state::prepare_epoch_fence); ++id) {
    auto s = static_cast<txn_state>(id);
    if (name == to_string(s))
      return s;
  }
  return std::nullopt;
}

bool is_valid_transition(txn_state from, txn_state to) {
  using s = txn_state;
  auto completed_or_empty = from == s::empty || from == s::complete_commit
                            || from == s::complete_abort;
  switch (to) {
    case s::empty: return completed_or_empty;
    case s::ongoing: return completed_or_empty || from == s::ongoing;
    case s::prepare_commit: return from == s::ongoing;
    // Empty/Complete* -> PrepareAbort: an abort with the current epoch
    // outside a transaction (KIP-890 part 2, T12).
    case s::prepare_abort:
      return from == s::ongoing || from == s::prepare_epoch_fence || completed_or_empty;
    case s::complete_commit: return from == s::prepare_commit;
    case s::complete_abort: return from == s::prepare_abort;
    case s::dead: return completed_or_empty;
    case s::prepare_epoch_fence: return from == s::ongoing;
  }
  return false;
}

bool operator==(const txn_card& a, const txn_card& b) {
  return a.transactional_id == b.transactional_id && a.pid == b.pid
         && a.previous_pid == b.previous_pid && a.epoch == b.epoch
         && a.txn_timeout_ms == b.txn_timeout_ms && a.state == b.state
         && a.partitions == b.partitions && a.txn_start_ms == b.txn_start_ms
         && a.last_update_ms == b.last_update_ms && a.next_pid == b.next_pid
         && a.ended_by_pid == b.ended_by_pid && a.ended_by_epoch == b.ended_by_epoch
         && a.last_epoch == b.last_epoch
         && a.client_transaction_version == b.client_transaction_version;
}

} // namespace caftx
