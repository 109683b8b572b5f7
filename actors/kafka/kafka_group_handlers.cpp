// JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups, ListGroups
// and DeleteGroups of a Kafka connection (actors/kafka/kafka_connection.hpp):
// Kafka's KafkaApis handlers over the group coordinators on this node.
// docs/kafka-protocol.md §Groups, docs/consumer-groups.md.
#include "actors/kafka/kafka_connection.hpp"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace caftx::kafka_connection {

namespace {

using kafka::request_header;
using kafka::wire_error;

} // namespace

void answer_join_group(self_ptr self, const state_ptr& st, const request_header& h,
                       kafka::join_group_request req) {
  auto version = h.api_version;
  auto r = std::move(req.group);
  r.client_id = h.client_id.value_or("");
  r.client_host = st->client_host;
  auto member_id = r.member_id;
  auto reply = [self, st, h, version](const join_group_response& resp) {
    respond(self, st, h, kafka::encode_join_group_response(resp, version));
  };
  auto failed = [reply, member_id](error_code e) {
    join_group_response resp;
    resp.error = e;
    resp.member_id = member_id;
    reply(resp);
  };
  auto group = r.group_id;
  ask_coordinator<join_group_response>(self, st, group, std::move(r), reply, failed);
}

void answer_sync_group(self_ptr self, const state_ptr& st, const request_header& h,
                       kafka::sync_group_request req) {
  auto version = h.api_version;
  auto reply = [self, st, h, version](const sync_group_response& resp) {
    respond(self, st, h, kafka::encode_sync_group_response(resp, version));
  };
  auto failed = [reply](error_code e) { reply(sync_group_response{e, {}}); };
  auto group = req.group.group_id;
  ask_coordinator<sync_group_response>(self, st, group, std::move(req.group), reply, failed);
}

void answer_heartbeat(self_ptr self, const state_ptr& st, const request_header& h,
                      kafka::heartbeat_request req) {
  auto version = h.api_version;
  auto answer = [self, st, h, version](error_code e) {
    respond(self, st, h, kafka::encode_heartbeat_response(wire_error(e), version));
  };
  auto group = req.group.group_id;
  ask_coordinator<txn_response>(self, st, group, std::move(req.group), errors_to(answer), answer);
}

void answer_leave_group(self_ptr self, const state_ptr& st, const request_header& h,
                        kafka::leave_group_request req) {
  auto version = h.api_version;
  auto shared = std::make_shared<kafka::leave_group_request>(std::move(req));
  auto reply = [self, st, h, version, shared](const leave_group_response& resp) {
    respond(self, st, h, kafka::encode_leave_group_response(resp, *shared, version));
  };
  auto failed = [reply](error_code e) { reply(leave_group_response{e, {}}); };
  ask_coordinator<leave_group_response>(self, st, shared->group.group_id, shared->group, reply,
                                        failed);
}

void answer_describe_groups(self_ptr self, const state_ptr& st, const request_header& h,
                            kafka::describe_groups_request req) {
  auto version = h.api_version;
  // Each group from its own coordinator, answered in the request's order.
  auto out = std::make_shared<std::vector<group_description>>(req.groups.size());
  auto done = std::make_shared<countdown>(
    [self, st, h, version, out] { respond(self, st, h, kafka::encode_describe_groups_response(*out, version)); });
  for (size_t i = 0; i < req.groups.size(); ++i) {
    auto& g = req.groups[i];
    (*out)[i].group_id = g;
    done->start();
    auto reply = [out, i, done](const describe_groups_response& resp) {
      if (!resp.groups.empty())
        (*out)[i] = resp.groups.front();
      done->finish();
    };
    auto failed = [out, i, done](error_code e) {
      (*out)[i].error = e;
      done->finish();
    };
    ask_coordinator<describe_groups_response>(self, st, g, describe_groups_request{{g}}, reply,
                                              failed);
  }
  done->close();
}

void answer_list_groups(self_ptr self, const state_ptr& st, const request_header& h,
                        kafka::list_groups_request) {
  auto version = h.api_version;
  auto out = std::make_shared<list_groups_response>();
  auto done = std::make_shared<countdown>(
    [self, st, h, version, out] { respond(self, st, h, kafka::encode_list_groups_response(*out, version)); });
  auto dir = st->slot->get().second;
  if (!dir) {
    out->error = error_code::coordinator_not_available;
    done->close();
    return;
  }
  // Kafka's ListGroups: the groups of every group coordinator on this
  // node; a coordinator still loading makes the answer
  // COORDINATOR_LOAD_IN_PROGRESS.
  auto partitions = dir->topic(consumer_offsets_topic);
  auto count = partitions ? static_cast<int32_t>(partitions->size()) : 0;
  auto timeout = std::chrono::milliseconds(st->opts.request_timeout_ms);
  for (int32_t p = 0; p < count; ++p) {
    if (!dir->local_leader({consumer_offsets_topic, p}))
      continue;
    done->start();
    self->request(dir->group_coordinator(p), timeout, list_groups_request{})
      .then(
        [out, done](const list_groups_response& r) {
          if (r.error != error_code::none)
            out->error = r.error;
          out->groups.insert(out->groups.end(), r.groups.begin(), r.groups.end());
          done->finish();
        },
        [out, done](const caf::error& e) {
          out->error = from_caf(e, error_code::coordinator_not_available);
          done->finish();
        });
  }
  done->close();
}

void answer_delete_groups(self_ptr self, const state_ptr& st, const request_header& h,
                          kafka::delete_groups_request req) {
  auto groups = std::make_shared<std::vector<std::string>>(std::move(req.groups));
  auto errors = std::make_shared<std::vector<int16_t>>(groups->size(), int16_t{0});
  auto done = std::make_shared<countdown>([self, st, h, groups, errors] {
    respond(self, st, h, kafka::encode_delete_groups_response(*groups, *errors));
  });
  for (size_t i = 0; i < groups->size(); ++i) {
    auto& g = (*groups)[i];
    done->start();
    auto reply = [errors, i, done](const delete_groups_response& r) {
      (*errors)[i] = wire_error(r.errors.empty() ? error_code::unknown_server_error : r.errors.front());
      done->finish();
    };
    auto failed = [errors, i, done](error_code e) {
      (*errors)[i] = wire_error(e);
      done->finish();
    };
    ask_coordinator<delete_groups_response>(self, st, g, delete_groups_request{{g}}, reply, failed);
  }
  done->close();
}

} // namespace caftx::kafka_connection
