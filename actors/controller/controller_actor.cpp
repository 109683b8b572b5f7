#include "actors/controller/controller_actor.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <set>
#include <vector>

#include "actors/controller/controller_core.hpp"
#include "actors/controller/controller_election.hpp"
#include "actors/controller/producer_id_block.hpp"
#include "actors/controller/znodes.hpp"
#include "runtime/controller_messages.hpp"
#include "runtime/coordination_messages.hpp"
#include "runtime/broker_messages.hpp"

namespace caftx {

namespace {

using namespace controller;

// Store requests get an answer from the store itself, whatever happens to
// its session; the timeout only guards against a store that died.
constexpr auto store_timeout = std::chrono::seconds(60);

// A read lost with the connection is tried again after this long, for as
// long as the session lives (Kafka's KafkaZkClient retries its requests
// until connected; only the session's expiry ends them).
constexpr auto read_retry_delay = std::chrono::milliseconds(200);

// How often StopReplica with delete goes again to replicas of a topic
// being deleted that have not confirmed (a request or its answer lost with
// a connection).
constexpr auto deletion_retry_interval = std::chrono::seconds(3);

struct controller_state {
  controller_options opts;
  caf::actor store;
  int64_t session_id = 0;
  bool connected = false;
  // Registration: the node epoch of the current session (-1: none yet).
  int64_t node_epoch = -1;
  // Election and role.
  std::unique_ptr<controller_election> election;
  std::unique_ptr<controller_core> core;
  // Bumped whenever the role or the session changes: a continuation of an
  // older generation completes nothing.
  uint64_t generation = 0;
  // Requests to nodes held while the session is connecting.
  std::vector<std::pair<outbound_request, endpoint>> held;
  // Producer id block claims waiting to be tried again.
  struct pid_retry {
    caf::typed_response_promise<producer_id_block_response> rp;
    int attempt = 0;
    std::optional<producer_id_claim> claim;
  };
  std::vector<pid_retry> pid_retries;
  // One claim at a time from this node: the shards of a node starting
  // together would otherwise each lose the conditional write to another
  // until their attempts ran out.
  bool pid_claiming = false;
  std::deque<caf::typed_response_promise<producer_id_block_response>> pid_queued;
  // When a /nodes/<id> of another session was first seen (-1: not now).
  int64_t foreign_since_ms = -1;
  // A /nodes change seen while no core ran (becoming controller).
  bool nodes_changed = false;
  // Store reads to try again (a connection loss), in order, each after
  // read_retry_delay.
  std::deque<std::function<void()>> read_retries;
  // CreateTopics waiting for the core's answer, by topic name.
  std::map<std::string, std::vector<caf::typed_response_promise<txn_response>>> creating;
  // DeleteTopics waiting for the deletion to complete, by topic name.
  std::map<std::string, std::vector<caf::typed_response_promise<txn_response>>> deleting;
  // CreatePartitions waiting for the core's answer, by topic name, in the
  // order the core answers them (controller_core::create_partitions), each
  // with whether it only validates.
  std::map<std::string, std::deque<std::pair<caf::typed_response_promise<txn_response>, bool>>>
    growing;
  // The generation whose StopReplica retry timer runs (0: none).
  uint64_t deletion_retry_generation = 0;
  // ControlledShutdown requests waiting for the core's answer, by node.
  std::map<node_id, std::vector<caf::typed_response_promise<controlled_shutdown_response>>>
    shutting_down;
  // AlterIsr requests waiting for the core's answer, each by its own
  // handle (alter_isr_proposal::request): two proposals for one partition
  // (a retry, a restarted leader's confirmation) get their own answers.
  std::map<uint64_t, caf::typed_response_promise<alter_isr_response>> altering;
  uint64_t next_alter_isr = 1;
  static inline const char* name = "caftx.controller";
};

using ctl_ptr = controller_impl_actor::stateful_pointer<controller_state>;

write_outcome outcome_of(zrc rc) {
  switch (rc) {
    case zrc::ZOK: return write_outcome::ok;
    case zrc::ZBADVERSION: return write_outcome::bad_version;
    case zrc::ZNONODE: return write_outcome::no_node;
    case zrc::ZNODEEXISTS: return write_outcome::node_exists;
    default: return write_outcome::connection_loss; // unknown outcome
  }
}

coord_op to_coord(const store_op& op) {
  switch (op.kind) {
    case op_kind::create: return coord_op::create_node(op.path, op.data);
    case op_kind::create_ephemeral: return coord_op::create_node(op.path, op.data, znode_ephemeral);
    case op_kind::set: return coord_op::set_data(op.path, op.data, op.expected_version);
    case op_kind::check: return coord_op::check_version(op.path, op.expected_version);
    case op_kind::remove: return coord_op::remove_node(op.path, op.expected_version);
  }
  return coord_op::check_version(op.path, op.expected_version);
}

// Performs `w` as one multi; `then` gets the core's write_result.
void perform(ctl_ptr self, const store_write& w, std::function<void(const write_result&)> then) {
  coord_multi_request req;
  for (auto& op : w.ops)
    req.ops.push_back(to_coord(op));
  auto id = w.id;
  auto n = w.ops.size();
  self->request(self->state.store, store_timeout, std::move(req))
    .then(
      [then, id, n](coord_multi_response& r) {
        write_result out;
        out.id = id;
        out.outcome = outcome_of(r.rc);
        if (out.outcome == write_outcome::ok || out.outcome == write_outcome::connection_loss) {
          if (out.outcome == write_outcome::ok)
            for (auto& res : r.results)
              out.versions.push_back(res.rc == zrc::ZOK ? res.stat.version : -1);
        } else {
          for (size_t i = 0; i < r.results.size(); ++i)
            if (r.results[i].rc != zrc::ZOK) {
              out.failed_op = i;
              break;
            }
        }
        if (out.outcome == write_outcome::ok && out.versions.size() != n)
          out.versions.resize(n, -1);
        then(out);
      },
      [then, id](caf::error&) {
        write_result out;
        out.id = id;
        out.outcome = write_outcome::connection_loss;
        then(out);
      });
}

void elect(ctl_ptr self);
void run(ctl_ptr self, controller_decision d);

// Runs `read` again after read_retry_delay if the generation is still
// `gen` (neither the role nor the session changed meanwhile).
void retry_read(ctl_ptr self, uint64_t gen, std::function<void()> read) {
  self->state.read_retries.push_back([self, gen, read = std::move(read)] {
    if (self->state.generation == gen)
      read();
  });
  self->delayed_send(self, read_retry_delay, controller_read_retry_atom::value);
}

void send_now(controller_state& st, const outbound_request& r, const endpoint& ep) {
  if (st.opts.send_to)
    st.opts.send_to(r, ep);
  else if (st.opts.send)
    st.opts.send(r);
}

void deliver(ctl_ptr self, const outbound_request& r) {
  auto& st = self->state;
  endpoint ep;
  if (st.core)
    if (auto i = st.core->live_nodes().find(r.target); i != st.core->live_nodes().end())
      ep = i->second.ep;
  if (!st.connected) {
    st.held.emplace_back(r, ep);
    return;
  }
  send_now(st, r, ep);
}

using topic_waiters =
  std::map<std::string, std::vector<caf::typed_response_promise<txn_response>>>;

// Answers the CreateTopics or DeleteTopics waiting for `result`'s topic.
void answer_waiters(topic_waiters& waiting, const create_topic_result& result) {
  auto i = waiting.find(result.name);
  if (i == waiting.end())
    return;
  for (auto& rp : i->second)
    rp.deliver(txn_response{result.result.code(), result.result.message()});
  waiting.erase(i);
}

void resign(ctl_ptr self, const std::string& why) {
  auto& st = self->state;
  if (!st.core)
    return;
  st.core.reset();
  txn_response resigned{error_code::not_controller,
                        "node " + std::to_string(st.opts.node_id)
                          + " stopped being the controller: " + why};
  for (auto* waiting : {&st.creating, &st.deleting})
    for (auto& [name, promises] : std::exchange(*waiting, {}))
      for (auto& rp : promises)
        rp.deliver(resigned);
  for (auto& [name, promises] : std::exchange(st.growing, {}))
    for (auto& p : promises)
      p.first.deliver(resigned);
  for (auto& [id, waiting] : std::exchange(st.shutting_down, {}))
    for (auto& rp : waiting)
      rp.deliver(controlled_shutdown_response{error_code::not_controller,
                                              "node " + std::to_string(st.opts.node_id)
                                                + " stopped being the controller: " + why,
                                              {}});
  for (auto& [request, rp] : std::exchange(st.altering, {}))
    rp.deliver(alter_isr_response{error_code::not_controller,
                                  "node " + std::to_string(st.opts.node_id)
                                    + " stopped being the controller: " + why,
                                  -1, {}, -1});
  ++st.generation;
  if (st.opts.events.resigned)
    st.opts.events.resigned(why);
}

// Executes a decision of the core: writes and rereads answered back into
// the core, requests delivered; a resigned core goes back to the election.
void reread_state(ctl_ptr self, uint64_t gen, const topic_partition& tp);

void run(ctl_ptr self, controller_decision d) {
  auto& st = self->state;
  if (!st.core)
    return;
  auto gen = st.generation;
  for (auto& r : d.requests)
    deliver(self, r);
  for (auto& c : d.created_topics) {
    if (c.result.ok() && st.opts.events.topic_created)
      if (auto* t = st.core->topic(c.name))
        st.opts.events.topic_created(*t);
    answer_waiters(st.creating, c);
  }
  for (auto& c : d.deleted_topics) {
    if (c.result.ok() && st.opts.events.topic_deleted)
      st.opts.events.topic_deleted(c.name);
    answer_waiters(st.deleting, c);
  }
  for (auto& c : d.created_partitions) {
    auto i = st.growing.find(c.name);
    if (i == st.growing.end() || i->second.empty())
      continue;
    auto [rp, validate_only] = std::move(i->second.front());
    i->second.pop_front();
    if (c.result.ok() && !validate_only && st.opts.events.partitions_added)
      if (auto* t = st.core->topic(c.name))
        st.opts.events.partitions_added(*t);
    rp.deliver(txn_response{c.result.code(), c.result.message()});
    if (i->second.empty())
      st.growing.erase(i);
  }
  for (auto& c : d.shutdowns) {
    auto i = st.shutting_down.find(c.node);
    if (i == st.shutting_down.end())
      continue;
    if (st.opts.events.controlled_shutdown)
      st.opts.events.controlled_shutdown(c.node, c.result, c.remaining.size());
    for (auto& rp : i->second)
      rp.deliver(controlled_shutdown_response{c.result.code(), c.result.message(), c.remaining});
    st.shutting_down.erase(i);
  }
  for (auto& c : d.isr_changes) {
    auto i = st.altering.find(c.request);
    if (i == st.altering.end())
      continue;
    i->second.deliver(alter_isr_response{c.result.code(), c.result.message(),
                                         c.state.leader_epoch, c.state.isr,
                                         c.state.partition_epoch});
    st.altering.erase(i);
  }
  if (d.resigned) {
    resign(self, d.resigned_because.empty() ? "a newer controller wrote to the store"
                                            : d.resigned_because);
    elect(self);
    return;
  }
  for (auto& w : d.writes)
    perform(self, w, [self, gen](const write_result& r) {
      auto& st = self->state;
      if (st.generation != gen || !st.core)
        return;
      run(self, st.core->on_write_result(r));
    });
  for (auto& tp : d.rereads)
    reread_state(self, gen, tp);
  // While a deletion waits for replicas, StopReplica is sent again now and
  // then to those that have not confirmed (one timer per controllership).
  if (st.core && st.core->deletions_pending() && st.deletion_retry_generation != gen) {
    st.deletion_retry_generation = gen;
    self->delayed_send(self, deletion_retry_interval, controller_deletion_retry_atom::value, gen);
  }
}

// Reads a partition's state again for the core (after a write whose
// outcome is unknown or that lost on its version); a read lost with the
// connection is tried again until it is answered or the session ends.
void reread_state(ctl_ptr self, uint64_t gen, const topic_partition& tp) {
  auto again = [self, gen, tp] {
    retry_read(self, gen, [self, gen, tp] { reread_state(self, gen, tp); });
  };
  self->request(self->state.store, store_timeout,
                coord_get_request{partition_state_path(tp), false})
    .then(
      [self, gen, tp, again](coord_get_response& r) {
        auto& st = self->state;
        if (st.generation != gen || !st.core)
          return;
        if (r.rc == zrc::ZOK)
          run(self, st.core->on_state_read(tp, r.data, r.stat.version));
        else if (r.rc == zrc::ZNONODE)
          run(self, st.core->on_state_read(tp, std::nullopt, -1));
        else
          again();
      },
      [again](caf::error&) { again(); });
}

// Reads the whole cluster state (Kafka's initializeControllerContext) and
// hands it to the new core. `then` gets the snapshot or nullopt when a read
// failed (the election is tried again).
void read_snapshot(ctl_ptr self, std::function<void(std::optional<cluster_snapshot>)> then);

// The /nodes children with their registrations and czxids.
void read_live_nodes(ctl_ptr self, bool watch,
                     std::function<void(std::optional<std::vector<live_node>>)> then) {
  auto& st = self->state;
  self->request(st.store, store_timeout, coord_get_children_request{nodes_path, watch})
    .then(
      [self, then](coord_children_response& r) {
        if (r.rc != zrc::ZOK) {
          then(std::nullopt);
          return;
        }
        auto nodes = std::make_shared<std::vector<live_node>>();
        auto left = std::make_shared<size_t>(r.children.size());
        auto failed = std::make_shared<bool>(false);
        if (r.children.empty()) {
          then(*nodes);
          return;
        }
        for (auto& child : r.children) {
          auto id = static_cast<node_id>(std::strtol(child.c_str(), nullptr, 10));
          auto path = nodes_path + "/" + child;
          self->request(self->state.store, store_timeout, coord_get_request{path, false})
            .then(
              [=](coord_get_response& g) {
                if (g.rc == zrc::ZOK) {
                  auto reg = decode_node(path, g.data);
                  if (reg.ok())
                    nodes->push_back(to_live_node(id, g.stat.czxid, *reg));
                } // ZNONODE: gone between the two reads; the next watch tells
                else if (g.rc != zrc::ZNONODE)
                  *failed = true;
                if (--*left == 0)
                  then(*failed ? std::nullopt : std::make_optional(*nodes));
              },
              [=](caf::error&) {
                *failed = true;
                if (--*left == 0)
                  then(std::nullopt);
              });
        }
      },
      [then](caf::error&) { then(std::nullopt); });
}

void read_topics(ctl_ptr self, std::shared_ptr<cluster_snapshot> snap,
                 std::function<void(std::optional<cluster_snapshot>)> then);
void read_topic_states(ctl_ptr self, std::shared_ptr<cluster_snapshot> snap,
                       std::function<void(std::optional<cluster_snapshot>)> then);

void read_snapshot(ctl_ptr self, std::function<void(std::optional<cluster_snapshot>)> then) {
  read_live_nodes(self, true, [self, then](std::optional<std::vector<live_node>> nodes) {
    if (!nodes) {
      then(std::nullopt);
      return;
    }
    auto snap = std::make_shared<cluster_snapshot>();
    snap->live_nodes = std::move(*nodes);
    read_topics(self, snap, then);
  });
}

// The topics marked for deletion, then every topic with its partition
// states, into `snap`.
void read_topics(ctl_ptr self, std::shared_ptr<cluster_snapshot> snap,
                 std::function<void(std::optional<cluster_snapshot>)> then) {
  self->request(self->state.store, store_timeout, coord_get_children_request{delete_topics_path, false})
    .then(
      [self, snap, then](coord_children_response& r) {
        if (r.rc != zrc::ZOK && r.rc != zrc::ZNONODE) {
          then(std::nullopt);
          return;
        }
        snap->deleting.insert(r.children.begin(), r.children.end());
        read_topic_states(self, snap, then);
      },
      [then](caf::error&) { then(std::nullopt); });
}

void read_topic_states(ctl_ptr self, std::shared_ptr<cluster_snapshot> snap,
                       std::function<void(std::optional<cluster_snapshot>)> then) {
  self->request(self->state.store, store_timeout, coord_get_children_request{topics_path, false})
    .then(
      [self, then, snap](coord_children_response& r) {
        if (r.rc == zrc::ZNONODE || (r.rc == zrc::ZOK && r.children.empty())) {
          then(*snap);
          return;
        }
        if (r.rc != zrc::ZOK) {
          then(std::nullopt);
          return;
        }
        // Topics, then each topic's partition states.
        auto left = std::make_shared<size_t>(r.children.size());
        auto failed = std::make_shared<bool>(false);
        auto done_one = [then, snap, left, failed] {
          if (--*left == 0)
            then(*failed ? std::nullopt : std::make_optional(*snap));
        };
        for (auto& name : r.children) {
          self->request(self->state.store, store_timeout,
                        coord_get_request{topic_path(name), false})
            .then(
              [self, snap, failed, left, done_one, name](coord_get_response& g) {
                auto t = g.rc == zrc::ZOK ? decode_topic(name, g.data)
                                          : status_or<topic_assignment>{status{
                                            error_code::unknown_server_error, to_string(g.rc)}};
                if (!t.ok()) {
                  *failed = true;
                  done_one();
                  return;
                }
                snap->topics.push_back(*t);
                auto parts = t->partitions.size();
                if (parts == 0) {
                  done_one();
                  return;
                }
                auto pleft = std::make_shared<size_t>(parts);
                for (auto& [p, _] : t->partitions) {
                  topic_partition tp{name, p};
                  auto path = partition_state_path(tp);
                  self->request(self->state.store, store_timeout, coord_get_request{path, false})
                    .then(
                      [snap, failed, pleft, done_one, tp, path](coord_get_response& s) {
                        if (s.rc == zrc::ZOK) {
                          auto ps = decode_partition_state(path, s.data, s.stat.version);
                          if (ps.ok())
                            snap->states[tp] = *ps;
                          else
                            *failed = true;
                        } else if (s.rc != zrc::ZNONODE) {
                          *failed = true;
                        }
                        if (--*pleft == 0)
                          done_one();
                      },
                      [failed, pleft, done_one](caf::error&) {
                        *failed = true;
                        if (--*pleft == 0)
                          done_one();
                      });
                }
              },
              [failed, done_one](caf::error&) {
                *failed = true;
                done_one();
              });
        }
      },
      [then](caf::error&) { then(std::nullopt); });
}

void on_nodes_changed(ctl_ptr self);

void become_controller(ctl_ptr self, const controller_identity& me) {
  auto& st = self->state;
  ++st.generation;
  st.nodes_changed = false;
  auto gen = st.generation;
  read_snapshot(self, [self, me, gen](std::optional<cluster_snapshot> snap) {
    auto& st = self->state;
    if (st.generation != gen)
      return;
    if (!snap) {
      // The state could not be read (session trouble): the next session
      // elects again; if it stays connected, try the read again.
      self->delayed_send(self, std::chrono::seconds(1), controller_reelect_atom::value);
      return;
    }
    st.core = std::make_unique<controller_core>(me);
    if (st.opts.events.elected)
      st.opts.events.elected(me.epoch);
    // Kafka's onControllerFailover schedules the auto leader rebalance
    // task (its first run after the interval).
    if (st.opts.auto_leader_rebalance)
      self->delayed_send(self, std::chrono::milliseconds(st.opts.leader_imbalance_check_interval_ms),
                         controller_rebalance_atom::value, st.generation);
    run(self, st.core->on_become_controller(std::move(*snap)));
    if (std::exchange(st.nodes_changed, false) && st.core)
      on_nodes_changed(self);
  });
}

// One election step after another (controller_election.hpp).
void take_step(ctl_ptr self, controller::election_step step, uint64_t gen);

// An election step whose read or write was lost with the connection: the
// election starts over in a second, unless the role or the session changed
// meanwhile (a new session registers and elects anyway). Giving up here
// would leave the election pending for good: elect() does nothing while
// one is.
void retry_election(ctl_ptr self, uint64_t gen) {
  if (self->state.generation == gen)
    self->delayed_send(self, std::chrono::seconds(1), controller_reelect_atom::value);
}

void read_for_election(ctl_ptr self, uint64_t gen) {
  auto& st = self->state;
  // get with watch on /controller: a watch on an existing znode tells its
  // deletion; exists with watch also covers an absent one.
  self->request(st.store, store_timeout, coord_exists_request{controller_path, true})
    .then(
      [self, gen](coord_stat_response& ex) {
        auto& st = self->state;
        if (st.generation != gen)
          return;
        auto with_epoch = [self, gen](std::optional<node_id> current) {
          self->request(self->state.store, store_timeout,
                        coord_get_request{controller_epoch_path, false})
            .then(
              [self, gen, current](coord_get_response& e) {
                auto& st = self->state;
                if (st.generation != gen || !st.election)
                  return;
                if (e.rc != zrc::ZOK) {
                  retry_election(self, gen);
                  return;
                }
                take_step(self, st.election->on_read(current, e.data, e.stat.version), gen);
              },
              [self, gen](caf::error&) { retry_election(self, gen); });
        };
        if (ex.rc == zrc::ZNONODE) {
          with_epoch(std::nullopt);
          return;
        }
        if (ex.rc != zrc::ZOK) {
          retry_election(self, gen);
          return;
        }
        self->request(st.store, store_timeout, coord_get_request{controller_path, false})
          .then(
            [self, gen, with_epoch](coord_get_response& g) {
              if (self->state.generation != gen)
                return;
              if (g.rc == zrc::ZNONODE) {
                with_epoch(std::nullopt);
                return;
              }
              if (g.rc != zrc::ZOK) {
                retry_election(self, gen);
                return;
              }
              auto id = decode_controller(g.data);
              with_epoch(id.ok() ? std::make_optional(*id) : std::make_optional(node_id{-1}));
            },
            [self, gen](caf::error&) { retry_election(self, gen); });
      },
      [self, gen](caf::error&) { retry_election(self, gen); });
}

void take_step(ctl_ptr self, controller::election_step step, uint64_t gen) {
  auto& st = self->state;
  switch (step.outcome) {
    case election_outcome::write:
      perform(self, *step.write, [self, gen](const write_result& r) {
        auto& st = self->state;
        if (st.generation != gen || !st.election)
          return;
        take_step(self, st.election->on_result(r), gen);
      });
      return;
    case election_outcome::reread:
      read_for_election(self, gen);
      return;
    case election_outcome::won:
      become_controller(self, *st.election->identity());
      st.election.reset();
      return;
    case election_outcome::lost:
      if (step.write)
        perform(self, *step.write, [](const write_result&) {});
      st.election.reset();
      // The /controller watch set while reading calls the next election.
      return;
  }
}

void elect(ctl_ptr self) {
  auto& st = self->state;
  if (!st.connected || st.node_epoch < 0 || st.core || st.election)
    return;
  ++st.generation;
  auto gen = st.generation;
  st.election = std::make_unique<controller_election>(st.opts.node_id, st.opts.clock_ms());
  perform(self, st.election->ensure_epoch_znode(), [self, gen](const write_result& r) {
    if (self->state.generation != gen)
      return;
    if (r.outcome == write_outcome::ok || r.outcome == write_outcome::node_exists)
      read_for_election(self, gen);
    else
      retry_election(self, gen);
  });
}

// Creates a persistent znode if missing (NODEEXISTS is fine).
void ensure_path(ctl_ptr self, const std::string& path, std::function<void(bool)> then) {
  self->request(self->state.store, store_timeout, coord_create_request{path, {}, znode_persistent})
    .then([then](coord_create_response& r) { then(r.rc == zrc::ZOK || r.rc == zrc::ZNODEEXISTS); },
          [then](caf::error&) { then(false); });
}

// Registers /nodes/<id> for the current session (Kafka's
// registerBroker): the czxid is the node epoch. A znode of our own session
// (a retried create) is ours; one of another session is another live
// node with this id.
void register_node_znode(ctl_ptr self);

void register_node(ctl_ptr self) {
  auto& st = self->state;
  if (st.opts.cluster_id.empty()) {
    register_node_znode(self);
    return;
  }
  auto session = st.session_id;
  auto check = [self, session](const std::string& stored) {
    auto& st = self->state;
    if (st.session_id != session)
      return;
    if (stored == st.opts.cluster_id) {
      register_node_znode(self);
      return;
    }
    if (st.opts.events.fatal)
      st.opts.events.fatal(
        {error_code::inconsistent_cluster_id,
         "The Cluster ID " + st.opts.cluster_id + " doesn't match stored clusterId " + stored
           + " in " + cluster_id_path
           + ". The node is trying to join the wrong cluster: check zookeeper.connect "
             "(and its chroot) and caftx.cluster.id."});
  };
  self->request(st.store, store_timeout, coord_get_request{cluster_id_path, false})
    .then(
      [self, session, check](coord_get_response& g) {
        auto& st = self->state;
        if (g.rc == zrc::ZOK) {
          auto id = decode_cluster_id(g.data);
          check(id.ok() ? *id : g.data);
          return;
        }
        if (g.rc != zrc::ZNONODE)
          return; // session trouble: the next connected event registers
        auto id = st.opts.cluster_id;
        self->request(st.store, store_timeout,
                      coord_create_request{cluster_id_path, encode_cluster_id(id), znode_persistent})
          .then(
            [self](coord_create_response& r) {
              if (r.rc == zrc::ZOK || r.rc == zrc::ZNODEEXISTS)
                register_node(self); // read it back: another node may have been first
            },
            [](caf::error&) {});
      },
      [](caf::error&) {});
}

void register_node_znode(ctl_ptr self) {
  auto& st = self->state;
  auto session = st.session_id;
  ensure_path(self, nodes_path, [self, session](bool ok) {
    auto& st = self->state;
    if (!ok || st.session_id != session)
      return; // session trouble: the next connected event registers
    ensure_path(self, topics_path, [](bool) {});
    ensure_path(self, delete_topics_path, [](bool) {});
    node_registration reg{st.opts.advertised, st.opts.rack, st.opts.build, st.opts.clock_ms(),
                          st.opts.kafka_advertised};
    auto path = node_path(st.opts.node_id);
    auto registered = [self, session](int64_t epoch) {
      auto& st = self->state;
      if (st.session_id != session || st.node_epoch >= 0)
        return; // another session's, or registered by an earlier attempt
      st.foreign_since_ms = -1;
      st.node_epoch = epoch;
      if (st.opts.events.registered)
        st.opts.events.registered(epoch);
      elect(self);
    };
    self->request(st.store, store_timeout,
                  coord_create_request{path, encode_node(reg), znode_ephemeral})
      .then(
        [self, session, path, registered](coord_create_response& r) {
          auto& st = self->state;
          if (r.rc == zrc::ZOK) {
            registered(r.stat.czxid);
            return;
          }
          if (r.rc != zrc::ZNODEEXISTS)
            return; // connection trouble: registered again on the next session event
          self->request(st.store, store_timeout, coord_get_request{path, false})
            .then(
              [self, session, path, registered](coord_get_response& g) {
                auto& st = self->state;
                if (g.rc == zrc::ZOK && g.stat.ephemeral_owner == session) {
                  registered(g.stat.czxid);
                } else if (g.rc == zrc::ZOK) {
                  auto now = st.opts.clock_ms();
                  if (st.foreign_since_ms < 0)
                    st.foreign_since_ms = now;
                  if (now - st.foreign_since_ms < st.opts.duplicate_wait_ms) {
                    // Perhaps our own earlier life's: it goes with its session.
                    self->delayed_send(self, std::chrono::milliseconds(250),
                                       controller_register_atom::value, session);
                    return;
                  }
                  if (st.opts.events.fatal)
                    st.opts.events.fatal(
                      {error_code::invalid_config,
                       "node.id " + std::to_string(st.opts.node_id)
                         + " is already registered by another live node (" + path
                         + ", session " + std::to_string(g.stat.ephemeral_owner) + ")"});
                } else if (g.rc == zrc::ZNONODE) {
                  register_node_znode(self); // its session ended meanwhile
                }
              },
              [](caf::error&) {});
        },
        [](caf::error&) {});
  });
}

// Watches /controller for its deletion (after it was created or
// changed); gone already: an election. Until the watch is set, a lost
// read is tried again, or a controller's death would go unseen.
void watch_controller(ctl_ptr self) {
  auto gen = self->state.generation;
  self->request(self->state.store, store_timeout, coord_exists_request{controller_path, true})
    .then(
      [self, gen](coord_stat_response& r) {
        if (r.rc == zrc::ZNONODE)
          elect(self);
        else if (r.rc != zrc::ZOK)
          retry_read(self, gen, [self] { watch_controller(self); });
      },
      [self, gen](caf::error&) { retry_read(self, gen, [self] { watch_controller(self); }); });
}

void on_nodes_changed(ctl_ptr self) {
  auto gen = self->state.generation;
  read_live_nodes(self, true, [self, gen](std::optional<std::vector<live_node>> nodes) {
    auto& st = self->state;
    if (st.generation != gen || !st.core)
      return;
    if (!nodes) {
      // Lost with the connection: the change is still to be seen (the
      // watch set by this read, if it was set, fires only for the next).
      retry_read(self, gen, [self] { on_nodes_changed(self); });
      return;
    }
    run(self, st.core->on_nodes_changed(*nodes));
  });
}

// Claims the next producer id block (Kafka's ZooKeeper-mode
// ProducerIdManager.getNewProducerIdBlock): read /producer_id_block,
// write the claim conditionally on the version read; BADVERSION or
// NODEEXISTS (another node claimed first) reads again; a connection loss
// reads again and keeps the claim if the znode holds exactly it.
void claim_pid_block(ctl_ptr self, caf::typed_response_promise<producer_id_block_response> rp,
                     int attempt, std::optional<producer_id_claim> unsure = std::nullopt);

// Answers a claim and starts the next queued one.
void claim_done(ctl_ptr self, caf::typed_response_promise<producer_id_block_response> rp,
                producer_id_block_response r) {
  rp.deliver(std::move(r));
  auto& st = self->state;
  st.pid_claiming = false;
  if (st.pid_queued.empty())
    return;
  auto next = std::move(st.pid_queued.front());
  st.pid_queued.pop_front();
  st.pid_claiming = true;
  claim_pid_block(self, std::move(next), 0);
}

void claim_pid_block(ctl_ptr self, caf::typed_response_promise<producer_id_block_response> rp,
                     int attempt, std::optional<producer_id_claim> unsure) {
  if (attempt >= 20) {
    claim_done(self, rp, producer_id_block_response{error_code::request_timed_out,
                                          "could not claim a producer id block in "
                                            + producer_id_block_path + " after 20 attempts",
                                          -1, -1});
    return;
  }
  auto retry_later = [self, rp, attempt](std::optional<producer_id_claim> claim) mutable {
    self->delayed_send(self, std::chrono::milliseconds(100 * (attempt + 1)),
                       controller_pid_retry_atom::value);
    // The retry message carries no closure: keep it here.
    self->state.pid_retries.push_back({rp, attempt + 1, std::move(claim)});
  };
  self->request(self->state.store, store_timeout, coord_get_request{producer_id_block_path, false})
    .then(
      [self, rp, attempt, unsure, retry_later](coord_get_response& g) mutable {
        if (g.rc != zrc::ZOK && g.rc != zrc::ZNONODE) {
          retry_later(unsure);
          return;
        }
        if (unsure && g.rc == zrc::ZOK && claim_succeeded(*unsure, g.data)) {
          claim_done(self, rp,
                     producer_id_block_response{error_code::none, {}, unsure->block.block_start,
                                                unsure->block.block_end});
          return;
        }
        std::optional<versioned_data> current;
        if (g.rc == zrc::ZOK)
          current = versioned_data{g.data, g.stat.version};
        auto claim = claim_producer_id_block(current, self->state.opts.node_id);
        if (!claim.ok()) {
          claim_done(self, rp,
                     producer_id_block_response{claim.error().code(), claim.error().message(),
                                                -1, -1});
          return;
        }
        auto c = *claim;
        auto done = [self, rp, attempt, c, retry_later](zrc rc) mutable {
          if (rc == zrc::ZOK)
            claim_done(self, rp,
                       producer_id_block_response{error_code::none, {}, c.block.block_start,
                                                  c.block.block_end});
          else if (rc == zrc::ZBADVERSION || rc == zrc::ZNODEEXISTS)
            claim_pid_block(self, rp, attempt + 1);
          else
            retry_later(c); // outcome unknown: read again
        };
        if (c.op.kind == op_kind::create)
          self->request(self->state.store, store_timeout,
                        coord_create_request{c.op.path, c.op.data, znode_persistent})
            .then([done](coord_create_response& r) mutable { done(r.rc); },
                  [done](caf::error&) mutable { done(zrc::ZCONNECTIONLOSS); });
        else
          self->request(self->state.store, store_timeout,
                        coord_set_request{c.op.path, c.op.data, c.op.expected_version})
            .then([done](coord_stat_response& r) mutable { done(r.rc); },
                  [done](caf::error&) mutable { done(zrc::ZCONNECTIONLOSS); });
      },
      [retry_later, unsure](caf::error&) mutable { retry_later(unsure); });
}

controller_impl_actor::behavior_type controller_fn(ctl_ptr self, controller_options opts) {
  auto& st = self->state;
  st.opts = std::move(opts);
  if (!st.opts.random)
    st.opts.random = [](int32_t bound) {
      static thread_local std::mt19937 gen{std::random_device{}()};
      return std::uniform_int_distribution<int32_t>(0, bound - 1)(gen);
    };
  if (!st.opts.clock_ms)
    st.opts.clock_ms = [] {
      return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count());
    };
  st.store = st.opts.spawn_store(caf::actor_cast<caf::actor>(self));
  self->link_to(st.store);
  return {
    [=](const coord_session_event& e) {
      auto& st = self->state;
      if (st.opts.events.session)
        st.opts.events.session(e.state);
      switch (e.state) {
        case session_state::connected: {
          bool fresh = e.session_id != st.session_id;
          st.session_id = e.session_id;
          st.connected = true;
          if (st.opts.events.connected)
            st.opts.events.connected(e.session_id);
          for (auto& [r, ep] : std::exchange(st.held, {}))
            send_now(st, r, ep);
          // A new session registers; so does the same one back from a
          // lost connection that cut its registration short (a create or
          // read that failed, or the wait for a predecessor's znode), as
          // Kafka's registerBroker retries until connected.
          if (fresh)
            st.node_epoch = -1;
          if (st.node_epoch < 0) {
            register_node(self);
            return;
          }
          // Registered, the same session back: an election or a
          // becoming-controller cut short by the connection loss (its
          // retry found the session connecting) runs again; it may find
          // /controller ours already.
          if (!st.core)
            elect(self);
          return;
        }
        case session_state::connecting:
          st.connected = false;
          return;
        case session_state::expired:
        case session_state::closed:
          st.connected = false;
          st.held.clear();
          st.node_epoch = -1;
          st.election.reset();
          resign(self, "the coordination store session " + std::to_string(e.session_id)
                         + " " + to_string(e.state));
          ++st.generation;
          return;
      }
    },
    [=](const coord_watch_event& e) {
      auto& st = self->state;
      if (e.path == controller_path) {
        if (e.type == watch_event_type::deleted) {
          // The controller's session ended (ours too, if it was us).
          resign(self, "/controller was deleted");
          elect(self);
          return;
        }
        // Created or changed: watch on, for its deletion.
        watch_controller(self);
        return;
      }
      if (e.path == nodes_path && e.type == watch_event_type::child) {
        // Between the snapshot's read of /nodes (which set the watch) and
        // the new core, the change is kept for the core.
        if (st.core)
          on_nodes_changed(self);
        else
          st.nodes_changed = true;
        return;
      }
    },
    [=](const controller_create_topic_request& req) -> caf::result<txn_response> {
      auto& st = self->state;
      if (!st.core)
        return txn_response{error_code::not_controller,
                            "node " + std::to_string(st.opts.node_id) + " is not the controller"};
      // A second CreateTopics of a name whose creation is in flight: the
      // first one's znode is as good as written (Kafka's
      // TopicExistsException), and the core's answer to this one must not
      // reach the first one's caller.
      if (st.creating.count(req.name))
        return txn_response{error_code::topic_already_exists,
                            "topic " + req.name + " is being created"};
      // AdminUtils' random start index and replica shift over the live nodes.
      auto bound = std::max<int32_t>(1, static_cast<int32_t>(st.core->live_nodes().size()));
      controller::create_topic_request c{req.name,    req.partitions,      req.replication_factor,
                                         req.configs, st.opts.random(bound), st.opts.random(bound)};
      auto rp = self->make_response_promise<txn_response>();
      st.creating[req.name].push_back(rp);
      run(self, st.core->create_topic(c));
      return rp;
    },
    [=](const controller_delete_topic_request& req) -> caf::result<txn_response> {
      auto& st = self->state;
      if (!st.core)
        return txn_response{error_code::not_controller,
                            "node " + std::to_string(st.opts.node_id) + " is not the controller"};
      auto rp = self->make_response_promise<txn_response>();
      st.deleting[req.name].push_back(rp);
      run(self, st.core->delete_topic(req.name));
      return rp;
    },
    [=](const controller_create_partitions_request& req) -> caf::result<txn_response> {
      auto& st = self->state;
      if (!st.core)
        return txn_response{error_code::not_controller,
                            "node " + std::to_string(st.opts.node_id) + " is not the controller"};
      auto rp = self->make_response_promise<txn_response>();
      st.growing[req.name].emplace_back(rp, req.validate_only);
      run(self, st.core->create_partitions(
                  {req.name, req.count, req.assignments, req.validate_only}));
      return rp;
    },
    [=](const replicas_deleted& r) {
      auto& st = self->state;
      if (!st.core)
        return;
      std::vector<std::pair<topic_partition, error_code>> results;
      for (auto& tp : r.partitions)
        results.emplace_back(tp, error_code::none);
      run(self, st.core->on_replicas_deleted(r.node_id, results));
    },
    [=](controller_deletion_retry_atom, uint64_t gen) {
      auto& st = self->state;
      if (gen != st.generation || !st.core || !st.core->deletions_pending()) {
        if (st.deletion_retry_generation == gen)
          st.deletion_retry_generation = 0;
        return;
      }
      run(self, st.core->retry_topic_deletions());
      self->delayed_send(self, deletion_retry_interval, controller_deletion_retry_atom::value, gen);
    },
    [=](const controlled_shutdown_request& req) -> caf::result<controlled_shutdown_response> {
      auto& st = self->state;
      if (!st.core)
        return controlled_shutdown_response{
          error_code::not_controller,
          "node " + std::to_string(st.opts.node_id) + " is not the controller", {}};
      auto rp = self->make_response_promise<controlled_shutdown_response>();
      st.shutting_down[req.node_id].push_back(rp);
      run(self, st.core->controlled_shutdown(req.node_id, req.node_epoch));
      return rp;
    },
    [=](const alter_isr_request& req) -> caf::result<alter_isr_response> {
      auto& st = self->state;
      if (!st.core)
        return alter_isr_response{error_code::not_controller,
                                  "node " + std::to_string(st.opts.node_id)
                                    + " is not the controller",
                                  -1, {}, -1};
      auto rp = self->make_response_promise<alter_isr_response>();
      auto request = st.next_alter_isr++;
      st.altering.emplace(request, rp);
      run(self, st.core->alter_isr({req.node_id, req.node_epoch, req.tp, req.leader_epoch, req.isr,
                                    req.partition_epoch, request}));
      return rp;
    },
    [=](const elect_leaders_request& req) -> elect_leaders_response {
      auto& st = self->state;
      elect_leaders_response r;
      if (!st.core) {
        for (auto& tp : req.partitions)
          r.results.push_back({tp, error_code::not_controller,
                               "node " + std::to_string(st.opts.node_id) + " is not the controller"});
        return r;
      }
      std::vector<topic_partition> elect;
      for (auto& [tp, why] : st.core->preferred_election_check(req.partitions)) {
        if (why.ok())
          elect.push_back(tp);
        r.results.push_back({tp, why.code(), why.message()});
      }
      if (!elect.empty())
        run(self, st.core->elect_preferred_leaders(elect));
      return r;
    },
    [=](const controller_topic_request& req) -> caf::result<controller_topic_response> {
      auto rp = self->make_response_promise<controller_topic_response>();
      auto name = req.name;
      self->request(self->state.store, store_timeout, coord_get_request{topic_path(name), false})
        .then(
          [rp, name](coord_get_response& g) mutable {
            if (g.rc == zrc::ZNONODE) {
              rp.deliver(controller_topic_response{error_code::unknown_topic_or_partition,
                                                   "topic '" + name + "' does not exist", 0, {}});
              return;
            }
            if (g.rc != zrc::ZOK) {
              rp.deliver(controller_topic_response{error_code::request_timed_out,
                                                   "reading " + topic_path(name) + ": "
                                                     + to_string(g.rc),
                                                   0, {}});
              return;
            }
            auto t = decode_topic(name, g.data);
            if (!t.ok()) {
              rp.deliver(controller_topic_response{t.error().code(), t.error().message(), 0, {}});
              return;
            }
            rp.deliver(controller_topic_response{error_code::none, {},
                                                 static_cast<int32_t>(t->partitions.size()),
                                                 t->configs});
          },
          [rp, name](caf::error&) mutable {
            rp.deliver(controller_topic_response{error_code::request_timed_out,
                                                 "reading the topic '" + name
                                                   + "': the store did not answer",
                                                 0, {}});
          });
      return rp;
    },
    [=](controller_register_atom, int64_t session) {
      if (self->state.session_id == session && self->state.connected
          && self->state.node_epoch < 0)
        register_node_znode(self);
    },
    [=](const producer_id_block_request&) -> caf::result<producer_id_block_response> {
      auto rp = self->make_response_promise<producer_id_block_response>();
      auto& st = self->state;
      if (st.pid_claiming) {
        st.pid_queued.push_back(rp);
        return rp;
      }
      st.pid_claiming = true;
      claim_pid_block(self, rp, 0);
      return rp;
    },
    [=](controller_pid_retry_atom) {
      auto& st = self->state;
      if (st.pid_retries.empty())
        return;
      auto r = std::move(st.pid_retries.front());
      st.pid_retries.erase(st.pid_retries.begin());
      claim_pid_block(self, r.rp, r.attempt, std::move(r.claim));
    },
    [=](controller_rebalance_atom, uint64_t gen) {
      // One chain per controllership: a timer of an earlier one ends.
      auto& st = self->state;
      if (gen != st.generation || !st.core)
        return;
      auto imbalanced = st.core->imbalanced_partitions(st.opts.leader_imbalance_per_broker_percentage);
      if (!imbalanced.empty())
        run(self, st.core->elect_preferred_leaders(imbalanced));
      self->delayed_send(self, std::chrono::milliseconds(st.opts.leader_imbalance_check_interval_ms),
                         controller_rebalance_atom::value, gen);
    },
    [=](controller_read_retry_atom) {
      auto& retries = self->state.read_retries;
      if (retries.empty())
        return;
      auto read = std::move(retries.front());
      retries.pop_front();
      read();
    },
    [=](caf::atom_constant<controller_reelect_atom::value>) {
      auto& st = self->state;
      st.election.reset();
      elect(self);
    },
  };
}

} // namespace

controller_actor spawn_controller(caf::actor_system& sys, controller_options opts) {
  return sys.spawn(controller_fn, std::move(opts));
}

} // namespace caftx
