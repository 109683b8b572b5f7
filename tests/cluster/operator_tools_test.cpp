// The operator tools against three caftx-node processes, run as a user
// runs them: caftx-topics (kafka-topics.sh's options and lines) and
// caftx-transactions (kafka-transactions.sh's commands and columns),
// checked by their exact output and exit codes, bad input included.
#include "cluster_fixture.hpp"

#include <leveldb/write_batch.h>

#include <cstring>
#include <fstream>
#include <tuple>

#include "runtime/record_batch_v2.hpp"

namespace caftx::testing {
namespace {

struct run_result {
  int code = -1;
  std::string out;
  std::string err;
};

class OperatorTools : public Cluster {
protected:
  int runs = 0;

  // Runs `binary` with `args` (and `input` on its standard input) to its
  // end.
  run_result run(const char* binary, std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), binary);
    auto name = "tool-" + std::to_string(runs++);
    auto in = tmp.path() + "/" + name + ".in";
    {
      std::ofstream f{in};
      f << input;
    }
    child_process p{tmp.path(), name, std::move(args), in};
    auto status = p.wait_exit(60s);
    return {exit_code(status), p.out(), p.err()};
  }

  run_result console_producer(std::vector<std::string> args, const std::string& input) {
    args.insert(args.begin(), {"--bootstrap-server", bootstrap()});
    return run(CAFTX_CONSOLE_PRODUCER_BINARY, std::move(args), input);
  }

  run_result console_consumer(std::vector<std::string> args) {
    args.insert(args.begin(), {"--bootstrap-server", bootstrap()});
    return run(CAFTX_CONSOLE_CONSUMER_BINARY, std::move(args));
  }

  static std::multiset<std::string> line_set(const std::string& text) {
    auto ls = lines(text);
    return {ls.begin(), ls.end()};
  }

  run_result topics(std::vector<std::string> args, bool with_bootstrap = true) {
    if (with_bootstrap)
      args.insert(args.begin(), {"--bootstrap-server", bootstrap()});
    return run(CAFTX_TOPICS_BINARY, std::move(args));
  }

  run_result transactions(std::vector<std::string> args, bool with_bootstrap = true) {
    if (with_bootstrap)
      args.insert(args.begin(), {"--bootstrap-server", bootstrap()});
    return run(CAFTX_TRANSACTIONS_BINARY, std::move(args));
  }

  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in{text};
    for (std::string l; std::getline(in, l);)
      out.push_back(l);
    return out;
  }

  // A row of Kafka's prettyPrintTable: the cells without their padding.
  static std::vector<std::string> cells(const std::string& row) {
    std::vector<std::string> out;
    std::istringstream in{row};
    for (std::string c; std::getline(in, c, '\t');) {
      c.erase(c.find_last_not_of(' ') + 1);
      out.push_back(c);
    }
    return out;
  }
};

