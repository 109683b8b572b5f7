// The Kafka listener (actors/kafka/kafka_listener.hpp,
// docs/kafka-protocol.md) of three caftx-node processes, judged by an
// unmodified Kafka client, kcat (librdkafka 2.0.2): its ApiVersions v3
// handshake and Metadata v4 name every node with its PLAINTEXT:// address,
// the controller and each partition's leader, replicas and ISR as the
// controller decided them, and follow a killed node out. Malformed,
// oversized and unknown requests on a raw socket close that connection
// only; the node goes on answering.
#include "kafka_listener_fixture.hpp"

namespace caftx::testing {
namespace {

TEST_F(KafkaListener, KcatSeesEveryNodeTheControllerAndTheLeadersAsTheControllerDecided) {
  start_cluster(3);
  admin_client admin{client_props()};
  ASSERT_TRUE(admin.create_topic("orders", 3, {}, 3).ok());
  auto described = admin.describe_topics({"orders"});
  ASSERT_TRUE(described.ok());
  auto& parts = described->at(0).partitions;

  auto md = kcat_metadata(2);
  ASSERT_TRUE(md.is_object()) << md.dump();
  std::map<int, std::string> brokers;
  for (auto& b : md["brokers"])
    brokers[b["id"].get<int>()] = b["name"].get<std::string>();
  EXPECT_EQ(brokers, (std::map<int, std::string>{
                       {1, "127.0.0.1:" + std::to_string(kafka_ports[1])},
                       {2, "127.0.0.1:" + std::to_string(kafka_ports[2])},
                       {3, "127.0.0.1:" + std::to_string(kafka_ports[3])}}));
  int controller = md["controllerid"].get<int>();
  EXPECT_TRUE(logged(controller, "elected controller at")) << "controller " << controller;
  nlohmann::json orders;
  std::set<std::string> names;
  for (auto& t : md["topics"]) {
    names.insert(t["topic"].get<std::string>());
    if (t["topic"] == "orders")
      orders = t;
  }
  EXPECT_TRUE(names.count("orders"));
  ASSERT_EQ(orders["partitions"].size(), 3u) << md.dump();
  for (auto& p : orders["partitions"]) {
    auto& want = parts.at(p["partition"].get<size_t>());
    EXPECT_EQ(p["leader"].get<int>(), want.leader);
    std::vector<int32_t> replicas, isr;
    for (auto& r : p["replicas"])
      replicas.push_back(r["id"].get<int32_t>());
    for (auto& r : p["isrs"])
      isr.push_back(r["id"].get<int32_t>());
    EXPECT_EQ(replicas, want.replicas);
    EXPECT_EQ(isr, want.isr);
  }

  // A killed node leaves the broker list once its session expired, and
  // leads nothing.
  int32_t victim = controller == 3 ? 1 : 3;
  ASSERT_TRUE(nodes[victim]->proc().stop(SIGKILL, 10s));
  nlohmann::json after;
  EXPECT_TRUE(wait_until(
    [&] {
      after = kcat_metadata(2);
      return after.is_object() && after["brokers"].size() == 2;
    },
    60s))
    << after.dump();
  for (auto& t : after["topics"])
    for (auto& p : t["partitions"])
      EXPECT_NE(p["leader"].get<int>(), victim) << t["topic"] << "-" << p["partition"];
}


TEST_F(KafkaListener, BadRequestsCloseTheirConnectionOnlyAndTheNodeAnswersOn) {
  start_cluster(1);
  auto port = kafka_ports.at(1);
  // Until the controller's first UpdateMetadata the node knows no broker.
  ASSERT_TRUE(wait_until([&] { return brokers_listed(port) == 1; }, 30s));
  // Two ApiVersions v0 in one write: two answers, in order.
  {
    raw_connection c{port};
    c.send(request(18, 0, 41, "") + request(18, 0, 42, ""));
    for (int32_t corr : {41, 42}) {
      auto r = c.response();
      ASSERT_TRUE(r) << corr;
      kafka::reader rd{*r};
      EXPECT_EQ(rd.int32(), corr);
      EXPECT_EQ(rd.int16(), 0); // no error
      EXPECT_EQ(rd.rest(), kafka::encode_api_versions_response(0, 0, kafka::supported_apis()).substr(2));
    }
  }
  // KIP-511: a newer ApiVersions gets the v0 body with UNSUPPORTED_VERSION.
  {
    raw_connection c{port};
    c.send(request(18, 9, 7, ""));
    auto r = c.response();
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, std::string("\0\0\0\x07", 4)
                    + kafka::encode_api_versions_response(0, 35, {{18, 0, 3}}));
  }
  // Closed by the node: an API it does not serve, a version of Metadata it
  // does not serve, a truncated Metadata, a frame above
  // socket.request.max.bytes, a negative size.
  for (auto bad : std::vector<std::string>{
         request(77, 0, 1, ""), request(3, 12, 1, ""), request(3, 4, 1, std::string("\0\0\0\x01\0", 5)),
         std::string("\x7f\xff\xff\xff", 4), std::string("\xff\xff\xff\xfe", 4)}) {
    raw_connection c{port};
    c.send(bad);
    EXPECT_TRUE(c.closed_by_peer()) << "request bytes " << ::testing::PrintToString(bad);
  }
  // Random frames: each is answered or closes its connection; none stops
  // the node.
  std::mt19937 rng{1234};
  for (int i = 0; i < 200; ++i) {
    raw_connection c{port};
    std::string body(8 + rng() % 64, '\0');
    for (auto& ch : body)
      ch = static_cast<char>(rng());
    if (i % 2 == 0) { // a known API and version, garbage after the header
      body[0] = 0;
      body[1] = static_cast<char>(i % 4 == 0 ? 3 : 18);
      body[2] = 0;
      body[3] = static_cast<char>(rng() % 4);
    }
    kafka::writer w;
    w.int32(static_cast<int32_t>(body.size()));
    w.raw(body);
    c.send(w.bytes());
    c.response(); // an answer or a closed connection: either is fine
  }
  EXPECT_EQ(brokers_listed(port), 1) << "the node stopped answering";

