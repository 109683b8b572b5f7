#include "actors/common/lost_connection.hpp"

#include <caf/abstract_actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/actor_control_block.hpp>
#include <caf/actor_system.hpp>
#include <caf/attachable.hpp>
#include <caf/exit_reason.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/make_message.hpp>
#include <caf/sec.hpp>
#include <caf/weak_intrusive_ptr.hpp>

namespace caftx {

namespace {

// An attachable subtype of our own (CAF's are 0 to 3), so that detach()
// finds exactly this watch.
constexpr size_t watch_token_type = 0x63617478;

class watch_attachable final : public caf::attachable {
public:
  watch_attachable(caf::weak_actor_ptr requester, caf::message_id response_id)
    : requester_(std::move(requester)), response_id_(response_id) {}

  // Runs once, on the thread that kills the proxy (the middleman's), or in
  // attach() if it is dead already. Then too: the proxy may have died
  // after the request went through it and before the watch was attached.
  // (A request sent to a proxy dead before gets CAF's own answer as well;
  // the second answer finds no waiter.)
  //
  // Whatever the proxy died of: a lost link, or the remote actor's own end
  // (a node stopping, in a controlled shutdown too). In the second case
  // its node bounces what it had queued, but a request still on the wire
  // when the process exits is answered by nobody; the first answer wins,
  // a later one finds no waiter.
  void actor_exited(const caf::error&, caf::execution_unit* host) override {
    auto requester = caf::actor_cast<caf::strong_actor_ptr>(requester_);
    if (!requester)
      return;
    auto* self = caf::actor_cast<caf::abstract_actor*>(requester);
    self->home_system().clock().cancel_request_timeout(self, response_id_);
    requester->enqueue(
      caf::make_mailbox_element(nullptr, response_id_, {},
                                caf::make_error(caf::sec::request_receiver_down,
                                                "lost the connection to the receiver's node")),
      host);
  }

  bool matches(const token& what) override {
    return what.subtype == watch_token_type && what.ptr == this;
  }

private:
  caf::weak_actor_ptr requester_;
  caf::message_id response_id_;
};

} // namespace

lost_connection_watch::lost_connection_watch(const caf::strong_actor_ptr& requester,
                                             caf::message_id request,
                                             const caf::strong_actor_ptr& receiver) {
  if (!requester || !receiver || receiver->node() == requester->node())
    return;
  // request() hands out the id its response will carry.
  auto response_id = request.is_response() ? request : request.response_id();
  auto att = std::make_unique<watch_attachable>(caf::actor_cast<caf::weak_actor_ptr>(requester),
                                                response_id);
  token_ = att.get();
  receiver_ = receiver;
  receiver_->get()->attach(std::move(att));
}

lost_connection_watch::~lost_connection_watch() {
  release();
}

lost_connection_watch::lost_connection_watch(lost_connection_watch&& other) noexcept
  : receiver_(std::move(other.receiver_)), token_(other.token_) {
  other.token_ = nullptr;
}

lost_connection_watch& lost_connection_watch::operator=(lost_connection_watch&& other) noexcept {
  if (this != &other) {
    release();
    receiver_ = std::move(other.receiver_);
    token_ = other.token_;
    other.token_ = nullptr;
  }
  return *this;
}

void lost_connection_watch::release() {
  if (receiver_) {
    // Nothing is found when the proxy has died: its attachables ran and
    // are gone.
    receiver_->get()->detach(caf::attachable::token{watch_token_type, token_});
    receiver_ = nullptr;
  }
  token_ = nullptr;
}

} // namespace caftx
