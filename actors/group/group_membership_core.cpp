#include "actors/group/group_membership_core.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

namespace caftx {

namespace {

// Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: a new member that
// waits in a join this long without the rebalance ending is removed.
constexpr int64_t new_member_join_timeout_ms = 300000;

bool same_protocols(const std::vector<group_protocol>& a, const std::vector<group_protocol>& b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].metadata != b[i].metadata)
      return false;
  return true;
}

} // namespace

const char* to_string(group_state s) {
  switch (s) {
    case group_state::empty: return "Empty";
    case group_state::preparing_rebalance: return "PreparingRebalance";
    case group_state::completing_rebalance: return "CompletingRebalance";
    case group_state::stable: return "Stable";
  }
  return "Dead";
}

group_membership_core::group_membership_core(group_membership_limits limits, uint64_t seed)
  : limits_(limits), random_(seed) {
}

// clientId (or a static member's instance id) + "-" + a random UUID, as
// Kafka's GroupMetadata.generateMemberId.
std::string group_membership_core::new_member_id(const std::string& prefix) {
  uint64_t hi = random_();
  uint64_t lo = random_();
  hi = (hi & ~0xf000ull) | 0x4000ull;                  // version 4
  lo = (lo & ~(0xc0ull << 56)) | (0x80ull << 56);      // IETF variant
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08llx-%04llx-%04llx-%04llx-%012llx",
                static_cast<unsigned long long>(hi >> 32),
                static_cast<unsigned long long>((hi >> 16) & 0xffff),
                static_cast<unsigned long long>(hi & 0xffff),
                static_cast<unsigned long long>(lo >> 48),
                static_cast<unsigned long long>(lo & 0xffffffffffffull));
  return prefix + "-" + buf;
}

bool group_membership_core::fenced(const group& g, const std::string& instance,
                                   const std::string& member_id) {
  if (instance.empty())
    return false;
  auto it = g.static_members.find(instance);
  return it != g.static_members.end() && it->second != member_id;
}

error_code group_membership_core::validate_member(const group& g, const std::string& member_id,
                                                  const std::string& instance) {
  if (!instance.empty()) {
    auto it = g.static_members.find(instance);
    if (it == g.static_members.end())
      return error_code::unknown_member_id;
    return it->second == member_id ? error_code::none : error_code::fenced_instance_id;
  }
  return g.members.count(member_id) ? error_code::none : error_code::unknown_member_id;
}

// Kafka's GroupMetadata.supportsProtocols: an Empty group takes any
// protocol type; otherwise the type must be the group's and one of the
// joiner's protocols must be supported by every other member.
bool group_membership_core::supports(const group& g, const std::string& self,
                                     const join_group_request& req) const {
  if (req.protocol_type.empty() || req.protocols.empty())
    return false;
  size_t others = g.members.size() - (g.members.count(self) ? 1 : 0);
  if (others == 0)
    return true;
  if (req.protocol_type != g.protocol_type)
    return false;
  for (auto& p : req.protocols) {
    size_t n = 0;
    for (auto& [id, m] : g.members)
      if (id != self && metadata_for(m, p.name))
        ++n;
    if (n == others)
      return true;
  }
  return false;
}

const std::string* group_membership_core::metadata_for(const member& m,
                                                       const std::string& protocol) {
  for (auto& p : m.protocols)
    if (p.name == protocol)
      return &p.metadata;
  return nullptr;
}

