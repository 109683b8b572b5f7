// Requests to an actor on another node that end as soon as the connection
// to that node is lost, as Kafka's NetworkClient fails the in-flight
// requests of a closed connection at once (a retriable
// NetworkException/DisconnectException) instead of waiting for
// request.timeout.ms.
//
// CAF 0.17 notices a lost connection (a closed socket at once, a frozen
// peer after the middleman's connection timeout) and kills the proxies of
// that node's actors: their monitors get a down message with
// remote_link_unreachable. A request already sent through such a proxy,
// though, is left to its own timeout: 30 s of silence with Kafka's
// default request.timeout.ms, while a killed node restarts in a few. So is
// one on the wire when the receiver's node stops (a controlled shutdown):
// the proxy dies with the actor's own exit reason, and the exited process
// answers nothing. A watch, made right after the request is sent,
// attaches to the receiver's proxy; when the proxy dies, of whatever, it
// cancels the
// request's timeout and answers the request itself with
// sec::request_receiver_down ("lost the connection to the receiver's
// node"), which callers already treat as a receiver that is gone
// (NOT_LEADER_OR_FOLLOWER / NOT_COORDINATOR: retriable, look it up
// again). Destroying the watch (the reply came) detaches it. A request to
// a local actor needs none: CAF answers it when that actor goes away.
#pragma once

#include <memory>

#include <caf/actor_cast.hpp>
#include <caf/fwd.hpp>
#include <caf/message_id.hpp>

namespace caftx {

class lost_connection_watch {
public:
  lost_connection_watch() = default;
  /// Watches the request `request` (the id request() returned: its
  /// response's id; a request's own id is taken too) of
  /// `requester` to `receiver`; does nothing for a local or null
  /// receiver.
  lost_connection_watch(const caf::strong_actor_ptr& requester, caf::message_id request,
                        const caf::strong_actor_ptr& receiver);
  ~lost_connection_watch();
  lost_connection_watch(lost_connection_watch&& other) noexcept;
  lost_connection_watch& operator=(lost_connection_watch&& other) noexcept;
  lost_connection_watch(const lost_connection_watch&) = delete;
  lost_connection_watch& operator=(const lost_connection_watch&) = delete;

  /// True while attached to a remote receiver.
  bool active() const { return static_cast<bool>(receiver_); }

private:
  void release();
  caf::strong_actor_ptr receiver_;
  const void* token_ = nullptr;
};

/// A watch for the request `id` that `self` just sent to `receiver`, shared
/// so that it can sit in a response handler's capture (copyable, as CAF's
/// behaviors want): the handler's end detaches it.
template <class Self, class Handle>
std::shared_ptr<lost_connection_watch> watch_connection(Self* self, caf::message_id id,
                                                        const Handle& receiver) {
  return std::make_shared<lost_connection_watch>(caf::actor_cast<caf::strong_actor_ptr>(self), id,
                                                 caf::actor_cast<caf::strong_actor_ptr>(receiver));
}

} // namespace caftx
