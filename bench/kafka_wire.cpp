// The Kafka wire benchmark: librdkafka (Debian's 2.0.2, the C client kcat
// and confluent-kafka-python are built on) against one caftx-node process
// over Kafka's wire protocol, next to the same client against librdkafka's
// in-memory mock cluster (rdkafka_mock.h: no disk, no replication, a
// ceiling of the client itself, not a durable broker) and next to caftx's
// own C++ client against the same node over the CAF middleman. Every
// client runs in this process; the node in its own.
//
// Lines, records/s of 100 B values on a topic of 3 partitions, each
// producer dealing its records to the partitions in turn (the same spread
// for both clients; librdkafka's own default for records without a key
// keeps a partition for 10 ms, sticky.partitioning.linger.ms):
//  - produce idempotent: as fast as the client goes, then flush;
//  - produce txn 100 ms: transactions of 100 ms, records committed;
//  - consume read_committed and read_uncommitted: a fresh consumer reads a
//    topic written in committed transactions of 10 000 records, from the
//    beginning to its end (assign, no group); timed from the first record
//    it returns (the connection and first fetch left out). The mock only
//    with read_uncommitted, on the records it keeps (see below).
#include "bench/node_process.hpp"
#include "bench/suite.hpp"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>

#include "actors/client/admin.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"
#include "tests/cluster/zk_server.hpp"
#include "tools/drill/cluster_processes.hpp"

namespace caftx::bench {

namespace {

using namespace std::chrono_literals;
using kv = std::vector<std::pair<std::string, std::string>>;

constexpr int partitions = 3;
constexpr size_t value_bytes = 100;

struct rk_destroy {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using rk_ptr = std::unique_ptr<rd_kafka_t, rk_destroy>;

// Successful deliveries, counted by the delivery report callback.
struct delivery_count {
  std::atomic<int64_t> ok{0};
  std::atomic<int64_t> failed{0};
};

void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* count = static_cast<delivery_count*>(opaque);
  (m->err == RD_KAFKA_RESP_ERR_NO_ERROR ? count->ok : count->failed)++;
}

rk_ptr make_client(rd_kafka_type_t type, const kv& settings, delivery_count* count = nullptr) {
  char err[512];
  auto* conf = rd_kafka_conf_new();
  // Errors only: retriable warnings (a coordinator still loading) are not
  // the benchmark's output.
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
  for (auto& [k, v] : settings)
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw std::runtime_error("kafka-wire: librdkafka " + k + "=" + v + ": " + err);
    }
  if (count) {
    rd_kafka_conf_set_opaque(conf, count);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  }
  auto* rk = rd_kafka_new(type, conf, err, sizeof(err));
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error(std::string("kafka-wire: rd_kafka_new: ") + err);
  }
  return rk_ptr{rk};
}

void check(rd_kafka_error_t* e, const char* what) {
  if (!e)
    return;
  std::string msg = std::string("kafka-wire: ") + what + ": " + rd_kafka_error_string(e);
  rd_kafka_error_destroy(e);
  throw std::runtime_error(msg);
}

// Produces one 100 B record to `partition` (RD_KAFKA_PARTITION_UA:
// librdkafka's partitioner), waiting while the client's queue is full.
void produce_one(rd_kafka_t* rk, const std::string& topic, const std::string& value,
                 int32_t partition = RD_KAFKA_PARTITION_UA) {
  for (;;) {
    auto err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                                 RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
      return;
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
      throw std::runtime_error(std::string("kafka-wire: produce: ") + rd_kafka_err2str(err));
    rd_kafka_poll(rk, 1);
  }
}