void group_membership_core::join(ticket t, const join_group_request& req, int64_t now_ms,
                                 outbox& out) {
  auto fail = [&](error_code e) {
    join_group_response r;
    r.error = e;
    r.member_id = req.member_id;
    out.joins.emplace_back(t, std::move(r));
  };
  if (req.group_id.empty())
    return fail(error_code::invalid_group_id);
  if (req.session_timeout_ms < limits_.min_session_timeout_ms
      || req.session_timeout_ms > limits_.max_session_timeout_ms)
    return fail(error_code::invalid_session_timeout);
  auto it = groups_.find(req.group_id);
  if (it == groups_.end()) {
    if (!req.member_id.empty())
      return fail(error_code::unknown_member_id);
    it = groups_.emplace(req.group_id, group{}).first;
    it->second.id = req.group_id;
  }
  auto& g = it->second;
  const auto& instance = req.group_instance_id;
  if (req.member_id.empty()) {
    if (!supports(g, "", req))
      return fail(error_code::inconsistent_group_protocol);
    auto held = instance.empty() ? g.static_members.end() : g.static_members.find(instance);
    if (held != g.static_members.end()) {
      // A static member back (restarted, or a second process with the
      // same instance id): it takes the instance's place, no new member.
      replace_static_member(g, t, req, held->second, now_ms, out);
      return;
    }
    if (g.members.size() + g.pending.size() >= static_cast<size_t>(limits_.max_size))
      return fail(error_code::group_max_size_reached);
    auto id = new_member_id(instance.empty() ? req.client_id : instance);
    if (!instance.empty()) {
      // KIP-345: a static member is not asked to come back with its id.
      add_member(g, t, req, std::move(id), now_ms, out);
      return;
    }
    if (req.require_known_member_id) {
      // KIP-394: the member comes back with its id; until then it is
      // pending, and a rebalance waits for it.
      g.pending[id] = now_ms + req.session_timeout_ms;
      join_group_response r;
      r.error = error_code::member_id_required;
      r.member_id = id;
      out.joins.emplace_back(t, std::move(r));
      return;
    }
    add_member(g, t, req, std::move(id), now_ms, out);
    return;
  }
  if (!supports(g, req.member_id, req))
    return fail(error_code::inconsistent_group_protocol);
  if (auto p = g.pending.find(req.member_id); p != g.pending.end()) {
    g.pending.erase(p);
    add_member(g, t, req, req.member_id, now_ms, out);
    return;
  }
  if (fenced(g, instance, req.member_id))
    return fail(error_code::fenced_instance_id);
  auto m = g.members.find(req.member_id);
  if (m == g.members.end() || (!instance.empty() && !g.static_members.count(instance)))
    return fail(error_code::unknown_member_id);
  auto& mem = m->second;
  switch (g.state) {
    case group_state::preparing_rebalance:
      update_member(g, mem, t, req, now_ms, out);
      break;
    case group_state::completing_rebalance:
      // The same join again (its answer was lost): the generation as it
      // is; new protocols start over.
      if (same_protocols(mem.protocols, req.protocols))
        answer_current(g, mem, t, out);
      else
        update_member(g, mem, t, req, now_ms, out);
      break;
    case group_state::stable:
    case group_state::empty:
      // The leader's join means the subscription may have changed, so it
      // rebalances (Kafka's doJoinGroup); a follower with the same
      // protocols gets the current generation.
      if (g.leader == mem.id || !same_protocols(mem.protocols, req.protocols))
        update_member(g, mem, t, req, now_ms, out);
      else
        answer_current(g, mem, t, out);
      break;
  }
}

void group_membership_core::take_join(member& m, ticket t, const join_group_request& req,
                                      int64_t now_ms) {
  m.client_id = req.client_id;
  m.client_host = req.client_host;
  m.session_timeout_ms = req.session_timeout_ms;
  m.rebalance_timeout_ms = req.rebalance_timeout_ms;
  m.protocols = req.protocols;
  m.join_ticket = t;
  m.heartbeat_deadline_ms = now_ms + m.session_timeout_ms;
}

void group_membership_core::add_member(group& g, ticket t, const join_group_request& req,
                                       std::string id, int64_t now_ms, outbox& out) {
  if (g.state == group_state::preparing_rebalance && g.generation == 0)
    g.new_member_added = true;
  member m;
  m.id = id;
  m.instance_id = req.group_instance_id;
  if (!m.instance_id.empty())
    g.static_members[m.instance_id] = id;
  m.joined_ms = now_ms;
  take_join(m, t, req, now_ms);
  if (g.members.empty())
    g.protocol_type = req.protocol_type;
  if (g.leader.empty())
    g.leader = id;
  g.members.emplace(id, std::move(m));
  maybe_prepare_rebalance(g, now_ms, out);
  check_join(g, now_ms, out);
}

void group_membership_core::update_member(group& g, member& m, ticket t,
                                          const join_group_request& req, int64_t now_ms,
                                          outbox& out) {
  if (m.join_ticket) {
    // A second join while the first waits: the first is answered as
    // superseded.
    join_group_response r;
    r.error = error_code::rebalance_in_progress;
    r.member_id = m.id;
    out.joins.emplace_back(*m.join_ticket, std::move(r));
  }
  take_join(m, t, req, now_ms);
  maybe_prepare_rebalance(g, now_ms, out);
  check_join(g, now_ms, out);
}

