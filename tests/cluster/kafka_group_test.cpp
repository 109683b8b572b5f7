// Consumer groups over the Kafka listener (docs/consumer-groups.md): the
// classic group protocol on a raw socket with Kafka's errors, kcat's
// balanced consumers (-G) sharing a topic and committing, and
// confluent-kafka-python's exactly-once consume-transform-produce loop
// (subscribe, read_committed, send_offsets_to_transaction) over the
// Northwind order details while its processes are killed and restarted.
#include "kafka_listener_fixture.hpp"

#include <atomic>
#include <csignal>
#include <iostream>
#include <mutex>
#include <thread>

namespace caftx::testing {
namespace {

// The listener fixture under its own suite name (gtest wants one fixture
// class per suite, and each file has its own copy of KafkaListener), with
// the client runs that go against both shapes of node: a cluster on
// ZooKeeper and the embedded default.
class KafkaGroups : public KafkaListener {
protected:
  std::string kafka_bootstrap() {
    std::string out;
    for (auto& [id, port] : kafka_ports)
      out += (out.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(port);
    return out;
  }

  // confluent-kafka-python's exactly-once loop (tests/clients/
  // confluent_group_eos.py) in two processes of one group, each with its
  // own transactional id, over the 2155 Northwind order details (topics of
  // 3 partitions and `replication` replicas): every fourth transaction
  // aborts, and a process is killed (SIGKILL) three times at random points
  // and started again. The read_committed output is exactly the
  // sequential result: no line missing, none twice; the group's offsets
  // reach every partition's end.
  void confluent_exactly_once_loop(int16_t replication) {
    std::string python = CAFTX_PYTHON3;
    ASSERT_FALSE(python.empty()) << "/usr/bin/python3 not found";
    admin_client admin{client_props()};
    ASSERT_TRUE(admin.create_topic("nw-details", 3, {}, replication).ok());
    ASSERT_TRUE(admin.create_topic("nw-totals", 3, {}, replication).ok());
    auto bootstrap = kafka_bootstrap();
    std::string script = std::string(CAFTX_CLIENT_SCRIPTS) + "/confluent_group_eos.py";
    std::string csv = std::string(CAFTX_DATA_DIR) + "/northwind/order_details.csv";
    int runs = 0;
    auto run = [&](std::vector<std::string> args) {
      args.insert(args.begin(), {python, script});
      return std::make_unique<child_process>(tmp.path(), "py-" + std::to_string(runs++), args);
    };
    {
      auto load = run({"load", bootstrap, "nw-details", csv});
      ASSERT_EQ(exit_code(load->wait_exit(120s)), 0) << load->err();
      EXPECT_EQ(nlohmann::json::parse(load->out(), nullptr, false)["loaded"], 2155);
    }
    auto process = [&](int slot) {
      return run({"process", bootstrap, "nw-details", "nw-totals", "nw-group",
                  "nw-tx-" + std::to_string(slot), "4"});
    };
    std::unique_ptr<child_process> slots[2] = {process(0), process(1)};
    std::mt19937 rng{std::random_device{}()};
    int kills = 0;
    for (; kills < 3; ++kills) {
      auto& victim = slots[kills % 2];
      // A random point of its run: it may have finished by then.
      if (victim->wait_exit(std::chrono::milliseconds(1000 + rng() % 3000)))
        break;
      ::kill(victim->pid(), SIGKILL);
      victim->wait_exit(10s);
      victim = process(kills % 2);
    }
    EXPECT_GE(kills, 1) << "the loop finished before the first kill";
    for (auto& p : slots) {
      ASSERT_EQ(exit_code(p->wait_exit(240s)), 0) << p->err();
      std::cout << "killed " << kills << " times; last run of a process: " << p->out();
    }
    auto verify = run({"verify", bootstrap, "nw-totals", csv});
    ASSERT_EQ(exit_code(verify->wait_exit(120s)), 0) << verify->err();
    auto out = nlohmann::json::parse(verify->out(), nullptr, false);
    ASSERT_TRUE(out.is_object()) << verify->out();
    EXPECT_EQ(out["expected"], 2155);
    EXPECT_EQ(out["got"], 2155);
    EXPECT_EQ(out["missing"].size(), 0u) << out["missing"].dump();
    EXPECT_EQ(out["extra"].size(), 0u) << out["extra"].dump();
    // Aborted output is on the log, so read_uncommitted sees more.
    EXPECT_GT(kcat_consume(1, "nw-totals", "read_uncommitted").size(), 2155u);
    auto offsets = admin.list_group_offsets("nw-group");
    ASSERT_TRUE(offsets.ok()) << offsets.error().to_string();
    int64_t total = 0;
    for (auto& [tp, o] : *offsets)
      total += o;
    EXPECT_EQ(total, 2155); // no marker in the input: its end offsets add up to the records
  }

  // KafkaJS 2.2.4 (tests/clients/js/kafkajs_client.js) and librdkafka
  // across each other on node 1: KafkaJS's transactions read by kcat under
  // read_committed, and confluent-kafka-python's transactions read by a
  // KafkaJS group consumer. Each side sees every committed record once and
  // no aborted one.
  void kafkajs_and_librdkafka_across() {
    std::string node = CAFTX_NODEJS, python = CAFTX_PYTHON3;
    ASSERT_FALSE(node.empty()) << "node not found: tools/install-deps.sh installs Node.js";
    ASSERT_FALSE(python.empty()) << "/usr/bin/python3 not found";
    std::string js = std::string(CAFTX_CLIENT_SCRIPTS) + "/js/kafkajs_client.js";
    ASSERT_TRUE(std::ifstream{std::string(CAFTX_CLIENT_SCRIPTS) + "/js/node_modules/kafkajs/package.json"})
      << "KafkaJS is not installed: run tools/install-deps.sh";
    create_topic("from-js", 3);
    create_topic("from-rk", 3);
    create_topic("rk-in", 1);
    std::string bootstrap = "127.0.0.1:" + std::to_string(kafka_ports.at(1));
    int runs = 0;
    auto run = [&](std::vector<std::string> args) {
      auto p = std::make_unique<child_process>(tmp.path(), "client-" + std::to_string(runs++), args);
      auto status = p->wait_exit(180s);
      EXPECT_EQ(exit_code(status), 0) << p->err();
      auto out = nlohmann::json::parse(p->out(), nullptr, false);
      EXPECT_TRUE(out.is_object()) << p->out() << p->err();
      return out;
    };
    auto sorted = [](std::vector<std::string> v) {
      std::sort(v.begin(), v.end());
      return v;
    };

    auto produced = run({node, js, "produce-txn", bootstrap, "from-js", "js-tx", "6"});
    ASSERT_EQ(produced["committed"].size(), 15u);
    ASSERT_EQ(produced["aborted"].size(), 15u);
    std::vector<std::string> seen;
    for (auto& line : kcat_consume(1, "from-js", "read_committed"))
      seen.push_back(line.substr(line.find('=') + 1));
    EXPECT_EQ(sorted(seen), sorted(produced["committed"].get<std::vector<std::string>>()));
    EXPECT_EQ(kcat_consume(1, "from-js", "read_uncommitted").size(), 30u); // the aborted are on the log

    auto written = run({python, std::string(CAFTX_CLIENT_SCRIPTS) + "/confluent_transactions.py",
                        bootstrap, "from-rk", "rk-in", "rk-group", "rk-tx"});
    ASSERT_EQ(written["committed"].size(), 15u);
    auto consumed = run({node, js, "consume", bootstrap, "from-rk", "js-group", "15"});
    EXPECT_EQ(sorted(consumed["values"].get<std::vector<std::string>>()),
              sorted(written["committed"].get<std::vector<std::string>>()));
  }
};

// The body of the response to `correlation_id` after its throttle time
// (checked to be 0); "" (a test failure) without a response.
std::string after_throttle(raw_connection& c, int32_t correlation_id) {
  auto r = c.response();
  if (!r) {
    ADD_FAILURE() << "no response to " << correlation_id;
    return {};
  }
  kafka::reader rd{*r};
  EXPECT_EQ(rd.int32(), correlation_id);
  EXPECT_EQ(rd.int32(), 0);
  return std::string(rd.rest());
}

// JoinGroup v0-4: group, session timeout, (v1+) rebalance timeout, member
// id, protocol type "consumer", one protocol.
std::string join_group(int32_t correlation_id, int16_t version, const std::string& group,
                       const std::string& member, int32_t session_ms = 10000,
                       const std::string& protocol = "range") {
  kafka::writer w;
  w.string(group);
  w.int32(session_ms);
  if (version >= 1)
    w.int32(30000);
  w.string(member);
  w.string("consumer");
  w.int32(1);
  w.string(protocol);
  w.bytes("subscription");
  return request(kafka::api::join_group, version, correlation_id, w.bytes());
}

struct joined {
  int16_t error = -2;
  int32_t generation = -2;
  std::string protocol, leader, member;
  std::vector<std::string> members;
};

joined read_join(raw_connection& c, int32_t correlation_id, int16_t version) {
  joined j;
  auto r = c.response();
  if (!r) {
    ADD_FAILURE() << "no JoinGroup response";
    return j;
  }
  kafka::reader rd{*r};
  EXPECT_EQ(rd.int32(), correlation_id);
  if (version >= 2) {
    EXPECT_EQ(rd.int32(), 0);
  }
  j.error = rd.int16();
  j.generation = rd.int32();
  j.protocol = rd.string();
  j.leader = rd.string();
  j.member = rd.string();
  auto n = rd.int32();
  for (int32_t i = 0; i < n && rd.ok(); ++i) {
    j.members.push_back(rd.string());
    EXPECT_EQ(rd.bytes(), "subscription");
  }
  EXPECT_TRUE(rd.ok() && rd.remaining() == 0) << rd.what();
  return j;
}

// The member fields Heartbeat v3, SyncGroup v3 and OffsetCommit v7 start
// with: group, generation, member id, the instance id (null: a dynamic
// member).
kafka::writer member_fields(const std::string& group, int32_t generation,
                            const std::string& member,
                            const std::optional<std::string>& instance = std::nullopt) {
  kafka::writer w;
  w.string(group);
  w.int32(generation);
  w.string(member);
  w.nullable_string(instance);
  return w;
}

// Heartbeat v3's error (generation, member, instance id).
int16_t heartbeat(raw_connection& c, int32_t correlation_id, const std::string& group,
                  int32_t generation, const std::string& member,
                  const std::optional<std::string>& instance = std::nullopt) {
  auto w = member_fields(group, generation, member, instance);
  c.send(request(kafka::api::heartbeat, 3, correlation_id, w.bytes()));
  return throttle_then_error(c, correlation_id).first;
}

// OffsetCommit v7 of offset 5 of orders-0: the partition's error.
int16_t offset_commit(raw_connection& c, int32_t correlation_id, const std::string& group,
                      int32_t generation, const std::string& member) {
  auto w = member_fields(group, generation, member);
  w.int32(1);
  w.string("orders");
  w.int32(1);
  w.int32(0);
  w.int64(5);
  w.int32(-1);
  w.nullable_string(std::string());
  c.send(request(kafka::api::offset_commit, 7, correlation_id, w.bytes()));
  auto body = after_throttle(c, correlation_id);
  kafka::reader rd{body};
  EXPECT_EQ(rd.int32(), 1);
  EXPECT_EQ(rd.string(), "orders");
  EXPECT_EQ(rd.int32(), 1);
  EXPECT_EQ(rd.int32(), 0);
  return rd.int16();
}

struct described {
  int16_t error = -2;
  std::string state, protocol_type, protocol;
  // instances: each member's instance id, "<null>" for a dynamic member.
  std::vector<std::string> members, instances, client_ids, hosts, assignments;
};

described describe_group(raw_connection& c, int32_t correlation_id, const std::string& group) {
  kafka::writer w;
  w.int32(1);
  w.string(group);
  w.boolean(false);
  c.send(request(kafka::api::describe_groups, 4, correlation_id, w.bytes()));
  described d;
  auto body = after_throttle(c, correlation_id);
  kafka::reader rd{body};
  EXPECT_EQ(rd.int32(), 1);
  d.error = rd.int16();
  EXPECT_EQ(rd.string(), group);
  d.state = rd.string();
  d.protocol_type = rd.string();
  d.protocol = rd.string();
  auto n = rd.int32();
  for (int32_t i = 0; i < n && rd.ok(); ++i) {
    d.members.push_back(rd.string());
    d.instances.push_back(rd.nullable_string().value_or("<null>"));
    d.client_ids.push_back(rd.string());
    d.hosts.push_back(rd.string());
    rd.bytes();
    d.assignments.push_back(rd.bytes());
  }
  EXPECT_EQ(rd.int32(), INT32_MIN);
  EXPECT_TRUE(rd.ok() && rd.remaining() == 0) << rd.what();
  return d;
}

// DeleteGroups v1 of one group: its error.
int16_t delete_group(raw_connection& c, int32_t correlation_id, const std::string& group) {
  kafka::writer w;
  w.int32(1);
  w.string(group);
  c.send(request(kafka::api::delete_groups, 1, correlation_id, w.bytes()));
  auto body = after_throttle(c, correlation_id);
  kafka::reader rd{body};
  EXPECT_EQ(rd.int32(), 1);
  EXPECT_EQ(rd.string(), group);
  return rd.int16();
}

// ListGroups v2: (group, protocol type) pairs, with the response's error.
std::pair<int16_t, std::map<std::string, std::string>> list_groups(raw_connection& c,
                                                                    int32_t correlation_id) {
  c.send(request(kafka::api::list_groups, 2, correlation_id, ""));
  std::pair<int16_t, std::map<std::string, std::string>> out{-2, {}};
  auto body = after_throttle(c, correlation_id);
  kafka::reader rd{body};
  out.first = rd.int16();
  auto n = rd.int32();
  for (int32_t i = 0; i < n && rd.ok(); ++i) {
    auto g = rd.string();
    out.second[g] = rd.string();
  }
  return out;
}

// JoinGroup v5 of a static member (KIP-345): session and rebalance
// timeouts 30 s, one protocol.
std::string static_join(int32_t correlation_id, const std::string& group,
                        const std::string& member, const std::string& instance) {
  kafka::writer w;
  w.string(group);
  w.int32(30000);
  w.int32(30000);
  w.string(member);
  w.nullable_string(instance);
  w.string("consumer");
  w.int32(1);
  w.string("range");
  w.bytes("subscription");
  return request(kafka::api::join_group, 5, correlation_id, w.bytes());
}

// JoinGroup v5's answer; `instances` are the listed members' instance ids.
struct static_joined {
  int16_t error = -2;
  int32_t generation = -2;
  std::string leader, member;
  std::vector<std::string> members, instances;
};

static_joined read_static_join(raw_connection& c, int32_t correlation_id) {
  static_joined j;
  auto body = after_throttle(c, correlation_id);
  kafka::reader rd{body};
  j.error = rd.int16();
  j.generation = rd.int32();
  rd.string(); // protocol
  j.leader = rd.string();
  j.member = rd.string();
  auto n = rd.int32();
  for (int32_t i = 0; i < n && rd.ok(); ++i) {
    j.members.push_back(rd.string());
    j.instances.push_back(rd.nullable_string().value_or("<null>"));
    EXPECT_EQ(rd.bytes(), "subscription");
  }
  EXPECT_TRUE(rd.ok() && rd.remaining() == 0) << rd.what();
  return j;
}

// SyncGroup v3 of a static member with `assignment` for itself ("": none,
// a follower's): the error and the assignment it got.
std::pair<int16_t, std::string> static_sync(raw_connection& c, int32_t correlation_id,
                                            const std::string& group, int32_t generation,
                                            const std::string& member,
                                            const std::string& instance,
                                            const std::string& assignment) {
  auto w = member_fields(group, generation, member, instance);
  w.int32(assignment.empty() ? 0 : 1);
  if (!assignment.empty()) {
    w.string(member);
    w.bytes(assignment);
  }
  c.send(request(kafka::api::sync_group, 3, correlation_id, w.bytes()));
  auto [error, rest] = throttle_then_error(c, correlation_id);
  kafka::reader rd{rest};
  return {error, rd.bytes()};
}

// One node, on a raw socket: KIP-394's MEMBER_ID_REQUIRED round, the
// leader's SyncGroup, Heartbeat and OffsetCommit with the generation
// checks, DescribeGroups, ListGroups, DeleteGroups refused while the
// group has a member and done once it left, and the JoinGroup errors.
TEST_F(KafkaGroups, GroupProtocolOnARawSocketWithKafkasErrors) {
  start_cluster(1, {{"transaction.state.log.replication.factor", "1"},
                    {"transaction.state.log.min.isr", "1"},
                    {"offsets.topic.replication.factor", "1"},
                    {"group.initial.rebalance.delay.ms", "0"}});
  auto port = kafka_ports.at(1);
  create_topic("orders", 2);
  ASSERT_TRUE(wait_until([&] { return brokers_listed(port) == 1; }, 30s));
  raw_connection c{port};
  // The group coordinator loads once the node leads its partition.
  joined first;
  ASSERT_TRUE(wait_until(
    [&] {
      c.send(join_group(1, 4, "grp", ""));
      first = read_join(c, 1, 4);
      return first.error != 14 && first.error != 15; // loading, not available yet
    },
    30s));
  ASSERT_EQ(first.error, 79); // MEMBER_ID_REQUIRED
  EXPECT_EQ(first.member.rfind("test-", 0), 0u) << first.member; // clientId-UUID
  c.send(join_group(2, 4, "grp", first.member));
  auto j = read_join(c, 2, 4);
  ASSERT_EQ(j.error, 0);
  EXPECT_EQ(j.generation, 1);
  EXPECT_EQ(j.protocol, "range");
  EXPECT_EQ(j.member, first.member);
  EXPECT_EQ(j.leader, j.member);
  EXPECT_EQ(j.members, std::vector<std::string>{j.member});
  // Before the leader's assignment the group is CompletingRebalance: a
  // commit is REBALANCE_IN_PROGRESS.
  EXPECT_EQ(offset_commit(c, 3, "grp", 1, j.member), 27);
  {
    auto w = member_fields("grp", 1, j.member);
    w.int32(1);
    w.string(j.member);
    w.bytes("my-assignment");
    c.send(request(kafka::api::sync_group, 3, 4, w.bytes()));
    auto [error, rest] = throttle_then_error(c, 4);
    EXPECT_EQ(error, 0);
    kafka::reader rd{rest};
    EXPECT_EQ(rd.bytes(), "my-assignment");
  }
  EXPECT_EQ(heartbeat(c, 5, "grp", 1, j.member), 0);
  EXPECT_EQ(heartbeat(c, 6, "grp", 0, j.member), 22);  // ILLEGAL_GENERATION
  EXPECT_EQ(heartbeat(c, 7, "grp", 1, "nobody"), 25);  // UNKNOWN_MEMBER_ID
  EXPECT_EQ(offset_commit(c, 8, "grp", 1, j.member), 0);
  EXPECT_EQ(offset_commit(c, 9, "grp", 0, j.member), 22);
  EXPECT_EQ(offset_commit(c, 10, "grp", -1, ""), 25); // a simple consumer into a live group
  auto d = describe_group(c, 11, "grp");
  EXPECT_EQ(d.error, 0);
  EXPECT_EQ(d.state, "Stable");
  EXPECT_EQ(d.protocol_type, "consumer");
  EXPECT_EQ(d.protocol, "range");
  EXPECT_EQ(d.members, std::vector<std::string>{j.member});
  EXPECT_EQ(d.instances, std::vector<std::string>{"<null>"});
  EXPECT_EQ(d.client_ids, std::vector<std::string>{"test"}); // the request header's
  EXPECT_EQ(d.hosts, std::vector<std::string>{"/127.0.0.1"});
  EXPECT_EQ(d.assignments, std::vector<std::string>{"my-assignment"});
  auto listed = list_groups(c, 12);
  EXPECT_EQ(listed.first, 0);
  EXPECT_EQ(listed.second, (std::map<std::string, std::string>{{"grp", "consumer"}}));
  EXPECT_EQ(delete_group(c, 13, "grp"), 68); // NON_EMPTY_GROUP
  EXPECT_EQ(delete_group(c, 14, "never-was"), 69); // GROUP_ID_NOT_FOUND
  {
    kafka::writer w;
    w.string("grp");
    w.int32(2);
    w.string(j.member);
    w.nullable_string(std::nullopt);
    w.string("nobody");
    w.nullable_string(std::nullopt);
    c.send(request(kafka::api::leave_group, 3, 15, w.bytes()));
    auto [error, rest] = throttle_then_error(c, 15);
    EXPECT_EQ(error, 0);
    kafka::reader rd{rest};
    ASSERT_EQ(rd.int32(), 2);
    EXPECT_EQ(rd.string(), j.member);
    EXPECT_EQ(rd.nullable_string(), std::nullopt);
    EXPECT_EQ(rd.int16(), 0);
    EXPECT_EQ(rd.string(), "nobody");
    EXPECT_EQ(rd.nullable_string(), std::nullopt);
    EXPECT_EQ(rd.int16(), 25);
  }
  EXPECT_EQ(describe_group(c, 16, "grp").state, "Empty");
  EXPECT_EQ(heartbeat(c, 17, "grp", 1, j.member), 25);
  EXPECT_EQ(delete_group(c, 18, "grp"), 0);
  EXPECT_EQ(describe_group(c, 19, "grp").state, "Dead");
  {
    // Its committed offset went with it.
    kafka::writer w;
    w.string("grp");
    w.int32(1);
    w.string("orders");
    w.int32(1);
    w.int32(0);
    c.send(request(kafka::api::offset_fetch, 5, 20, w.bytes()));
    auto body = after_throttle(c, 20);
    kafka::reader rd{body};
    EXPECT_EQ(rd.int32(), 1);
    EXPECT_EQ(rd.string(), "orders");
    EXPECT_EQ(rd.int32(), 1);
    EXPECT_EQ(rd.int32(), 0);  // partition 0
    EXPECT_EQ(rd.int64(), -1); // no committed offset
  }
  // v0 has no MEMBER_ID_REQUIRED round; the errors of a bad join.
  c.send(join_group(21, 0, "grp-v0", ""));
  auto v0 = read_join(c, 21, 0);
  EXPECT_EQ(v0.error, 0);
  EXPECT_EQ(v0.generation, 1);
  EXPECT_FALSE(v0.member.empty());
  c.send(join_group(22, 4, "grp-v0", "", 10000, "roundrobin"));
  EXPECT_EQ(read_join(c, 22, 4).error, 23); // INCONSISTENT_GROUP_PROTOCOL
  c.send(join_group(23, 4, "grp-x", "", 1000));
  EXPECT_EQ(read_join(c, 23, 4).error, 26); // INVALID_SESSION_TIMEOUT (group.min.session.timeout.ms)
  c.send(join_group(24, 4, "", ""));
  EXPECT_EQ(read_join(c, 24, 4).error, 24); // INVALID_GROUP_ID
  c.send(join_group(25, 4, "grp-x", "ghost"));
  EXPECT_EQ(read_join(c, 25, 4).error, 25);
}

// A group's membership lives in its __consumer_offsets partition (Kafka's
// group metadata records). A static member (JoinGroup v5, KIP-345) joins
// and gets its assignment; the node of the group's coordinator is killed
// (SIGKILL); the coordinator on the partition's new leader knows the member
// at its generation, with its assignment: its heartbeat is answered NONE,
// no rebalance. A second process with the same instance id then takes the
// member's place in the Stable group, again without a rebalance, and the
// first is fenced (FENCED_INSTANCE_ID).
TEST_F(KafkaGroups, StaticMemberKeepsItsPlaceWhenItsCoordinatorsNodeIsKilled) {
  start_cluster(3, {{"group.initial.rebalance.delay.ms", "0"}});
  const std::string group = "persisted";
  raw_connection any{kafka_ports.at(1)};
  int32_t coordinator = -1;
  ASSERT_TRUE(wait_until(
    [&] {
      kafka::writer w;
      w.string(group);
      w.int8(0);
      any.send(request(kafka::api::find_coordinator, 2, 1, w.bytes()));
      auto body = after_throttle(any, 1);
      kafka::reader rd{body};
      auto error = rd.int16();
      rd.nullable_string();
      coordinator = rd.int32();
      return error == 0;
    },
    60s));
  raw_connection c{kafka_ports.at(coordinator)};
  static_joined j;
  ASSERT_TRUE(wait_until(
    [&] {
      c.send(static_join(2, group, "", "i-1"));
      j = read_static_join(c, 2);
      return j.error != 14 && j.error != 15;
    },
    30s));
  ASSERT_EQ(j.error, 0); // no MEMBER_ID_REQUIRED round for a static member
  EXPECT_EQ(j.generation, 1);
  EXPECT_EQ(j.member.rfind("i-1-", 0), 0u) << j.member;
  EXPECT_EQ(j.leader, j.member);
  EXPECT_EQ(j.instances, std::vector<std::string>{"i-1"});
  EXPECT_EQ(static_sync(c, 3, group, 1, j.member, "i-1", "A"),
            (std::pair<int16_t, std::string>{0, "A"}));

  auto [tp, leader] = internal_partition_of(group, consumer_offsets_topic);
  ASSERT_EQ(leader.first, coordinator);
  nodes.at(coordinator)->proc().stop(SIGKILL, 10s);
  auto next = wait_leader_above(tp, leader.second);
  ASSERT_GT(next.first, 0);
  ASSERT_NE(next.first, coordinator);
  raw_connection moved{kafka_ports.at(next.first)};
  int16_t error = -2;
  ASSERT_TRUE(wait_until(
    [&] {
      error = heartbeat(moved, 4, group, 1, j.member, "i-1");
      return error != 14 && error != 15 && error != 16; // loading, not there yet
    },
    30s));
  EXPECT_EQ(error, 0) << "the member is known at its generation after the move";
  auto d = describe_group(moved, 5, group);
  EXPECT_EQ(d.state, "Stable");
  EXPECT_EQ(d.members, std::vector<std::string>{j.member});
  EXPECT_EQ(d.instances, std::vector<std::string>{"i-1"});
  EXPECT_EQ(d.assignments, std::vector<std::string>{"A"});

  // The instance's next process: the current generation at once, its
  // assignment, and the old member id fenced.
  moved.send(static_join(6, group, "", "i-1"));
  auto j2 = read_static_join(moved, 6);
  EXPECT_EQ(j2.error, 0);
  EXPECT_EQ(j2.generation, 1);
  EXPECT_NE(j2.member, j.member);
  EXPECT_EQ(j2.leader, j.member); // the leader before the takeover: no assigning again
  EXPECT_TRUE(j2.members.empty());
  EXPECT_EQ(heartbeat(moved, 7, group, 1, j.member, "i-1"), 82); // FENCED_INSTANCE_ID
  EXPECT_EQ(static_sync(moved, 8, group, 1, j2.member, "i-1", ""),
            (std::pair<int16_t, std::string>{0, "A"}));
  EXPECT_EQ(heartbeat(moved, 9, group, 1, j2.member, "i-1"), 0);
  EXPECT_EQ(describe_group(moved, 10, group).members, std::vector<std::string>{j2.member});
}

// Two kcat balanced consumers (-G, librdkafka's range assignor) in one
// group read a 3-partition topic: each reads a share, together every
// record once, and the group's committed offsets reach the end of every
// partition.
TEST_F(KafkaGroups, KcatBalancedConsumersShareATopicAndCommit) {
  start_cluster(3);
  admin_client admin{client_props()};
  ASSERT_TRUE(admin.create_topic("shared", 3, {}, 3).ok());
  std::string input;
  for (int i = 0; i < 30; ++i)
    input += "k" + std::to_string(i) + ":v" + std::to_string(i) + "\n";
  ASSERT_TRUE(kcat(1, {"-P", "-t", "shared", "-K", ":", "-X", "enable.idempotence=true"}, input));
  std::string bin = CAFTX_KCAT;
  auto consume = [&](const std::string& name) {
    return std::make_unique<child_process>(
      tmp.path(), name,
      std::vector<std::string>{bin, "-b", "127.0.0.1:" + std::to_string(kafka_ports.at(2)),
                               "-G", "kcat-group", "shared", "-e", "-q", "-f", "%s\n",
                               "-X", "auto.offset.reset=earliest"});
  };
  auto a = consume("kcat-a");
  auto b = consume("kcat-b");
  ASSERT_EQ(exit_code(a->wait_exit(90s)), 0) << a->err();
  ASSERT_EQ(exit_code(b->wait_exit(90s)), 0) << b->err();
  // Both members of the first generation read a share (a member reading
  // all 30 alone would leave the other empty-handed), and no record twice.
  std::set<std::string> seen;
  size_t lines = 0;
  for (auto* p : {a.get(), b.get()}) {
    std::istringstream in{p->out()};
    size_t mine = 0;
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) {
        seen.insert(line);
        ++mine;
      }
    EXPECT_GT(mine, 0u) << p->out();
    EXPECT_LT(mine, 30u) << p->out();
    lines += mine;
  }
  std::set<std::string> want;
  for (int i = 0; i < 30; ++i)
    want.insert("v" + std::to_string(i));
  EXPECT_EQ(seen, want);
  EXPECT_EQ(lines, 30u);
  auto ends = std::map<topic_partition, int64_t>{};
  for (auto& line : kcat_consume(1, "shared", "read_uncommitted")) {
    auto p = std::stoi(line.substr(0, line.find('/')));
    auto o = std::stol(line.substr(line.find('/') + 1));
    auto& e = ends[{"shared", p}];
    e = std::max<int64_t>(e, o + 1);
  }
  auto offsets = admin.list_group_offsets("kcat-group");
  ASSERT_TRUE(offsets.ok()) << offsets.error().to_string();
  EXPECT_EQ(*offsets, ends);
}

// confluent-kafka-python's exactly-once loop (confluent_exactly_once_loop)
// on three nodes with replication factor 3.
TEST_F(KafkaGroups, ConfluentKafkaPythonExactlyOnceGroupSurvivesKilledProcesses) {
  start_cluster(3, {{"group.initial.rebalance.delay.ms", "0"}});
  confluent_exactly_once_loop(3);
}

// The same clients against the embedded default: one caftx-node without
// zookeeper.connect (the controller over its local store, internal topics
// of one replica) and its Kafka listener. confluent-kafka-python's
// exactly-once loop with killed processes, then KafkaJS and librdkafka
// reading each other's transactions, kcat -L listing the one broker.
TEST_F(KafkaGroups, ClientsWorkAgainstTheEmbeddedDefaultNode) {
  start(1, {{"zookeeper.connect", ""},
            {"zookeeper.session.timeout.ms", ""},
            {"group.initial.rebalance.delay.ms", "0"}});
  ASSERT_TRUE(wait_until([&] { return brokers_listed(kafka_ports.at(1)) == 1; }, 30s)) << log(1);
  auto metadata = kcat_metadata(1);
  ASSERT_TRUE(metadata.is_object()) << log(1);
  ASSERT_EQ(metadata["brokers"].size(), 1u) << metadata.dump();
  EXPECT_EQ(metadata["brokers"][0]["id"], 1);
  EXPECT_EQ(metadata["brokers"][0]["name"], "127.0.0.1:" + std::to_string(kafka_ports.at(1)));
  confluent_exactly_once_loop(1);
  kafkajs_and_librdkafka_across();
}

// caftx's own consumer in a group (subscribe): a second member makes the
// group rebalance, and the two split the topic's partitions with the
// range assignor at one generation; a member that stops polling is
// removed at its session timeout and the other takes every partition.
// Its offsets are then refused, in a transaction (KIP-447: abortable
// UNKNOWN_MEMBER_ID) and by commit(); the live member's are committed.
// The stopped member joins again on its next poll.
TEST_F(KafkaGroups, CaftxConsumersSubscribeRebalanceAndFenceAStoppedMember) {
  start_cluster(3, {{"group.initial.rebalance.delay.ms", "0"}});
  admin_client admin{client_props()};
  ASSERT_TRUE(admin.create_topic("sub", 4, {}, 3).ok());
  auto consumer_props = client_props({{"group.id", "sub-group"},
                                      {"auto.offset.reset", "earliest"},
                                      {"session.timeout.ms", "6000"},
                                      {"heartbeat.interval.ms", "500"},
                                      {"client.id", "cpp"}});
  struct recorder : consumer_rebalance_listener {
    std::mutex mtx;
    std::vector<std::string> events;
    void on_partitions_revoked(const std::vector<topic_partition>& tps) override {
      std::lock_guard<std::mutex> guard{mtx};
      events.push_back("revoked " + std::to_string(tps.size()));
    }
    void on_partitions_assigned(const std::vector<topic_partition>& tps) override {
      std::lock_guard<std::mutex> guard{mtx};
      events.push_back("assigned " + std::to_string(tps.size()));
    }
  };
  auto heard_a = std::make_shared<recorder>();
  consumer a{consumer_props};
  a.subscribe({"sub"}, heard_a);
  auto poll_until = [](consumer& c, size_t partitions) {
    return wait_until(
      [&] {
        c.poll(100ms);
        return c.assignment().size() == partitions;
      },
      60s);
  };
  ASSERT_TRUE(poll_until(a, 4));
  auto first = a.group_metadata();
  EXPECT_EQ(first.group_id, "sub-group");
  EXPECT_GE(first.generation_id, 1);
  EXPECT_EQ(first.member_id.rfind("cpp-", 0), 0u) << first.member_id;

  consumer b{consumer_props};
  b.subscribe({"sub"});
  std::atomic<bool> a_polls{true};
  std::thread a_loop{[&] {
    while (a_polls)
      a.poll(100ms);
  }};
  ASSERT_TRUE(poll_until(b, 2));
  ASSERT_TRUE(wait_until([&] { return a.assignment().size() == 2; }, 60s));
  a_polls = false;
  a_loop.join();
  auto both_a = a.group_metadata();
  auto both_b = b.group_metadata();
  EXPECT_EQ(both_a.generation_id, first.generation_id + 1);
  EXPECT_EQ(both_b.generation_id, both_a.generation_id);
  std::set<topic_partition> all;
  for (auto& tp : a.assignment())
    all.insert(tp);
  for (auto& tp : b.assignment())
    all.insert(tp);
  EXPECT_EQ(all.size(), 4u); // disjoint, and every partition
  {
    std::lock_guard<std::mutex> guard{heard_a->mtx};
    EXPECT_EQ(heard_a->events,
              (std::vector<std::string>{"assigned 4", "revoked 4", "assigned 2"}));
  }

  // a stops polling: after its session timeout b has everything.
  ASSERT_TRUE(poll_until(b, 4));
  EXPECT_GT(b.group_metadata().generation_id, both_b.generation_id);
  producer p{client_props({{"transactional.id", "sub-tx"}})};
  p.init_transactions();
  p.begin_transaction();
  try {
    p.send_offsets_to_transaction({{{"sub", 0}, 1}}, both_a);
    ADD_FAILURE() << "the offsets of a removed member were taken";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::unknown_member_id) << e.what();
    EXPECT_TRUE(e.is_abortable()) << e.what();
  }
  p.abort_transaction();
  p.begin_transaction();
  p.send_offsets_to_transaction({{{"sub", 0}, 1}}, b.group_metadata());
  p.commit_transaction();
  try {
    a.commit({{{"sub", 1}, 1}});
    ADD_FAILURE() << "a removed member committed";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::unknown_member_id) << e.what();
  }
  b.commit({{{"sub", 1}, 2}});
  auto offsets = admin.list_group_offsets("sub-group");
  ASSERT_TRUE(offsets.ok());
  EXPECT_EQ(*offsets, (std::map<topic_partition, int64_t>{{{"sub", 0}, 1}, {{"sub", 1}, 2}}));