  // Frames that declare 99 MiB and send 4 bytes: memory follows the bytes
  // that arrived, not the declared size (three such connections took 300
  // MB when the declared size was reserved).
  auto rss_kb = [&] {
    std::ifstream status{"/proc/" + std::to_string(nodes[1]->proc().pid()) + "/status"};
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmRSS:", 0) == 0)
        return std::stol(line.substr(6));
    return -1L;
  };
  auto before = rss_kb();
  std::vector<std::unique_ptr<raw_connection>> partial;
  for (int i = 0; i < 3; ++i) {
    partial.push_back(std::make_unique<raw_connection>(port));
    kafka::writer w;
    w.int32(99 * 1024 * 1024);
    w.raw(std::string("\0\x12\0\0", 4));
    partial.back()->send(w.bytes());
  }
  // Answered after the three partial frames were read (one multiplexer
  // thread reads them in order of arrival).
  EXPECT_EQ(brokers_listed(port), 1);
  EXPECT_LT(rss_kb() - before, 50 * 1024) << "kB of RSS grew for 12 bytes sent";
  partial.clear();

  // Metadata names each topic once; a name Kafka's Topic.validate refuses
  // is INVALID_TOPIC_EXCEPTION (17), an unknown one UNKNOWN_TOPIC_OR_PARTITION.
  {
    raw_connection c{port};
    kafka::writer body;
    body.int32(3);
    for (auto name : {"nope", "nope", "bad/name"})
      body.string(name);
    body.boolean(false);
    c.send(request(3, 4, 9, body.bytes()));
    auto md = c.response();
    ASSERT_TRUE(md);
    kafka::reader rd{*md};
    EXPECT_EQ(rd.int32(), 9);
    rd.int32(); // throttle
    auto brokers = rd.array_length(false).value_or(-1);
    for (int32_t i = 0; i < brokers; ++i) {
      rd.int32();
      rd.string();
      rd.int32();
      rd.nullable_string();
    }
    rd.nullable_string(); // cluster id
    rd.int32();           // controller
    ASSERT_EQ(rd.array_length(false), 2);
    std::map<std::string, int16_t> errors;
    for (int i = 0; i < 2; ++i) {
      auto error = rd.int16();
      auto name = rd.string();
      rd.boolean();
      rd.array_length(false);
      errors[name] = error;
    }
    EXPECT_TRUE(rd.ok()) << rd.what();
    EXPECT_EQ(errors, (std::map<std::string, int16_t>{{"nope", 3}, {"bad/name", 17}}));
  }

