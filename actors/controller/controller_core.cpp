#include "actors/controller/controller_core.hpp"

#include <algorithm>
#include <limits>

#include "actors/controller/replica_assignment.hpp"
#include "actors/controller/znodes.hpp"

namespace caftx::controller {

namespace {

bool contains(const std::vector<node_id>& v, node_id n) {
  return std::find(v.begin(), v.end(), n) != v.end();
}

/// Kafka's ReplicaStateMachine.doRemoveReplicasFromIsr for each of
/// `remove` in ascending order: a member leaves the ISR unless it is the
/// last one.
std::vector<node_id> remove_from_isr(std::vector<node_id> isr, const std::set<node_id>& remove) {
  for (auto n : remove) {
    auto it = std::find(isr.begin(), isr.end(), n);
    if (it != isr.end() && isr.size() > 1)
      isr.erase(it);
  }
  return isr;
}

} // namespace

// Kafka's Topic.validate: 1..249 characters of [a-zA-Z0-9._-], not "." or "..".
std::optional<std::string> invalid_topic_name(const std::string& name) {
  if (name.empty())
    return "Topic name is illegal, it can't be empty";
  if (name == "." || name == "..")
    return "Topic name cannot be \".\" or \"..\"";
  if (name.size() > 249)
    return "Topic name is illegal, it can't be longer than 249 characters, topic name: " + name;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return "Topic name \"" + name
             + "\" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'";
  return std::nullopt;
}

const partition_state* controller_core::state(const topic_partition& tp) const {
  auto it = states_.find(tp);
  return it == states_.end() ? nullptr : &it->second;
}

const topic_assignment* controller_core::topic(const std::string& name) const {
  auto it = topics_.find(name);
  return it == topics_.end() ? nullptr : &it->second;
}

bool controller_core::eligible(node_id n) const {
  // Kafka's ControllerContext.liveBrokerIds: registered and not shutting down.
  return live_.count(n) > 0 && shutting_down_.count(n) == 0;
}

const std::vector<node_id>& controller_core::replicas(const topic_partition& tp) const {
  static const std::vector<node_id> none;
  auto t = topics_.find(tp.topic);
  if (t == topics_.end())
    return none;
  auto p = t->second.partitions.find(tp.partition);
  return p == t->second.partitions.end() ? none : p->second;
}

std::optional<partition_state> controller_core::decide(const topic_partition& tp,
                                                       const intent& in) const {
  auto cur_it = states_.find(tp);
  if (cur_it == states_.end())
    return std::nullopt;
  const auto& cur = cur_it->second;
  partition_state next = cur;
  if (in.preferred) {
    // PartitionLeaderElectionAlgorithms.preferredReplicaPartitionLeaderElection:
    // the first assigned replica, if eligible and in the ISR.
    const auto& reps = replicas(tp);
    if (reps.empty() || reps.front() == cur.leader || !eligible(reps.front())
        || !contains(cur.isr, reps.front()))
      return std::nullopt;
    next.leader = reps.front();
    next.leader_epoch = cur.leader_epoch + 1;
    next.controller_epoch = me_.epoch;
    return next;
  }
  auto isr = remove_from_isr(cur.isr, in.remove);
  const bool leader_removed = cur.leader != no_leader && in.remove.count(cur.leader) > 0;
  bool elected = false; // a new election, even of the same node, is a new epoch
  if (cur.leader == no_leader || leader_removed || !eligible(cur.leader)) {
    // PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection and
    // controlledShutdownPartitionLeaderElection: the first replica in
    // assignment order that is eligible and in the ISR; new ISR = the
    // eligible ISR members. Unclean election is disabled.
    std::optional<node_id> leader;
    for (auto r : replicas(tp))
      if (eligible(r) && contains(isr, r)) {
        leader = r;
        break;
      }
    if (leader) {
      elected = true;
      next.leader = *leader;
      next.isr.clear();
      for (auto r : isr)
        if (eligible(r))
          next.isr.push_back(r);
    } else if (cur.leader != no_leader && !leader_removed && live_.count(cur.leader) > 0) {
      return std::nullopt; // a shutting-down leader with no successor keeps leading
    } else {
      next.leader = no_leader; // offline until an ISR member returns
      next.isr = isr;
    }
  } else {
    next.isr = isr;
  }
  if (!elected && next.leader == cur.leader && next.isr == cur.isr)
    return std::nullopt;
  // LeaderAndIsr.newLeaderAndIsr / newEpochAndZkVersion: every leader or
  // ISR change by the controller bumps the leader epoch.
  next.leader_epoch = cur.leader_epoch + 1;
  next.controller_epoch = me_.epoch;
  return next;
}

store_write controller_core::fenced(std::vector<store_op> ops) {
  store_write w;
  w.id = next_write_id_++;
  w.ops.push_back(store_op{op_kind::check, controller_epoch_path, "", me_.epoch_version});
  for (auto& op : ops)
    w.ops.push_back(std::move(op));
  return w;
}

uint64_t controller_core::open_batch() {
  auto id = next_batch_id_++;
  batches_[id];
  return id;
}

void controller_core::plan(uint64_t b, const topic_partition& tp, controller_decision& out) {
  auto& bt = batches_[b];
  if (deleting(tp.topic) || states_.count(tp) == 0) {
    // Being deleted, or gone: nothing is decided for it any more.
    bt.pending.erase(tp);
    if (bt.isr_reply && bt.isr_reply->tp == tp)
      bt.isr_reply->result = status{error_code::unknown_topic_or_partition,
                                    "topic '" + tp.topic + "' is being deleted"};
    return;
  }
  if (auto& in = bt.intents[tp]; in.set_isr) {
    // AlterIsr: conditional on the partition epoch it was based on.
    auto& cur = states_.at(tp);
    bt.pending.erase(tp);
    if (cur.isr == *in.set_isr) {
      bt.isr_reply->state = cur;
      return;
    }
    if (cur.partition_epoch != in.expected_partition_epoch
        || cur.leader_epoch != bt.isr_reply->state.leader_epoch) {
      bt.isr_reply->result =
        status{cur.leader_epoch != bt.isr_reply->state.leader_epoch
                 ? error_code::fenced_leader_epoch
                 : error_code::invalid_update_version,
               "the state of " + to_string(tp) + " is at partition epoch "
                 + std::to_string(cur.partition_epoch) + ", leader epoch "
                 + std::to_string(cur.leader_epoch) + ", not "
                 + std::to_string(in.expected_partition_epoch) + ", "
                 + std::to_string(bt.isr_reply->state.leader_epoch)};
      bt.isr_reply->state = cur;
      return;
    }
    auto next = cur;
    next.isr = *in.set_isr;
    next.controller_epoch = me_.epoch;
    bt.pending.insert(tp);
    auto w = fenced({store_op{op_kind::set, partition_state_path(tp), encode_partition_state(next),
                              cur.partition_epoch}});
    writes_[w.id] = pending_write{b, tp, next};
    out.writes.push_back(std::move(w));
    return;
  }
  auto next = decide(tp, bt.intents[tp]);
  if (!next) {
    bt.pending.erase(tp);
    return;
  }
  bt.pending.insert(tp);
  auto w = fenced({store_op{op_kind::set, partition_state_path(tp), encode_partition_state(*next),
                            states_.at(tp).partition_epoch}});
  writes_[w.id] = pending_write{b, tp, *next};
  out.writes.push_back(std::move(w));
}

void controller_core::plan_batch(uint64_t b, controller_decision& out) {
  std::vector<topic_partition> tps;
  for (const auto& [tp, in] : batches_[b].intents)
    tps.push_back(tp);
  for (const auto& tp : tps)
    plan(b, tp, out);
  maybe_finish(b, out);
}

partition_info controller_core::info(const topic_partition& tp, bool is_new) const {
  const auto& st = states_.at(tp);
  // Kafka's ControllerChannelManager sends LeaderDuringDelete for the
  // partitions of a topic queued for deletion.
  return partition_info{tp,
                        st.controller_epoch,
                        deleting(tp.topic) ? leader_during_delete : st.leader,
                        st.leader_epoch,
                        st.isr,
                        st.partition_epoch,
                        replicas(tp),
                        is_new};
}

bool controller_core::deleting(const std::string& topic) const {
  auto it = deleting_.find(topic);
  return it != deleting_.end() && it->second.marked;
}

void controller_core::update_metadata(node_id target, std::vector<partition_info> parts,
                                      controller_decision& out) const {
  update_metadata_request um;
  um.controller_id = me_.id;
  um.controller_epoch = me_.epoch;
  um.node_epoch = live_.at(target).node_epoch;
  um.partitions = std::move(parts);
  for (const auto& [id, n] : live_)
    um.live_nodes.push_back(n);
  out.requests.push_back({target, std::move(um)});
}

void controller_core::maybe_finish(uint64_t b, controller_decision& out) {
  auto it = batches_.find(b);
  if (it == batches_.end())
    return;
  auto& bt = it->second;
  if (!bt.pending.empty() || bt.topic_write_pending)
    return;
  if (bt.isr_reply) {
    if (bt.isr_reply->result.ok() && bt.changed.count(bt.isr_reply->tp)
        && states_.count(bt.isr_reply->tp)) {
      bt.isr_reply->state = states_.at(bt.isr_reply->tp);
      for (const auto& [id, n] : live_)
        update_metadata(id, {info(bt.isr_reply->tp, false)}, out);
    }
    out.isr_changes.push_back(*bt.isr_reply);
    batches_.erase(it);
    return;
  }
  // LeaderAndIsr: changed partitions to their live replicas (not to one
  // that got StopReplica for it), all partitions to started nodes.
  std::map<node_id, std::vector<partition_info>> lair;
  for (const auto& [tp, st] : states_) {
    if (deleting(tp.topic))
      continue; // its replicas get StopReplica with delete instead
    const bool changed = bt.changed.count(tp) > 0;
    for (auto r : replicas(tp)) {
      if (live_.count(r) == 0)
        continue;
      auto stopped = bt.stopped.find(r);
      if (stopped != bt.stopped.end() && stopped->second.count(tp) > 0)
        continue;
      if (changed || bt.full_leader_and_isr.count(r) > 0)
        lair[r].push_back(info(tp, bt.created.count(tp) > 0));
    }
  }
  for (auto& [target, parts] : lair) {
    leader_and_isr_request req;
    req.controller_id = me_.id;
    req.controller_epoch = me_.epoch;
    req.node_epoch = live_.at(target).node_epoch;
    req.partitions = std::move(parts);
    out.requests.push_back({target, std::move(req)});
  }
  // StopReplica (delete=false) once the ISR removal is durable, at the
  // partition's leader epoch after it (KIP-570).
  for (const auto& [target, tps] : bt.stopped) {
    if (live_.count(target) == 0)
      continue;
    stop_replica_request stop{me_.id, me_.epoch, live_.at(target).node_epoch, {}};
    for (const auto& tp : tps)
      if (states_.count(tp) && !deleting(tp.topic))
        stop.partitions.push_back({tp, states_.at(tp).leader_epoch, false});
    if (!stop.partitions.empty())
      out.requests.push_back({target, std::move(stop)});
  }
  // UpdateMetadata to every live node with the changed partitions (the
  // live node list is always complete).
  std::vector<partition_info> changed;
  for (const auto& tp : bt.changed)
    if (states_.count(tp))
      changed.push_back(info(tp, false));
  for (const auto& [id, n] : live_)
    update_metadata(id, changed, out);
  if (bt.topic_reply)
    (bt.grown_from > 0 ? out.created_partitions : out.created_topics).push_back(*bt.topic_reply);
  // A grown topic's batch is done, its ISR writes for replicas that died
  // meanwhile included: the requests that waited for it are decided now.
  std::optional<std::string> grown;
  if (bt.grown_from > 0 && bt.new_topic)
    grown = bt.new_topic->name;
  if (bt.shutdown_of) {
    controlled_shutdown_result res{*bt.shutdown_of, status{}, {}};
    for (const auto& [tp, st] : states_)
      if (st.leader == *bt.shutdown_of && replicas(tp).size() > 1 && !deleting(tp.topic))
        res.remaining.push_back(tp);
    out.shutdowns.push_back(std::move(res));
  }
  batches_.erase(it);
  if (grown) {
    growing_.erase(*grown);
    release_topic_queue(*grown, out);
  }
}

controller_decision controller_core::resign(controller_decision out) {
  resigned_ = true;
  out.resigned = true;
  out.writes.clear();
  out.rereads.clear();
  out.requests.clear();
  const status resigned{error_code::not_controller, "the controller resigned"};
  for (auto& [id, bt] : batches_) {
    if (bt.new_topic && bt.grown_from > 0) {
      // The grow may be stored already: NOT_CONTROLLER would have the
      // caller retry it and be told the partitions exist. Written, it
      // answers as written.
      if (bt.topic_write_pending)
        out.created_partitions.push_back(
          {bt.new_topic->name,
           status{error_code::request_timed_out,
                  "the controller resigned while adding partitions to topic '"
                    + bt.new_topic->name + "': they may have been added"}});
      else
        out.created_partitions.push_back(bt.topic_reply ? *bt.topic_reply
                                                        : create_topic_result{bt.new_topic->name,
                                                                              resigned});
    } else if (bt.new_topic) {
      out.created_topics.push_back({bt.new_topic->name, resigned});
    }
    if (bt.shutdown_of)
      out.shutdowns.push_back(
        {*bt.shutdown_of, status{error_code::not_controller, "the controller resigned"}, {}});
    if (bt.isr_reply)
      out.isr_changes.push_back({bt.isr_reply->node, bt.isr_reply->tp,
                                 status{error_code::not_controller, "the controller resigned"},
                                 {}, bt.isr_reply->request});
  }
  for (const auto& [tp, p] : deferred_isr_)
    out.isr_changes.push_back(
      {p.node, tp, status{error_code::not_controller, "the controller resigned"}, {}, p.request});
  deferred_isr_.clear();
  for (const auto& [name, queue] : topic_queue_)
    for (const auto& q : queue)
      (q.grow ? out.created_partitions : out.deleted_topics).push_back({name, resigned});
  topic_queue_.clear();
  growing_.clear();
  batches_.clear();
  writes_.clear();
  rereads_.clear();
  deleting_.clear();
  deletion_writes_.clear();
  return out;
}

controller_decision controller_core::on_become_controller(cluster_snapshot snapshot) {
  controller_decision out;
  if (resigned_)
    return resign(std::move(out));
  live_.clear();
  for (auto& n : snapshot.live_nodes)
    live_[n.id] = n;
  topics_.clear();
  for (auto& t : snapshot.topics)
    topics_[t.name] = t;
  states_ = std::move(snapshot.states);
  shutting_down_.clear();
  deleting_.clear();
  for (const auto& name : snapshot.deleting)
    deleting_[name].marked = true;
  for (const auto& [tp, st] : states_)
    if (st.controller_epoch > me_.epoch) // KafkaController: "controller epoch ... is newer"
      return resign(std::move(out));
  // UpdateMetadata first (Kafka's onControllerFailover).
  // The topics marked for deletion are resumed below (Kafka's
  // TopicDeletionManager.init then resumeDeletions).
  std::vector<partition_info> all;
  for (const auto& [tp, st] : states_)
    if (!deleting(tp.topic))
      all.push_back(info(tp, false));
  for (const auto& [id, n] : live_)
    update_metadata(id, all, out);
  auto b = open_batch();
  auto& bt = batches_[b];
  for (const auto& [id, n] : live_)
    bt.full_leader_and_isr.insert(id);
  for (const auto& [tp, st] : states_) {
    if (deleting(tp.topic))
      continue;
    intent in;
    for (auto r : st.isr)
      if (live_.count(r) == 0)
        in.remove.insert(r);
    bt.intents[tp] = in;
  }
  plan_batch(b, out);
  std::vector<std::string> marked;
  for (const auto& [name, d] : deleting_)
    marked.push_back(name);
  for (const auto& name : marked)
    start_deletion(name, out);
  return out;
}

controller_decision controller_core::on_nodes_changed(const std::vector<live_node>& nodes) {
  controller_decision out;
  if (resigned_)
    return resign(std::move(out));
  std::map<node_id, live_node> now;
  for (const auto& n : nodes)
    now[n.id] = n;
  std::set<node_id> gone; // failed or bounced: failure handling
  std::set<node_id> started;
  for (const auto& [id, n] : live_) {
    auto it = now.find(id);
    if (it == now.end()) {
      gone.insert(id);
    } else if (it->second.node_epoch != n.node_epoch) {
      gone.insert(id); // bounced (KIP-380): failure, then startup
      started.insert(id);
    }
  }
  for (const auto& [id, n] : now)
    if (live_.count(id) == 0)
      started.insert(id);
  if (gone.empty() && started.empty()) {
    live_ = std::move(now); // endpoint changes only
    return out;
  }
  live_ = std::move(now);
  for (auto id : gone)
    shutting_down_.erase(id);
  for (auto id : started)
    shutting_down_.erase(id);
  // onBrokerStartup: the new nodes get the whole metadata at once, the
  // others the new live node list.
  std::vector<partition_info> all;
  for (const auto& [tp, st] : states_)
    all.push_back(info(tp, false));
  if (!started.empty())
    for (const auto& [id, n] : live_)
      update_metadata(id, started.count(id) > 0 ? all : std::vector<partition_info>{}, out);
  auto b = open_batch();
  auto& bt = batches_[b];
  bt.full_leader_and_isr = started;
  for (const auto& [tp, st] : states_) {
    if (deleting(tp.topic))
      continue;
    const auto& reps = replicas(tp);
    bool touched = st.leader == no_leader;
    for (auto r : reps)
      touched = touched || gone.count(r) > 0 || started.count(r) > 0;
    if (!touched)
      continue;
    intent in;
    for (auto r : gone)
      if (contains(reps, r))
        in.remove.insert(r);
    bt.intents[tp] = in;
  }
  plan_batch(b, out);
  // A started node gets StopReplica with delete for its replicas of
  // topics being deleted (Kafka resumes a deletion halted by an offline
  // replica when the node comes back).
  for (auto id : started)
    stop_deleted_replicas(id, out);
  return out;
}

controller_decision controller_core::create_topic(const create_topic_request& req) {
  controller_decision out;
  auto fail = [&](error_code c, std::string msg) {
    out.created_topics.push_back({req.name, status{c, std::move(msg)}});
    return out;
  };
  if (resigned_)
    return fail(error_code::not_controller, "the controller resigned");
  if (auto bad = invalid_topic_name(req.name))
    return fail(error_code::invalid_topic_exception, *bad);
  if (deleting_.count(req.name) > 0)
    return fail(error_code::topic_already_exists,
                "Topic '" + req.name + "' is marked for deletion.");
  if (topics_.count(req.name) > 0)
    return fail(error_code::topic_already_exists, "Topic '" + req.name + "' already exists.");
  for (const auto& [id, bt] : batches_)
    if (bt.new_topic && bt.new_topic->name == req.name)
      return fail(error_code::topic_already_exists, "Topic '" + req.name + "' already exists.");
  std::vector<node_id> nodes;
  for (const auto& [id, n] : live_)
    nodes.push_back(id);
  auto assignment = assign_replicas(req.partitions, req.replication_factor, nodes, req.start_index,
                                    req.next_replica_shift);
  if (!assignment.ok())
    return fail(assignment.error().code(), assignment.error().message());
  topic_assignment t{req.name, std::move(*assignment), req.configs};
  write_topic(std::move(t), 0, out);
  return out;
}

controller_decision controller_core::controlled_shutdown(node_id node, int64_t node_epoch) {
  controller_decision out;
  auto fail = [&](error_code c, std::string msg) {
    out.shutdowns.push_back({node, status{c, std::move(msg)}, {}});
    return out;
  };
  if (resigned_)
    return fail(error_code::not_controller, "the controller resigned");
  auto it = live_.find(node);
  if (it == live_.end())
    return fail(error_code::broker_not_available, "Broker id " + std::to_string(node) + " does not exist.");
  if (node_epoch >= 0 && node_epoch < it->second.node_epoch)
    return fail(error_code::stale_broker_epoch,
                "Received controlled shutdown request from an old broker epoch "
                  + std::to_string(node_epoch) + " for broker " + std::to_string(node)
                  + ". Current broker epoch is " + std::to_string(it->second.node_epoch) + ".");
  shutting_down_.insert(node);
  auto b = open_batch();
  auto& bt = batches_[b];
  bt.shutdown_of = node;
  for (const auto& [tp, st] : states_) {
    const auto& reps = replicas(tp);
    if (reps.size() <= 1 || !contains(reps, node) || deleting(tp.topic))
      continue;
    intent in;
    if (st.leader != node) { // followed: StopReplica, then out of the ISR
      in.remove.insert(node);
      bt.stopped[node].insert(tp);
    }
    bt.intents[tp] = in;
  }
  plan_batch(b, out);
  return out;
}

controller_decision controller_core::alter_isr(const alter_isr_proposal& p) {
  controller_decision out;
  auto fail = [&](error_code c, std::string msg) {
    const auto* st = state(p.tp);
    out.isr_changes.push_back({p.node, p.tp, status{c, std::move(msg)},
                               st ? *st : partition_state{}, p.request});
    return out;
  };
  if (resigned_)
    return fail(error_code::not_controller, "the controller resigned");
  if (deleting(p.tp.topic))
    return fail(error_code::unknown_topic_or_partition,
                "topic '" + p.tp.topic + "' is being deleted");
  if (write_in_flight(p.tp)) {
    deferred_isr_.emplace(p.tp, p);
    return out;
  }
  auto n = live_.find(p.node);
  if (n == live_.end() || p.node_epoch != n->second.node_epoch)
    return fail(error_code::stale_broker_epoch,
                "AlterIsr from broker " + std::to_string(p.node) + " at broker epoch "
                  + std::to_string(p.node_epoch) + ", not its current registration");
  const auto* cur = state(p.tp);
  if (!cur)
    return fail(error_code::unknown_topic_or_partition, "no partition " + to_string(p.tp));
  if (cur->leader != p.node)
    return fail(error_code::not_leader_or_follower,
                to_string(p.tp) + " is led by " + std::to_string(cur->leader) + ", not "
                  + std::to_string(p.node));
  if (p.leader_epoch != cur->leader_epoch)
    return fail(error_code::fenced_leader_epoch,
                "leader epoch " + std::to_string(p.leader_epoch) + " of " + to_string(p.tp)
                  + " is not the current " + std::to_string(cur->leader_epoch));
  const auto& reps = replicas(p.tp);
  if (!contains(p.isr, p.node))
    return fail(error_code::invalid_request,
                "the proposed ISR of " + to_string(p.tp) + " lacks its leader");
  for (auto r : p.isr) {
    if (!contains(reps, r))
      return fail(error_code::invalid_request, "node " + std::to_string(r)
                                                 + " is not a replica of " + to_string(p.tp));
    if (!contains(cur->isr, r) && !eligible(r))
      return fail(error_code::ineligible_replica,
                  "node " + std::to_string(r) + " cannot join the ISR of " + to_string(p.tp)
                    + ": it is not live or shuts down");
  }
  auto b = open_batch();
  auto& bt = batches_[b];
  intent in;
  in.set_isr = p.isr;
  in.expected_partition_epoch = p.partition_epoch;
  bt.intents[p.tp] = in;
  partition_state based = *cur;
  based.leader_epoch = p.leader_epoch;
  bt.isr_reply = alter_isr_result{p.node, p.tp, status{}, based, p.request};
  plan_batch(b, out);
  return out;
}

controller_decision controller_core::elect_preferred_leaders(const std::vector<topic_partition>& which) {
  controller_decision out;
  if (resigned_)
    return out;
  auto b = open_batch();
  auto& bt = batches_[b];
  intent in;
  in.preferred = true;
  if (which.empty())
    for (const auto& [tp, st] : states_)
      if (!deleting(tp.topic))
        bt.intents[tp] = in;
  for (const auto& tp : which)
    if (states_.count(tp) && !deleting(tp.topic))
      bt.intents[tp] = in;
  plan_batch(b, out);
  return out;
}

std::vector<std::pair<topic_partition, status>>
controller_core::preferred_election_check(const std::vector<topic_partition>& which) const {
  std::vector<topic_partition> tps = which;
  if (tps.empty())
    for (const auto& [tp, st] : states_)
      tps.push_back(tp);
  std::vector<std::pair<topic_partition, status>> out;
  for (const auto& tp : tps) {
    auto i = states_.find(tp);
    if (resigned_) {
      out.push_back({tp, {error_code::not_controller, "the controller resigned"}});
      continue;
    }
    if (i == states_.end() || deleting(tp.topic)) {
      out.push_back({tp, {error_code::unknown_topic_or_partition, "no partition " + to_string(tp)}});
      continue;
    }
    const auto& reps = replicas(tp);
    auto preferred = reps.empty() ? no_leader : reps.front();
    if (i->second.leader == preferred) {
      out.push_back({tp, {error_code::election_not_needed,
                          "Leader election not needed for topic partition " + to_string(tp)}});
      continue;
    }
    if (preferred == no_leader || !eligible(preferred) || !contains(i->second.isr, preferred)) {
      out.push_back({tp, {error_code::preferred_leader_not_available,
                          "Failed to elect leader for partition " + to_string(tp)
                            + " under strategy PreferredReplicaPartitionLeaderElectionStrategy"}});
      continue;
    }
    out.push_back({tp, status{}});
  }
  return out;
}

std::vector<topic_partition> controller_core::imbalanced_partitions(int32_t imbalance_percent) const {
  std::vector<topic_partition> out;
  if (resigned_ || !shutting_down_.empty())
    return out;
  std::map<node_id, std::vector<topic_partition>> preferred_on; // its partitions
  std::map<node_id, std::vector<topic_partition>> not_led;      // those another node leads
  for (const auto& [tp, st] : states_) {
    const auto& reps = replicas(tp);
    if (reps.empty() || deleting(tp.topic))
      continue;
    preferred_on[reps.front()].push_back(tp);
    if (st.leader != reps.front())
      not_led[reps.front()].push_back(tp);
  }
  for (const auto& [node, tps] : not_led) {
    if (!eligible(node))
      continue;
    // Kafka: imbalanceRatio > leaderImbalancePerBrokerPercentage / 100.
    auto ratio = static_cast<double>(tps.size()) / static_cast<double>(preferred_on[node].size());
    if (ratio <= imbalance_percent / 100.0)
      continue;
    for (const auto& tp : tps)
      if (contains(states_.at(tp).isr, node))
        out.push_back(tp);
  }
  return out;
}

store_write controller_core::create_cluster_id(const std::string& id) {
  return fenced({store_op{op_kind::create, cluster_id_path, encode_cluster_id(id), -1}});
}

controller_decision controller_core::on_write_result(const write_result& r) {
  auto out = write_answered(r);
  release_deferred(out);
  return out;
}

controller_decision controller_core::on_state_read(const topic_partition& tp,
                                                   const std::optional<std::string>& data,
                                                   int32_t version) {
  auto out = state_read(tp, data, version);
  release_deferred(out);
  return out;
}

bool controller_core::write_in_flight(const topic_partition& tp) const {
  for (const auto& [id, bt] : batches_)
    if (bt.pending.count(tp) > 0)
      return true;
  return false;
}

void controller_core::release_deferred(controller_decision& out) {
  std::set<topic_partition> tps;
  for (const auto& [tp, p] : deferred_isr_)
    tps.insert(tp);
  for (const auto& tp : tps)
    for (auto it = deferred_isr_.find(tp); !resigned_ && it != deferred_isr_.end()
                                           && it->first == tp && !write_in_flight(tp);
         it = deferred_isr_.find(tp)) {
      auto p = std::move(it->second);
      deferred_isr_.erase(it);
      auto d = alter_isr(p);
      for (auto& w : d.writes)
        out.writes.push_back(std::move(w));
      for (auto& r : d.requests)
        out.requests.push_back(std::move(r));
      for (auto& c : d.isr_changes)
        out.isr_changes.push_back(std::move(c));
    }
}

controller_decision controller_core::write_answered(const write_result& r) {
  controller_decision out;
  if (resigned_)
    return resign(std::move(out));
  if (auto d = deletion_writes_.find(r.id); d != deletion_writes_.end()) {
    auto name = d->second;
    deletion_writes_.erase(d);
    if (r.outcome == write_outcome::bad_version && r.failed_op == 0)
      return resign(std::move(out));
    return deletion_write_answered(name, r);
  }
  auto wit = writes_.find(r.id);
  if (wit == writes_.end())
    return out;
  auto pw = std::move(wit->second);
  writes_.erase(wit);
  if (r.outcome == write_outcome::bad_version && r.failed_op == 0)
    return resign(std::move(out)); // the fence: /controller_epoch moved on
  auto bit = batches_.find(pw.batch);
  if (bit == batches_.end())
    return out;
  auto& bt = bit->second;
  if (!pw.tp) { // the topic create, or the grown topic (CreatePartitions)
    bt.topic_write_pending = false;
    const auto t = *bt.new_topic;
    const auto grown_from = bt.grown_from;
    const bool grow = grown_from > 0;
    auto reply = [&out, grow](create_topic_result r) {
      (grow ? out.created_partitions : out.created_topics).push_back(std::move(r));
    };
    switch (r.outcome) {
      case write_outcome::ok: {
        topics_[t.name] = t;
        size_t i = 3; // ops: check, topic, then (partition, state) per new partition
        for (const auto& [p, reps] : t.partitions) {
          if (p < grown_from)
            continue;
          topic_partition tp{t.name, p};
          partition_state st{reps.front(), 0, reps, me_.epoch, 0};
          if (i < r.versions.size())
            st.partition_epoch = r.versions[i];
          i += 2;
          states_[tp] = st;
          bt.changed.insert(tp);
          bt.created.insert(tp);
        }
        bt.topic_reply = create_topic_result{t.name, status{}};
        // Replicas that died while the create was in flight leave the ISR
        // now, as any dead replica (ReplicaStateMachine's OfflineReplica).
        for (const auto& [p, reps] : t.partitions) {
          if (p < grown_from)
            continue;
          intent in;
          for (auto r : reps)
            if (live_.count(r) == 0)
              in.remove.insert(r);
          if (!in.remove.empty()) {
            bt.intents[{t.name, p}] = in;
            plan(pw.batch, {t.name, p}, out);
          }
        }
        break;
      }
      case write_outcome::node_exists:
        bt.topic_reply = create_topic_result{
          t.name, grow ? status{error_code::unknown_server_error,
                                "a new partition of topic '" + t.name + "' exists in the store already"}
                       : status{error_code::topic_already_exists,
                                "Topic '" + t.name + "' already exists."}};
        break;
      case write_outcome::connection_loss: {
        // The topic may or may not exist now. If it does, nothing else
        // would ever elect its leaders (no watch on /topics: only the
        // creating controller knows of it), so this controller resigns
        // and, elected again (the shell goes back to the election), reads
        // the whole state anew, the topic included (Kafka's controller
        // failover reads every topic). The client's retry then gets
        // TOPIC_ALREADY_EXISTS or creates it.
        auto lost = "the store's answer to " + std::string(grow ? "adding partitions to" : "creating")
                    + " topic '" + t.name + "' was lost";
        reply({t.name, status{error_code::request_timed_out, lost}});
        batches_.erase(bit);
        out = resign(std::move(out));
        out.resigned_because = lost + ": reading the state again";
        return out;
      }
      default:
        bt.topic_reply = create_topic_result{
          t.name, status{error_code::unknown_server_error,
                         std::string(grow ? "adding partitions to" : "creating") + " topic '"
                           + t.name + "' failed in the store"}};
    }
    maybe_finish(pw.batch, out);
    return out;
  }
  const auto& tp = *pw.tp;
  switch (r.outcome) {
    case write_outcome::ok:
      pw.proposed.partition_epoch = r.versions.size() > 1 ? r.versions[1]
                                                          : states_.at(tp).partition_epoch + 1;
      states_[tp] = pw.proposed;
      bt.changed.insert(tp);
      bt.pending.erase(tp);
      break;
    case write_outcome::bad_version:     // another writer: re-read and decide again
    case write_outcome::connection_loss: // unknown outcome: re-read and compare
      rereads_.emplace(tp, std::make_pair(pw.batch, pw.proposed));
      out.rereads.push_back(tp);
      return out;
    default: // NONODE / NODEEXISTS on a state: the partition is gone
      bt.pending.erase(tp);
  }
  maybe_finish(pw.batch, out);
  return out;
}

controller_decision controller_core::state_read(const topic_partition& tp,
                                              const std::optional<std::string>& data,
                                              int32_t version) {
  controller_decision out;
  if (resigned_)
    return resign(std::move(out));
  auto [first, last] = rereads_.equal_range(tp);
  std::vector<std::pair<uint64_t, partition_state>> waiting;
  for (auto it = first; it != last; ++it)
    waiting.push_back(it->second);
  rereads_.erase(first, last);
  if (waiting.empty())
    return out;
  std::optional<partition_state> read;
  if (data) {
    auto st = decode_partition_state(partition_state_path(tp), *data, version);
    if (st.ok())
      read = *st;
  }
  if (read && read->controller_epoch > me_.epoch)
    return resign(std::move(out)); // a newer controller wrote it
  for (auto& [b, proposed] : waiting) {
    auto bit = batches_.find(b);
    if (bit == batches_.end())
      continue;
    if (!read) { // gone or unreadable: drop it from the event
      bit->second.pending.erase(tp);
    } else if (read->same_decision(proposed)) { // ours, answered lost
      states_[tp] = *read;
      bit->second.changed.insert(tp);
      bit->second.pending.erase(tp);
    } else {
      states_[tp] = *read;
      plan(b, tp, out);
    }
    maybe_finish(b, out);
  }
  return out;
}

// -- topic deletion (Kafka's TopicDeletionManager) ---------------------------

controller_decision controller_core::delete_topic(const std::string& name) {
  controller_decision out;
  if (resigned_) {
    out.deleted_topics.push_back({name, status{error_code::not_controller, "the controller resigned"}});
    return out;
  }
  if (growing_.count(name) > 0)
    topic_queue_[name].push_back({std::nullopt});
  else
    begin_deletion(name, out);
  return out;
}

void controller_core::begin_deletion(const std::string& name, controller_decision& out) {
  auto fail = [&](error_code c, std::string msg) {
    out.deleted_topics.push_back({name, status{c, std::move(msg)}});
  };
  if (deleting_.count(name) > 0)
    return; // answered with the deletion under way
  if (topics_.count(name) == 0)
    return fail(error_code::unknown_topic_or_partition,
                "This server does not host this topic-partition.");
  if (is_internal_topic(name))
    return fail(error_code::invalid_topic_exception,
                "Topic " + name
                  + " is an internal topic and is not allowed to be marked for deletion.");
  deleting_[name];
  auto w = fenced({store_op{op_kind::create, delete_topic_path(name), "", -1}});
  deletion_writes_[w.id] = name;
  out.writes.push_back(std::move(w));
}

controller_decision controller_core::create_partitions(const create_partitions_request& req) {
  controller_decision out;
  if (resigned_)
    out.created_partitions.push_back(
      {req.name, status{error_code::not_controller, "the controller resigned"}});
  else if (growing_.count(req.name) > 0)
    topic_queue_[req.name].push_back({req});
  else
    grow_topic(req, out);
  return out;
}

namespace {

std::string joined(const std::vector<int32_t>& v) {
  std::string s;
  for (auto x : v)
    s += (s.empty() ? "" : ", ") + std::to_string(x);
  return s;
}

} // namespace

void controller_core::grow_topic(const create_partitions_request& req, controller_decision& out) {
  auto fail = [&](error_code c, std::string msg) {
    out.created_partitions.push_back({req.name, status{c, std::move(msg)}});
  };
  // KafkaApis.handleCreatePartitionsRequest, then ZkAdminManager.createPartitions.
  if (deleting_.count(req.name) > 0)
    return fail(error_code::invalid_topic_exception, "The topic is queued for deletion.");
  auto t = topics_.find(req.name);
  if (t == topics_.end() || t->second.partitions.count(0) == 0)
    return fail(error_code::unknown_topic_or_partition,
                "The topic '" + req.name + "' does not exist.");
  if (is_internal_topic(req.name))
    return fail(error_code::invalid_topic_exception,
                "Topic " + req.name + " is an internal topic: its partition count places every "
                  + (req.name == transaction_state_topic ? "transactional id" : "group")
                  + " on its coordinator, and it cannot change.");
  const auto old_count = static_cast<int32_t>(t->second.partitions.size());
  if (req.count < old_count)
    return fail(error_code::invalid_partitions,
                "Topic currently has " + std::to_string(old_count)
                  + " partitions, which is higher than the requested " + std::to_string(req.count)
                  + ".");
  if (req.count == old_count)
    return fail(error_code::invalid_partitions,
                "Topic already has " + std::to_string(old_count) + " partitions.");
  const int32_t added_count = req.count - old_count;
  const auto& first = t->second.partitions.at(0);
  const auto replication_factor = static_cast<int32_t>(first.size());
  std::map<int32_t, std::vector<node_id>> added;
  if (!req.assignments.empty()) {
    std::set<node_id> unknown;
    for (const auto& reps : req.assignments)
      for (auto r : reps)
        if (live_.count(r) == 0)
          unknown.insert(r);
    if (!unknown.empty())
      return fail(error_code::invalid_replica_assignment,
                  "Unknown broker(s) in replica assignment: "
                    + joined({unknown.begin(), unknown.end()}) + ".");
    if (req.assignments.size() != static_cast<size_t>(added_count))
      return fail(error_code::invalid_replica_assignment,
                  "Increasing the number of partitions by " + std::to_string(added_count) + " but "
                    + std::to_string(req.assignments.size()) + " assignments provided.");
    // AdminZkClient.validateReplicaAssignment.
    std::vector<int32_t> bad_partitions, bad_factors;
    for (int32_t i = 0; i < added_count; ++i) {
      const auto& reps = req.assignments[static_cast<size_t>(i)];
      const int32_t p = old_count + i;
      if (reps.empty())
        return fail(error_code::invalid_replica_assignment,
                    "Cannot have replication factor of 0 for partition id " + std::to_string(p)
                      + ".");
      if (std::set<node_id>(reps.begin(), reps.end()).size() != reps.size())
        return fail(error_code::invalid_replica_assignment,
                    "Duplicate brokers not allowed in replica assignment: " + joined(reps)
                      + " for partition id " + std::to_string(p) + ".");
      if (static_cast<int32_t>(reps.size()) != replication_factor) {
        bad_partitions.push_back(p);
        bad_factors.push_back(static_cast<int32_t>(reps.size()));
      }
      added[p] = reps;
    }
    if (!bad_partitions.empty())
      return fail(error_code::invalid_replica_assignment,
                  "Inconsistent replication factor between partitions, partition 0 has "
                    + std::to_string(replication_factor) + " while partitions ["
                    + joined(bad_partitions) + "] have replication factors ["
                    + joined(bad_factors) + "], respectively.");
  } else {
    std::vector<node_id> nodes; // sorted: live_ is a map
    for (const auto& [id, n] : live_)
      nodes.push_back(id);
    auto at = std::find_if(nodes.begin(), nodes.end(), [&](node_id n) { return n >= first.front(); });
    const auto start = at == nodes.end() ? 0 : static_cast<int32_t>(at - nodes.begin());
    auto placed = assign_replicas(added_count, replication_factor, nodes, start, start, old_count);
    if (!placed.ok())
      return fail(placed.error().code(), placed.error().message());
    added = std::move(*placed);
  }
  if (req.validate_only) {
    out.created_partitions.push_back({req.name, status{}});
    return;
  }
  topic_assignment grown = t->second;
  for (const auto& [p, reps] : added)
    grown.partitions[p] = reps;
  growing_.insert(req.name);
  write_topic(std::move(grown), old_count, out);
}

void controller_core::write_topic(topic_assignment t, int32_t grown_from, controller_decision& out) {
  // A new topic's znode is created, a grown one's set.
  std::vector<store_op> ops{
    {grown_from > 0 ? op_kind::set : op_kind::create, topic_path(t.name), encode_topic(t), -1}};
  for (const auto& [p, reps] : t.partitions) {
    if (p < grown_from)
      continue;
    topic_partition tp{t.name, p};
    // onNewPartitionCreation: leader = the first live replica, ISR = the
    // live replicas (all of them, just assigned over live nodes), epoch 0.
    partition_state st{reps.front(), 0, reps, me_.epoch, 0};
    ops.push_back({op_kind::create, partition_path(tp), "", -1});
    ops.push_back({op_kind::create, partition_state_path(tp), encode_partition_state(st), -1});
  }
  auto b = open_batch();
  auto& bt = batches_[b];
  bt.new_topic = std::move(t);
  bt.grown_from = grown_from;
  bt.topic_write_pending = true;
  auto w = fenced(std::move(ops));
  writes_[w.id] = pending_write{b, std::nullopt, {}};
  out.writes.push_back(std::move(w));
}

void controller_core::release_topic_queue(const std::string& name, controller_decision& out) {
  auto q = topic_queue_.find(name);
  while (!resigned_ && q != topic_queue_.end() && !q->second.empty() && growing_.count(name) == 0) {
    auto next = std::move(q->second.front());
    q->second.pop_front();
    if (next.grow)
      grow_topic(*next.grow, out);
    else
      begin_deletion(name, out);
    q = topic_queue_.find(name);
  }
  if (q != topic_queue_.end() && q->second.empty())
    topic_queue_.erase(q);
}

void controller_core::start_deletion(const std::string& name, controller_decision& out) {
  auto& d = deleting_[name];
  d.marked = true;
  d.awaiting.clear();
  if (auto t = topics_.find(name); t != topics_.end()) {
    std::vector<partition_info> parts;
    for (const auto& [p, reps] : t->second.partitions) {
      for (auto r : reps)
        d.awaiting.insert({r, p});
      if (states_.count({name, p}))
        parts.push_back(info({name, p}, false));
    }
    // Brokers stop serving the topic first (onTopicDeletion's
    // sendUpdateMetadataRequest), then its replicas are deleted.
    for (const auto& [id, n] : live_)
      update_metadata(id, parts, out);
    for (const auto& [id, n] : live_)
      stop_deleted_replicas(id, out);
  }
  maybe_remove_topic(name, out);
}

void controller_core::stop_deleted_replicas(node_id target, controller_decision& out) const {
  auto n = live_.find(target);
  if (n == live_.end())
    return;
  stop_replica_request stop{me_.id, me_.epoch, n->second.node_epoch, {}};
  for (const auto& [name, d] : deleting_) {
    if (!d.marked || d.removing)
      continue;
    for (const auto& [r, p] : d.awaiting)
      if (r == target) // KIP-570: leader epoch -2 marks a deletion
        stop.partitions.push_back({{name, p}, -2, true});
  }
  if (!stop.partitions.empty())
    out.requests.push_back({target, std::move(stop)});
}

void controller_core::maybe_remove_topic(const std::string& name, controller_decision& out) {
  auto it = deleting_.find(name);
  if (it == deleting_.end() || !it->second.marked || it->second.removing
      || !it->second.awaiting.empty())
    return;
  // Kafka's completeDeleteTopic: the topic's znodes, then the marker.
  std::vector<store_op> ops;
  if (auto t = topics_.find(name); t != topics_.end()) {
    for (const auto& [p, reps] : t->second.partitions) {
      topic_partition tp{name, p};
      if (states_.count(tp))
        ops.push_back({op_kind::remove, partition_state_path(tp), "", -1});
      ops.push_back({op_kind::remove, partition_path(tp), "", -1});
    }
    ops.push_back({op_kind::remove, topic_path(name), "", -1});
  }
  ops.push_back({op_kind::remove, delete_topic_path(name), "", -1});
  it->second.removing = true;
  it->second.removal = ops;
  auto w = fenced(std::move(ops));
  deletion_writes_[w.id] = name;
  out.writes.push_back(std::move(w));
}

controller_decision controller_core::deletion_write_answered(const std::string& name,
                                                             const write_result& r) {
  controller_decision out;
  auto it = deleting_.find(name);
  if (it == deleting_.end())
    return out;
  if (!it->second.removing) { // the marker
    if (r.outcome == write_outcome::ok || r.outcome == write_outcome::node_exists) {
      start_deletion(name, out);
      return out;
    }
    deleting_.erase(it);
    if (r.outcome == write_outcome::connection_loss) {
      // Marked or not: the next controller reads /delete_topics and resumes.
      auto lost = "the store's answer to marking topic '" + name + "' for deletion was lost";
      out.deleted_topics.push_back({name, status{error_code::request_timed_out, lost}});
      out = resign(std::move(out));
      out.resigned_because = lost + ": reading the state again";
      return out;
    }
    out.deleted_topics.push_back(
      {name, status{error_code::unknown_server_error,
                    "marking topic '" + name + "' for deletion failed in the store"}});
    return out;
  }
  if (r.outcome == write_outcome::no_node && r.failed_op >= 1
      && r.failed_op <= it->second.removal.size()) {
    // Already gone (Kafka removes them with deleteRecursive, which
    // tolerates that): the rest is removed without it.
    auto& ops = it->second.removal;
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(r.failed_op - 1));
    if (!ops.empty()) {
      auto w = fenced(ops);
      deletion_writes_[w.id] = name;
      out.writes.push_back(std::move(w));
      return out;
    }
  }
  if (r.outcome == write_outcome::ok || r.outcome == write_outcome::no_node) {
    topics_.erase(name);
    for (auto s = states_.lower_bound({name, std::numeric_limits<int32_t>::min()}); s != states_.end() && s->first.topic == name;)
      s = states_.erase(s);
    deleting_.erase(it);
    out.deleted_topics.push_back({name, status{}});
    return out;
  }
  // The outcome is unknown, or the znodes were not as this controller
  // knew them: the next controller reads them anew and finishes.
  auto why = "removing the znodes of deleted topic '" + name + "' "
             + (r.outcome == write_outcome::connection_loss ? "got no answer" : "failed");
  out.deleted_topics.push_back({name, status{error_code::request_timed_out, why}});
  out = resign(std::move(out));
  out.resigned_because = why + ": reading the state again";
  return out;
}

controller_decision controller_core::on_replicas_deleted(
  node_id node, const std::vector<std::pair<topic_partition, error_code>>& results) {
  controller_decision out;
  if (resigned_)
    return out;
  std::set<std::string> confirmed;
  for (const auto& [tp, error] : results) {
    if (error != error_code::none)
      continue;
    auto it = deleting_.find(tp.topic);
    if (it == deleting_.end() || !it->second.marked || it->second.removing)
      continue;
    if (it->second.awaiting.erase({node, tp.partition}) > 0)
      confirmed.insert(tp.topic);
  }
  for (const auto& name : confirmed)
    maybe_remove_topic(name, out);
  return out;
}

controller_decision controller_core::retry_topic_deletions() {
  controller_decision out;
  if (resigned_)
    return out;
  for (const auto& [id, n] : live_)
    stop_deleted_replicas(id, out);
  return out;
}

} // namespace caftx::controller