void group_membership_core::replace_static_member(group& g, ticket t,
                                                  const join_group_request& req,
                                                  const std::string& old_id, int64_t now_ms,
                                                  outbox& out) {
  auto old_leader = g.leader;
  auto node = g.members.extract(old_id);
  auto& old = node.mapped();
  auto previous = old; // restored if the store of the takeover fails
  // Kafka's GroupMetadata.replaceStaticMember: whoever still waits under
  // the old member id is fenced at once.
  if (old.join_ticket) {
    join_group_response r;
    r.error = error_code::fenced_instance_id;
    r.member_id = old_id;
    out.joins.emplace_back(*old.join_ticket, std::move(r));
    old.join_ticket.reset();
  }
  if (old.sync_ticket) {
    out.syncs.emplace_back(*old.sync_ticket, sync_group_response{error_code::fenced_instance_id, {}});
    old.sync_ticket.reset();
  }
  auto id = new_member_id(req.group_instance_id);
  node.key() = id;
  old.id = id;
  auto& mem = g.members.insert(std::move(node)).position->second;
  if (g.leader == old_id)
    g.leader = id;
  g.static_members[mem.instance_id] = id;
  take_join(mem, t, req, now_ms);
  switch (g.state) {
    case group_state::stable:
      if (select_protocol(g) == g.protocol_name) {
        // The group stays as it is: the member rejoins the current
        // generation and keeps its assignment, once the group's record
        // names its new id (Kafka's updateStaticMemberAndRebalance).
        pending_store p;
        p.join_ticket = t;
        p.member_id = id;
        p.old_leader = old_leader;
        previous.join_ticket.reset();
        previous.sync_ticket.reset();
        p.previous = std::move(previous);
        request_store(g, now_ms, out, std::move(p));
      } else {
        prepare_rebalance(g, now_ms, out);
        check_join(g, now_ms, out);
      }
      break;
    case group_state::completing_rebalance:
      // The leader may have been given the old member id to assign to.
      prepare_rebalance(g, now_ms, out);
      check_join(g, now_ms, out);
      break;
    case group_state::preparing_rebalance:
    case group_state::empty: // a group with a member is never Empty
      check_join(g, now_ms, out);
      break;
  }
}

// The member's view of the generation as it stands; the leader also gets
// every member's metadata for the chosen protocol.
void group_membership_core::answer_current(const group& g, const member& m, ticket t,
                                           outbox& out) const {
  join_group_response r;
  r.generation_id = g.generation;
  r.protocol_name = g.protocol_name;
  r.leader_id = g.leader;
  r.member_id = m.id;
  if (g.leader == m.id)
    for (auto& [id, other] : g.members) {
      auto md = metadata_for(other, g.protocol_name);
      r.members.push_back({id, md ? *md : std::string(), other.instance_id});
    }
  out.joins.emplace_back(t, std::move(r));
}

void group_membership_core::maybe_prepare_rebalance(group& g, int64_t now_ms, outbox& out) {
  if (g.state != group_state::preparing_rebalance)
    prepare_rebalance(g, now_ms, out);
}

// Kafka's GroupCoordinator.prepareRebalance: SyncGroups waiting in
// CompletingRebalance are answered REBALANCE_IN_PROGRESS; an Empty group
// waits group.initial.rebalance.delay.ms, any other the rebalance timeout.
void group_membership_core::prepare_rebalance(group& g, int64_t now_ms, outbox& out) {
  g.stores.clear(); // what they would complete is void now
  if (g.state == group_state::completing_rebalance)
    for (auto& [id, m] : g.members) {
      m.assignment.clear();
      if (m.sync_ticket) {
        out.syncs.emplace_back(*m.sync_ticket, sync_group_response{error_code::rebalance_in_progress, {}});
        m.sync_ticket.reset();
      }
    }
  int64_t rebalance_timeout = 0;
  for (auto& [id, m] : g.members)
    rebalance_timeout = std::max<int64_t>(rebalance_timeout, m.rebalance_timeout_ms);
  if (g.state == group_state::empty) {
    int64_t delay = limits_.initial_rebalance_delay_ms;
    g.initial_join = true;
    g.new_member_added = false;
    g.initial_remaining_ms = std::max<int64_t>(rebalance_timeout - delay, 0);
    g.join_deadline_ms = now_ms + delay;
  } else {
    g.initial_join = false;
    g.join_deadline_ms = now_ms + rebalance_timeout;
  }
  g.state = group_state::preparing_rebalance;
}

