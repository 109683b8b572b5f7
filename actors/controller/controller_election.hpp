// Becoming the controller: the steps of Kafka's
// KafkaZkClient.registerControllerAndIncrementControllerEpoch as decisions
// (docs/controller.md §Election). Pure: the shell performs each write or
// read and feeds the answer back.
//
//   1. ensure_epoch_znode(): create /controller_epoch with epoch 0 if absent
//      (NODEEXISTS is fine), then read /controller and /controller_epoch.
//   2. on_read(): another controller -> lost; else
//      multi(check(/controller_epoch, v), create_ephemeral(/controller)).
//   3. on_result() of 2: ok -> set(/controller_epoch, E+1, version v);
//      NODEEXISTS on /controller or BADVERSION on the check -> lost
//      (Kafka's ControllerMovedException).
//   4. on_result() of 3: ok -> won, identity (E+1, new version v'); every
//      later controller write checks v'. BADVERSION -> lost, and the step
//      deletes our /controller so another node can win.
// A connection loss (unknown outcome) anywhere -> reread: the shell reads
// again and calls on_read(); finding /controller ours, the election goes on
// with step 3 (incrementing twice only fences more).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "runtime/controller_model.hpp"
#include "runtime/status.hpp"

namespace caftx::controller {

/// What the shell does next.
enum class election_outcome : uint8_t {
  write,  // perform `write`, answer with on_result()
  reread, // read /controller and /controller_epoch again, answer with on_read()
  won,    // identity() is set; `write` is empty
  lost,   // another node is controller (or the epoch moved); `write` may hold a cleanup
};

struct election_step {
  election_outcome outcome = election_outcome::lost;
  std::optional<store_write> write;
  std::string reason; // for lost: why, for the log
};

class controller_election {
public:
  /// `now_ms` goes into /controller's timestamp.
  controller_election(node_id self, int64_t now_ms) : self_(self), now_ms_(now_ms) {}

  /// Step 1: create /controller_epoch holding epoch 0 unless it exists.
  store_write ensure_epoch_znode() const;

  /// Step 2, after reading /controller (its node id, if it exists) and
  /// /controller_epoch (data and data version). A malformed epoch znode is
  /// lost with the decoder's message.
  election_step on_read(std::optional<node_id> current_controller, std::string_view epoch_data,
                        int32_t epoch_version);

  /// Steps 3 and 4: the answer to the last write.
  election_step on_result(const write_result& r);

  /// Set once won.
  const std::optional<controller_identity>& identity() const { return identity_; }

private:
  enum class phase : uint8_t { idle, registering, incrementing, done };
  election_step increment();

  node_id self_;
  int64_t now_ms_;
  phase phase_ = phase::idle;
  int32_t read_epoch_ = 0;
  int32_t read_version_ = 0;
  uint64_t next_id_ = 1;
  uint64_t pending_id_ = 0;
  std::optional<controller_identity> identity_;
};

} // namespace caftx::controller