// librdkafka producing for `seconds`: idempotent (delivered records per
// second, the final flush included) or in transactions of `txn_ms`
// (committed records per second).
double librdkafka_produce(const std::string& bootstrap, const std::string& topic, double seconds,
                          int txn_ms, const std::string& transactional_id) {
  delivery_count count;
  kv settings{{"bootstrap.servers", bootstrap}, {"enable.idempotence", "true"}};
  if (txn_ms > 0)
    settings.push_back({"transactional.id", transactional_id});
  auto rk = make_client(RD_KAFKA_PRODUCER, settings, &count);
  if (txn_ms > 0)
    check(rd_kafka_init_transactions(rk.get(), 30000), "init_transactions");
  std::string value(value_bytes, 'v');
  int64_t committed = 0, produced = 0;
  auto start = clock_type::now();
  while (ms_since(start) < seconds * 1000) {
    if (txn_ms > 0) {
      check(rd_kafka_begin_transaction(rk.get()), "begin_transaction");
      auto txn_start = clock_type::now();
      int64_t sent = 0;
      while (ms_since(txn_start) < txn_ms) {
        for (int k = 0; k < 64; ++k, ++sent)
          produce_one(rk.get(), topic, value, static_cast<int32_t>(sent % partitions));
        rd_kafka_poll(rk.get(), 0);
      }
      check(rd_kafka_commit_transaction(rk.get(), 60000), "commit_transaction");
      committed += sent;
    } else {
      for (int k = 0; k < 64; ++k, ++produced)
        produce_one(rk.get(), topic, value, static_cast<int32_t>(produced % partitions));
      rd_kafka_poll(rk.get(), 0);
    }
  }
  if (txn_ms == 0) {
    if (rd_kafka_flush(rk.get(), 60000) != RD_KAFKA_RESP_ERR_NO_ERROR)
      throw std::runtime_error("kafka-wire: flush timed out");
    committed = count.ok.load();
  }
  if (count.failed.load() > 0)
    throw std::runtime_error("kafka-wire: " + std::to_string(count.failed.load())
                             + " deliveries failed");
  return static_cast<double>(committed) / (ms_since(start) / 1000.0);
}

// caftx's C++ client doing the same.
double caftx_produce(const properties& client, const std::string& topic, double seconds,
                     int txn_ms, const std::string& transactional_id) {
  auto props = client;
  props["enable.idempotence"] = "true";
  if (txn_ms > 0)
    props["transactional.id"] = transactional_id;
  producer p{props};
  if (txn_ms > 0)
    p.init_transactions();
  std::string value(value_bytes, 'v');
  int64_t committed = 0, sent = 0;
  auto start = clock_type::now();
  while (ms_since(start) < seconds * 1000) {
    if (txn_ms > 0) {
      p.begin_transaction();
      auto txn_start = clock_type::now();
      int64_t in_txn = 0;
      while (ms_since(txn_start) < txn_ms)
        for (int k = 0; k < 64; ++k, ++in_txn)
          p.send({topic, static_cast<int32_t>(in_txn % partitions), "", value, {}, -1});
      p.commit_transaction();
      committed += in_txn;
    } else {
      for (int k = 0; k < 64; ++k, ++sent)
        p.send({topic, static_cast<int32_t>(sent % partitions), "", value, {}, -1});
    }
  }
  if (txn_ms == 0) {
    p.flush();
    committed = sent;
  }
  return static_cast<double>(committed) / (ms_since(start) / 1000.0);
}

// Writes `records` records to `topic`: in committed transactions of
// 10 000, or (`transactional` false) with an idempotent producer.
void fill(const std::string& bootstrap, const std::string& topic, int64_t records,
          bool transactional) {
  delivery_count count;
  kv settings{{"bootstrap.servers", bootstrap}, {"enable.idempotence", "true"}};
  if (transactional)
    settings.push_back({"transactional.id", "kafka-wire-fill-" + topic});
  auto rk = make_client(RD_KAFKA_PRODUCER, settings, &count);
  if (transactional)
    check(rd_kafka_init_transactions(rk.get(), 30000), "init_transactions");
  std::string value(value_bytes, 'r');
  for (int64_t done = 0; done < records;) {
    if (transactional)
      check(rd_kafka_begin_transaction(rk.get()), "begin_transaction");
    for (int64_t k = 0; k < 10000 && done < records; ++k, ++done)
      produce_one(rk.get(), topic, value);
    if (transactional)
      check(rd_kafka_commit_transaction(rk.get(), 60000), "commit_transaction");
  }
  if (rd_kafka_flush(rk.get(), 60000) != RD_KAFKA_RESP_ERR_NO_ERROR || count.ok.load() != records)
    throw std::runtime_error("kafka-wire: filling " + topic + " delivered "
                             + std::to_string(count.ok.load()) + " of " + std::to_string(records));
}

