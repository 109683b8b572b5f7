// caftx-topics: create, list, describe, grow and delete topics, with the
// options and output of Kafka's kafka-topics.sh (TopicCommand).
//
//   caftx-topics --bootstrap-server HOST:PORT --create --topic T
//                [--partitions N] [--replication-factor R] [--config k=v ...]
//   caftx-topics --bootstrap-server HOST:PORT --alter --topic T --partitions N
//                [--replica-assignment 1:2,2:3,...]
//   caftx-topics --bootstrap-server HOST:PORT --list [--exclude-internal]
//   caftx-topics --bootstrap-server HOST:PORT --describe [--topic T]
//                [--under-replicated-partitions | --unavailable-partitions]
//   caftx-topics --bootstrap-server HOST:PORT --delete --topic T|REGEX [--if-exists]
//
// Exit 0 done, 1 the cluster refused (with Kafka's error), 2 bad input.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "actors/controller/controller_core.hpp"
#include "tools/cli/cli_common.hpp"

namespace {

using namespace caftx;
using cli::exit_bad_input;
using cli::exit_failed;
using cli::exit_ok;

constexpr const char* tool = "caftx-topics";

int refuse(const std::string& why) {
  return cli::refuse(tool, why);
}

// Kafka's "Error while executing topic command : <message>".
int failed(const status& st) {
  std::fprintf(stderr, "Error while executing topic command : %s\n", st.to_string().c_str());
  return exit_failed;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{
    "caftx-topics: create, list, describe, grow and delete topics (Kafka's kafka-topics.sh)"};
  std::string bootstrap, command_config, topic;
  bool create = false, list = false, describe = false, remove = false, alter = false;
  std::string replica_assignment;
  bool if_not_exists = false, if_exists = false, exclude_internal = false;
  bool under_replicated = false, unavailable = false;
  int32_t partitions = -1, replication_factor = -1;
  std::vector<std::string> configs;
  app.add_option("--bootstrap-server", bootstrap,
                 "host:port of a node (comma-separated for several)")
    ->required();
  app.add_option("--command-config", command_config,
                 "properties file with admin client settings (request.timeout.ms)");
  app.add_flag("--create", create, "create a topic");
  app.add_flag("--list", list, "list all topics");
  app.add_flag("--describe", describe, "describe one topic (--topic) or all");
  app.add_flag("--alter", alter,
               "add partitions to a topic (--partitions: the new count; records with a key may "
               "hash to another partition afterwards)");
  app.add_option("--replica-assignment", replica_assignment,
                 "--alter: replicas of every partition, partitions separated by ',' and the node "
                 "ids of one partition by ':' (the first leads); the entries of the partitions "
                 "the topic has already are skipped");
  app.add_flag("--delete", remove,
               "delete the topics --topic names (a regular expression, as in Kafka)");
  app.add_option("--topic", topic, "the topic (--delete: a regular expression matching whole names)");
  app.add_option("--partitions", partitions,
                 "partitions of a new topic (default num.partitions), or --alter's new count");
  app.add_option("--replication-factor", replication_factor,
                 "replicas per partition of a new topic (default default.replication.factor)");
  app.add_option("--config", configs, "topic config override key=value (repeatable)");
  app.add_flag("--if-not-exists", if_not_exists, "--create: no error if the topic exists");
  app.add_flag("--if-exists", if_exists, "--delete: no error if no topic matches");
  app.add_flag("--exclude-internal", exclude_internal,
               "--list/--describe: leave out __transaction_state and __consumer_offsets");
  app.add_flag("--under-replicated-partitions", under_replicated,
               "--describe: only partitions whose ISR is smaller than their replicas");
  app.add_flag("--unavailable-partitions", unavailable,
               "--describe: only partitions without a leader");
  app.footer("--delete returns once every replica has deleted its data; while a replica's node "
             "is down the topic stays marked for deletion (error REQUEST_TIMED_OUT) and is "
             "deleted when the node is back. Internal topics cannot be deleted.");
  if (auto code = cli::parse_command_line(app, argc, argv))
    return *code;
  if (create + list + describe + remove + alter != 1)
    return refuse("Command must include exactly one action: --list, --describe, --create, "
                  "--alter or --delete");
  if (create && topic.empty())
    return refuse("--create needs --topic");
  if (alter && (topic.empty() || partitions == -1))
    return refuse("--alter needs --topic and --partitions");
  if (!alter && !replica_assignment.empty())
    return refuse("--replica-assignment goes with --alter only");
  if (alter && (replication_factor != -1 || !configs.empty() || if_not_exists))
    return refuse("--replication-factor, --config and --if-not-exists go with --create only");
  if (remove && topic.empty())
    return refuse("--delete needs --topic");
  if (!remove && if_exists)
    return refuse("--if-exists goes with --delete only");
  std::optional<std::regex> pattern;
  if (remove) {
    try {
      pattern.emplace(topic, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return refuse("--topic '" + topic + "' is not a regular expression: " + e.what());
    }
  }
  if (!create && !alter
      && (partitions != -1 || replication_factor != -1 || !configs.empty() || if_not_exists))
    return refuse("--partitions, --replication-factor, --config and --if-not-exists go with "
                  "--create only");
  if (!describe && (under_replicated || unavailable))
    return refuse("--under-replicated-partitions and --unavailable-partitions go with "
                  "--describe only");
  if (under_replicated && unavailable)
    return refuse("--under-replicated-partitions and --unavailable-partitions exclude each other");
  if ((create || alter) && partitions != -1 && partitions < 1)
    return refuse("--partitions must be at least 1, not " + std::to_string(partitions));
  if (create && replication_factor != -1 && replication_factor < 1)
    return refuse("--replication-factor must be at least 1, not "
                  + std::to_string(replication_factor));
  // kafka-topics.sh's --replica-assignment: "1:2,2:3" (TopicCommand.parseReplicaAssignment).
  std::vector<std::vector<int32_t>> assignments;
  if (!replica_assignment.empty()) {
    auto bad = [&](const std::string& why) {
      return refuse("--replica-assignment '" + replica_assignment + "': " + why);
    };
    size_t start = 0;
    while (start <= replica_assignment.size()) {
      auto comma = replica_assignment.find(',', start);
      auto part = replica_assignment.substr(start, comma == std::string::npos ? std::string::npos
                                                                              : comma - start);
      std::vector<int32_t> replicas;
      size_t from = 0;
      while (from <= part.size()) {
        auto colon = part.find(':', from);
        auto id = part.substr(from, colon == std::string::npos ? std::string::npos : colon - from);
        int32_t n = -1;
        auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), n);
        if (ec != std::errc{} || end != id.data() + id.size() || n < 0)
          return bad("'" + id + "' is not a node id");
        if (std::find(replicas.begin(), replicas.end(), n) != replicas.end())
          return bad("Partition replica lists may not contain duplicate entries: " + id);
        replicas.push_back(n);
        if (colon == std::string::npos)
          break;
        from = colon + 1;
      }
      if (!assignments.empty() && replicas.size() != assignments.front().size())
        return bad("Partition " + std::to_string(assignments.size())
                   + " has different replication factor: " + part);
      assignments.push_back(std::move(replicas));
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
    if (assignments.size() != static_cast<size_t>(partitions))
      return bad("it gives " + std::to_string(assignments.size()) + " partitions, --partitions "
                 + std::to_string(partitions));
  }
  std::map<std::string, std::string> topic_configs;
  for (auto& c : configs) {
    auto eq = c.find('=');
    if (eq == std::string::npos || eq == 0)
      return refuse("--config '" + c + "' must be key=value");
    topic_configs[c.substr(0, eq)] = c.substr(eq + 1);
  }

  int exit = exit_ok;
  auto admin = cli::connect_or_report(tool, bootstrap, command_config, exit);
  if (!admin)
    return exit;

  if (create) {
    auto st = admin->create_topic(topic, partitions, topic_configs, replication_factor);
    if (st.code() == error_code::topic_already_exists && if_not_exists)
      return exit_ok;
    if (!st.ok())
      return failed(st);
    std::cout << "Created topic " << topic << ".\n";
    return exit_ok;
  }

  if (alter) {
    if (!assignments.empty()) {
      // Kafka's TopicCommand.alterTopic: only the new partitions' entries.
      auto described = admin->describe_topics({topic});
      if (!described.ok())
        return failed(described.error());
      if (described->empty() || described->front().error != error_code::none)
        return failed({error_code::unknown_topic_or_partition,
                       "Topic '" + topic + "' does not exist as expected"});
      auto existing = std::min(described->front().partitions.size(), assignments.size());
      assignments.erase(assignments.begin(),
                        assignments.begin() + static_cast<std::ptrdiff_t>(existing));
    }
    auto st = admin->create_partitions(topic, partitions, assignments);
    if (!st.ok())
      return failed(st);
    std::cout << "Adding partitions succeeded!\n";
    return exit_ok;
  }

  if (remove) {
    // Kafka's TopicCommand.deleteTopic: the matching topics (internal ones
    // only when named), an error when none matches unless --if-exists.
    auto all = admin->describe_topics();
    if (!all.ok())
      return failed(all.error());
    std::vector<std::string> matched, internal;
    for (auto& t : *all)
      if (std::regex_match(t.name, *pattern))
        (t.internal && t.name != topic ? internal : matched).push_back(t.name);
    std::sort(matched.begin(), matched.end());
    if (matched.empty() && !internal.empty()) {
      std::string names;
      for (auto& n : internal)
        names += (names.empty() ? "" : ", ") + n;
      return failed({error_code::invalid_request, "Topic '" + topic + "' matches only internal topics ("
                                                    + names + "), which cannot be deleted"});
    }
    if (matched.empty()) {
      // A plain name is asked for anyway: a topic already marked for
      // deletion is gone from the metadata, and this joins its deletion.
      if (!controller::invalid_topic_name(topic)) {
        auto st = admin->delete_topic(topic);
        if (st.ok())
          return exit_ok;
        if (st.code() != error_code::unknown_topic_or_partition)
          return failed({st.code(), "deleting topic '" + topic + "': " + st.message()});
      }
      if (if_exists)
        return exit_ok;
      return failed({error_code::unknown_topic_or_partition,
                     "Topic '" + topic + "' does not exist as expected"});
    }
    for (auto& name : matched)
      if (auto st = admin->delete_topic(name); !st.ok())
        return failed({st.code(), "deleting topic '" + name + "': " + st.message()});
    return exit_ok;
  }

  auto described = admin->describe_topics(topic.empty() ? std::vector<std::string>{}
                                                         : std::vector<std::string>{topic});
  if (!described.ok())
    return failed(described.error());
  auto topics = std::move(*described);
  std::sort(topics.begin(), topics.end(),
            [](const topic_description& a, const topic_description& b) { return a.name < b.name; });
  if (list) {
    for (auto& t : topics)
      if (!(exclude_internal && t.internal))
        std::cout << t.name << '\n';
    return exit_ok;
  }
  for (auto& t : topics) {
    if (t.error != error_code::none)
      return failed({t.error, "Topic '" + t.name + "' does not exist as expected"});
    if (exclude_internal && t.internal)
      continue;
    std::vector<const partition_description*> shown;
    for (auto& p : t.partitions) {
      bool under = p.isr.size() < p.replicas.size();
      bool down = p.leader < 0;
      if ((!under_replicated || under) && (!unavailable || down))
        shown.push_back(&p);
    }
    bool filtered = under_replicated || unavailable;
    if (!filtered)
      std::cout << "Topic: " << t.name << "\tPartitionCount: " << t.partitions.size()
                << "\tReplicationFactor: "
                << (t.partitions.empty() ? 0 : t.partitions.front().replicas.size()) << '\n';
    for (auto* p : shown)
      std::cout << "\tTopic: " << t.name << "\tPartition: " << p->partition
                << "\tLeader: " << (p->leader < 0 ? "none" : std::to_string(p->leader))
                << "\tReplicas: " << cli::join_ids(p->replicas)
                << "\tIsr: " << cli::join_ids(p->isr) << '\n';
  }
  return exit_ok;
}
