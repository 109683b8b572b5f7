// caftx-console-producer: one record per line of standard input, with the
// options of Kafka's kafka-console-producer.sh (LineMessageReader), and
// transactions besides: --transactional-id commits every
// --lines-per-transaction lines as one transaction.
//
//   caftx-console-producer --bootstrap-server HOST:PORT --topic T
//       [--property parse.key=true] [--property key.separator=:]
//       [--producer-property k=v ...] [--producer.config FILE]
//       [--transactional-id ID [--lines-per-transaction N]]
//
// Exit 0 once every line is acknowledged (and committed), 1 when the
// cluster refuses (the open transaction aborted), 2 for bad input: an
// unknown option, or a line without the key separator under parse.key
// (named by its line number; under a transaction the open one is aborted,
// so none of its lines is seen by read_committed readers).
#include <deque>
#include <future>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "actors/broker/broker_actor.hpp"
#include "actors/client/producer.hpp"
#include "tools/cli/cli_common.hpp"

namespace {

using namespace caftx;
using cli::exit_bad_input;
using cli::exit_failed;
using cli::exit_ok;

constexpr const char* tool = "caftx-console-producer";

int refuse(const std::string& why) {
  return cli::refuse(tool, why);
}


} // namespace

int main(int argc, char** argv) {
  CLI::App app{"caftx-console-producer: one record per line of standard input "
               "(Kafka's kafka-console-producer.sh)"};
  std::string bootstrap, topic, config_file, transactional_id;
  std::vector<std::string> reader_props, producer_props;
  int64_t lines_per_transaction = 1;
  app.add_option("--bootstrap-server", bootstrap,
                 "host:port of a node (comma-separated for several)")
    ->required();
  app.add_option("--topic", topic, "the topic to write to")->required();
  app.add_option("--property", reader_props,
                 "parse.key=true|false, key.separator=TEXT (default a tab) (repeatable)");
  app.add_option("--producer-property", producer_props, "producer setting key=value (repeatable)");
  app.add_option("--producer.config", config_file, "properties file of producer settings");
  app.add_option("--transactional-id", transactional_id,
                 "write in transactions under this transactional.id");
  app.add_option("--lines-per-transaction", lines_per_transaction,
                 "lines per transaction with --transactional-id (default 1)");
  if (auto code = cli::parse_command_line(app, argc, argv))
    return *code;

  bool parse_key = false;
  std::string separator = "\t";
  for (auto& kv : reader_props) {
    properties p;
    if (!cli::add_pair(kv, p))
      return refuse("--property '" + kv + "' must be key=value");
    auto& [k, v] = *p.begin();
    if (k == "parse.key") {
      if (v != "true" && v != "false")
        return refuse("--property parse.key must be true or false, not '" + v + "'");
      parse_key = v == "true";
    } else if (k == "key.separator") {
      if (v.empty())
        return refuse("--property key.separator must not be empty");
      separator = v;
    } else {
      return refuse("unknown --property '" + k + "' (parse.key, key.separator)");
    }
  }
  if (auto named = validate_topic_name(topic); !named.ok())
    return refuse("--topic: " + named.message());
  if (app.count("--transactional-id") && transactional_id.empty())
    return refuse("--transactional-id must not be empty");
  if (lines_per_transaction < 1)
    return refuse("--lines-per-transaction must be at least 1, not "
                  + std::to_string(lines_per_transaction));
  if (app.count("--lines-per-transaction") && transactional_id.empty())
    return refuse("--lines-per-transaction goes with --transactional-id");
  std::string error;
  auto made_props =
    cli::client_properties(config_file, producer_props, "--producer-property", bootstrap, error);
  if (!made_props)
    return refuse(error);
  auto& props = *made_props;
  if (!transactional_id.empty())
    props["transactional.id"] = transactional_id;

  // Each send's acknowledgement, checked in order; a transaction's all at
  // its commit.
  std::deque<std::future<record_metadata>> acks;
  auto settle = [&](size_t keep) {
    while (acks.size() > keep) {
      acks.front().get(); // throws the send's error
      acks.pop_front();
    }
  };
  bool transactional = !transactional_id.empty();
  bool open = false;
  std::unique_ptr<producer> made;
  try {
    made = std::make_unique<producer>(props);
    auto& p = *made;
    if (transactional)
      p.init_transactions();
    std::string line;
    int64_t number = 0;
    int64_t in_transaction = 0;
    while (std::getline(std::cin, line)) {
      ++number;
      if (!line.empty() && line.back() == '\r') // a CRLF line end, as Java's readLine
        line.pop_back();
      producer_record r;
      r.topic = topic;
      if (parse_key) {
        auto at = line.find(separator);
        if (at == std::string::npos) {
          // The lines before it are written (and under a transaction then
          // aborted: a read_uncommitted reader sees them once, a
          // read_committed one never).
          p.flush();
          settle(0);
          if (open)
            p.abort_transaction();
          std::fprintf(stderr, "%s: stdin:%lld: no key separator '%s' in '%s'%s\n", tool,
                       static_cast<long long>(number), separator.c_str(), line.c_str(),
                       open ? "; the open transaction was aborted" : "");
          return exit_bad_input;
        }
        r.key = line.substr(0, at);
        r.value = line.substr(at + separator.size());
      } else {
        r.value = line;
      }
      if (transactional && !open) {
        p.begin_transaction();
        open = true;
      }
      acks.push_back(p.send(r));
      if (transactional && ++in_transaction == lines_per_transaction) {
        p.commit_transaction();
        settle(0);
        open = false;
        in_transaction = 0;
      } else {
        settle(10000); // bounded memory for a long input
      }
    }
    if (open)
      p.commit_transaction();
    p.flush();
    settle(0);
    p.close();
  } catch (const kafka_exception& e) {
    bool aborted = false;
    if (made && open && e.is_abortable()) {
      try {
        made->abort_transaction();
        aborted = true;
      } catch (const kafka_exception&) {
        // the coordinator aborts it at transaction.timeout.ms
      }
    }
    std::fprintf(stderr, "%s: %s%s\n", tool, cli::error_text(e).c_str(),
                 aborted ? "; the open transaction was aborted" : "");
    return e.code() == error_code::invalid_config ? exit_bad_input : exit_failed;
  }
  return exit_ok;
}