  // a comes back as a new member: two again.
  std::atomic<bool> b_polls{true};
  std::thread b_loop{[&] {
    while (b_polls)
      b.poll(100ms);
  }};
  EXPECT_TRUE(poll_until(a, 2));
  EXPECT_NE(a.group_metadata().member_id, both_a.member_id);
  b_polls = false;
  b_loop.join();
  a.close();
  b.close();
}

// caftx's own consumer as a static member (group.instance.id, KIP-345):
// close() sends no LeaveGroup, so the member stays in the group; the next
// consumer with the instance id takes its place at the same generation
// with the same partitions (no rebalance); a third one fences it, after
// which its poll() throws FENCED_INSTANCE_ID (fatal) and its offsets are
// refused in a transaction (abortable).
TEST_F(KafkaGroups, CaftxStaticConsumerComesBackWithoutARebalanceAndIsFencedByItsTwin) {
  start_cluster(1, {{"transaction.state.log.replication.factor", "1"},
                    {"transaction.state.log.min.isr", "1"},
                    {"offsets.topic.replication.factor", "1"},
                    {"group.initial.rebalance.delay.ms", "0"}});
  admin_client admin{client_props()};
  ASSERT_TRUE(admin.create_topic("static", 2, {}, 1).ok());
  auto props = client_props({{"group.id", "static-group"},
                             {"group.instance.id", "inst-a"},
                             {"session.timeout.ms", "30000"},
                             {"heartbeat.interval.ms", "200"}});
  auto poll_until_assigned = [](consumer& c) {
    return wait_until(
      [&] {
        c.poll(100ms);
        return c.assignment().size() == 2;
      },
      60s);
  };
  consumer first{props};
  first.subscribe({"static"});
  ASSERT_TRUE(poll_until_assigned(first));
  auto before = first.group_metadata();
  EXPECT_EQ(before.group_instance_id, "inst-a");
  EXPECT_EQ(before.member_id.rfind("inst-a-", 0), 0u) << before.member_id;
  first.close();
  raw_connection c{kafka_ports.at(1)};
  auto d = describe_group(c, 1, "static-group");
  EXPECT_EQ(d.state, "Stable");
  EXPECT_EQ(d.members, std::vector<std::string>{before.member_id}) << "no LeaveGroup on close";
  EXPECT_EQ(d.instances, std::vector<std::string>{"inst-a"});

  consumer second{props};
  second.subscribe({"static"});
  ASSERT_TRUE(poll_until_assigned(second));
  auto back = second.group_metadata();
  EXPECT_EQ(back.generation_id, before.generation_id) << "no rebalance";
  EXPECT_NE(back.member_id, before.member_id);

  consumer twin{props};
  twin.subscribe({"static"});
  ASSERT_TRUE(poll_until_assigned(twin));
  error_code fenced = error_code::none;
  bool fatal = false;
  wait_until(
    [&] {
      try {
        second.poll(100ms);
      } catch (const kafka_exception& e) {
        fenced = e.code();
        fatal = e.is_fatal();
        return true;
      }
      return false;
    },
    30s);
  EXPECT_EQ(fenced, error_code::fenced_instance_id);
  EXPECT_TRUE(fatal);
  producer p{client_props({{"transactional.id", "static-tx"}})};
  p.init_transactions();
  p.begin_transaction();
  try {
    p.send_offsets_to_transaction({{{"static", 0}, 1}}, back);
    ADD_FAILURE() << "the offsets of a fenced static member were taken";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::fenced_instance_id) << e.what();
    EXPECT_TRUE(e.is_abortable()) << e.what();
  }
  p.abort_transaction();
  twin.close();
}

