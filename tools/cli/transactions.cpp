// caftx-transactions: look into transactions and abort a hanging one, with
// the commands, options and columns of Kafka's kafka-transactions.sh
// (TransactionsCommand, KIP-664).
//
//   caftx-transactions --bootstrap-server HOST:PORT list
//   caftx-transactions --bootstrap-server HOST:PORT describe --transactional-id ID
//   caftx-transactions --bootstrap-server HOST:PORT describe-producers --topic T --partition P
//   caftx-transactions --bootstrap-server HOST:PORT find-hanging
//                      (--broker-id N | --topic T [--partition P]) [--max-transaction-timeout MIN]
//   caftx-transactions --bootstrap-server HOST:PORT abort --topic T --partition P
//                      (--start-offset O | --producer-id ID --producer-epoch E
//                       --coordinator-epoch C)
//
// Exit 0 done, 1 the cluster refused or failed (with Kafka's error), 2 bad
// input.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/ids.hpp"
#include "runtime/partitioner.hpp"
#include "tools/cli/cli_common.hpp"

namespace {

using namespace caftx;
using cli::exit_bad_input;
using cli::exit_failed;
using cli::exit_ok;

constexpr const char* tool = "caftx-transactions";

int refuse(const std::string& why) {
  return cli::refuse(tool, why);
}

// Kafka's printErrorAndExit(message, cause).
int failed(const std::string& what, const status& st) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), st.to_string().c_str());
  return exit_failed;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

// The node leading the coordinator shard of `transactional_id`, as text.
std::string coordinator_of(const std::vector<int32_t>& leaders, const std::string& tid) {
  if (leaders.empty())
    return "-1";
  auto shard = partition_for(tid, static_cast<int32_t>(leaders.size()));
  return std::to_string(leaders[shard]);
}

