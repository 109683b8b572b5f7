#include "actors/broker/network_drill.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/message_view.hpp>
#include <caf/scheduled_actor.hpp>
#include <caf/send.hpp>

#include <csignal>
#include <cstdio>
#include <unistd.h>

#include "runtime/broker_messages.hpp"
#include "runtime/coordination_messages.hpp"

namespace caftx {

void network_cuts::cut(int32_t peer) {
  std::lock_guard<std::mutex> guard{mtx_};
  cut_.insert(peer);
}

void network_cuts::heal(int32_t peer) {
  std::lock_guard<std::mutex> guard{mtx_};
  cut_.erase(peer);
}

std::vector<int32_t> network_cuts::cut_peers() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return {cut_.begin(), cut_.end()};
}

bool network_cuts::is_cut(int32_t peer) const {
  std::lock_guard<std::mutex> guard{mtx_};
  return cut_.count(peer) > 0;
}

void network_cuts::learn(const caf::node_id& process, int32_t peer) {
  if (process == caf::node_id{})
    return;
  std::lock_guard<std::mutex> guard{mtx_};
  peer_of_[process] = peer;
}

bool network_cuts::drops(const caf::node_id& process) const {
  std::lock_guard<std::mutex> guard{mtx_};
  if (cut_.empty())
    return false;
  auto i = peer_of_.find(process);
  return i != peer_of_.end() && cut_.count(i->second) > 0;
}

void network_cuts::set_store(caf::actor store) {
  bool cut;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    store_ = store;
    cut = zookeeper_cut_;
  }
  if (cut && store)
    caf::anon_send(store, zookeeper_drill_cut_atom::value, true);
}

void network_cuts::cut_zookeeper(bool cut) {
  caf::actor store;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    zookeeper_cut_ = cut;
    store = store_;
  }
  if (store)
    caf::anon_send(store, zookeeper_drill_cut_atom::value, cut);
}

bool network_cuts::zookeeper_cut() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return zookeeper_cut_;
}

void fault_drills::arm(const drill_fault_request& req) {
  std::lock_guard<std::mutex> guard{mtx_};
  armed_[req.point] = req;
}

void fault_drills::disarm(const std::string& point) {
  std::lock_guard<std::mutex> guard{mtx_};
  armed_.erase(point);
}

fault::action fault_drills::on_hit(const char* point, const void* detail) {
  bool kill_node = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    auto i = armed_.find(point);
    if (i == armed_.end())
      return fault::action::proceed;
    auto& d = i->second;
    auto* a = static_cast<const fault::append_detail*>(detail);
    bool filtered = !d.topic.empty() || d.partition >= 0 || d.control_only;
    if (filtered
        && (a == nullptr || (!d.topic.empty() && a->tp.topic != d.topic)
            || (d.partition >= 0 && a->tp.partition != d.partition) || (d.control_only && !a->control)))
      return fault::action::proceed;
    kill_node = d.kill_node;
    armed_.erase(i);
  }
  if (kill_node) {
    std::fflush(nullptr);
    ::kill(::getpid(), SIGKILL); // as a SIGKILL at this instant: nothing after it runs
  }
  return fault::action::crash_here;
}

void install_fault_drills(std::shared_ptr<fault_drills> drills) {
  fault::set_handler([drills](const char* point, const void* detail) {
    return drills->on_hit(point, detail);
  });
}

namespace {

using gate_idle_atom = caf::atom_constant<caf::atom("gateidle")>;

caf::behavior gate_fn(caf::event_based_actor* self, std::shared_ptr<const network_cuts> cuts,
                      caf::actor target) {
  self->monitor(target);
  self->set_down_handler([self](caf::down_msg& m) { self->quit(m.reason); });
  self->set_default_handler(
    [cuts, target](caf::scheduled_actor* s, caf::message_view& x) -> caf::result<caf::message> {
      // The sender first: making the promise takes it over.
      auto* e = s->current_mailbox_element();
      caf::strong_actor_ptr sender = e ? e->sender : nullptr;
      auto rp = s->make_response_promise();
      // Drill requests themselves pass (a peer's heal must get through).
      if (sender && cuts->drops(sender->node())
          && !x.content().match_elements<drill_network_request>())
        return caf::delegated<caf::message>{}; // lost: no answer, the sender times out
      rp.delegate(target, x.move_content_to_message());
      return caf::delegated<caf::message>{};
    });
  return {[](gate_idle_atom) {}}; // every other message takes the default handler
}

} // namespace

caf::actor spawn_drill_gate(caf::actor_system& sys, std::shared_ptr<const network_cuts> cuts,
                            caf::actor target) {
  return sys.spawn(gate_fn, std::move(cuts), std::move(target));
}

} // namespace caftx
