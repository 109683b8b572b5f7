// caftx-console-consumer: the records of a topic on standard output, one
// per line, with the options and the line format of Kafka's
// kafka-console-consumer.sh (DefaultMessageFormatter).
//
//   caftx-console-consumer --bootstrap-server HOST:PORT --topic T
//       [--from-beginning | --partition P [--offset earliest|latest|N]]
//       [--group G] [--isolation-level read_committed|read_uncommitted]
//       [--max-messages N] [--timeout-ms MS]
//       [--property print.key=true print.offset=true print.partition=true
//                   print.timestamp=true key.separator=TEXT ...]
//       [--consumer-property k=v ...] [--consumer.config FILE]
//
// Runs until --max-messages records were printed, no record came for
// --timeout-ms, or SIGINT/SIGTERM; then prints "Processed a total of N
// messages" on stderr, commits the positions for --group, and exits 0.
// Exit 1 when the cluster refuses, 2 for bad input.
#include <csignal>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/broker/broker_actor.hpp"
#include "actors/client/consumer.hpp"
#include "tools/cli/cli_common.hpp"

namespace {

using namespace caftx;
using cli::exit_bad_input;
using cli::exit_failed;
using cli::exit_ok;

constexpr const char* tool = "caftx-console-consumer";

volatile std::sig_atomic_t stop_requested = 0;

void on_stop(int) {
  stop_requested = 1;
}

int refuse(const std::string& why) {
  return cli::refuse(tool, why);
}


// DefaultMessageFormatter's switches.
struct line_format {
  bool key = false, offset = false, partition = false, timestamp = false;
  std::string separator = "\t";
};

std::string format(const consumer_record& r, const line_format& f) {
  std::string out;
  bool first = true;
  auto field = [&](const std::string& text) {
    if (!first)
      out += f.separator;
    first = false;
    out += text;
  };
  if (f.timestamp)
    field("CreateTime:" + std::to_string(r.timestamp_ms));
  if (f.partition)
    field("Partition:" + std::to_string(r.partition));
  if (f.offset)
    field("Offset:" + std::to_string(r.offset));
  if (f.key)
    field(r.key);
  field(r.null_value ? "null" : r.value);
  return out;
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"caftx-console-consumer: the records of a topic, one per line "
               "(Kafka's kafka-console-consumer.sh)"};
  std::string bootstrap, topic, group, isolation = "read_uncommitted", offset, config_file;
  bool from_beginning = false;
  std::optional<int32_t> partition;
  int64_t max_messages = -1, timeout_ms = -1;
  std::vector<std::string> format_props, consumer_props;
  app.add_option("--bootstrap-server", bootstrap,
                 "host:port of a node (comma-separated for several)")
    ->required();
  app.add_option("--topic", topic, "the topic to read")->required();
  app.add_flag("--from-beginning", from_beginning,
               "start at the earliest offset where no committed offset applies (else the latest)");
  app.add_option("--partition", partition, "read only this partition");
  app.add_option("--offset", offset, "with --partition: earliest, latest or an offset");
  app.add_option("--group", group, "consumer group: start at its committed offsets, commit at exit");
  app.add_option("--isolation-level", isolation, "read_uncommitted (default) or read_committed");
  app.add_option("--max-messages", max_messages, "stop after this many records");
  app.add_option("--timeout-ms", timeout_ms, "stop when no record came for this long");
  app.add_option("--property", format_props,
                 "print.key, print.offset, print.partition, print.timestamp=true|false, "
                 "key.separator=TEXT (repeatable)");
  app.add_option("--consumer-property", consumer_props, "consumer setting key=value (repeatable)");
  app.add_option("--consumer.config", config_file, "properties file of consumer settings");
  if (auto code = cli::parse_command_line(app, argc, argv))
    return *code;