// kafka-topics.sh's create, list and describe; the ISR column follows a
// killed node out (--under-replicated-partitions); every refusal is exit
// 1 with Kafka's error and every bad input exit 2, nothing created.
TEST_F(OperatorTools, TopicsCreatesListsAndDescribesWithKafkasLines) {
  start_cluster(3);
  auto created = topics({"--create", "--topic", "orders", "--partitions", "3",
                         "--replication-factor", "3", "--config", "retention.ms=600000"});
  EXPECT_EQ(created.code, 0) << created.err;
  EXPECT_EQ(created.out, "Created topic orders.\n");
  auto again = topics({"--create", "--topic", "orders", "--partitions", "3"});
  EXPECT_EQ(again.code, 1);
  EXPECT_NE(again.err.find("TOPIC_ALREADY_EXISTS"), std::string::npos) << again.err;
  EXPECT_EQ(topics({"--create", "--topic", "orders", "--if-not-exists"}).code, 0);
  auto too_many = topics({"--create", "--topic", "wide", "--replication-factor", "4"});
  EXPECT_EQ(too_many.code, 1);
  EXPECT_NE(too_many.err.find("INVALID_REPLICATION_FACTOR"), std::string::npos) << too_many.err;
  EXPECT_EQ(topics({"--create", "--topic", "single"}).code, 0); // num.partitions, RF 1

  auto listed = topics({"--list", "--exclude-internal"});
  EXPECT_EQ(listed.code, 0) << listed.err;
  EXPECT_EQ(listed.out, "orders\nsingle\n");

  auto described = topics({"--describe", "--topic", "orders"});
  ASSERT_EQ(described.code, 0) << described.err;
  auto ls = lines(described.out);
  ASSERT_EQ(ls.size(), 4u) << described.out;
  EXPECT_EQ(ls[0], "Topic: orders\tPartitionCount: 3\tReplicationFactor: 3");
  std::regex row(
    "\tTopic: orders\tPartition: ([0-2])\tLeader: ([1-3])\tReplicas: ([1-3]),([1-3]),([1-3])"
    "\tIsr: ([1-3]),([1-3]),([1-3])");
  std::set<std::string> leaders;
  for (size_t i = 1; i < ls.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(ls[i], m, row)) << ls[i];
    EXPECT_EQ(m[1].str(), std::to_string(i - 1));
    EXPECT_EQ(m[2].str(), m[3].str()) << "the preferred replica leads a new topic";
    EXPECT_EQ((std::set<std::string>{m[3], m[4], m[5]}),
              (std::set<std::string>{m[6], m[7], m[8]}));
    leaders.insert(m[2]);
  }
  EXPECT_EQ(leaders.size(), 3u) << "each node leads one partition";
  EXPECT_EQ(topics({"--describe", "--under-replicated-partitions"}).out, "");

  // Node 3 killed: once its session expired it is out of every ISR and
  // leads nothing.
  ASSERT_TRUE(nodes[3]->proc().stop(SIGKILL, 10s));
  run_result under;
  EXPECT_TRUE(wait_until(
    [&] {
      under = topics({"--describe", "--topic", "orders", "--under-replicated-partitions"});
      return lines(under.out).size() == 3;
    },
    60s))
    << under.out << under.err;
  for (auto& l : lines(under.out)) {
    EXPECT_EQ(l.find("Leader: 3"), std::string::npos) << l;
    EXPECT_EQ(l.substr(l.find("Isr: ")).find('3'), std::string::npos) << l;
  }

  auto unknown = topics({"--describe", "--topic", "nope"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("UNKNOWN_TOPIC_OR_PARTITION"), std::string::npos) << unknown.err;
  // Bad input: exit 2 with a line naming the problem, before any request.
  for (auto args : std::vector<std::vector<std::string>>{
         {},
         {"--list", "--describe"},
         {"--create"},
         {"--create", "--topic", "x", "--partitions", "0"},
         {"--create", "--topic", "x", "--config", "retention.ms"},
         {"--list", "--partitions", "3"},
         {"--list", "--no-such-option"},
         {"--list", "--command-config", "/"},
         {"--describe", "--under-replicated-partitions", "--unavailable-partitions"}}) {
    auto bad = topics(args);
    EXPECT_EQ(bad.code, 2) << bad.err;
    EXPECT_FALSE(bad.err.empty());
  }
  EXPECT_EQ(topics({"--list"}, false).code, 2); // no --bootstrap-server
  EXPECT_EQ(topics({"--list", "--exclude-internal"}).out, "orders\nsingle\n"); // nothing created
  // An address nothing listens on: exit 1 and plain words.
  auto unreachable = run(CAFTX_TOPICS_BINARY,
                         {"--bootstrap-server", "127.0.0.1:" + std::to_string(free_port()), "--list"});
  EXPECT_EQ(unreachable.code, 1);
  EXPECT_NE(unreachable.err.find("cannot connect to 127.0.0.1:"), std::string::npos)
    << unreachable.err;
  EXPECT_EQ(unreachable.err.find("system_error"), std::string::npos) << unreachable.err;
}

