#include "actors/controller/controller_election.hpp"

#include "actors/controller/znodes.hpp"

namespace caftx::controller {

store_write controller_election::ensure_epoch_znode() const {
  return store_write{0, {store_op{op_kind::create, controller_epoch_path, encode_controller_epoch(0), -1}}};
}

election_step controller_election::on_read(std::optional<node_id> current_controller,
                                           std::string_view epoch_data, int32_t epoch_version) {
  if (current_controller && *current_controller != self_) {
    phase_ = phase::done;
    return {election_outcome::lost, std::nullopt,
            "node " + std::to_string(*current_controller) + " is controller"};
  }
  auto epoch = decode_controller_epoch(epoch_data);
  if (!epoch.ok()) {
    phase_ = phase::done;
    return {election_outcome::lost, std::nullopt, epoch.error().to_string()};
  }
  read_epoch_ = *epoch;
  read_version_ = epoch_version;
  if (current_controller) // our own create went through before a connection loss
    return increment();
  phase_ = phase::registering;
  pending_id_ = next_id_++;
  return {election_outcome::write,
          store_write{pending_id_,
                      {store_op{op_kind::check, controller_epoch_path, "", read_version_},
                       store_op{op_kind::create_ephemeral, controller_path,
                                encode_controller(self_, now_ms_), -1}}},
          ""};
}

election_step controller_election::increment() {
  phase_ = phase::incrementing;
  pending_id_ = next_id_++;
  return {election_outcome::write,
          store_write{pending_id_,
                      {store_op{op_kind::set, controller_epoch_path,
                                encode_controller_epoch(read_epoch_ + 1), read_version_}}},
          ""};
}

election_step controller_election::on_result(const write_result& r) {
  if (r.id != pending_id_ || phase_ == phase::done || phase_ == phase::idle)
    return {election_outcome::lost, std::nullopt, "answer to no pending election write"};
  if (r.outcome == write_outcome::connection_loss || r.outcome == write_outcome::no_node)
    return {election_outcome::reread, std::nullopt, ""};
  if (phase_ == phase::registering) {
    if (r.outcome == write_outcome::ok)
      return increment();
    phase_ = phase::done;
    return {election_outcome::lost, std::nullopt,
            r.outcome == write_outcome::node_exists ? "another node created /controller"
                                                    : "/controller_epoch changed since read"};
  }
  // incrementing
  if (r.outcome == write_outcome::ok && !r.versions.empty()) {
    phase_ = phase::done;
    identity_ = controller_identity{self_, read_epoch_ + 1, r.versions[0]};
    return {election_outcome::won, std::nullopt, ""};
  }
  phase_ = phase::done;
  return {election_outcome::lost,
          store_write{next_id_++, {store_op{op_kind::remove, controller_path, "", -1}}},
          "/controller_epoch changed since read"};
}

} // namespace caftx::controller