// Ends the join if it is due: the initial delay ran out (extended while
// new members keep coming), or every member joined again, or the
// rebalance timeout passed.
void group_membership_core::check_join(group& g, int64_t now_ms, outbox& out) {
  if (g.state != group_state::preparing_rebalance)
    return;
  if (g.initial_join) {
    if (now_ms < g.join_deadline_ms)
      return;
    if (g.new_member_added && g.initial_remaining_ms > 0) {
      g.new_member_added = false;
      int64_t delay = std::min<int64_t>(limits_.initial_rebalance_delay_ms, g.initial_remaining_ms);
      g.initial_remaining_ms = std::max<int64_t>(g.initial_remaining_ms - delay, 0);
      g.join_deadline_ms = now_ms + delay;
      return;
    }
    complete_join(g, now_ms, out);
    return;
  }
  bool all_joined = g.pending.empty();
  for (auto& [id, m] : g.members)
    all_joined = all_joined && m.join_ticket.has_value();
  if (all_joined || now_ms >= g.join_deadline_ms)
    complete_join(g, now_ms, out);
}

// Kafka's GroupCoordinator.onCompleteJoin: dynamic members that did not
// join again are removed (static ones stay, with their metadata, until
// their session times out), the next generation starts, and every joined
// member gets its answer. The leader must be a member that joined (Kafka's
// maybeElectNewJoinedLeader); with none, the join waits another rebalance
// timeout.
void group_membership_core::complete_join(group& g, int64_t now_ms, outbox& out) {
  for (auto it = g.members.begin(); it != g.members.end();) {
    if (it->second.join_ticket || !it->second.instance_id.empty()) {
      ++it;
      continue;
    }
    it = g.members.erase(it);
  }
  auto leader = g.members.find(g.leader);
  if (leader == g.members.end() || !leader->second.join_ticket) {
    auto joined = std::find_if(g.members.begin(), g.members.end(),
                               [](auto& m) { return m.second.join_ticket.has_value(); });
    if (joined == g.members.end() && !g.members.empty()) {
      int64_t rebalance_timeout = 0;
      for (auto& [id, m] : g.members)
        rebalance_timeout = std::max<int64_t>(rebalance_timeout, m.rebalance_timeout_ms);
      g.initial_join = false;
      g.join_deadline_ms = now_ms + rebalance_timeout;
      return;
    }
    g.leader = joined == g.members.end() ? std::string() : joined->first;
  }
  ++g.generation;
  g.initial_join = false;
  if (g.members.empty()) {
    g.state = group_state::empty;
    g.protocol_name.clear();
    g.leader.clear();
    request_store(g, now_ms, out, std::nullopt); // nothing waits for it
    return;
  }
  g.protocol_name = select_protocol(g);
  g.state = group_state::completing_rebalance;
  for (auto& [id, m] : g.members) {
    if (m.join_ticket)
      answer_current(g, m, *m.join_ticket, out);
    m.join_ticket.reset();
    m.is_new = false;
    m.heartbeat_deadline_ms = now_ms + m.session_timeout_ms;
  }
}

// Kafka's GroupMetadata.selectProtocol: among the protocols every member
// supports, each member votes for the first in its own order; the most
// votes win (ties: the earlier in the leader's order).
std::string group_membership_core::select_protocol(const group& g) const {
  auto& leader = g.members.at(g.leader);
  std::vector<std::string> candidates;
  for (auto& p : leader.protocols) {
    bool everyone = true;
    for (auto& [id, m] : g.members)
      everyone = everyone && metadata_for(m, p.name) != nullptr;
    if (everyone)
      candidates.push_back(p.name);
  }
  std::map<std::string, size_t> votes;
  for (auto& [id, m] : g.members)
    for (auto& p : m.protocols)
      if (std::find(candidates.begin(), candidates.end(), p.name) != candidates.end()) {
        ++votes[p.name];
        break;
      }
  std::string best;
  size_t most = 0;
  for (auto& c : candidates)
    if (votes[c] > most) {
      most = votes[c];
      best = c;
    }
  return best;
}