std::string join_partitions(const std::vector<topic_partition>& tps) {
  std::string out;
  for (auto& tp : tps)
    out += (out.empty() ? "" : ",") + to_string(tp);
  return out;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"caftx-transactions: analyze the transactional state of producers and recover "
               "from hanging transactions (Kafka's kafka-transactions.sh)"};
  app.require_subcommand(1);
  std::string bootstrap, command_config;
  app.add_option("--bootstrap-server", bootstrap,
                 "host:port of a node (comma-separated for several)")
    ->required();
  app.add_option("--command-config", command_config,
                 "properties file with admin client settings (request.timeout.ms)");

  auto* list = app.add_subcommand("list", "list transactions");

  auto* describe = app.add_subcommand("describe", "describe the state of a transactional id");
  std::string tid;
  describe->add_option("--transactional-id", tid, "transactional id")->required();

  auto* producers = app.add_subcommand(
    "describe-producers", "describe the states of active producers for a topic partition");
  std::string topic;
  int32_t partition = -1;
  producers->add_option("--topic", topic, "topic name")->required();
  producers->add_option("--partition", partition, "partition number")->required();

  auto* hanging = app.add_subcommand("find-hanging", "find hanging transactions");
  std::optional<int32_t> broker_id;
  std::optional<int32_t> hanging_partition;
  int32_t max_timeout_min = 15;
  hanging->add_option("--broker-id", broker_id, "broker id to search for hanging transactions");
  hanging->add_option("--topic", topic, "topic name to limit the search to");
  hanging->add_option("--partition", hanging_partition, "partition number (needs --topic)");
  hanging->add_option("--max-transaction-timeout", max_timeout_min,
                      "maximum transaction timeout in minutes to limit the scope of the search "
                      "(default 15)");

  auto* abort = app.add_subcommand("abort", "abort a hanging transaction");
  std::optional<int64_t> start_offset;
  std::optional<int64_t> producer;
  std::optional<int32_t> producer_epoch_arg;
  std::optional<int32_t> coord_epoch;
  abort->add_option("--topic", topic, "topic name")->required();
  abort->add_option("--partition", partition, "partition number")->required();
  abort->add_option("--start-offset", start_offset, "start offset of the transaction to abort");
  abort->add_option("--producer-id", producer, "producer id");
  abort->add_option("--producer-epoch", producer_epoch_arg, "producer epoch");
  abort->add_option("--coordinator-epoch", coord_epoch, "coordinator epoch");
  if (auto code = cli::parse_command_line(app, argc, argv))
    return *code;

  // Checks of the arguments before any connection (Kafka's wording).
  if (*hanging) {
    if (topic.empty() && !broker_id)
      return refuse("The `find-hanging` command requires either --topic or --broker-id to limit "
                    "the scope of the search");
    if (hanging_partition && topic.empty())
      return refuse("The --partition argument requires --topic to be provided");
    if (max_timeout_min < 0)
      return refuse("--max-transaction-timeout must be 0 or more minutes, not "
                    + std::to_string(max_timeout_min));
  }
  if ((*producers || *abort) && partition < 0)
    return refuse("--partition must be 0 or more, not " + std::to_string(partition));
  if (*abort) {
    if (!start_offset && !producer)
      return refuse("The transaction to abort must be identified either with --start-offset or "
                    "with --producer-id, --producer-epoch, and --coordinator-epoch");
    if (start_offset && producer)
      return refuse("--start-offset and --producer-id name the transaction in two ways: give one");
    if (producer && !producer_epoch_arg)
      return refuse("Missing required argument --producer-epoch");
    if (producer && !coord_epoch)
      return refuse("Missing required argument --coordinator-epoch");
    if (producer_epoch_arg && (*producer_epoch_arg < 0 || *producer_epoch_arg > 32767))
      return refuse("--producer-epoch must be in [0, 32767], not "
                    + std::to_string(*producer_epoch_arg));
    if (producer && *producer < 0)
      return refuse("--producer-id must be 0 or more, not " + std::to_string(*producer));
  }

  int exit = exit_ok;
  auto admin = cli::connect_or_report(tool, bootstrap, command_config, exit);
  if (!admin)
    return exit;

  if (*list) {
    auto listed = admin->list_transactions();
    if (!listed.ok())
      return failed("Failed to list transactions", listed.error());
    auto leaders = cli::transaction_state_leaders(*admin);
    std::vector<std::vector<std::string>> rows;
    for (auto& t : listed->transactions)
      rows.push_back({t.transactional_id, coordinator_of(leaders, t.transactional_id),
                      std::to_string(t.pid.value), t.state});
    std::cout << cli::table({"TransactionalId", "Coordinator", "ProducerId", "TransactionState"},
                            rows);
    return exit_ok;
  }

  if (*describe) {
    auto d = admin->describe_transaction(tid);
    if (!d.ok())
      return failed("Failed to describe transaction state of transactional-id `" + tid + "`",
                    d.error());
    auto leaders = cli::transaction_state_leaders(*admin);
    bool started = d->transaction_start_ms >= 0;
    std::cout << cli::table(
      {"CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
       "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
       "TopicPartitions"},
      {{coordinator_of(leaders, tid), tid, std::to_string(d->pid.value),
        std::to_string(d->epoch.value), d->state, std::to_string(d->transaction_timeout_ms),
        started ? std::to_string(d->transaction_start_ms) : "None",
        started ? std::to_string(now_ms() - d->transaction_start_ms) : "None",
        join_partitions(d->partitions)}});
    return exit_ok;
  }

  if (*producers) {
    topic_partition tp{topic, partition};
    auto ps = admin->describe_producers(tp);
    if (!ps.ok())
      return failed("Failed to describe producers for partition " + to_string(tp) + " on leader",
                    ps.error());
    std::vector<std::vector<std::string>> rows;
    for (auto& p : *ps)
      rows.push_back({std::to_string(p.pid.value), std::to_string(p.epoch.value),
                      std::to_string(p.coordinator_epoch), std::to_string(p.last_sequence),
                      std::to_string(p.last_timestamp_ms),
                      p.current_txn_start_offset >= 0 ? std::to_string(p.current_txn_start_offset)
                                                      : "None"});
    std::cout << cli::table({"ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch",
                             "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"},
                            rows);
    return exit_ok;
  }

  if (*hanging) {
    // The partitions to search: the topic's, or every partition with a
    // replica on the broker (Kafka's findTopicPartitions).
    std::set<topic_partition> scope;
    auto described = admin->describe_topics(topic.empty() ? std::vector<std::string>{}
                                                          : std::vector<std::string>{topic});
    if (!described.ok())
      return failed("Failed to describe topics", described.error());
    std::vector<std::string> topics;
    for (auto& t : *described) {
      if (topic.empty() && t.internal)
        continue; // Kafka's listTopics() leaves them out
      if (t.error != error_code::none)
        return failed("Failed to describe topic " + t.name,
                      {t.error, "Topic '" + t.name + "' does not exist"});
      for (auto& p : t.partitions) {
        bool on_broker = !broker_id
                         || std::find(p.replicas.begin(), p.replicas.end(), *broker_id)
                              != p.replicas.end();
        bool in_partition = !hanging_partition || p.partition == *hanging_partition;
        if (on_broker && in_partition)
          scope.insert({t.name, p.partition});
      }
      if (std::any_of(scope.begin(), scope.end(),
                      [&](const topic_partition& tp) { return tp.topic == t.name; }))
        topics.push_back(t.name);
    }
    std::vector<hanging_transaction> found;
    if (!topics.empty()) {
      auto h = admin->find_hanging_transactions(topics, int64_t{max_timeout_min} * 60000);
      if (!h.ok())
        return failed("Failed to find hanging transactions", h.error());
      for (auto& x : *h)
        if (scope.count(x.tp))
          found.push_back(x);
    }
    auto now = now_ms();
    std::vector<std::vector<std::string>> rows;
    for (auto& x : found)
      rows.push_back({x.tp.topic, std::to_string(x.tp.partition), std::to_string(x.pid.value),
                      std::to_string(x.epoch.value), std::to_string(x.coordinator_epoch),
                      std::to_string(x.start_offset), std::to_string(x.last_timestamp_ms),
                      std::to_string((now - x.last_timestamp_ms) / 60000)});
    std::cout << cli::table({"Topic", "Partition", "ProducerId", "ProducerEpoch",
                             "CoordinatorEpoch", "StartOffset", "LastTimestamp", "Duration(min)"},
                            rows);
    return exit_ok;
  }

  // abort
  topic_partition tp{topic, partition};
  status st = start_offset ? admin->abort_transaction(tp, *start_offset)
                           : admin->abort_transaction(tp, producer_id{*producer},
                                                      producer_epoch{static_cast<int16_t>(
                                                        *producer_epoch_arg)},
                                                      *coord_epoch);
  if (!st.ok())
    return failed("Failed to abort transaction on " + to_string(tp), st);
  return exit_ok;
}