// A fresh librdkafka consumer reading `topic` from the beginning until it
// has `records` records (-1: as many as the partitions hold now, from
// their low to their high watermark): records per second.
double librdkafka_consume(const std::string& bootstrap, const std::string& topic,
                          const std::string& isolation, int64_t records) {
  auto rk = make_client(RD_KAFKA_CONSUMER, {{"bootstrap.servers", bootstrap},
                                            {"group.id", "kafka-wire-bench"},
                                            {"enable.auto.commit", "false"},
                                            {"isolation.level", isolation}});
  rd_kafka_poll_set_consumer(rk.get());
  if (records < 0) {
    records = 0;
    for (int32_t p = 0; p < partitions; ++p) {
      int64_t low = 0, high = 0;
      if (auto err = rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), p, &low, &high, 10000))
        throw std::runtime_error(std::string("kafka-wire: watermarks: ") + rd_kafka_err2str(err));
      records += high - low;
    }
  }
  auto* tps = rd_kafka_topic_partition_list_new(partitions);
  for (int32_t p = 0; p < partitions; ++p)
    rd_kafka_topic_partition_list_add(tps, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  if (records < 2)
    throw std::runtime_error("kafka-wire: " + topic + " holds " + std::to_string(records)
                             + " records: too few to time");
  auto start = clock_type::now();
  auto err = rd_kafka_assign(rk.get(), tps);
  rd_kafka_topic_partition_list_destroy(tps);
  if (err)
    throw std::runtime_error(std::string("kafka-wire: assign: ") + rd_kafka_err2str(err));
  int64_t seen = 0;
  std::map<int32_t, int64_t> last;
  clock_type::time_point first;
  while (seen < records) {
    if (ms_since(start) > 120000) {
      std::string where;
      for (auto [p, o] : last) {
        int64_t low = -1, high = -1;
        rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), p, &low, &high, 5000);
        where += " [" + std::to_string(p) + "] at " + std::to_string(o) + " of "
                 + std::to_string(high);
      }
      throw std::runtime_error("kafka-wire: " + isolation + " consumer read " + std::to_string(seen)
                               + " of " + std::to_string(records) + " records in 120 s:" + where);
    }
    auto* m = rd_kafka_consumer_poll(rk.get(), 100);
    if (!m)
      continue;
    if (!m->err) {
      last[m->partition] = m->offset;
      if (seen++ == 0)
        first = clock_type::now();
    }
    rd_kafka_message_destroy(m);
  }
  double rate = static_cast<double>(records - 1) / (ms_since(first) / 1000.0);
  rd_kafka_consumer_close(rk.get());
  return rate;
}

double caftx_consume(const properties& client, const std::string& topic,
                     const std::string& isolation, int64_t records) {
  auto props = client;
  props["isolation.level"] = isolation;
  props["auto.offset.reset"] = "earliest";
  props["max.poll.records"] = "500"; // Kafka's default
  consumer c{props};
  std::vector<topic_partition> tps;
  for (int32_t p = 0; p < partitions; ++p)
    tps.push_back({topic, p});
  auto start = clock_type::now();
  c.assign(tps);
  int64_t seen = 0, first_poll = 0;
  clock_type::time_point first;
  while (seen < records) {
    if (ms_since(start) > 120000)
      throw std::runtime_error("kafka-wire: caftx " + isolation + " consumer read "
                               + std::to_string(seen) + " of " + std::to_string(records));
    auto got = static_cast<int64_t>(c.poll(100ms).size());
    if (seen == 0 && got > 0) {
      first = clock_type::now();
      first_poll = got;
    }
    seen += got;
  }
  // From the first poll that returned records: the records after it.
  return static_cast<double>(records - first_poll) / (ms_since(first) / 1000.0);
}

void set_ratio(line& l, const line& of) {
  if (l.reps.empty() || of.reps.empty() || of.stats().median <= 0)
    return;
  l.ratio = l.stats().median / of.stats().median; // measured, no target
  l.ratio_of = "/ " + of.variant;
}

} // namespace