void group_membership_core::sync(ticket t, const sync_group_request& req, int64_t now_ms,
                                 outbox& out) {
  auto answer = [&](error_code e, std::string assignment = {}) {
    out.syncs.emplace_back(t, sync_group_response{e, std::move(assignment)});
  };
  auto it = groups_.find(req.group_id);
  if (it == groups_.end())
    return answer(error_code::unknown_member_id);
  auto& g = it->second;
  if (auto e = validate_member(g, req.member_id, req.group_instance_id); e != error_code::none)
    return answer(e);
  auto m = g.members.find(req.member_id);
  if (m == g.members.end())
    return answer(error_code::unknown_member_id);
  if (req.generation_id != g.generation)
    return answer(error_code::illegal_generation);
  auto& mem = m->second;
  switch (g.state) {
    case group_state::empty:
      return answer(error_code::unknown_member_id);
    case group_state::preparing_rebalance:
      return answer(error_code::rebalance_in_progress);
    case group_state::stable:
      mem.heartbeat_deadline_ms = now_ms + mem.session_timeout_ms;
      return answer(error_code::none, mem.assignment);
    case group_state::completing_rebalance:
      break;
  }
  if (mem.sync_ticket)
    out.syncs.emplace_back(*mem.sync_ticket, sync_group_response{error_code::rebalance_in_progress, {}});
  mem.sync_ticket = t;
  mem.heartbeat_deadline_ms = now_ms + mem.session_timeout_ms;
  if (g.leader != mem.id)
    return;
  for (auto& [id, p] : g.stores)
    if (p.assignment)
      return; // the leader's first assignment is being stored; this sync waits for it
  // The leader's assignment: every member's, empty bytes for one it does
  // not name. It is handed out once the group's record with it is durable.
  pending_store p;
  p.assignment = true;
  for (auto& [id, other] : g.members)
    p.assignments[id];
  for (auto& a : req.assignments)
    if (auto o = p.assignments.find(a.member_id); o != p.assignments.end())
      o->second = a.assignment;
  auto staged = p.assignments;
  request_store(g, now_ms, out, std::move(p), &staged);
}

void group_membership_core::hand_out_assignment(group& g,
                                                const std::map<std::string, std::string>& assignments,
                                                int64_t now_ms, outbox& out) {
  for (auto& [id, other] : g.members) {
    auto a = assignments.find(id);
    other.assignment = a == assignments.end() ? std::string() : a->second;
  }
  g.state = group_state::stable;
  answer_syncs(g, error_code::none, now_ms, out);
}

// Kafka's GroupCoordinator.propagateAssignment: every waiting SyncGroup
// gets its member's assignment (or `error`), and the member's session
// starts over, since it could send no heartbeat while its request waited.
void group_membership_core::answer_syncs(group& g, error_code error, int64_t now_ms,
                                         outbox& out) {
  for (auto& [id, m] : g.members) {
    if (error != error_code::none)
      m.assignment.clear();
    if (!m.sync_ticket)
      continue;
    out.syncs.emplace_back(*m.sync_ticket, sync_group_response{error, m.assignment});
    m.sync_ticket.reset();
    m.heartbeat_deadline_ms = now_ms + m.session_timeout_ms;
  }
}

group_metadata_record group_membership_core::snapshot(
  const group& g, int64_t now_ms, const std::map<std::string, std::string>* assignments) const {
  group_metadata_record r;
  r.group_id = g.id;
  r.protocol_type = g.protocol_type;
  r.generation = g.generation;
  r.protocol_name = g.protocol_name;
  r.leader = g.leader;
  r.state_timestamp_ms = now_ms;
  for (auto& [id, m] : g.members) {
    group_record_member rm;
    rm.member_id = id;
    rm.group_instance_id = m.instance_id;
    rm.client_id = m.client_id;
    rm.client_host = m.client_host;
    rm.rebalance_timeout_ms = m.rebalance_timeout_ms;
    rm.session_timeout_ms = m.session_timeout_ms;
    if (auto md = metadata_for(m, g.protocol_name))
      rm.subscription = *md;
    if (assignments) {
      if (auto a = assignments->find(id); a != assignments->end())
        rm.assignment = a->second;
    } else {
      rm.assignment = m.assignment;
    }
    r.members.push_back(std::move(rm));
  }
  return r;
}