// kafka-topics.sh --alter --partitions (Kafka's CreatePartitions): new
// partitions placed by the controller or by --replica-assignment (whose
// entries for the partitions the topic has are skipped, as TopicCommand
// does); no increase is exit 1 with Kafka's error, bad input exit 2.
TEST_F(OperatorTools, TopicsAlterAddsPartitionsWithLeaders) {
  start_cluster(3);
  ASSERT_EQ(topics({"--create", "--topic", "grow", "--partitions", "2", "--replication-factor",
                    "2"})
              .code,
            0);
  auto grown = topics({"--alter", "--topic", "grow", "--partitions", "4"});
  EXPECT_EQ(grown.code, 0) << grown.err;
  EXPECT_EQ(grown.out, "Adding partitions succeeded!\n");
  // The first four entries, for the partitions the topic has, are skipped
  // (node 9 does not exist): only 3:1 is asked for.
  auto assigned = topics({"--alter", "--topic", "grow", "--partitions", "5", "--replica-assignment",
                          "9:8,9:8,9:8,9:8,3:1"});
  EXPECT_EQ(assigned.code, 0) << assigned.err;
  auto described = topics({"--describe", "--topic", "grow"});
  ASSERT_EQ(described.code, 0) << described.err;
  auto ls = lines(described.out);
  ASSERT_EQ(ls.size(), 6u) << described.out;
  EXPECT_EQ(ls[0], "Topic: grow\tPartitionCount: 5\tReplicationFactor: 2");
  std::regex row("\tTopic: grow\tPartition: ([0-4])\tLeader: ([1-3])\tReplicas: ([1-3]),([1-3])"
                 "\tIsr: ([1-3]),([1-3])");
  for (size_t i = 1; i < ls.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(ls[i], m, row)) << ls[i];
    EXPECT_EQ(m[2].str(), m[3].str()) << "the first replica leads a new partition";
  }
  EXPECT_EQ(ls[5], "\tTopic: grow\tPartition: 4\tLeader: 3\tReplicas: 3,1\tIsr: 3,1");
  auto lower = topics({"--alter", "--topic", "grow", "--partitions", "3"});
  EXPECT_EQ(lower.code, 1);
  EXPECT_NE(lower.err.find("INVALID_PARTITIONS"), std::string::npos) << lower.err;
  auto unknown = topics({"--alter", "--topic", "nope", "--partitions", "3"});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_NE(unknown.err.find("UNKNOWN_TOPIC_OR_PARTITION"), std::string::npos) << unknown.err;
  for (auto args : std::vector<std::vector<std::string>>{
         {"--alter", "--topic", "grow"},
         {"--alter", "--partitions", "6"},
         {"--alter", "--topic", "grow", "--partitions", "0"},
         {"--alter", "--topic", "grow", "--partitions", "6", "--replication-factor", "2"},
         {"--alter", "--topic", "grow", "--partitions", "6", "--replica-assignment", "1:x"},
         {"--alter", "--topic", "grow", "--partitions", "6", "--replica-assignment", "1:2"},
         {"--alter", "--topic", "grow", "--partitions", "2", "--replica-assignment", "1:1,2:3"},
         {"--alter", "--topic", "grow", "--partitions", "2", "--replica-assignment", "1:2,3"},
         {"--create", "--topic", "x", "--replica-assignment", "1"}}) {
    auto bad = topics(args);
    EXPECT_EQ(bad.code, 2) << bad.err;
    EXPECT_FALSE(bad.err.empty());
  }
  EXPECT_EQ(lines(topics({"--describe", "--topic", "grow"}).out).size(), 6u); // nothing changed
}