  // SIGTERM: the listener and its connections stop with the node.
  raw_connection open_connection{port};
  auto stopped = nodes[1]->proc().stop(SIGTERM, 30s);
  ASSERT_TRUE(stopped) << "the node did not exit within 30 s of SIGTERM";
  EXPECT_EQ(exit_code(*stopped), 0);
}

// -- Produce, Fetch, ListOffsets ---------------------------------------------

// One RecordBatch v2 of plain records with these values (null keys).
std::string batch_of(std::vector<std::string> values) {
  record_batch b;
  for (auto& v : values)
    b.records.push_back({"", v, {}, 1000, false, -1});
  return v2::encode(b);
}

// ProduceRequest v7 of one partition.
std::string produce_v7(int32_t correlation_id, const std::string& topic, int32_t partition,
                       const std::optional<std::string>& records, int16_t acks = -1) {
  kafka::writer w;
  w.nullable_string(std::nullopt); // transactional id
  w.int16(acks);
  w.int32(30000);
  w.int32(1);
  w.string(topic);
  w.int32(1);
  w.int32(partition);
  w.nullable_bytes(records);
  return request(0, 7, correlation_id, w.bytes());
}

struct produced {
  int16_t error = -2;
  int64_t base_offset = -2;
};

// The one partition of a ProduceResponse v7, read field by field.
produced read_produce_v7(raw_connection& c, int32_t correlation_id) {
  auto r = c.response();
  if (!r) {
    ADD_FAILURE() << "no Produce response";
    return {};
  }
  kafka::reader rd{*r};
  EXPECT_EQ(rd.int32(), correlation_id);
  EXPECT_EQ(rd.int32(), 1); // topics
  rd.string();
  EXPECT_EQ(rd.int32(), 1); // partitions
  rd.int32();
  produced p;
  p.error = rd.int16();
  p.base_offset = rd.int64();
  EXPECT_EQ(rd.int64(), -1); // log append time: CreateTime
  rd.int64();                // log start offset
  EXPECT_EQ(rd.int32(), 0);  // throttle time
  EXPECT_TRUE(rd.ok()) << rd.what();
  EXPECT_EQ(rd.remaining(), 0u);
  return p;
}

// FetchRequest of one partition at `version` (7-11: a sessionless full
// fetch unless `session_epoch` says otherwise).
std::string fetch_request(int32_t correlation_id, int16_t version, const std::string& topic,
                          int32_t partition, int64_t offset, int8_t isolation,
                          int32_t session_epoch = -1) {
  kafka::writer w;
  w.int32(-1);  // replica id: a consumer
  w.int32(100); // max wait
  w.int32(1);   // min bytes
  w.int32(1 << 20);
  w.int8(isolation);
  if (version >= 7) {
    w.int32(0);
    w.int32(session_epoch);
  }
  w.int32(1);
  w.string(topic);
  w.int32(1);
  w.int32(partition);
  if (version >= 9)
    w.int32(-1); // current leader epoch
  w.int64(offset);
  if (version >= 5)
    w.int64(-1); // log start offset
  w.int32(1 << 20);
  if (version >= 7)
    w.int32(0); // forgotten topics
  if (version >= 11)
    w.string("");
  return request(1, version, correlation_id, w.bytes());
}

struct fetched {
  int16_t top_error = 0;
  int16_t error = -2;
  int64_t high_watermark = -2, last_stable_offset = -2;
  std::optional<std::vector<std::pair<int64_t, int64_t>>> aborted; // (pid, first offset)
  std::string records;
};

// A FetchResponse v11 of one partition, field by field; nothing may follow.
fetched read_fetch_v11(raw_connection& c, int32_t correlation_id) {
  fetched f;
  auto r = c.response();
  if (!r) {
    ADD_FAILURE() << "no Fetch response";
    return f;
  }
  kafka::reader rd{*r};
  EXPECT_EQ(rd.int32(), correlation_id);
  EXPECT_EQ(rd.int32(), 0); // throttle
  f.top_error = rd.int16();
  EXPECT_EQ(rd.int32(), 0); // session id: none
  auto topics = rd.int32();
  if (topics == 0)
    return f;
  EXPECT_EQ(topics, 1);
  rd.string();
  EXPECT_EQ(rd.int32(), 1);
  rd.int32();
  f.error = rd.int16();
  f.high_watermark = rd.int64();
  f.last_stable_offset = rd.int64();
  rd.int64(); // log start offset
  auto n = rd.int32();
  if (n >= 0) {
    f.aborted.emplace();
    for (int32_t i = 0; i < n; ++i) {
      auto pid = rd.int64();
      f.aborted->emplace_back(pid, rd.int64());
    }
  }
  EXPECT_EQ(rd.int32(), -1); // preferred read replica
  f.records = rd.nullable_bytes().value_or("<null>");
  EXPECT_TRUE(rd.ok()) << rd.what();
  EXPECT_EQ(rd.remaining(), 0u) << "bytes after the last topic";
  return f;
}

// ListOffsets v2 (v1 without isolation) of one partition: (error,
// timestamp, offset).
std::tuple<int16_t, int64_t, int64_t> list_offset(uint16_t port, const std::string& topic,
                                                  int64_t timestamp, int8_t isolation,
                                                  int16_t version = 2) {
  raw_connection c{port};
  kafka::writer w;
  w.int32(-1);
  if (version >= 2)
    w.int8(isolation);
  w.int32(1);
  w.string(topic);
  w.int32(1);
  w.int32(0);
  w.int64(timestamp);
  c.send(request(2, version, 3, w.bytes()));
  auto r = c.response();
  if (!r)
    return {-2, -2, -2};
  kafka::reader rd{*r};
  EXPECT_EQ(rd.int32(), 3);
  if (version >= 2) {
    EXPECT_EQ(rd.int32(), 0); // throttle
  }
  EXPECT_EQ(rd.int32(), 1);
  rd.string();
  EXPECT_EQ(rd.int32(), 1);
  rd.int32();
  auto error = rd.int16();
  auto ts = rd.int64();
  auto offset = rd.int64();
  EXPECT_TRUE(rd.ok() && rd.remaining() == 0) << rd.what();
  return {error, ts, offset};
}

// kcat (librdkafka's producer) writes keyed records through the leaders of
// three nodes, partitioned by Kafka's murmur2 as caftx's own producer
// does; caftx's consumer and kcat read them back; a node that does not
// lead a partition answers NOT_LEADER_OR_FOLLOWER.
TEST_F(KafkaListener, KcatProducesThroughEveryLeaderAndCaftxReadsItBack) {
  start_cluster(3);
  admin_client admin{client_props()};
  ASSERT_TRUE(admin.create_topic("kc", 3, {}, 3).ok());
  std::string input;
  std::vector<std::string> want;
  std::multiset<std::string> want_values;
  for (int i = 0; i < 30; ++i) {
    auto key = "k" + std::to_string(i);
    auto value = "v" + std::to_string(i);
    input += key + ":" + value + "\n";
    want_values.insert(std::to_string(partition_for_key(key, 3)) + ":" + value);
  }
  ASSERT_TRUE(kcat(1, {"-P", "-t", "kc", "-K:", "-X", "partitioner=murmur2_random"}, input));
  EXPECT_EQ(read_committed_records(client_props(), {{"kc", 0}, {"kc", 1}, {"kc", 2}}, 30),
            want_values);
  auto lines = kcat_consume(3, "kc", "read_uncommitted");
  ASSERT_EQ(lines.size(), 30u);
  std::multiset<std::string> seen;
  for (auto& l : lines) {
    auto slash = l.find('/'), eq = l.find('=');
    seen.insert(l.substr(0, slash) + ":" + l.substr(eq + 1));
  }
  EXPECT_EQ(seen, want_values);

  // Kafka's answer from a node that does not lead the partition.
  auto described = admin.describe_topics({"kc"});
  ASSERT_TRUE(described.ok());
  auto leader = described->at(0).partitions.at(0).leader;
  int32_t other = leader == 1 ? 2 : 1;
  raw_connection c{kafka_ports.at(other)};
  c.send(produce_v7(5, "kc", 0, batch_of({"x"})));
  EXPECT_EQ(read_produce_v7(c, 5).error, 6);
  c.send(fetch_request(6, 11, "kc", 0, 0, 0));
  EXPECT_EQ(read_fetch_v11(c, 6).error, 6);
}

// Transactions written by caftx's producer, read over Kafka's Fetch: the
// last stable offset stops read_committed before an open transaction, the
// aborted transaction is listed (sorted; null under read_uncommitted),
// markers are served at both isolation levels, ListOffsets' latest is the
// LSO under read_committed; kcat (librdkafka's consumer) skips the
// aborted records. Then Kafka's errors for bad Produce and Fetch requests.
TEST_F(KafkaListener, ReadCommittedOverTheWireAndKafkasErrors) {
  start_cluster(1, {{"transaction.state.log.replication.factor", "1"},
                    {"transaction.state.log.min.isr", "1"},
                    {"offsets.topic.replication.factor", "1"}});
  auto port = kafka_ports.at(1);
  create_topic("tx", 1);
  create_topic("plain", 1);
  producer p{client_props({{"transactional.id", "wire-tx"}, {"transaction.timeout.ms", "300000"}})};
  p.init_transactions();
  auto one = [&](const std::string& value) {
    p.begin_transaction();
    p.send({"tx", 0, "", value, {}, -1});
    p.flush();
  };
  one("c1");
  p.commit_transaction();
  one("a1");
  p.abort_transaction();
  one("c2");
  p.commit_transaction();
  one("o1"); // left open: offsets c1 0, marker 1, a1 2, marker 3, c2 4, marker 5, o1 6

  ASSERT_TRUE(wait_until([&] { return std::get<2>(list_offset(port, "tx", -1, 1)) == 6; }, 30s))
    << "the LSO did not reach the open transaction";
  EXPECT_EQ(list_offset(port, "tx", -1, 0), std::make_tuple(int16_t{0}, int64_t{-1}, int64_t{7}));
  EXPECT_EQ(list_offset(port, "tx", -2, 1), std::make_tuple(int16_t{0}, int64_t{-1}, int64_t{0}));
  EXPECT_EQ(std::get<0>(list_offset(port, "nope", -1, 0)), 3);

  raw_connection c{port};
  c.send(fetch_request(1, 11, "tx", 0, 0, 1));
  auto committed = read_fetch_v11(c, 1);
  EXPECT_EQ(committed.error, 0);
  EXPECT_EQ(committed.high_watermark, 7);
  EXPECT_EQ(committed.last_stable_offset, 6);
  // The batches up to the LSO, markers included; the producer's id names
  // the aborted transaction at its first offset.
  std::vector<std::pair<int64_t, bool>> batches; // base offset, control
  int64_t pid = -1;
  auto st = v2::for_each_batch(committed.records, [&](const v2::batch_header& h, std::string_view) {
    batches.emplace_back(h.base_offset, (h.attributes & attr_control) != 0);
    pid = h.producer_id;
    return true;
  });
  EXPECT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(batches, (std::vector<std::pair<int64_t, bool>>{
                       {0, false}, {1, true}, {2, false}, {3, true}, {4, false}, {5, true}}));
  ASSERT_TRUE(committed.aborted.has_value());
  EXPECT_EQ(*committed.aborted, (std::vector<std::pair<int64_t, int64_t>>{{pid, 2}}));

  c.send(fetch_request(2, 11, "tx", 0, 0, 0));
  auto uncommitted = read_fetch_v11(c, 2);
  EXPECT_EQ(uncommitted.error, 0);
  EXPECT_EQ(uncommitted.aborted, std::nullopt) << "read_uncommitted gets a null list";
  batches.clear();
  EXPECT_TRUE(v2::for_each_batch(uncommitted.records, [&](const v2::batch_header& h, std::string_view) {
                batches.emplace_back(h.base_offset, (h.attributes & attr_control) != 0);
                return true;
              }).ok());
  EXPECT_EQ(batches.size(), 7u);

  EXPECT_EQ(kcat_consume(1, "tx", "read_committed"),
            (std::vector<std::string>{"0/0 =c1", "0/4 =c2"}));
  EXPECT_EQ(kcat_consume(1, "tx", "read_uncommitted"),
            (std::vector<std::string>{"0/0 =c1", "0/2 =a1", "0/4 =c2", "0/6 =o1"}));
  p.abort_transaction();

  // ListOffsets v1 by timestamp: the first record at or after it, with
  // its timestamp.
  auto [err, ts, off] = list_offset(port, "tx", 0, 0, 1);
  EXPECT_EQ(err, 0);
  EXPECT_EQ(off, 0);
  auto first = v2::read_header(committed.records);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(ts, first->base_timestamp);

  // Produce: a plain batch, then Kafka's errors.
  c.send(produce_v7(10, "plain", 0, batch_of({"p0", "p1"})));
  EXPECT_EQ(read_produce_v7(c, 10).base_offset, 0);
  c.send(produce_v7(11, "nope", 0, batch_of({"x"})));
  EXPECT_EQ(read_produce_v7(c, 11).error, 3); // UNKNOWN_TOPIC_OR_PARTITION
  c.send(produce_v7(12, "plain", 0, batch_of({"x"}), 2));
  EXPECT_EQ(read_produce_v7(c, 12).error, 21); // INVALID_REQUIRED_ACKS
  c.send(produce_v7(13, "plain", 0, batch_of({"x"}) + batch_of({"y"})));
  EXPECT_EQ(read_produce_v7(c, 13).error, 87); // INVALID_RECORD: one batch only
  c.send(produce_v7(14, "plain", 0, std::nullopt));
  EXPECT_EQ(read_produce_v7(c, 14).error, 87);
  auto bad_crc = batch_of({"x"});
  bad_crc.back() ^= 1;
  c.send(produce_v7(15, "plain", 0, bad_crc));
  EXPECT_EQ(read_produce_v7(c, 15).error, 2); // CORRUPT_MESSAGE
  {
    // Produce v2 (message format 1 only, as librdkafka would send to a
    // broker without v3): not kept by caftx.
    kafka::writer w;
    w.int16(-1);
    w.int32(30000);
    w.int32(1);
    w.string("plain");
    w.int32(1);
    w.int32(0);
    auto v1_message = batch_of({"x"});
    v1_message[v2::magic_pos] = 1;
    w.nullable_bytes(v1_message);
    c.send(request(0, 2, 30, w.bytes()));
    auto r = c.response();
    ASSERT_TRUE(r);
    kafka::reader rd{*r};
    EXPECT_EQ(rd.int32(), 30);
    EXPECT_EQ(rd.int32(), 1);
    EXPECT_EQ(rd.string(), "plain");
    EXPECT_EQ(rd.int32(), 1);
    EXPECT_EQ(rd.int32(), 0);
    EXPECT_EQ(rd.int16(), 43); // UNSUPPORTED_FOR_MESSAGE_FORMAT
  }
  c.send(produce_v7(16, "__transaction_state", 0, batch_of({"x"})));
  EXPECT_EQ(read_produce_v7(c, 16).error, 17); // INVALID_TOPIC_EXCEPTION
  // acks=0: no response; the next request's answer comes first.
  c.send(produce_v7(17, "plain", 0, batch_of({"p2"}), 0) + request(18, 0, 18, ""));
  auto next = c.response();
  ASSERT_TRUE(next);
  EXPECT_EQ(next->substr(0, 4), std::string("\0\0\0\x12", 4));
  // Appended; the high watermark follows once it is durable.
  EXPECT_TRUE(wait_until([&] { return std::get<2>(list_offset(port, "plain", -1, 0)) == 3; }, 10s));

  // Fetch: past the log end, an unknown topic, an incremental fetch of a
  // session the node never created (KIP-227), the v4 layout.
  c.send(fetch_request(20, 11, "plain", 0, 99, 0));
  EXPECT_EQ(read_fetch_v11(c, 20).error, 1); // OFFSET_OUT_OF_RANGE
  c.send(fetch_request(21, 11, "nope", 0, 0, 0));
  EXPECT_EQ(read_fetch_v11(c, 21).error, 3);
  c.send(fetch_request(22, 11, "plain", 0, 0, 0, 1));
  EXPECT_EQ(read_fetch_v11(c, 22).top_error, 70); // FETCH_SESSION_ID_NOT_FOUND
  c.send(fetch_request(23, 4, "plain", 0, 0, 1));
  {
    auto r = c.response();
    ASSERT_TRUE(r);
    kafka::reader rd{*r};
    EXPECT_EQ(rd.int32(), 23);
    EXPECT_EQ(rd.int32(), 0); // throttle; v4 has no top-level error or session
    EXPECT_EQ(rd.int32(), 1);
    EXPECT_EQ(rd.string(), "plain");
    EXPECT_EQ(rd.int32(), 1);
    EXPECT_EQ(rd.int32(), 0);
    EXPECT_EQ(rd.int16(), 0);
    EXPECT_EQ(rd.int64(), 3); // high watermark
    EXPECT_EQ(rd.int64(), 3); // last stable offset
    EXPECT_EQ(rd.int32(), 0); // aborted transactions: none (read_committed)
    auto records = rd.nullable_bytes();
    ASSERT_TRUE(records);
    auto all = v2::decode_all(*records);
    ASSERT_TRUE(all.ok());
    std::vector<std::string> values;
    for (auto& b : *all)
      for (auto& rec : b.records)
        values.push_back(rec.value);
    EXPECT_EQ(values, (std::vector<std::string>{"p0", "p1", "p2"}));
    EXPECT_EQ(rd.remaining(), 0u);
  }
  // DeleteRecords v1 (KIP-107): the log of plain-0 starts at 1 now.
  {
    kafka::writer w;
    w.int32(2);
    for (auto topic : {"plain", "nope"}) {
      w.string(topic);
      w.int32(1);
      w.int32(0);
      w.int64(1);
    }
    w.int32(5000);
    c.send(request(21, 1, 25, w.bytes()));
    auto r = c.response();
    ASSERT_TRUE(r);
    kafka::reader rd{*r};
    EXPECT_EQ(rd.int32(), 25);
    EXPECT_EQ(rd.int32(), 0);
    EXPECT_EQ(rd.int32(), 2);
    EXPECT_EQ(rd.string(), "plain");
    EXPECT_EQ(rd.int32(), 1);
    EXPECT_EQ(rd.int32(), 0);
    EXPECT_EQ(rd.int64(), 1); // low watermark
    EXPECT_EQ(rd.int16(), 0);
    EXPECT_EQ(rd.string(), "nope");
    EXPECT_EQ(rd.int32(), 1);
    EXPECT_EQ(rd.int32(), 0);
    EXPECT_EQ(rd.int64(), -1);
    EXPECT_EQ(rd.int16(), 3);
    EXPECT_EQ(rd.remaining(), 0u);
  }
  EXPECT_EQ(list_offset(port, "plain", -2, 0), std::make_tuple(int16_t{0}, int64_t{-1}, int64_t{1}));
  c.send(fetch_request(26, 11, "plain", 0, 0, 0));
  EXPECT_EQ(read_fetch_v11(c, 26).error, 1); // below the log start: OFFSET_OUT_OF_RANGE
  // acks=0 with an error: Kafka closes the connection.
  c.send(produce_v7(24, "nope", 0, batch_of({"x"}), 0));
  EXPECT_TRUE(c.closed_by_peer());
}

// -- transactions --------------------------------------------------------------


std::string init_producer_id_v1(int32_t correlation_id, std::optional<std::string> tid) {
  kafka::writer w;
  w.nullable_string(tid);
  w.int32(60000);
  return request(22, 1, correlation_id, w.bytes());
}

// kcat (librdkafka's transactional producer) writes through the
// transaction coordinator FindCoordinator names (not the node it
// bootstraps from) and commits; a second run with the same
// transactional.id fences the first's epoch and commits again; caftx's
// read_committed consumer sees every record once. Then the coordinator
// APIs' answers to a wrong node, a bad key type, "" and a fenced epoch.
// ... and KIP-664's DescribeTransactions, ListTransactions and
// DescribeProducers answer for them over the wire.
TEST_F(KafkaListener, KcatCommitsTransactionsThroughTheirCoordinator) {
  start_cluster(3);
  admin_client admin{client_props()};
  ASSERT_TRUE(admin.create_topic("kt", 3, {}, 3).ok());
  auto run = [&](int first, int count) {
    std::string input;
    for (int i = first; i < first + count; ++i)
      input += "k" + std::to_string(i) + ":v" + std::to_string(i) + "\n";
    return kcat(1, {"-P", "-t", "kt", "-K:", "-X", "transactional.id=kcat-tx"}, input).has_value();
  };
  ASSERT_TRUE(run(0, 20));
  ASSERT_TRUE(run(20, 10));
  std::set<std::string> values;
  for (auto& v : read_committed_records(client_props(), {{"kt", 0}, {"kt", 1}, {"kt", 2}}, 30))
    EXPECT_TRUE(values.insert(v.substr(v.find(':') + 1)).second) << "twice: " << v;
  EXPECT_EQ(values.size(), 30u);
  EXPECT_EQ(kcat_consume(2, "kt", "read_committed").size(), 30u);
  auto described = admin.describe_transaction("kcat-tx");
  ASSERT_TRUE(described.ok());
  EXPECT_EQ(described->state, "CompleteCommit");
  EXPECT_EQ(described->epoch, producer_epoch{1}) << "the second run's InitProducerId bumped it";

  // FindCoordinator v2 from any node names the leader of the id's
  // __transaction_state partition.
  auto internal = admin.describe_topics({"__transaction_state"});
  ASSERT_TRUE(internal.ok());
  auto coordinator =
    internal->at(0).partitions.at(partition_for("kcat-tx", internal_partitions)).leader;
  int32_t other = coordinator == 3 ? 2 : 3;
  {
    raw_connection c{kafka_ports.at(other)};
    kafka::writer w;
    w.string("kcat-tx");
    w.int8(1);
    c.send(request(10, 2, 1, w.bytes()));
    auto r = c.response();
    ASSERT_TRUE(r);
    kafka::reader rd{*r};
    EXPECT_EQ(rd.int32(), 1);
    EXPECT_EQ(rd.int32(), 0);
    EXPECT_EQ(rd.int16(), 0);
    EXPECT_EQ(rd.nullable_string(), std::nullopt);
    EXPECT_EQ(rd.int32(), coordinator);
    EXPECT_EQ(rd.string(), "127.0.0.1");
    EXPECT_EQ(rd.int32(), kafka_ports.at(coordinator));
    EXPECT_EQ(rd.remaining(), 0u);
    // A key type other than group (0) and transaction (1).
    kafka::writer bad;
    bad.string("x");
    bad.int8(5);
    c.send(request(10, 2, 2, bad.bytes()));
    r = c.response();
    ASSERT_TRUE(r);
    kafka::reader rb{*r};
    rb.int32();
    rb.int32();
    EXPECT_EQ(rb.int16(), 42); // INVALID_REQUEST
    EXPECT_EQ(rb.nullable_string(), std::optional<std::string>{"unknown coordinator type 5"});
    // InitProducerId at a node that is not the coordinator; "" anywhere.
    c.send(init_producer_id_v1(3, std::string("kcat-tx")));
    EXPECT_EQ(throttle_then_error(c, 3).first, 16); // NOT_COORDINATOR
    c.send(init_producer_id_v1(4, std::string("")));
    EXPECT_EQ(throttle_then_error(c, 4).first, 42);
    // An idempotent producer's id comes from any node.
    c.send(init_producer_id_v1(5, std::nullopt));
    auto [error, rest] = throttle_then_error(c, 5);
    EXPECT_EQ(error, 0);
    kafka::reader ri{rest};
    EXPECT_GE(ri.int64(), 0);
    EXPECT_EQ(ri.int16(), 0);
  }
  // EndTxn with the first run's epoch: fenced, answered as these versions
  // know it (INVALID_PRODUCER_EPOCH, not PRODUCER_FENCED).
  raw_connection c{kafka_ports.at(coordinator)};
  kafka::writer w;
  w.string("kcat-tx");
  w.int64(described->pid.value);
  w.int16(0);
  w.boolean(true);
  c.send(request(26, 1, 6, w.bytes()));
  EXPECT_EQ(throttle_then_error(c, 6), std::make_pair(int16_t{47}, std::string()));

  // KIP-664 as kafka-transactions.sh sends it (flexible v0/v1, response
  // header v1: the correlation id, then tagged fields).
  auto flexible_response = [](raw_connection& conn, int32_t correlation_id) {
    auto bytes = conn.response().value_or("");
    EXPECT_FALSE(bytes.empty());
    kafka::reader rd{bytes};
    EXPECT_EQ(rd.int32(), correlation_id);
    rd.skip_tagged_fields();
    EXPECT_EQ(rd.int32(), 0); // throttle
    return bytes.substr(bytes.size() - rd.remaining());
  };
  // Two ids never used: one this coordinator owns, one another node does.
  std::string here, elsewhere;
  for (int i = 0; here.empty() || elsewhere.empty(); ++i) {
    auto id = "never-used-" + std::to_string(i);
    bool ours = internal->at(0).partitions.at(partition_for(id, internal_partitions)).leader
                == coordinator;
    (ours ? here : elsewhere) = id;
  }
  kafka::writer dt;
  dt.array_length(3, true);
  dt.compact_string("kcat-tx");
  dt.compact_string(here);
  dt.compact_string(elsewhere);
  dt.no_tagged_fields();
  c.send(request(65, 0, 7, dt.bytes()));
  {
    auto body = flexible_response(c, 7);
    kafka::reader rd{body};
    ASSERT_EQ(rd.array_length(true), 3);
    EXPECT_EQ(rd.int16(), 0);
    EXPECT_EQ(rd.compact_string(), "kcat-tx");
    EXPECT_EQ(rd.compact_string(), "CompleteCommit");
    EXPECT_GT(rd.int32(), 0);                   // timeout
    rd.int64();                                 // start time
    EXPECT_EQ(rd.int64(), described->pid.value);
    EXPECT_EQ(rd.int16(), 1);                   // epoch
    EXPECT_EQ(rd.array_length(true), 0);        // no partitions once complete
    rd.skip_tagged_fields();
    EXPECT_EQ(rd.int16(), 105);                 // TRANSACTIONAL_ID_NOT_FOUND
    EXPECT_EQ(rd.compact_string(), here);
    rd.compact_string();
    rd.int32();
    rd.int64();
    rd.int64();
    rd.int16();
    rd.array_length(true);
    rd.skip_tagged_fields();
    EXPECT_EQ(rd.int16(), 16);                  // NOT_COORDINATOR
    EXPECT_EQ(rd.compact_string(), elsewhere);
  }
  kafka::writer lt;
  lt.array_length(0, true);
  lt.array_length(1, true);
  lt.int64(described->pid.value);
  lt.int64(-1);
  lt.no_tagged_fields();
  c.send(request(66, 1, 8, lt.bytes()));
  {
    auto body = flexible_response(c, 8);
    kafka::reader rd{body};
    EXPECT_EQ(rd.int16(), 0);
    EXPECT_EQ(rd.array_length(true), 0); // unknown state filters
    ASSERT_EQ(rd.array_length(true), 1);
    EXPECT_EQ(rd.compact_string(), "kcat-tx");
    EXPECT_EQ(rd.int64(), described->pid.value);
    EXPECT_EQ(rd.compact_string(), "CompleteCommit");
  }
  // DescribeProducers at kt-0's leader: kcat's producer, its epoch and its
  // last marker's coordinator epoch; NOT_LEADER_OR_FOLLOWER (6) elsewhere.
  auto kt = admin.describe_topics({"kt"});
  ASSERT_TRUE(kt.ok());
  auto kt_leader = kt->at(0).partitions.at(0).leader;
  for (int32_t node : {kt_leader, kt_leader == 1 ? 2 : 1}) {
    raw_connection pc{kafka_ports.at(node)};
    kafka::writer dp;
    dp.array_length(1, true);
    dp.compact_string("kt");
    dp.array_length(1, true);
    dp.int32(0);
    dp.no_tagged_fields();
    dp.no_tagged_fields();
    pc.send(request(61, 0, 9, dp.bytes()));
    auto body = flexible_response(pc, 9);
    kafka::reader rd{body};
    ASSERT_EQ(rd.array_length(true), 1);
    EXPECT_EQ(rd.compact_string(), "kt");
    ASSERT_EQ(rd.array_length(true), 1);
    EXPECT_EQ(rd.int32(), 0);
    if (node != kt_leader) {
      EXPECT_EQ(rd.int16(), 6) << "node " << node;
      continue;
    }
    EXPECT_EQ(rd.int16(), 0);
    EXPECT_EQ(rd.compact_nullable_string(), std::nullopt);
    ASSERT_EQ(rd.array_length(true), 1);
    EXPECT_EQ(rd.int64(), described->pid.value);
    EXPECT_EQ(rd.int32(), 1); // epoch
    rd.int32();               // last sequence
    EXPECT_GT(rd.int64(), 0); // last timestamp
    auto coordinator_epoch = rd.int32();
    EXPECT_GE(coordinator_epoch, 0); // of its markers
    EXPECT_EQ(rd.int64(), -1); // no open transaction
    // WriteTxnMarkers v1 (kafka-transactions.sh abort) at the leader: an
    // older epoch is INVALID_PRODUCER_EPOCH (47), the current one is
    // written; __consumer_offsets is left to its coordinator (42).
    auto markers = [&](int16_t epoch, const std::string& topic) {
      kafka::writer wm;
      wm.array_length(1, true);
      wm.int64(described->pid.value);
      wm.int16(epoch);
      wm.boolean(false);
      wm.array_length(1, true);
      wm.compact_string(topic);
      wm.array_length(1, true);
      wm.int32(0);
      wm.no_tagged_fields();
      wm.int32(coordinator_epoch);
      wm.no_tagged_fields();
      wm.no_tagged_fields();
      pc.send(request(27, 1, 10, wm.bytes()));
      auto answer = pc.response().value_or("");
      EXPECT_FALSE(answer.empty());
      kafka::reader rm{answer};
      EXPECT_EQ(rm.int32(), 10);
      rm.skip_tagged_fields();
      EXPECT_EQ(rm.array_length(true), 1);
      EXPECT_EQ(rm.int64(), described->pid.value);
      EXPECT_EQ(rm.array_length(true), 1);
      EXPECT_EQ(rm.compact_string(), topic);
      EXPECT_EQ(rm.array_length(true), 1);
      EXPECT_EQ(rm.int32(), 0);
      return rm.int16();
    };
    EXPECT_EQ(markers(0, "kt"), 47);
    EXPECT_EQ(markers(1, "kt"), 0);
    EXPECT_EQ(markers(1, "__consumer_offsets"), 42);
  }
  // Nothing of the committed transactions is lost to the markers.
  EXPECT_EQ(kcat_consume(2, "kt", "read_committed").size(), 30u);
}

// confluent-kafka-python (librdkafka) runs six transactions from one
// producer, committing and aborting in turn, each with its group's offset
// (send_offsets_to_transaction: AddOffsetsToTxn, then TxnOffsetCommit at
// the group's coordinator). Its epoch stays across them (Kafka's
// transaction version 1): caftx's read_committed consumer sees exactly
// the committed records, kcat's read_uncommitted all of them, and the
// group keeps the last committed transaction's offset.
TEST_F(KafkaListener, ConfluentKafkaPythonCommitsAndAbortsWithGroupOffsets) {
  std::string python = CAFTX_PYTHON3;
  ASSERT_FALSE(python.empty()) << "/usr/bin/python3 not found";
  start_cluster(3);
  admin_client admin{client_props()};
  ASSERT_TRUE(admin.create_topic("py-out", 3, {}, 3).ok());
  ASSERT_TRUE(admin.create_topic("py-in", 1, {}, 3).ok());
  std::string bootstrap;
  for (auto& [id, port] : kafka_ports)
    bootstrap += (bootstrap.empty() ? "" : ",") + std::string("127.0.0.1:") + std::to_string(port);
  child_process p{tmp.path(), "python",
                  {python, std::string(CAFTX_CLIENT_SCRIPTS) + "/confluent_transactions.py",
                   bootstrap, "py-out", "py-in", "py-group", "py-tx"}};
  auto status = p.wait_exit(120s);
  ASSERT_EQ(exit_code(status), 0) << p.err();
  auto out = nlohmann::json::parse(p.out(), nullptr, false);
  ASSERT_TRUE(out.is_object()) << p.out();
  std::multiset<std::string> committed;
  for (auto& v : out["committed"]) {
    auto value = v.get<std::string>();
    committed.insert(std::to_string((value.back() - '0') % 3) + ":" + value);
  }
  ASSERT_EQ(committed.size(), 15u);
  ASSERT_EQ(out["aborted"].size(), 15u);
  EXPECT_EQ(read_committed_records(client_props(), {{"py-out", 0}, {"py-out", 1}, {"py-out", 2}},
                                   15),
            committed);
  EXPECT_EQ(kcat_consume(1, "py-out", "read_uncommitted").size(), 30u);
  auto offsets = admin.list_group_offsets("py-group");
  ASSERT_TRUE(offsets.ok()) << offsets.error().to_string();
  EXPECT_EQ(*offsets, (std::map<topic_partition, int64_t>{{{"py-in", 0}, 50}}));
  auto described = admin.describe_transaction("py-tx");
  ASSERT_TRUE(described.ok());
  EXPECT_EQ(described->state, "CompleteAbort"); // the sixth
  EXPECT_EQ(described->epoch, producer_epoch{0}) << "six transactions, one epoch";
}

// confluent-kafka-python's AdminClient, idempotent producer and consumer
// (manual assignment, offsets committed outside group management):
// CreateTopics and CreatePartitions with Kafka's errors, DescribeConfigs of
// a topic and a node, Produce with a
// producer id to old and new partitions, Fetch, OffsetCommit and
// OffsetFetch at the group's coordinator, DeleteTopics.
TEST_F(KafkaListener, ConfluentKafkaPythonAdminIdempotenceAndCommittedOffsets) {
  std::string python = CAFTX_PYTHON3;
  ASSERT_FALSE(python.empty()) << "/usr/bin/python3 not found";
  start_cluster(3);
  std::string bootstrap = "127.0.0.1:" + std::to_string(kafka_ports.at(2));
  child_process p{tmp.path(), "python",
                  {python, std::string(CAFTX_CLIENT_SCRIPTS) + "/confluent_admin_offsets.py",
                   bootstrap, "adm", "adm-group"}};
  auto status = p.wait_exit(180s);
  ASSERT_EQ(exit_code(status), 0) << p.err();
  auto out = nlohmann::json::parse(p.out(), nullptr, false);
  ASSERT_TRUE(out.is_object()) << p.out();
  EXPECT_EQ(out["create"], "NO_ERROR");
  EXPECT_EQ(out["create_again"], "TOPIC_ALREADY_EXISTS");
  EXPECT_EQ(out["create_bad_name"], "TOPIC_EXCEPTION"); // librdkafka's name for 17
  // Source 5 is DEFAULT_CONFIG, 4 STATIC_BROKER_CONFIG (the node's
  // properties set it); librdkafka asks for synonyms.
  EXPECT_EQ(out["topic_configs"],
            nlohmann::json::parse(R"({"retention.ms": ["604800000", 5, false, ["log.retention.ms"]],
                                      "cleanup.policy": ["delete", 5, false, ["log.cleanup.policy"]]})"));
  EXPECT_EQ(out["broker_configs"],
            (nlohmann::json{{"num.partitions", {"1", 5, true, {"num.partitions"}}},
                            {"transaction.state.log.num.partitions",
                             {std::to_string(internal_partitions), 4, true,
                              {"transaction.state.log.num.partitions"}}}}));
  EXPECT_EQ(out["unknown_topic_configs"], "UNKNOWN_TOPIC_OR_PART");
  EXPECT_EQ(out["grow_validate_only"], "NO_ERROR");
  EXPECT_EQ(out["grow"], "NO_ERROR");
  EXPECT_EQ(out["grow_same"], "INVALID_PARTITIONS");
  EXPECT_EQ(out["grow_unknown"], "UNKNOWN_TOPIC_OR_PART");
  EXPECT_EQ(out["grow_bad_node"], "INVALID_REPLICA_ASSIGNMENT");
  EXPECT_EQ(out["grow_assigned"], "NO_ERROR");
  // Six partitions, not nine (validate_only); the sixth on the given nodes.
  ASSERT_EQ(out["partitions"].size(), 6u) << out["partitions"].dump();
  EXPECT_EQ(out["partitions"]["5"], (nlohmann::json{3, 1, 2}));
  for (auto& [p, replicas] : out["partitions"].items())
    EXPECT_EQ(replicas.size(), 3u) << "partition " << p;
  EXPECT_EQ(out["unflushed"], 0);
  EXPECT_EQ(out["delivery_errors"].size(), 0u) << out["delivery_errors"].dump();
  std::vector<std::string> want;
  for (int i = 0; i < 30; ++i)
    want.push_back("v" + std::to_string(i));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(out["consumed"].get<std::vector<std::string>>(), want);
  EXPECT_EQ(out["committed"], (nlohmann::json{{"0", 10}, {"1", 11}, {"2", 12}}));
  EXPECT_EQ(out["listed_after_delete"], false);
}

// A mutation fuzz of every API the node serves: valid requests (those of
// tests/kafka_request_samples.hpp) with a byte changed, cut short, an int32
// overwritten with an extreme value, or bytes appended, 600 of them. Each
// is answered or closes its connection; the node goes on answering and
// still takes and serves a plain batch. CreateTopics is left out: a
// mutated one may legitimately ask for thousands of partitions (its
// parser is fuzzed in tests/property/kafka_codec_property_test.cpp).
TEST_F(KafkaListener, MutatedRequestsOfEveryApiNeverStopTheNode) {
  start_cluster(1, {{"transaction.state.log.replication.factor", "1"},
                    {"transaction.state.log.min.isr", "1"},
                    {"offsets.topic.replication.factor", "1"}});
  auto port = kafka_ports.at(1);
  create_topic("orders", 2);
  ASSERT_TRUE(wait_until([&] { return brokers_listed(port) == 1; }, 30s));
  std::vector<kafka::version_range> apis;
  for (auto& a : kafka::supported_apis())
    if (a.api_key != kafka::api::create_topics)
      apis.push_back(a);
  std::mt19937 rng{4321};
  auto any = [&rng](size_t n) { return static_cast<size_t>(rng() % n); };
  int answered = 0, closed = 0;
  for (int i = 0; i < 600; ++i) {
    auto& api = apis[any(apis.size())];
    auto body = kafka::testing::valid_body(api.api_key);
    switch (body.empty() ? 3 : i % 4) { // ListGroups has no fields: bytes appended
      case 0:
        body[any(body.size())] = static_cast<char>(rng());
        break;
      case 1:
        body.resize(any(body.size()));
        break;
      case 2: {
        kafka::writer extreme;
        extreme.int32(std::vector<int32_t>{-1, -2, 0x7fffffff, INT32_MIN, 1 << 20}[any(5)]);
        if (body.size() >= 4)
          body.replace(any(body.size() - 3), 4, extreme.bytes());
        break;
      }
      default:
        for (int k = 0; k < 1 + static_cast<int>(any(16)); ++k)
          body.push_back(static_cast<char>(rng()));
    }
    raw_connection c{port};
    c.send(request(api.api_key, api.max_version, i, body));
    // A fetch may be held for its (mutated) max wait: not waited for.
    if (c.response(2s))
      ++answered;
    else
      ++closed;
    if (i % 100 == 99) {
      ASSERT_EQ(brokers_listed(port), 1) << "the node stopped answering after request " << i;
    }
  }
  std::cout << "mutated requests: " << answered << " answered, " << closed << " closed\n";
  EXPECT_GT(answered, 0);
  EXPECT_GT(closed, 0);
  raw_connection c{port};
  c.send(produce_v7(1, "orders", 0, batch_of({"after"})));
  auto produced = read_produce_v7(c, 1);
  EXPECT_EQ(produced.error, 0);
  c.send(fetch_request(2, 11, "orders", 0, produced.base_offset, 0));
  auto f = read_fetch_v11(c, 2);
  EXPECT_EQ(f.error, 0);
  auto batches = v2::decode_all(f.records);
  ASSERT_TRUE(batches.ok());
  ASSERT_FALSE(batches->empty());
  EXPECT_EQ(batches->front().records.at(0).value, "after");
}

// kcat (librdkafka) compresses with each of Kafka's codecs: the partition
// checks the records, stores the batches as sent (their codec bits
// intact), and both kcat and caftx's own consumer read every record.
// Fetch names a partition once however often it is asked for.
TEST_F(KafkaListener, KcatCompressesWithEveryCodecAndBothConsumersReadIt) {
  start_cluster(1);
  auto port = kafka_ports.at(1);
  create_topic("cz", 1);
  std::multiset<std::string> want;
  std::vector<std::string> codecs{"gzip", "snappy", "lz4", "zstd"};
  for (auto& codec : codecs) {
    std::string input;
    for (int i = 0; i < 20; ++i) {
      // Compressible: librdkafka sends a batch uncompressed when the codec
      // would not make it smaller.
      auto value = codec + "-" + std::to_string(i) + "-" + std::string(200, 'x');
      input += value + "\n";
      want.insert("0:" + value);
    }
    ASSERT_TRUE(kcat(1, {"-P", "-t", "cz", "-p", "0", "-X", "compression.codec=" + codec}, input))
      << codec;
  }
  EXPECT_EQ(read_committed_records(client_props(), {{"cz", 0}}, 80), want);
  EXPECT_EQ(kcat_consume(1, "cz", "read_uncommitted").size(), 80u);
  raw_connection c{port};
  // The same partition twice: answered once.
  kafka::writer w;
  w.int32(-1);
  w.int32(100);
  w.int32(1);
  w.int32(1 << 20);
  w.int8(0);
  w.int32(0);
  w.int32(-1);
  w.int32(1);
  w.string("cz");
  w.int32(2);
  for (int k = 0; k < 2; ++k) {
    w.int32(0);
    w.int32(-1);
    w.int64(0);
    w.int64(-1);
    w.int32(1 << 20);
  }
  w.int32(0);
  w.string("");
  c.send(request(1, 11, 7, w.bytes()));
  auto f = read_fetch_v11(c, 7);
  ASSERT_EQ(f.error, 0);
  std::set<int> stored_codecs;
  EXPECT_TRUE(v2::for_each_batch(f.records, [&](const v2::batch_header& h, std::string_view) {
                stored_codecs.insert(h.attributes & 0x07);
                return true;
              }).ok());
  EXPECT_EQ(stored_codecs, (std::set<int>{1, 2, 3, 4})) << "stored as sent";
}

} // namespace
} // namespace caftx::testing