void group_membership_core::request_store(group& g, int64_t now_ms, outbox& out,
                                          std::optional<pending_store> wait,
                                          const std::map<std::string, std::string>* assignments) {
  uint64_t id = 0;
  if (wait) {
    id = ++last_store_id_;
    g.stores.emplace(id, std::move(*wait));
  }
  out.stores.push_back({id, snapshot(g, now_ms, assignments)});
}

void group_membership_core::stored(const std::string& group_id, uint64_t id, error_code error,
                                   int64_t now_ms, outbox& out) {
  auto it = groups_.find(group_id);
  if (it == groups_.end())
    return;
  auto& g = it->second;
  auto s = g.stores.find(id);
  if (s == g.stores.end())
    return;
  auto p = std::move(s->second);
  g.stores.erase(s);
  if (p.assignment) {
    if (g.state != group_state::completing_rebalance)
      return;
    if (error == error_code::none) {
      hand_out_assignment(g, p.assignments, now_ms, out);
      return;
    }
    // Kafka's resetAndPropagateAssignmentError, then a rebalance.
    answer_syncs(g, error, now_ms, out);
    prepare_rebalance(g, now_ms, out);
    check_join(g, now_ms, out);
    return;
  }
  auto m = g.members.find(p.member_id);
  if (m == g.members.end() || m->second.join_ticket != p.join_ticket)
    return; // left, or answered by a rebalance meanwhile
  if (error == error_code::none) {
    join_group_response r;
    r.generation_id = g.generation;
    r.protocol_name = g.protocol_name;
    // The leader named is the one before the takeover, so that a
    // returning leader does not assign again.
    r.leader_id = p.old_leader;
    r.member_id = p.member_id;
    out.joins.emplace_back(p.join_ticket, std::move(r));
    m->second.join_ticket.reset();
    m->second.heartbeat_deadline_ms = now_ms + m->second.session_timeout_ms;
    return;
  }
  // The record still names the previous member id: it is the member again
  // (Kafka reverts the takeover), and the join is answered the error.
  join_group_response r;
  r.error = error;
  out.joins.emplace_back(p.join_ticket, std::move(r));
  g.members.erase(m);
  auto previous = std::move(*p.previous);
  previous.heartbeat_deadline_ms = now_ms + previous.session_timeout_ms;
  auto previous_id = previous.id;
  if (!previous.instance_id.empty())
    g.static_members[previous.instance_id] = previous_id;
  g.members.emplace(previous_id, std::move(previous));
  // Leadership goes back only if the undone member holds it (Kafka's
  // replaceStaticMember); another takeover may have moved it meanwhile.
  if (g.leader == p.member_id)
    g.leader = previous_id;
}

void group_membership_core::load_record(const group_metadata_record& record) {
  group g;
  g.id = record.group_id;
  g.generation = record.generation;
  g.protocol_type = record.protocol_type;
  g.protocol_name = record.protocol_name;
  g.leader = record.leader;
  g.state = record.members.empty() ? group_state::empty : group_state::stable;
  for (auto& rm : record.members) {
    member m;
    m.id = rm.member_id;
    m.instance_id = rm.group_instance_id;
    m.client_id = rm.client_id;
    m.client_host = rm.client_host;
    m.session_timeout_ms = rm.session_timeout_ms;
    m.rebalance_timeout_ms = rm.rebalance_timeout_ms;
    m.protocols = {{record.protocol_name, rm.subscription}};
    m.assignment = rm.assignment;
    m.is_new = false;
    if (!m.instance_id.empty())
      g.static_members[m.instance_id] = m.id;
    g.members.emplace(m.id, std::move(m));
  }
  groups_[record.group_id] = std::move(g);
}

void group_membership_core::load_tombstone(const std::string& group) {
  groups_.erase(group);
}

void group_membership_core::loaded(int64_t now_ms) {
  for (auto& [gid, g] : groups_)
    for (auto& [id, m] : g.members)
      m.heartbeat_deadline_ms = now_ms + m.session_timeout_ms;
}