void bench_kafka_wire(const context& ctx) {
  auto& zk = testing::zk_server::shared();
  auto dir = ctx.dir + "/kafka-wire";
  std::filesystem::create_directories(dir);
  auto kafka_port = drill::free_port();
  node_proc node{dir, 1, drill::free_port(), zk.connect(zk.fresh_chroot("bench-kafka-wire")), 1,
                 kafka_port};
  if (!wait_for([&] { return node.logged("elected controller at controller epoch"); }, 60s))
    throw std::runtime_error("kafka-wire: the node was not elected controller (see " + dir + ")");
  const std::string wire = "127.0.0.1:" + std::to_string(kafka_port);
  const properties native{{"bootstrap.servers", node.endpoint()}};
  {
    admin_client admin{native};
    for (auto topic : {"wire-idem", "wire-txn", "wire-read"})
      if (auto st = admin.create_topic(topic, partitions); !st.ok())
        throw std::runtime_error("kafka-wire: CreateTopics: " + st.to_string());
  }
  // librdkafka's mock cluster lives in a client instance of its own.
  auto mock_host = make_client(RD_KAFKA_PRODUCER, {});
  struct mock_destroy {
    void operator()(rd_kafka_mock_cluster_t* m) const { rd_kafka_mock_cluster_destroy(m); }
  };
  // Declared after its host: destroyed first, as librdkafka requires.
  std::unique_ptr<rd_kafka_mock_cluster_t, mock_destroy> mock_cluster{
    rd_kafka_mock_cluster_new(mock_host.get(), 1)};
  auto* mock = mock_cluster.get();
  if (!mock)
    throw std::runtime_error("kafka-wire: rd_kafka_mock_cluster_new failed");
  for (auto topic : {"wire-idem", "wire-txn", "wire-read"})
    rd_kafka_mock_topic_create(mock, topic, partitions, 1);
  const std::string mock_bootstrap = rd_kafka_mock_cluster_bootstraps(mock);

  auto seconds = ctx.quick ? 0.3 : 3.0;
  const char* targets[] = {"librdkafka -> caftx", "librdkafka -> mock", "caftx client -> caftx"};
  for (int txn_ms : {0, 100}) {
    std::vector<line> lines(3);
    for (size_t i = 0; i < lines.size(); ++i) {
      lines[i].benchmark = "kafka-wire";
      lines[i].variant = std::string(txn_ms ? "produce txn 100 ms " : "produce idempotent ")
                         + targets[i];
      lines[i].unit = "records/s";
    }
    auto topic = txn_ms ? "wire-txn" : "wire-idem";
    interleave(ctx, lines, [&](size_t i, int rep) {
      auto tid = "kafka-wire-" + std::to_string(i) + "-" + std::to_string(rep);
      rep_result r;
      r.value = i == 0   ? librdkafka_produce(wire, topic, seconds, txn_ms, tid)
                : i == 1 ? librdkafka_produce(mock_bootstrap, topic, seconds, txn_ms, tid)
                         : caftx_produce(native, topic, seconds, txn_ms, tid);
      return r;
    });
    set_ratio(lines[0], lines[1]); // caftx over the wire / the mock ceiling
    lines[2].note = "librdkafka -> caftx / caftx client: "
                    + (lines[2].stats().median > 0
                         ? fmt("%.3f", lines[0].stats().median / lines[2].stats().median)
                         : std::string("-"));
    for (auto& l : lines)
      report(l);
  }

  int64_t records = ctx.quick ? 20000 : 300000;
  fill(wire, "wire-read", records, true);
  fill(mock_bootstrap, "wire-read", records, false);
  // librdkafka's mock keeps at most 100 000 messages or 5 MiB per
  // partition (rdkafka_mock.c), about 45 000 of these records: its
  // consumer reads what it kept. Its records come from an idempotent
  // producer (no control records to tell apart), so it is a ceiling for
  // read_uncommitted only.
  struct read_variant {
    int target; // 0: librdkafka -> caftx, 1: librdkafka -> mock, 2: caftx client
    const char* isolation;
  };
  const std::vector<read_variant> rv{{0, "read_committed"},
                                     {0, "read_uncommitted"},
                                     {1, "read_uncommitted"},
                                     {2, "read_committed"},
                                     {2, "read_uncommitted"}};
  std::vector<line> reads(rv.size());
  for (size_t i = 0; i < reads.size(); ++i) {
    reads[i].benchmark = "kafka-wire";
    reads[i].variant = std::string("consume ") + rv[i].isolation + " " + targets[rv[i].target];
    reads[i].unit = "records/s";
  }
  interleave(ctx, reads, [&](size_t i, int) {
    rep_result r;
    auto& v = rv[i];
    r.value = v.target == 0   ? librdkafka_consume(wire, "wire-read", v.isolation, records)
              : v.target == 1 ? librdkafka_consume(mock_bootstrap, "wire-read", v.isolation, -1)
                              : caftx_consume(native, "wire-read", v.isolation, records);
    return r;
  });
  set_ratio(reads[0], reads[1]); // read_committed / read_uncommitted, over the wire
  set_ratio(reads[3], reads[4]); // the same, caftx's client
  set_ratio(reads[1], reads[2]); // read_uncommitted: caftx over the wire / the mock ceiling
  auto wire_over = [&](size_t wire_line, size_t other) {
    if (reads[other].stats().median > 0)
      reads[other].note = "librdkafka -> caftx / this: "
                          + fmt("%.3f", reads[wire_line].stats().median / reads[other].stats().median);
  };
  wire_over(0, 3);
  wire_over(1, 4);
  for (auto& l : reads)
    report(l);
}

} // namespace caftx::bench