  line_format f;
  for (auto& kv : format_props) {
    properties p;
    if (!cli::add_pair(kv, p))
      return refuse("--property '" + kv + "' must be key=value");
    auto& [k, v] = *p.begin();
    bool* flag = k == "print.key"         ? &f.key
                 : k == "print.offset"    ? &f.offset
                 : k == "print.partition" ? &f.partition
                 : k == "print.timestamp" ? &f.timestamp
                                          : nullptr;
    if (flag) {
      if (v != "true" && v != "false")
        return refuse("--property " + k + " must be true or false, not '" + v + "'");
      *flag = v == "true";
    } else if (k == "key.separator") {
      f.separator = v;
    } else {
      return refuse("unknown --property '" + k
                    + "' (print.key, print.offset, print.partition, print.timestamp, "
                      "key.separator)");
    }
  }
  if (auto named = validate_topic_name(topic); !named.ok())
    return refuse("--topic: " + named.message());
  if (app.count("--group") && group.empty())
    return refuse("--group must not be empty");
  if (isolation != "read_committed" && isolation != "read_uncommitted")
    return refuse("--isolation-level must be read_committed or read_uncommitted, not '"
                  + isolation + "'");
  if (!offset.empty() && !partition)
    return refuse("--offset needs --partition");
  if (partition && *partition < 0)
    return refuse("--partition must be 0 or more, not " + std::to_string(*partition));
  if (from_beginning && !offset.empty())
    return refuse("--from-beginning and --offset say where to start in two ways: give one");
  std::optional<int64_t> start_at;
  if (!offset.empty() && offset != "earliest" && offset != "latest") {
    char* end = nullptr;
    errno = 0;
    auto v = std::strtoll(offset.c_str(), &end, 10);
    if (*end != '\0' || errno == ERANGE || v < 0)
      return refuse("--offset must be earliest, latest or an offset of 0 or more, not '" + offset
                    + "'");
    start_at = v;
  }
  if (max_messages == 0 || max_messages < -1)
    return refuse("--max-messages must be at least 1");
  if (timeout_ms == 0 || timeout_ms < -1)
    return refuse("--timeout-ms must be at least 1");
  std::string error;
  auto made_props =
    cli::client_properties(config_file, consumer_props, "--consumer-property", bootstrap, error);
  if (!made_props)
    return refuse(error);
  auto& props = *made_props;
  if (group.empty() && props.count("group.id")) // given as a consumer property
    group = props["group.id"];
  props["isolation.level"] = isolation;
  props["auto.offset.reset"] = from_beginning || offset == "earliest" ? "earliest" : "latest";
  if (!group.empty())
    props["group.id"] = group;

  // The partitions to read: the one asked for, or all of the topic's.
  int exit = exit_ok;
  std::vector<topic_partition> tps;
  {
    auto admin = cli::connect_or_report(tool, bootstrap, "", exit);
    if (!admin)
      return exit;
    auto d = admin->describe_topics({topic});
    if (!d.ok() || d->empty() || d->front().error != error_code::none) {
      std::fprintf(stderr, "%s: %s\n", tool,
                   (d.ok() ? status{error_code::unknown_topic_or_partition,
                                    "topic '" + topic + "' does not exist"}
                           : d.error())
                     .to_string()
                     .c_str());
      return exit_failed;
    }
    for (auto& p : d->front().partitions)
      if (!partition || p.partition == *partition)
        tps.push_back({topic, p.partition});
    if (tps.empty())
      return refuse("topic '" + topic + "' has no partition " + std::to_string(*partition));
  }

  std::signal(SIGINT, on_stop);
  std::signal(SIGTERM, on_stop);
  int64_t printed = 0;
  try {
    consumer c{props};
    c.assign(tps);
    if (start_at)
      c.seek(tps.front(), *start_at);
    else if (offset == "latest")
      c.seek(tps.front(), c.end_offset(tps.front()));
    auto idle_since = std::chrono::steady_clock::now();
    // Records a poll returned past --max-messages: not printed, so the
    // group's commit stays before them (Kafka's tool commits the positions
    // and skips them for the group's next reader).
    std::map<topic_partition, int64_t> first_unprinted;
    while (!stop_requested && (max_messages < 0 || printed < max_messages)) {
      auto records = c.poll(std::chrono::milliseconds(200));
      for (auto& r : records) {
        if (printed == max_messages) {
          first_unprinted.emplace(topic_partition{r.topic, r.partition}, r.offset);
          continue;
        }
        std::cout << format(r, f) << '\n';
        ++printed;
      }
      std::cout.flush();
      auto now = std::chrono::steady_clock::now();
      if (!records.empty())
        idle_since = now;
      else if (timeout_ms > 0 && now - idle_since >= std::chrono::milliseconds(timeout_ms))
        break;
    }
    if (!group.empty()) {
      std::map<topic_partition, int64_t> offsets;
      for (auto& tp : tps) {
        auto at = first_unprinted.find(tp);
        offsets[tp] = at != first_unprinted.end() ? at->second : c.position(tp);
      }
      c.commit(offsets);
    }
    c.close();
  } catch (const kafka_exception& e) {
    std::fprintf(stderr, "%s: %s\n", tool, cli::error_text(e).c_str());
    return e.code() == error_code::invalid_config ? exit_bad_input : exit_failed;
  }
  std::fprintf(stderr, "Processed a total of %lld messages\n", static_cast<long long>(printed));
  return exit_ok;
}