error_code group_membership_core::heartbeat(const heartbeat_request& req, int64_t now_ms) {
  auto it = groups_.find(req.group_id);
  if (it == groups_.end())
    return error_code::unknown_member_id;
  auto& g = it->second;
  if (auto e = validate_member(g, req.member_id, req.group_instance_id); e != error_code::none)
    return e;
  if (g.state == group_state::empty)
    return error_code::unknown_member_id;
  auto m = g.members.find(req.member_id);
  if (m == g.members.end())
    return error_code::unknown_member_id;
  if (req.generation_id != g.generation)
    return error_code::illegal_generation;
  m->second.heartbeat_deadline_ms = now_ms + m->second.session_timeout_ms;
  return g.state == group_state::preparing_rebalance ? error_code::rebalance_in_progress
                                                     : error_code::none;
}

leave_group_response group_membership_core::leave(const leave_group_request& req,
                                                  int64_t now_ms, outbox& out) {
  leave_group_response r;
  auto it = groups_.find(req.group_id);
  for (size_t i = 0; i < req.member_ids.size(); ++i) {
    auto& id = req.member_ids[i];
    static const std::string none;
    auto& instance = i < req.group_instance_ids.size() ? req.group_instance_ids[i] : none;
    if (it == groups_.end()) {
      r.member_errors.push_back(error_code::unknown_member_id);
      continue;
    }
    auto& g = it->second;
    if (id.empty()) {
      // An operator's removal of a static member by its instance id.
      auto held = instance.empty() ? g.static_members.end() : g.static_members.find(instance);
      if (held == g.static_members.end()) {
        r.member_errors.push_back(error_code::unknown_member_id);
        continue;
      }
      r.member_errors.push_back(error_code::none);
      auto member_id = held->second;
      remove_member(g, member_id, now_ms, out);
    } else if (g.pending.erase(id)) {
      r.member_errors.push_back(error_code::none);
      check_join(g, now_ms, out);
    } else if (auto e = validate_member(g, id, instance); e != error_code::none) {
      r.member_errors.push_back(e);
    } else {
      r.member_errors.push_back(error_code::none);
      remove_member(g, id, now_ms, out);
    }
  }
  return r;
}

// Kafka's GroupCoordinator.removeMemberAndUpdateGroup: a waiting join or
// sync of the member is answered UNKNOWN_MEMBER_ID; a Stable or
// CompletingRebalance group rebalances, a rebalancing one may now end.
void group_membership_core::remove_member(group& g, const std::string& id, int64_t now_ms,
                                          outbox& out) {
  auto m = g.members.find(id);
  if (m->second.join_ticket) {
    join_group_response r;
    r.error = error_code::unknown_member_id;
    r.member_id = id;
    out.joins.emplace_back(*m->second.join_ticket, std::move(r));
  }
  if (m->second.sync_ticket)
    out.syncs.emplace_back(*m->second.sync_ticket, sync_group_response{error_code::unknown_member_id, {}});
  if (!m->second.instance_id.empty())
    g.static_members.erase(m->second.instance_id);
  g.members.erase(m);
  if (g.leader == id) {
    g.leader.clear();
    for (auto& [other, om] : g.members)
      if (g.leader.empty() || (om.join_ticket && !g.members.at(g.leader).join_ticket))
        g.leader = other;
  }
  switch (g.state) {
    case group_state::empty:
      break;
    case group_state::stable:
    case group_state::completing_rebalance:
      prepare_rebalance(g, now_ms, out);
      check_join(g, now_ms, out);
      break;
    case group_state::preparing_rebalance:
      check_join(g, now_ms, out);
      break;
  }
}

void group_membership_core::expire(int64_t now_ms, outbox& out) {
  for (auto& [gid, g] : groups_) {
    for (auto p = g.pending.begin(); p != g.pending.end();)
      p = p->second <= now_ms ? g.pending.erase(p) : std::next(p);
    std::vector<std::string> gone;
    for (auto& [id, m] : g.members) {
      // Kafka's MemberMetadata.shouldKeepAlive: a member waiting in a join
      // or a sync stays (a new one at most NewMemberJoinTimeoutMs).
      bool keep = m.join_ticket ? (!m.is_new || m.joined_ms + new_member_join_timeout_ms > now_ms)
                  : m.sync_ticket ? true
                                  : m.heartbeat_deadline_ms > now_ms;
      if (!keep)
        gone.push_back(id);
    }
    for (auto& id : gone)
      if (g.members.count(id))
        remove_member(g, id, now_ms, out);
    check_join(g, now_ms, out);
  }
}

