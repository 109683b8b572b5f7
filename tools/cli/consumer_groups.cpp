// caftx-consumer-groups: a consumer group's committed offsets, log end
// offsets and lag, with the options and columns of Kafka's
// kafka-consumer-groups.sh --describe (ConsumerGroupCommand).
//
//   caftx-consumer-groups --bootstrap-server HOST:PORT --describe --group G
//
// Exit 0 done, 1 the cluster refused (with Kafka's error), 2 bad input.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "actors/client/consumer.hpp"
#include "tools/cli/cli_common.hpp"

namespace {

using namespace caftx;
using cli::exit_bad_input;
using cli::exit_failed;
using cli::exit_ok;

constexpr const char* tool = "caftx-consumer-groups";

int refuse(const std::string& why) {
  return cli::refuse(tool, why);
}

// Kafka's "%-Ns": `v` padded to `width` (never cut).
std::string left(const std::string& v, size_t width) {
  return v.size() >= width ? v : v + std::string(width - v.size(), ' ');
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"caftx-consumer-groups: a consumer group's offsets and lag "
               "(Kafka's kafka-consumer-groups.sh)"};
  std::string bootstrap, command_config, group;
  bool describe = false, list = false;
  app.add_option("--bootstrap-server", bootstrap,
                 "host:port of a node (comma-separated for several)")
    ->required();
  app.add_option("--command-config", command_config,
                 "properties file with admin client settings (request.timeout.ms)");
  app.add_flag("--describe", describe, "describe a group's offsets (--group)");
  app.add_flag("--list", list, "list the groups (not supported: see --help)");
  app.add_option("--group", group, "the consumer group");
  app.footer("caftx has no ListGroups yet (it comes with the group membership protocol): "
             "--list is refused.");
  if (auto code = cli::parse_command_line(app, argc, argv))
    return *code;
  if (describe + list != 1)
    return refuse("Command must include exactly one action: --list or --describe");
  if (list)
    return refuse("--list is not supported: caftx has no ListGroups yet");
  if (group.empty())
    return refuse("--describe needs --group");

  int exit = exit_ok;
  auto admin = cli::connect_or_report(tool, bootstrap, command_config, exit);
  if (!admin)
    return exit;
  auto offsets = admin->list_group_offsets(group);
  if (!offsets.ok()) {
    std::fprintf(stderr, "Error: Executing consumer group command failed due to %s\n",
                 offsets.error().to_string().c_str());
    return exit_failed;
  }
  if (offsets->empty()) {
    // Kafka's answer for a group without members or offsets.
    std::fprintf(stderr, "Consumer group '%s' does not exist.\n", group.c_str());
    return exit_ok;
  }
  // caftx's groups have no members yet (no JoinGroup): Kafka's line for
  // an Empty group, then its offsets.
  std::fprintf(stderr, "\nConsumer group '%s' has no active members.\n", group.c_str());
  // LOG-END-OFFSET as Kafka's tool reads it: a read_uncommitted consumer's
  // end (the high watermark).
  std::vector<std::vector<std::string>> rows;
  try {
    consumer c{properties{{"bootstrap.servers", bootstrap},
                          {"isolation.level", "read_uncommitted"}}};
    for (auto& [tp, committed] : *offsets) {
      auto end = c.end_offset(tp);
      rows.push_back({group, tp.topic, std::to_string(tp.partition), std::to_string(committed),
                      std::to_string(end), std::to_string(end - committed), "-", "-", "-"});
    }
  } catch (const kafka_exception& e) {
    std::fprintf(stderr, "Error: Executing consumer group command failed due to %s\n",
                 cli::error_text(e).c_str());
    return exit_failed;
  }
  // ConsumerGroupCommand's layout: group and topic columns at least 15
  // wide, PARTITION 10, the offsets 15, each followed by a space.
  size_t group_w = std::max<size_t>(15, group.size());
  size_t topic_w = 15;
  for (auto& r : rows)
    topic_w = std::max(topic_w, r[1].size());
  auto line = [&](const std::vector<std::string>& c) {
    return left(c[0], group_w) + " " + left(c[1], topic_w) + " " + left(c[2], 10) + " "
           + left(c[3], 15) + " " + left(c[4], 15) + " " + left(c[5], 15) + " " + left(c[6], 15)
           + " " + left(c[7], 15) + " " + c[8];
  };
  std::cout << '\n'
            << line({"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                     "CONSUMER-ID", "HOST", "CLIENT-ID"})
            << '\n';
  for (auto& r : rows)
    std::cout << line(r) << '\n';
  return exit_ok;
}
