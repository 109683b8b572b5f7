#include "actors/client/admin.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "actors/client/client_context.hpp"
#include "actors/client/remote_cluster.hpp"

#include <cerrno>
#include <cstdlib>

namespace caftx {

status create_topic(caf::actor_system& sys, const caf::actor& broker, const std::string& name,
                    int32_t partitions, const std::map<std::string, std::string>& configs,
                    std::chrono::milliseconds timeout) {
  detail::client_channel ch{sys, broker};
  auto r = ch.call<txn_response>(broker, create_topic_request{name, partitions, configs}, timeout);
  if (!r.ok())
    return r.error();
  return {r->error, r->message};
}

status delete_topic(caf::actor_system& sys, const caf::actor& broker, const std::string& name,
                    std::chrono::milliseconds timeout) {
  admin_options opts;
  opts.request_timeout = timeout;
  return admin_client{sys, broker, std::move(opts)}.delete_topic(name);
}

status_or<describe_transaction_response>
describe_transaction(caf::actor_system& sys, const caf::actor& broker,
                     const std::string& transactional_id, std::chrono::milliseconds timeout) {
  admin_options opts;
  opts.request_timeout = timeout;
  return admin_client{sys, broker, std::move(opts)}.describe_transaction(transactional_id);
}

write_txn_marker_request abort_marker_request(const topic_partition& tp,
                                              const active_producer& producer) {
  write_txn_marker_request req;
  req.pid = producer.pid;
  req.epoch = producer.epoch;
  req.coordinator_epoch = std::max(producer.coordinator_epoch, 0);
  req.committed = false;
  req.tp = tp;
  // The data's own epoch: a version 1 marker, which the partition accepts
  // unless a newer epoch or coordinator took over (KIP-664).
  req.transaction_version = 1;
  return req;
}

namespace {

int64_t system_now_ms() {
  return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
}

} // namespace

admin_client::admin_client(caf::actor_system& sys, caf::actor broker, admin_options opts)
  : ch_(std::make_unique<detail::client_channel>(sys, std::move(broker))), opts_(std::move(opts)) {
  if (opts_.after_send)
    ch_->set_after_send(opts_.after_send);
  if (!opts_.clock_ms)
    opts_.clock_ms = system_now_ms;
}

admin_client::admin_client(const properties& props) {
  int64_t timeout_ms = 30000;
  cluster_ = detail::connect_remote(props, [&](const properties& given) {
    auto rest = given;
    if (auto i = rest.find("request.timeout.ms"); i != rest.end()) {
      char* end = nullptr;
      errno = 0;
      timeout_ms = std::strtoll(i->second.c_str(), &end, 10);
      if (i->second.empty() || *end != '\0' || errno == ERANGE || timeout_ms < 1
          || timeout_ms > 2147483647)
        throw kafka_exception(status{error_code::invalid_config,
                                     "config 'request.timeout.ms' = '" + i->second
                                       + "' is out of range [1, 2147483647]"},
                              error_class::fatal);
      rest.erase(i);
    }
    rest.erase("client.id");
    if (!rest.empty())
      throw kafka_exception(status{error_code::invalid_config,
                                   "unknown admin config '" + rest.begin()->first + "'"},
                            error_class::fatal);
  });
  ch_ = std::make_unique<detail::client_channel>(cluster_->system(), cluster_->broker());
  detail::watch_metadata(*ch_, cluster_);
  opts_.request_timeout = std::chrono::milliseconds(timeout_ms);
  opts_.clock_ms = system_now_ms;
}

admin_client::~admin_client() = default;

namespace {

// How long a node waits for what a request asks: the request timeout, as
// Kafka's int32 timeoutMs.
int32_t node_wait_ms(const admin_options& opts) {
  return static_cast<int32_t>(
    std::min<int64_t>(opts.request_timeout.count(), std::numeric_limits<int32_t>::max()));
}

} // namespace

status admin_client::create_topic(const std::string& name, int32_t partitions,
                                  const std::map<std::string, std::string>& configs,
                                  int32_t replication_factor) {
  auto r = ch_->call<txn_response>(ch_->broker(),
                                   create_topic_request{name, partitions, configs,
                                                        replication_factor},
                                   opts_.request_timeout);
  if (!r.ok())
    return r.error();
  return {r->error, r->message};
}

status admin_client::delete_topic(const std::string& name) {
  // The node waits up to request_timeout for the deletion; a little more
  // here lets its answer arrive.
  auto r = ch_->call<txn_response>(ch_->broker(), delete_topic_request{name, node_wait_ms(opts_)},
                                   opts_.request_timeout + std::chrono::seconds(5));
  if (!r.ok())
    return r.error();
  return {r->error, r->message};
}

status admin_client::create_partitions(const std::string& name, int32_t count,
                                       const std::vector<std::vector<int32_t>>& assignments,
                                       bool validate_only) {
  // As delete_topic: the node waits for the new leaders, this a little longer.
  auto r = ch_->call<txn_response>(
    ch_->broker(),
    create_partitions_request{name, count, assignments, validate_only, node_wait_ms(opts_)},
    opts_.request_timeout + std::chrono::seconds(5));
  if (!r.ok())
    return r.error();
  return {r->error, r->message};
}

status_or<std::vector<topic_description>>
admin_client::describe_topics(const std::vector<std::string>& topics) {
  auto r = ch_->call<describe_topics_response>(ch_->broker(), describe_topics_request{topics},
                                               opts_.request_timeout);
  if (!r.ok())
    return r.error();
  return std::move(r->topics);
}

status_or<std::map<topic_partition, int64_t>>
admin_client::list_group_offsets(const std::string& group_id) {
  if (group_id.empty())
    return status{error_code::invalid_request, "the group id is empty"};
  auto coord = ch_->coordinator(0, group_id, false, opts_.request_timeout);
  if (!coord.ok())
    return coord.error();
  auto r = ch_->call<offset_fetch_response>(coord.value(), offset_fetch_request{group_id, {}, false},
                                            opts_.request_timeout);
  if (!r.ok())
    return r.error();
  if (r->error != error_code::none)
    return status{r->error, "the offsets of group " + group_id};
  std::map<topic_partition, int64_t> out;
  for (size_t i = 0; i < r->partitions.size() && i < r->offsets.size(); ++i)
    if (r->offsets[i] >= 0)
      out[r->partitions[i]] = r->offsets[i];
  return out;
}

status_or<std::vector<elect_leaders_result>>
admin_client::elect_preferred_leaders(const std::vector<topic_partition>& partitions) {
  auto r = ch_->call<elect_leaders_response>(ch_->broker(), elect_leaders_request{partitions},
                                             opts_.request_timeout);
  if (!r.ok())
    return r.error();
  return std::move(r->results);
}

status_or<drill_network_response> admin_client::drill_network(const drill_network_request& req) {
  auto r = ch_->call<drill_network_response>(ch_->broker(), req, opts_.request_timeout);
  if (!r.ok())
    return r.error();
  if (r->error != error_code::none)
    return status{r->error, r->message};
  return std::move(r).value();
}

status_or<int32_t> admin_client::node_id() {
  auto r = ch_->call<node_handles_response>(ch_->broker(), node_handles_request{},
                                            opts_.request_timeout);
  if (!r.ok())
    return r.error();
  return r->node_id;
}

status admin_client::drill_fault(const drill_fault_request& req) {
  auto r = ch_->call<drill_fault_response>(ch_->broker(), req, opts_.request_timeout);
  if (!r.ok())
    return r.error();
  return status{r->error, r->message};
}

status_or<bool> admin_client::disarm_fault(const std::string& point) {
  drill_fault_request req;
  req.point = point;
  req.disarm = true;
  auto r = ch_->call<drill_fault_response>(ch_->broker(), req, opts_.request_timeout);
  if (!r.ok())
    return r.error();
  if (r->error != error_code::none)
    return status{r->error, r->message};
  return r->still_armed;
}

status_or<list_transactions_response>
admin_client::list_transactions(const list_transactions_filter& filter) {
  auto r = ch_->call<list_transactions_response>(ch_->broker(), list_transactions_request{filter},
                                                 opts_.request_timeout);
  if (!r.ok())
    return r.error();
  if (r->error != error_code::none)
    return status{r->error, r->message};
  return std::move(r).value();
}

status_or<describe_transaction_response>
admin_client::describe_transaction(const std::string& transactional_id) {
  auto coord = ch_->coordinator(1, transactional_id, false, opts_.request_timeout);
  if (!coord.ok())
    return coord.error();
  auto r = ch_->call<describe_transaction_response>(
    coord.value(), describe_transaction_request{transactional_id}, opts_.request_timeout);
  if (!r.ok())
    return r.error();
  if (r->error != error_code::none)
    return status{r->error, "describe " + transactional_id};
  return std::move(r).value();
}

status_or<std::vector<std::pair<topic_partition, partition_actor>>>
admin_client::leaders(const std::vector<std::string>& topics) {
  auto r = ch_->call<metadata_response>(ch_->broker(), metadata_request{}, opts_.request_timeout);
  if (!r.ok())
    return r.error();
  std::map<std::string, std::vector<partition_actor>> known;
  for (auto& tm : r->topics)
    if (tm.error == error_code::none)
      known[tm.name] = tm.partitions;
  std::vector<std::string> names = topics;
  if (names.empty())
    for (auto& [name, _] : known)
      names.push_back(name);
  std::vector<std::pair<topic_partition, partition_actor>> result;
  for (auto& name : names) {
    auto i = known.find(name);
    if (i == known.end())
      return status{error_code::unknown_topic_or_partition, "topic '" + name + "' does not exist"};
    for (size_t p = 0; p < i->second.size(); ++p)
      result.emplace_back(topic_partition{name, static_cast<int32_t>(p)}, i->second[p]);
  }
  return result;
}

status_or<std::vector<active_producer>>
admin_client::describe_producers_at(const partition_actor& leader, const topic_partition& tp) {
  auto r = ch_->call<describe_producers_response>(leader, describe_producers_request{tp},
                                                  opts_.request_timeout);
  if (!r.ok())
    return r.error();
  if (r->error != error_code::none)
    return status{r->error, r->message};
  return std::move(r->active_producers);
}

status_or<fetch_response> admin_client::fetch(const topic_partition& tp, int64_t offset,
                                              isolation_level isolation, int32_t max_bytes) {
  auto leader = leader_of(tp);
  if (!leader.ok())
    return leader.error();
  fetch_request req;
  req.tp = tp;
  req.fetch_offset = offset;
  req.max_bytes = max_bytes;
  req.isolation = isolation;
  auto r = ch_->call<fetch_response>(*leader, req, opts_.request_timeout);
  if (!r.ok())
    return r.error();
  if (r->error != error_code::none)
    return status{r->error, r->message};
  return std::move(*r);
}

status_or<int64_t> admin_client::delete_records(const topic_partition& tp, int64_t offset) {
  auto leader = leader_of(tp);
  if (!leader.ok())
    return leader.error();
  auto r = ch_->call<delete_records_response>(*leader, delete_records_request{tp, offset},
                                              opts_.request_timeout);
  if (!r.ok())
    return r.error();
  if (r->error != error_code::none)
    return status{r->error, r->message};
  return r->low_watermark;
}

status_or<partition_actor> admin_client::leader_of(const topic_partition& tp) {
  auto all = leaders({tp.topic});
  if (!all.ok())
    return all.error();
  for (auto& [p, leader] : *all)
    if (p == tp)
      return leader;
  return status{error_code::unknown_topic_or_partition, "unknown partition " + to_string(tp)};
}

status_or<std::vector<active_producer>>
admin_client::describe_producers(const topic_partition& tp) {
  auto leader = leader_of(tp);
  if (!leader.ok())
    return leader.error();
  return describe_producers_at(*leader, tp);
}

status_or<std::vector<hanging_transaction>>
admin_client::find_hanging_transactions(const std::vector<std::string>& topics,
                                        int64_t max_transaction_timeout_ms) {
  auto all = leaders(topics);
  if (!all.ok())
    return all.error();
  auto now_ms = opts_.clock_ms();
  std::vector<open_transaction> candidates;
  for (auto& [tp, leader] : *all) {
    auto producers = describe_producers_at(leader, tp);
    if (!producers.ok())
      return producers.error();
    for (auto& c : hanging_candidates(tp, *producers, now_ms, max_transaction_timeout_ms))
      candidates.push_back(std::move(c));
  }
  if (candidates.empty())
    return std::vector<hanging_transaction>{};
  std::set<producer_id> pids;
  for (auto& c : candidates)
    pids.insert(c.producer.pid);
  list_transactions_filter filter;
  filter.producer_ids.assign(pids.begin(), pids.end());
  auto listed = list_transactions(filter);
  if (!listed.ok())
    return listed.error();
  std::map<std::string, std::optional<std::vector<topic_partition>>> partitions_by_id;
  for (auto& l : listed->transactions) {
    if (partitions_by_id.count(l.transactional_id))
      continue;
    auto d = describe_transaction(l.transactional_id);
    if (d.ok())
      partitions_by_id[l.transactional_id] = std::move(d->partitions);
    else if (d.error().code() == error_code::transactional_id_not_found)
      partitions_by_id[l.transactional_id] = std::nullopt;
    else
      return d.error();
  }
  return filter_hanging(candidates, listed->transactions, partitions_by_id);
}

status admin_client::abort_transaction(const topic_partition& tp, int64_t start_offset) {
  auto leader = leader_of(tp);
  if (!leader.ok())
    return leader.error();
  auto producers = describe_producers_at(*leader, tp);
  if (!producers.ok())
    return producers.error();
  auto open = open_transaction_at(*producers, start_offset);
  if (!open)
    return {error_code::invalid_request, "no open transaction starts at offset "
                                           + std::to_string(start_offset) + " of " + to_string(tp)};
  auto r = ch_->call<txn_response>(*leader, abort_marker_request(tp, *open),
                                   opts_.request_timeout);
  if (!r.ok())
    return r.error();
  return {r->error, r->message};
}

status admin_client::abort_transaction(const topic_partition& tp, producer_id pid,
                                       producer_epoch epoch, int32_t coordinator_epoch) {
  auto leader = leader_of(tp);
  if (!leader.ok())
    return leader.error();
  active_producer p;
  p.pid = pid;
  p.epoch = epoch;
  p.coordinator_epoch = coordinator_epoch;
  auto r = ch_->call<txn_response>(*leader, abort_marker_request(tp, p), opts_.request_timeout);
  if (!r.ok())
    return r.error();
  return {r->error, r->message};
}

} // namespace caftx