std::optional<int64_t> group_membership_core::next_deadline_ms() const {
  std::optional<int64_t> next;
  auto at = [&next](int64_t t) { next = next ? std::min(*next, t) : t; };
  for (auto& [gid, g] : groups_) {
    for (auto& [id, deadline] : g.pending)
      at(deadline);
    if (g.state == group_state::preparing_rebalance)
      at(g.join_deadline_ms);
    for (auto& [id, m] : g.members)
      if (m.join_ticket) {
        if (m.is_new)
          at(m.joined_ms + new_member_join_timeout_ms);
      } else if (!m.sync_ticket) {
        at(m.heartbeat_deadline_ms);
      }
  }
  return next;
}

error_code group_membership_core::validate_offset_commit(const std::string& group,
                                                         int32_t generation_id,
                                                         const std::string& member_id,
                                                         const std::string& group_instance_id,
                                                         int64_t now_ms) {
  auto it = groups_.find(group);
  if (it == groups_.end())
    return generation_id < 0 ? error_code::none : error_code::illegal_generation;
  auto& g = it->second;
  if (!group_instance_id.empty())
    if (auto e = validate_member(g, member_id, group_instance_id); e != error_code::none)
      return e;
  if (generation_id < 0 && g.state == group_state::empty)
    return error_code::none;
  auto m = g.members.find(member_id);
  if (m == g.members.end())
    return error_code::unknown_member_id;
  if (generation_id != g.generation)
    return error_code::illegal_generation;
  if (g.state == group_state::completing_rebalance)
    return error_code::rebalance_in_progress;
  m->second.heartbeat_deadline_ms = now_ms + m->second.session_timeout_ms;
  return error_code::none;
}

error_code group_membership_core::validate_txn_offset_commit(const std::string& group,
                                                             int32_t generation_id,
                                                             const std::string& member_id,
                                                             const std::string& group_instance_id) const {
  auto it = groups_.find(group);
  if (!group_instance_id.empty()) {
    if (it == groups_.end())
      return error_code::unknown_member_id;
    if (auto e = validate_member(it->second, member_id, group_instance_id); e != error_code::none)
      return e;
  }
  int32_t current = it == groups_.end() ? 0 : it->second.generation;
  if (!member_id.empty() && (it == groups_.end() || !it->second.members.count(member_id)))
    return error_code::unknown_member_id;
  if (generation_id >= 0 && generation_id != current)
    return error_code::illegal_generation;
  return error_code::none;
}

group_description group_membership_core::describe(const std::string& group) const {
  group_description d;
  d.group_id = group;
  auto it = groups_.find(group);
  if (it == groups_.end()) {
    d.state = "Dead";
    return d;
  }
  auto& g = it->second;
  d.state = to_string(g.state);
  d.protocol_type = g.protocol_type;
  bool stable = g.state == group_state::stable;
  if (stable)
    d.protocol = g.protocol_name;
  for (auto& [id, m] : g.members) {
    group_member_description md{id, m.instance_id, m.client_id, m.client_host, {}, {}};
    if (stable) {
      if (auto p = metadata_for(m, g.protocol_name))
        md.metadata = *p;
      md.assignment = m.assignment;
    }
    d.members.push_back(std::move(md));
  }
  return d;
}

std::vector<listed_group> group_membership_core::list() const {
  std::vector<listed_group> out;
  for (auto& [id, g] : groups_)
    out.push_back({id, g.protocol_type, to_string(g.state)});
  return out;
}

bool group_membership_core::has_members(const std::string& group) const {
  auto it = groups_.find(group);
  return it != groups_.end() && (!it->second.members.empty() || !it->second.pending.empty());
}

bool group_membership_core::remove_group(const std::string& group) {
  auto it = groups_.find(group);
  if (it == groups_.end() || !it->second.members.empty() || !it->second.pending.empty())
    return false;
  groups_.erase(it);
  return true;
}

std::optional<group_state> group_membership_core::state(const std::string& group) const {
  auto it = groups_.find(group);
  if (it == groups_.end())
    return std::nullopt;
  return it->second.state;
}

std::optional<int32_t> group_membership_core::generation(const std::string& group) const {
  auto it = groups_.find(group);
  if (it == groups_.end())
    return std::nullopt;
  return it->second.generation;
}

} // namespace caftx