// kafka-topics.sh --delete (Kafka's DeleteTopics, TopicDeletionManager):
// the topic leaves every node's metadata, every replica's data leaves its
// store, the name is free again; a replica on a node that is down holds
// the deletion (REQUEST_TIMED_OUT, the name stays taken) until the node is
// back; --topic is a regular expression over whole names that leaves
// internal topics out unless named, and naming one is refused.
TEST_F(OperatorTools, TopicsDeleteRemovesTheTopicAndItsDataEverywhere) {
  start_cluster(3);
  ASSERT_EQ(topics({"--create", "--topic", "gone", "--partitions", "2", "--replication-factor",
                    "3"})
              .code,
            0);
  ASSERT_EQ(topics({"--create", "--topic", "kept", "--replication-factor", "3"}).code, 0);
  ASSERT_EQ(topics({"--create", "--topic", "late", "--replication-factor", "3"}).code, 0);
  auto produced = console_producer({"--topic", "gone"}, "a\nb\nc\nd\n");
  ASSERT_EQ(produced.code, 0) << produced.err;
  ASSERT_EQ(console_producer({"--topic", "kept"}, "stays\n").code, 0);

  auto deleted = topics({"--delete", "--topic", "gone"});
  EXPECT_EQ(deleted.code, 0) << deleted.err;
  EXPECT_EQ(deleted.out, ""); // Kafka's TopicCommand prints nothing
  for (auto id : {1, 2, 3}) {
    auto listed = topics({"--bootstrap-server", bootstrap({id}), "--list", "--exclude-internal"},
                         false);
    EXPECT_EQ(listed.out, "kept\nlate\n") << "node " << id;
  }
  auto again = topics({"--delete", "--topic", "gone"});
  EXPECT_EQ(again.code, 1);
  EXPECT_EQ(again.err,
            "Error while executing topic command : UNKNOWN_TOPIC_OR_PARTITION: Topic 'gone' does "
            "not exist as expected\n");
  EXPECT_EQ(topics({"--delete", "--topic", "gone", "--if-exists"}).code, 0);
  // A new topic of the name starts empty.
  ASSERT_EQ(topics({"--create", "--topic", "gone", "--partitions", "2"}).code, 0);
  auto read = console_consumer({"--topic", "gone", "--from-beginning", "--timeout-ms", "2000"});
  EXPECT_EQ(read.out, "");
  auto kept = console_consumer({"--topic", "kept", "--from-beginning", "--max-messages", "1"});
  EXPECT_EQ(kept.out, "stays\n");

  // Naming an internal topic is refused by the controller; a pattern
  // leaves them out.
  auto internal = topics({"--delete", "--topic", "__transaction_state"});
  EXPECT_EQ(internal.code, 1);
  EXPECT_EQ(internal.err,
            "Error while executing topic command : INVALID_REQUEST: deleting topic "
            "'__transaction_state': topic names starting with '__' are internal\n");
  auto only_internal = topics({"--delete", "--topic", "__.*"});
  EXPECT_EQ(only_internal.code, 1);
  EXPECT_EQ(only_internal.err,
            "Error while executing topic command : INVALID_REQUEST: Topic '__.*' matches only "
            "internal topics (__transaction_state), which cannot be deleted\n");
  for (auto args : std::vector<std::vector<std::string>>{
         {"--delete"}, {"--delete", "--topic", "["}, {"--list", "--if-exists"}}) {
    auto bad = topics(args);
    EXPECT_EQ(bad.code, 2) << bad.err;
    EXPECT_FALSE(bad.err.empty());
  }

  // A node other than the controller down: the deletion of "late" waits
  // for its replica.
  int32_t down = logged(1, "elected controller at") ? 2 : 1;
  ASSERT_TRUE(nodes[down]->proc().stop(SIGKILL, 10s));
  {
    std::ofstream f{tmp.path() + "/admin.properties"};
    f << "request.timeout.ms=3000\n";
  }
  auto held = topics({"--delete", "--topic", "late", "--command-config",
                      tmp.path() + "/admin.properties"});
  EXPECT_EQ(held.code, 1);
  EXPECT_NE(held.err.find("REQUEST_TIMED_OUT"), std::string::npos) << held.err;
  EXPECT_NE(held.err.find("stays marked for deletion"), std::string::npos) << held.err;
  // A second delete of the marked topic joins its deletion (it is gone from
  // the metadata already).
  auto joined = topics({"--delete", "--topic", "late", "--command-config",
                        tmp.path() + "/admin.properties"});
  EXPECT_EQ(joined.code, 1);
  EXPECT_NE(joined.err.find("stays marked for deletion"), std::string::npos) << joined.err;
  auto taken = topics({"--create", "--topic", "late"});
  EXPECT_EQ(taken.code, 1);
  EXPECT_NE(taken.err.find("Topic 'late' is marked for deletion."), std::string::npos)
    << taken.err;
  EXPECT_EQ(topics({"--list", "--exclude-internal"}).out, "gone\nkept\n");
  start(down);
  EXPECT_TRUE(wait_until([&] { return logged(down, "deleted the log of late-0"); }, 30s))
    << log(down);
  run_result created;
  EXPECT_TRUE(wait_until(
    [&] { return (created = topics({"--create", "--topic", "late"})).code == 0; }, 30s))
    << created.err;

  // A pattern over whole names; the stores hold nothing of a deleted topic.
  EXPECT_EQ(topics({"--delete", "--topic", "g.*|k.*"}).code, 0);
  EXPECT_EQ(topics({"--list"}).out, "__transaction_state\nlate\n");
  for (auto id : {1, 2, 3}) {
    ASSERT_TRUE(nodes[id]->proc().stop(SIGTERM, 30s));
    node_store_options so;
    so.node_id = id;
    auto store = node_store::open(tmp.path() + "/data" + std::to_string(id), so);
    ASSERT_TRUE(store.ok()) << store.error().to_string();
    std::vector<std::string> left;
    for (auto prefix : {"log/", "pstate/", "aborted/", "logstart/", "cleaner/", "hw/", "epoch/"})
      (*store)->scan(prefix, [&](const std::string& key, const std::string&) {
        if (key.compare(std::strlen(prefix), 5, std::string("gone\0", 5)) == 0
            || key.compare(std::strlen(prefix), 5, std::string("kept\0", 5)) == 0)
          left.push_back(key);
        return true;
      });
    EXPECT_TRUE(left.empty()) << "node " << id << " still holds " << left.front();
  }
}

