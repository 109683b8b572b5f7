// Durable writes for an actor shell without blocking its scheduler thread:
// the write goes to the node_store's writer thread (group commit) and its
// completion comes back to the actor as a storage_done message, in the
// order the writes were submitted. The continuation then runs inside the
// actor, like any other handler. Owned by one actor; not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include <caf/actor.hpp>
#include <caf/response_promise.hpp>

#include "runtime/common_messages.hpp"
#include "runtime/status.hpp"
#include "storage/node_store.hpp"

namespace leveldb {
class WriteBatch;
}

namespace caftx {

class durable_queue {
public:
  using continuation = std::function<void(const status&)>;

  durable_queue() = default;
  explicit durable_queue(std::shared_ptr<node_store> store) : store_(std::move(store)) {}

  /// Queues `batch`; `then` runs in the actor when `self` handles the
  /// matching storage_done. `self` must be the owning actor. `waiting` is
  /// the request whose reply waits for this write: if the actor dies first,
  /// it gets request_receiver_down at once (clients retry now instead of
  /// after their request timeout).
  void submit(const caf::actor& self, leveldb::WriteBatch batch, continuation then,
              std::optional<caf::response_promise> waiting = std::nullopt);

  /// Answers every request still waiting for a write with
  /// request_receiver_down.
  ~durable_queue();
  durable_queue(durable_queue&&) = default;
  durable_queue& operator=(durable_queue&&) = default;

  /// Runs the continuation of `done`. Returns false for an unknown ticket.
  bool complete(const storage_done& done);


private:
  std::shared_ptr<node_store> store_;
  uint64_t next_ticket_ = 1;
  struct pending_write {
    continuation then;
    std::optional<caf::response_promise> waiting;
  };
  std::map<uint64_t, pending_write> pending_;
};

} // namespace caftx