// KafkaJS 2.2.4 and librdkafka across each other (kafkajs_and_librdkafka_across)
// on one node of a cluster on ZooKeeper.
TEST_F(KafkaGroups, KafkaJsAndLibrdkafkaReadEachOthersTransactions) {
  start_cluster(1, {{"transaction.state.log.replication.factor", "1"},
                    {"transaction.state.log.min.isr", "1"},
                    {"offsets.topic.replication.factor", "1"},
                    {"group.initial.rebalance.delay.ms", "0"}});
  kafkajs_and_librdkafka_across();
}

// KafkaJS's exactly-once loop (sendOffsets in each transaction, every
// fourth aborted and read again) over the Northwind order details on three
// nodes with replication factor 3, while the node leading the output's
// partition 0 is killed and started again: the read_committed output is
// exactly the sequential result.
TEST_F(KafkaGroups, KafkaJsExactlyOnceLoopSurvivesAKilledNode) {
  std::string node = CAFTX_NODEJS, python = CAFTX_PYTHON3;
  ASSERT_FALSE(node.empty()) << "node not found: tools/install-deps.sh installs Node.js";
  ASSERT_FALSE(python.empty()) << "/usr/bin/python3 not found";
  ASSERT_TRUE(std::ifstream{std::string(CAFTX_CLIENT_SCRIPTS) + "/js/node_modules/kafkajs/package.json"})
    << "KafkaJS is not installed: run tools/install-deps.sh";
  start_cluster(3, {{"group.initial.rebalance.delay.ms", "0"}});
  admin_client admin{client_props()};
  ASSERT_TRUE(admin.create_topic("js-details", 3, {}, 3).ok());
  ASSERT_TRUE(admin.create_topic("js-totals", 3, {}, 3).ok());
  auto bootstrap = kafka_bootstrap();
  std::string py = std::string(CAFTX_CLIENT_SCRIPTS) + "/confluent_group_eos.py";
  std::string csv = std::string(CAFTX_DATA_DIR) + "/northwind/order_details.csv";
  {
    child_process load{tmp.path(), "load", {python, py, "load", bootstrap, "js-details", csv}};
    ASSERT_EQ(exit_code(load.wait_exit(120s)), 0) << load.err();
  }
  child_process eos{tmp.path(), "eos",
                    {node, std::string(CAFTX_CLIENT_SCRIPTS) + "/js/kafkajs_client.js", "eos",
                     bootstrap, "js-details", "js-totals", "js-group", "js-tx", "4"}};
  // Once the output has records, its partition 0's leader goes down
  // (SIGKILL) and comes back.
  ASSERT_TRUE(wait_until([&] { return !kcat_consume(1, "js-totals", "read_uncommitted").empty(); },
                         60s));
  auto victim = wait_leader_of({"js-totals", 0});
  ASSERT_GT(victim, 0);
  nodes.at(victim)->proc().stop(SIGKILL, 10s);
  start(victim);
  auto status = eos.wait_exit(240s);
  ASSERT_EQ(exit_code(status), 0) << eos.err();
  std::cout << "KafkaJS loop: " << eos.out();
  child_process verify{tmp.path(), "verify", {python, py, "verify", bootstrap, "js-totals", csv}};
  ASSERT_EQ(exit_code(verify.wait_exit(120s)), 0) << verify.err();
  auto out = nlohmann::json::parse(verify.out(), nullptr, false);
  ASSERT_TRUE(out.is_object()) << verify.out();
  EXPECT_EQ(out["got"], 2155);
  EXPECT_EQ(out["missing"].size(), 0u) << out["missing"].dump();
  EXPECT_EQ(out["extra"].size(), 0u) << out["extra"].dump();
}

} // namespace
} // namespace caftx::testing