// kafka-transactions.sh against live transactions: list and describe show
// the coordinator node and state; transactional batches of producer ids
// no transactional id maps to are the hanging transactions find-hanging
// reports (an open transaction of a live producer is not); abort by start
// offset and abort by producer end them, and the partition's LSO reaches
// its HW.
TEST_F(OperatorTools, TransactionsListsDescribesAndAbortsPlantedHangingTransactions) {
  start_cluster(3, {{"default.replication.factor", "3"}});
  ASSERT_EQ(topics({"--create", "--topic", "pay", "--partitions", "2"}).code, 0);
  // Two planted hanging transactions at offsets 0 and 1 of stray-0 (one
  // replica): transactional batches of producer ids 999999 (epoch 3) and
  // 888888 (epoch 1) that no coordinator knows of. A leader verifies a
  // transactional write with its coordinator (KIP-890) and refuses such a
  // batch, so they go into the log while the node is down, as data written
  // before that defence existed, or under a card that was lost, would be.
  const topic_partition planted{"stray", 0};
  ASSERT_EQ(topics({"--create", "--topic", "stray", "--partitions", "1", "--replication-factor",
                    "1"})
              .code,
            0);
  auto holder = wait_leader_of(planted);
  ASSERT_GT(holder, 0);
  ASSERT_TRUE(nodes[holder]->proc().stop(SIGTERM, 30s));
  {
    node_store_options so;
    so.node_id = holder;
    auto store = node_store::open(tmp.path() + "/data" + std::to_string(holder), so);
    ASSERT_TRUE(store.ok()) << store.error().to_string();
    leveldb::WriteBatch wb;
    for (auto [offset, pid, epoch] : {std::tuple<int64_t, int64_t, int16_t>{0, 999999, 3},
                                      std::tuple<int64_t, int64_t, int16_t>{1, 888888, 1}}) {
      record_batch b;
      b.base_offset = offset;
      b.pid = producer_id{pid};
      b.epoch = producer_epoch{epoch};
      b.base_sequence = 0;
      b.attributes = attr_transactional;
      b.records.push_back({"k", "stray", {}, 0});
      wb.Put(keys::log_entry(planted, offset), v2::encode(b, 0));
    }
    ASSERT_TRUE(store.value()->write_now(wb).ok());
  }
  start(holder);
  ASSERT_TRUE(wait_until([&] { return logged(holder, "became leader of stray-0"); }, 60s))
    << log(holder);
  producer done{client_props({{"transactional.id", "tx-done"}})};
  done.init_transactions();
  done.begin_transaction();
  done.send({"pay", 0, "", "a", {}, -1});
  done.commit_transaction();
  producer open{client_props({{"transactional.id", "tx-open"}, {"transaction.timeout.ms", "600000"}})};
  open.init_transactions();
  open.begin_transaction();
  open.send({"pay", 0, "", "b", {}, -1});
  open.flush();

  auto coordinator = [&](const std::string& tid) {
    return std::to_string(
      wait_leader_of({transaction_state_topic, partition_for(tid, internal_partitions)}));
  };
  // EndTxn answers once PrepareCommit is written; CompleteCommit follows
  // the markers.
  run_result listed;
  EXPECT_TRUE(wait_until(
    [&] {
      listed = transactions({"list"});
      return listed.out.find("CompleteCommit") != std::string::npos;
    },
    30s))
    << listed.out << listed.err;
  ASSERT_EQ(listed.code, 0) << listed.err;
  auto ls = lines(listed.out);
  ASSERT_EQ(ls.size(), 3u) << listed.out;
  EXPECT_EQ(cells(ls[0]),
            (std::vector<std::string>{"TransactionalId", "Coordinator", "ProducerId",
                                      "TransactionState"}));
  auto row_done = cells(ls[1]);
  auto row_open = cells(ls[2]);
  ASSERT_EQ(row_done.size(), 4u);
  ASSERT_EQ(row_open.size(), 4u);
  EXPECT_EQ(row_done[0], "tx-done");
  EXPECT_EQ(row_done[1], coordinator("tx-done"));
  EXPECT_EQ(row_done[3], "CompleteCommit");
  EXPECT_EQ(row_open[0], "tx-open");
  EXPECT_EQ(row_open[1], coordinator("tx-open"));
  EXPECT_EQ(row_open[3], "Ongoing");

  auto described = transactions({"describe", "--transactional-id", "tx-open"});
  ASSERT_EQ(described.code, 0) << described.err;
  ls = lines(described.out);
  ASSERT_EQ(ls.size(), 2u) << described.out;
  EXPECT_EQ(cells(ls[0]),
            (std::vector<std::string>{"CoordinatorId", "TransactionalId", "ProducerId",
                                      "ProducerEpoch", "TransactionState", "TransactionTimeoutMs",
                                      "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                                      "TopicPartitions"}));
  auto d = cells(ls[1]);
  ASSERT_EQ(d.size(), 9u);
  EXPECT_EQ(d[0], coordinator("tx-open"));
  EXPECT_EQ(d[1], "tx-open");
  EXPECT_EQ(d[2], row_open[2]);
  EXPECT_EQ(d[4], "Ongoing");
  EXPECT_EQ(d[5], "600000");
  EXPECT_NE(d[6], "None");
  EXPECT_EQ(d[8], "pay-0");
  auto missing = transactions({"describe", "--transactional-id", "no-such-id"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("TRANSACTIONAL_ID_NOT_FOUND"), std::string::npos) << missing.err;

  auto producers = transactions({"describe-producers", "--topic", "stray", "--partition", "0"});
  ASSERT_EQ(producers.code, 0) << producers.err;
  ls = lines(producers.out);
  ASSERT_EQ(ls.size(), 3u) << producers.out;
  EXPECT_EQ(cells(ls[0]), (std::vector<std::string>{"ProducerId", "ProducerEpoch",
                                                    "LatestCoordinatorEpoch", "LastSequence",
                                                    "LastTimestamp",
                                                    "CurrentTransactionStartOffset"}));
  EXPECT_EQ(cells(ls[1]), (std::vector<std::string>{"888888", "1", "-1", "0", "0", "1"}));
  EXPECT_EQ(cells(ls[2]), (std::vector<std::string>{"999999", "3", "-1", "0", "0", "0"}));
  // Kafka's padding: each cell to its column's width, then a tab.
  auto pad = [](const std::string& v, size_t width) { return v + std::string(width - v.size(), ' '); };
  EXPECT_EQ(ls[2], pad("999999", 10) + "\t" + pad("3", 13) + "\t" + pad("-1", 22) + "\t"
                     + pad("0", 12) + "\t" + pad("0", 13) + "\t" + pad("0", 29) + "\t");

  // Both open transactions are older than 0 minutes; only the planted one
  // hangs (tx-open's coordinator holds pay-0 in its transaction).
  auto live = transactions({"find-hanging", "--topic", "pay", "--max-transaction-timeout", "0"});
  EXPECT_EQ(live.code, 0) << live.err;
  EXPECT_EQ(lines(live.out).size(), 1u) << live.out;
  auto hanging = transactions({"find-hanging", "--broker-id", std::to_string(holder),
                               "--max-transaction-timeout", "0"});
  ASSERT_EQ(hanging.code, 0) << hanging.err;
  ls = lines(hanging.out);
  ASSERT_EQ(ls.size(), 3u) << hanging.out;
  EXPECT_EQ(cells(ls[0]), (std::vector<std::string>{"Topic", "Partition", "ProducerId",
                                                    "ProducerEpoch", "CoordinatorEpoch",
                                                    "StartOffset", "LastTimestamp",
                                                    "Duration(min)"}));
  std::set<std::vector<std::string>> rows;
  for (size_t i = 1; i < ls.size(); ++i) {
    auto h = cells(ls[i]);
    ASSERT_EQ(h.size(), 8u);
    rows.insert({h.begin(), h.begin() + 7});
  }
  EXPECT_EQ(rows, (std::set<std::vector<std::string>>{
                    {"stray", "0", "999999", "3", "-1", "0", "0"},
                    {"stray", "0", "888888", "1", "-1", "1", "0"}}));
  auto elsewhere = transactions({"find-hanging", "--broker-id", std::to_string(holder % 3 + 1),
                                 "--max-transaction-timeout", "0"});
  EXPECT_EQ(elsewhere.code, 0) << elsewhere.err;
  EXPECT_EQ(lines(elsewhere.out).size(), 1u) << elsewhere.out; // no replica of stray-0 there

  auto wrong = transactions({"abort", "--topic", "stray", "--partition", "0", "--start-offset", "7"});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_NE(wrong.err.find("INVALID_REQUEST"), std::string::npos) << wrong.err;
  auto aborted = transactions({"abort", "--topic", "stray", "--partition", "0", "--start-offset",
                               "0"});
  EXPECT_EQ(aborted.code, 0) << aborted.err;
  EXPECT_EQ(aborted.out, "");
  // The second by its producer (the coordinator epoch -1 of
  // describe-producers taken as 0).
  auto by_producer = transactions({"abort", "--topic", "stray", "--partition", "0",
                                   "--producer-id", "888888", "--producer-epoch", "1",
                                   "--coordinator-epoch", "-1"});
  EXPECT_EQ(by_producer.code, 0) << by_producer.err;
  std::pair<int64_t, int64_t> at;
  EXPECT_TRUE(wait_until([&] { return (at = lso_and_hw(planted, running())).first == 4; }, 30s))
    << "LSO " << at.first << ", HW " << at.second;
  EXPECT_EQ(at.second, 4);
  auto after = transactions({"find-hanging", "--topic", "stray", "--max-transaction-timeout", "0"});
  EXPECT_EQ(lines(after.out).size(), 1u) << after.out;
  // The live transaction still commits.
  open.commit_transaction();
  EXPECT_EQ(read_committed({{"pay", 0}, {"pay", 1}}, 2),
            (std::multiset<std::string>{"0:a", "0:b"}));

  for (auto args : std::vector<std::vector<std::string>>{
         {},
         {"find-hanging"},
         {"find-hanging", "--partition", "1", "--broker-id", "1"},
         {"abort", "--topic", "pay", "--partition", "1"},
         {"abort", "--topic", "pay", "--partition", "1", "--producer-id", "5"},
         {"abort", "--topic", "pay", "--partition", "1", "--producer-id", "5", "--producer-epoch",
          "40000", "--coordinator-epoch", "0"},
         {"describe"},
         {"no-such-command"}}) {
    auto bad = transactions(args);
    EXPECT_EQ(bad.code, 2) << bad.out << bad.err;
    EXPECT_FALSE(bad.err.empty());
  }
}

// kafka-console-producer.sh and kafka-console-consumer.sh: lines in,
// records out in DefaultMessageFormatter's layout; under
// --transactional-id a bad line aborts the open transaction, so
// read_committed readers see none of its lines while read_uncommitted
// ones do; a group's second reader continues exactly after the first
// one's printed records (--max-messages stops mid-poll), and
// kafka-consumer-groups.sh --describe shows its offsets, the HWs and the
// lag.
TEST_F(OperatorTools, ConsoleClientsMoveLinesExactlyOnceAndConsumerGroupsShowsTheLag) {
  start_cluster(3, {{"default.replication.factor", "3"}});
  ASSERT_EQ(topics({"--create", "--topic", "lines", "--partitions", "2"}).code, 0);
  auto keyed = console_producer({"--topic", "lines", "--property", "parse.key=true", "--property",
                                 "key.separator=:"},
                                "a:1\nb:2\nc:3\n");
  EXPECT_EQ(keyed.code, 0) << keyed.err;
  EXPECT_EQ(keyed.out, "");
  auto txn = console_producer({"--topic", "lines", "--transactional-id", "lines-tx",
                               "--lines-per-transaction", "2"},
                              "t1\nt2\nt3\nt4\nt5\n");
  EXPECT_EQ(txn.code, 0) << txn.err;
  auto bad = console_producer({"--topic", "lines", "--transactional-id", "lines-tx",
                               "--lines-per-transaction", "5", "--property", "parse.key=true"},
                              "k\tgone\nno separator here\n");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("stdin:2: no key separator"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("the open transaction was aborted"), std::string::npos) << bad.err;

  auto committed = console_consumer({"--topic", "lines", "--from-beginning", "--isolation-level",
                                     "read_committed", "--property", "print.key=true",
                                     "--max-messages", "8"});
  EXPECT_EQ(committed.code, 0) << committed.err;
  EXPECT_EQ(line_set(committed.out),
            (std::multiset<std::string>{"a\t1", "b\t2", "c\t3", "\tt1", "\tt2", "\tt3", "\tt4",
                                        "\tt5"}));
  EXPECT_NE(committed.err.find("Processed a total of 8 messages"), std::string::npos)
    << committed.err;
  auto uncommitted = console_consumer({"--topic", "lines", "--from-beginning", "--timeout-ms",
                                       "3000"});
  EXPECT_EQ(uncommitted.code, 0) << uncommitted.err;
  EXPECT_EQ(line_set(uncommitted.out).count("gone"), 1u) << uncommitted.out; // aborted, present

  // A group read in two runs: 3 records, then the rest, each exactly once.
  auto first = console_consumer({"--topic", "lines", "--group", "g", "--from-beginning",
                                 "--isolation-level", "read_committed", "--max-messages", "3"});
  EXPECT_EQ(first.code, 0) << first.err;
  EXPECT_EQ(lines(first.out).size(), 3u) << first.out;
  auto rest = console_consumer({"--topic", "lines", "--group", "g", "--isolation-level",
                                "read_committed", "--timeout-ms", "3000"});
  EXPECT_EQ(rest.code, 0) << rest.err;
  auto all = line_set(first.out);
  for (auto& l : lines(rest.out))
    all.insert(l);
  EXPECT_EQ(all, (std::multiset<std::string>{"1", "2", "3", "t1", "t2", "t3", "t4", "t5"}));

  // kafka-consumer-groups.sh --describe: the group's committed offsets,
  // each partition's HW and the difference, in Kafka's columns.
  auto described = run(CAFTX_CONSUMER_GROUPS_BINARY,
                       {"--bootstrap-server", bootstrap(), "--describe", "--group", "g"});
  EXPECT_EQ(described.code, 0) << described.err;
  EXPECT_NE(described.err.find("Consumer group 'g' has no active members."), std::string::npos)
    << described.err;
  auto dl = lines(described.out);
  ASSERT_EQ(dl.size(), 4u) << described.out;
  EXPECT_EQ(dl[0], "");
  EXPECT_EQ(dl[1], "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  "
                   "LAG             CONSUMER-ID     HOST            CLIENT-ID");
  {
    consumer c{client_props({{"group.id", "g"}})};
    for (int32_t p = 0; p < 2; ++p) {
      auto committed = c.committed({"lines", p});
      ASSERT_TRUE(committed.has_value());
      auto hw = lso_and_hw({"lines", p}, running()).second;
      std::istringstream row{dl[2 + p]};
      std::string g, t, part, cur, end, lag, id, host, client;
      row >> g >> t >> part >> cur >> end >> lag >> id >> host >> client;
      EXPECT_EQ(g, "g");
      EXPECT_EQ(t, "lines");
      EXPECT_EQ(part, std::to_string(p));
      EXPECT_EQ(cur, std::to_string(*committed));
      EXPECT_EQ(end, std::to_string(hw));
      EXPECT_EQ(lag, std::to_string(hw - *committed));
      EXPECT_EQ(id + host + client, "---");
    }
  }
  auto no_group = run(CAFTX_CONSUMER_GROUPS_BINARY,
                      {"--bootstrap-server", bootstrap(), "--describe", "--group", "nobody"});
  EXPECT_EQ(no_group.code, 0);
  EXPECT_EQ(no_group.out, "");
  EXPECT_NE(no_group.err.find("Consumer group 'nobody' does not exist."), std::string::npos);
  for (auto args : std::vector<std::vector<std::string>>{
         {"--describe"}, {"--list"}, {"--group", "g"}, {"--describe", "--list", "--group", "g"}}) {
    args.insert(args.begin(), {"--bootstrap-server", bootstrap()});
    EXPECT_EQ(run(CAFTX_CONSUMER_GROUPS_BINARY, args).code, 2);
  }

  // One partition from an offset, with the partition and offset columns.
  auto one = console_consumer({"--topic", "lines", "--partition", "0", "--offset", "1",
                               "--property", "print.partition=true", "--property",
                               "print.offset=true", "--timeout-ms", "2000"});
  EXPECT_EQ(one.code, 0) << one.err;
  auto ls = lines(one.out);
  ASSERT_FALSE(ls.empty()) << one.out;
  EXPECT_EQ(ls[0].rfind("Partition:0\tOffset:", 0), 0u) << ls[0];
  for (auto& l : ls)
    EXPECT_EQ(l.find("Offset:0\t"), std::string::npos) << l;

  for (auto args : std::vector<std::vector<std::string>>{
         {"--topic", "lines", "--offset", "1"},
         {"--topic", "lines", "--isolation-level", "serializable"},
         {"--topic", "lines", "--property", "print.key=maybe"},
         {"--topic", "lines", "--partition", "0", "--offset", "-4"},
         {"--topic", "lines", "--max-messages", "0"}}) {
    auto refused = console_consumer(args);
    EXPECT_EQ(refused.code, 2) << refused.err;
  }
  EXPECT_EQ(console_consumer({"--topic", "nope", "--timeout-ms", "500"}).code, 1);
  EXPECT_EQ(console_consumer({"--topic", "lines", "--group", ""}).code, 2);
  EXPECT_EQ(console_consumer({"--topic", ""}).code, 2);
  EXPECT_EQ(console_producer({"--topic", "lines", "--transactional-id", ""}, "x\n").code, 2);
  EXPECT_EQ(console_producer({"--topic", "a b"}, "x\n").code, 2);
  // Without a transaction the lines before a bad one are written (a CRLF
  // line end taken off, as Java's readLine does), then it stops.
  ASSERT_EQ(topics({"--create", "--topic", "lines2", "--partitions", "1"}).code, 0);
  auto partly = console_producer({"--topic", "lines2", "--property", "parse.key=true", "--property",
                                  "key.separator=:"},
                                 "x:1\r\ny:2\nbad\nz:3\n");
  EXPECT_EQ(partly.code, 2);
  EXPECT_NE(partly.err.find("stdin:3: no key separator"), std::string::npos) << partly.err;
  auto written = console_consumer({"--topic", "lines2", "--from-beginning", "--property",
                                   "print.key=true", "--timeout-ms", "2000"});
  EXPECT_EQ(written.out, "x\t1\ny\t2\n");
  EXPECT_EQ(console_producer({"--topic", "lines", "--property", "parse.key=yes"}, "x\n").code, 2);
  EXPECT_EQ(console_producer({"--topic", "lines", "--lines-per-transaction", "2"}, "x\n").code, 2);
}

} // namespace
} // namespace caftx::testing
