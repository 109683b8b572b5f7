// The C++ producer and consumer against a node with the real scheduler:
// Kafka's calls, errors and their classes, and bad input.
#include "fixture.hpp"

#include <caf/scoped_actor.hpp>

#include <map>
#include <set>
#include <thread>

#include "actors/client/admin.hpp"
#include "runtime/record_batch_v2.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"
#include "runtime/coordinator_records.hpp"
#include "runtime/partitioner.hpp"

namespace caftx::testing {
namespace {

using namespace std::chrono_literals;

class ClientTest : public threaded_fixture {
protected:
  void SetUp() override {
    start_node();
    ASSERT_TRUE(n->create_topic("out", 2).ok());
  }

  std::vector<std::string> read(const std::string& isolation, int32_t partitions = 2) {
    consumer c{sys, n->broker(), properties{{"isolation.level", isolation},
                                            {"auto.offset.reset", "earliest"}}};
    std::vector<topic_partition> tps;
    for (int32_t p = 0; p < partitions; ++p)
      tps.push_back({"out", p});
    c.assign(tps);
    std::vector<std::string> values;
    for (auto& tp : tps) {
      auto end = c.end_offset(tp);
      c.assign({tp});
      while (c.position(tp) < end)
        for (auto& r : c.poll(100ms))
          values.push_back(r.value);
    }
    return values;
  }

  static producer_record to(const std::string& value, int32_t partition = 0) {
    return {"out", partition, "", value, {}, -1};
  }
};

TEST_F(ClientTest, ConsumerBelowTheLogStartAppliesAutoOffsetReset) {
  producer p{sys, n->broker(), properties{}};
  for (int i = 0; i < 5; ++i)
    p.send(to("r" + std::to_string(i)));
  p.flush();
  consumer c{sys, n->broker(), properties{{"auto.offset.reset", "earliest"}}};
  c.assign({{"out", 0}});
  c.seek({"out", 0}, 1);
  admin_client admin{sys, n->broker()};
  auto low = admin.delete_records({"out", 0}, 3);
  ASSERT_TRUE(low.ok()) << low.error().to_string();
  EXPECT_EQ(*low, 3);
  // The position 1 is gone: the consumer resets to the log start, 3.
  std::vector<std::string> values;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (values.size() < 2 && std::chrono::steady_clock::now() < deadline)
    for (auto& r : c.poll(100ms))
      values.push_back(std::to_string(r.offset) + ":" + r.value);
  EXPECT_EQ(values, (std::vector<std::string>{"3:r3", "4:r4"}));
  EXPECT_EQ(admin.delete_records({"out", 0}, 6).error().code(), error_code::offset_out_of_range);
  // With auto.offset.reset=none the error says why there is no position.
  consumer strict{sys, n->broker(), properties{{"auto.offset.reset", "none"}}};
  strict.assign({{"out", 0}});
  strict.seek({"out", 0}, 1);
  try {
    strict.poll(100ms);
    ADD_FAILURE() << "poll below the log start returned";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::offset_out_of_range);
    EXPECT_NE(std::string(e.what()).find("position 1 of out-0 is out of range"), std::string::npos)
      << e.what();
  }
}

TEST_F(ClientTest, CommittedRecordsAreVisibleAndAbortedOnesAreNot) {
  producer p{sys, n->broker(), properties{{"transactional.id", "t1"}}};
  p.init_transactions();
  p.begin_transaction();
  p.send(to("a", 0));
  p.send(to("b", 1));
  p.commit_transaction();
  p.begin_transaction();
  p.send(to("x", 0));
  p.flush();
  p.abort_transaction();
  p.begin_transaction();
  p.send(to("c", 0));
  p.commit_transaction();
  await_complete("t1");
  EXPECT_EQ(read("read_committed"), (std::vector<std::string>{"a", "c", "b"}));
  EXPECT_EQ(read("read_uncommitted"), (std::vector<std::string>{"a", "x", "c", "b"}));
}

TEST_F(ClientTest, ProduceToUnknownTopicIsAbortableAndLosesNothingCommitted) {
  producer p{sys, n->broker(), properties{{"transactional.id", "t2"}}};
  p.init_transactions();
  p.begin_transaction();
  p.send(to("kept"));
  p.commit_transaction();
  p.begin_transaction();
  p.send(to("rolled back"));
  try {
    p.send({"no-such-topic", std::nullopt, "k", "v", {}, -1});
    FAIL() << "send to an unknown topic succeeded";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::unknown_topic_or_partition);
    EXPECT_TRUE(e.is_abortable());
    EXPECT_NE(std::string(e.what()).find("no-such-topic"), std::string::npos) << e.what();
  }
  // Only abort is allowed now.
  try {
    p.commit_transaction();
    FAIL() << "commit after an abortable error succeeded";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::unknown_topic_or_partition);
    EXPECT_TRUE(e.is_abortable());
  }
  p.abort_transaction();
  p.begin_transaction();
  try {
    p.send(to("bad partition", 7));
    FAIL() << "send to partition 7 of a 2-partition topic succeeded";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::unknown_topic_or_partition);
  }
  p.abort_transaction();
  await_complete("t2");
  EXPECT_EQ(read("read_committed"), std::vector<std::string>{"kept"});
}

TEST_F(ClientTest, TransactionTimeoutAboveTheBrokerMaximumFailsInitTransactions) {
  producer p{sys, n->broker(), properties{{"transactional.id", "t3"},
                                          {"transaction.timeout.ms", "900001"}}};
  try {
    p.init_transactions();
    FAIL() << "init_transactions accepted transaction.timeout.ms above the maximum";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::invalid_transaction_timeout);
    EXPECT_TRUE(e.is_fatal());
  }
  // Fatal: every later call fails with the same error.
  try {
    p.begin_transaction();
    FAIL();
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::invalid_transaction_timeout);
  }
}

TEST_F(ClientTest, ConfigValuesOutOfRangeAreRejectedNamingKeyAndRange) {
  try {
    producer p{sys, n->broker(), properties{{"transactional.id", "t4"},
                                            {"max.in.flight.requests.per.connection", "6"}}};
    FAIL();
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::invalid_config);
    std::string what = e.what();
    EXPECT_NE(what.find("max.in.flight.requests.per.connection"), std::string::npos) << what;
    EXPECT_NE(what.find("[1, 5]"), std::string::npos) << what;
  }
  try {
    consumer c{sys, n->broker(), properties{{"isolation.level", "read_comitted"}}};
    FAIL();
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::invalid_config);
    EXPECT_NE(std::string(e.what()).find("isolation.level"), std::string::npos);
  }
  auto bad = node_config::parse({{"transaction.max.timeout.ms", "0"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message(),
            "config 'transaction.max.timeout.ms' = '0' is out of range [1, 2147483647]");
}

TEST_F(ClientTest, ZombieProducerIsFencedAndItsOpenTransactionAborted) {
  producer zombie{sys, n->broker(), properties{{"transactional.id", "t5"}}};
  zombie.init_transactions();
  zombie.begin_transaction();
  zombie.send(to("zombie"));
  zombie.flush();
  producer fresh{sys, n->broker(), properties{{"transactional.id", "t5"}}};
  fresh.init_transactions();
  EXPECT_EQ(fresh.producer_identity().first, zombie.producer_identity().first);
  EXPECT_EQ(fresh.producer_identity().second, zombie.producer_identity().second + 2);
  try {
    zombie.commit_transaction();
    FAIL() << "the zombie committed";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::producer_fenced);
    EXPECT_TRUE(e.is_fatal());
  }
  fresh.begin_transaction();
  fresh.send(to("fresh"));
  fresh.commit_transaction();
  await_complete("t5");
  EXPECT_EQ(read("read_committed"), std::vector<std::string>{"fresh"});
}

TEST_F(ClientTest, IdempotentProducerDeliversInOrderWithDenseOffsets) {
  producer p{sys, n->broker(), properties{{"batch.size", "100"}}};
  std::vector<int64_t> offsets;
  for (int i = 0; i < 50; ++i)
    p.send(to(std::to_string(i)), [&](const record_metadata& m, const status& st) {
      EXPECT_TRUE(st.ok()) << st.to_string();
      offsets.push_back(m.offset);
    });
  p.flush();
  ASSERT_EQ(offsets.size(), 50u);
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(offsets[i], i);
  auto values = read("read_committed");
  ASSERT_EQ(values.size(), 50u);
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(values[i], std::to_string(i));
}

TEST_F(ClientTest, ProducerWithoutIdempotenceWritesBatchesWithoutProducerId) {
  producer p{sys, n->broker(),
             properties{{"enable.idempotence", "false"}, {"batch.size", "100"}}};
  std::vector<int64_t> offsets;
  for (int i = 0; i < 20; ++i)
    p.send(to(std::to_string(i)), [&](const record_metadata& m, const status& st) {
      EXPECT_TRUE(st.ok()) << st.to_string();
      offsets.push_back(m.offset);
    });
  p.flush();
  EXPECT_EQ(p.producer_identity(), (std::pair<int64_t, int16_t>{-1, -1}));
  ASSERT_EQ(offsets.size(), 20u);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(offsets[i], i);
  admin_client admin{sys, n->broker()};
  auto producers = admin.describe_producers({"out", 0});
  ASSERT_TRUE(producers.ok()) << producers.error().to_string();
  EXPECT_TRUE(producers->empty()); // no producer state for unidentified batches
  auto values = read("read_committed");
  ASSERT_EQ(values.size(), 20u);
  for (int i = 0; i < 20; ++i)
    EXPECT_EQ(values[i], std::to_string(i));
}

TEST_F(ClientTest, OneProducerSharedByFourThreadsDeliversEveryRecordOnce) {
  producer p{sys, n->broker(), properties{{"batch.size", "200"}}};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&p, t] {
      for (int i = 0; i < 25; ++i)
        p.send({"out", t % 2, "", std::to_string(t * 100 + i), {}, -1});
      p.flush();
    });
  for (auto& th : threads)
    th.join();
  auto values = read("read_uncommitted");
  std::multiset<std::string> got(values.begin(), values.end());
  ASSERT_EQ(got.size(), 100u);
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 25; ++i)
      EXPECT_EQ(got.count(std::to_string(t * 100 + i)), 1u) << t * 100 + i;
  // Each thread's records keep their order within their partition.
  std::map<int, int> last;
  for (auto& v : values) {
    int x = std::stoi(v);
    auto [it, fresh] = last.emplace(x / 100, x);
    if (!fresh) {
      EXPECT_LT(it->second, x);
      it->second = x;
    }
  }
}

TEST_F(ClientTest, BatchesInFlightAreRetriedInOrderWhenThePartitionLeaderCrashes) {
  producer p{sys, n->broker(), properties{{"batch.size", "60"},
                                          {"linger.ms", "0"},
                                          {"retry.backoff.ms", "5"},
                                          {"max.in.flight.requests.per.connection", "5"}}};
  std::vector<int64_t> offsets(300, -1);
  caf::scoped_actor self{sys};
  partition_actor leader; // the supervisor of out-0's leader
  self->request(n->broker(), std::chrono::seconds(5), metadata_request{{"out"}})
    .receive([&](metadata_response& m) { leader = m.topics.at(0).partitions.at(0); },
             [&](caf::error& e) { FAIL() << sys.render(e); });
  for (int i = 0; i < 300; ++i) {
    p.send(to(std::to_string(i)), [&offsets, i](const record_metadata& m, const status& st) {
      EXPECT_TRUE(st.ok()) << st.to_string();
      offsets[i] = m.offset;
    });
    if (i == 150) // the leader dies with batches in flight
      self->request(caf::actor_cast<caf::actor>(leader), std::chrono::seconds(5), kill_child_request{})
        .receive([](supervisor_stats&) {}, [&](caf::error& e) { FAIL() << sys.render(e); });
  }
  p.flush();
  self->request(caf::actor_cast<caf::actor>(leader), std::chrono::seconds(5), supervisor_stats_request{})
    .receive([](supervisor_stats& s) { EXPECT_EQ(s.restarts, 1); },
             [&](caf::error& e) { FAIL() << sys.render(e); });
  for (int i = 0; i < 300; ++i)
    EXPECT_EQ(offsets[i], i) << "record " << i;
  auto values = read("read_uncommitted", 1);
  ASSERT_EQ(values.size(), 300u);
  for (int i = 0; i < 300; ++i)
    EXPECT_EQ(values[i], std::to_string(i));
}

TEST_F(ClientTest, IdempotentProducerBumpsItsEpochAfterOutOfOrderWithoutDuplicatingAnything) {
  producer p{sys, n->broker(), properties{{"linger.ms", "0"}}};
  p.send(to("a"));
  p.flush();
  auto [pid, epoch] = p.producer_identity();
  // Someone else writes with the producer's id and its next sequence: the
  // producer's own next batch is now out of order at the partition.
  caf::scoped_actor self{sys};
  partition_actor leader;
  self->request(n->broker(), std::chrono::seconds(5), metadata_request{{"out"}})
    .receive([&](metadata_response& m) { leader = m.topics.at(0).partitions.at(0); },
             [&](caf::error& e) { FAIL() << sys.render(e); });
  record_batch stolen;
  stolen.pid = producer_id{pid};
  stolen.epoch = producer_epoch{epoch};
  stolen.base_sequence = 1;
  stolen.records.push_back({"", "stolen", {}, 1});
  stolen.records.push_back({"", "stolen too", {}, 1}); // sequences 1-2: "b" (1) only overlaps
  self->request(leader, std::chrono::seconds(5), produce_request{{"out", 0}, "", v2::encode(stolen)})
    .receive([](produce_response& r) { EXPECT_EQ(r.error, error_code::none); },
             [&](caf::error& e) { FAIL() << sys.render(e); });
  status failed;
  p.send(to("b"), [&](const record_metadata&, const status& st) { failed = st; });
  try {
    p.flush();
    FAIL() << "the out-of-order batch was accepted";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::out_of_order_sequence_number);
    EXPECT_FALSE(e.is_fatal());
  }
  EXPECT_EQ(failed.code(), error_code::out_of_order_sequence_number);
  // KIP-360: same producer id, next epoch, sequences from 0; it goes on.
  EXPECT_EQ(p.producer_identity().first, pid);
  EXPECT_EQ(p.producer_identity().second, epoch + 1);
  p.send(to("c"));
  p.send(to("d"));
  p.flush();
  EXPECT_EQ(read("read_uncommitted", 1), (std::vector<std::string>{"a", "stolen", "stolen too", "c", "d"}));
}

TEST_F(ClientTest, ConsumerCommitsAndReadsBackGroupOffsets) {
  consumer c{sys, n->broker(), properties{{"group.id", "g"}, {"auto.offset.reset", "earliest"}}};
  c.assign({{"out", 0}});
  EXPECT_EQ(c.committed({"out", 0}), std::nullopt);
  c.commit({{{"out", 0}, 17}});
  EXPECT_EQ(c.committed({"out", 0}), 17);
  consumer again{sys, n->broker(), properties{{"group.id", "g"}}};
  again.assign({{"out", 0}});
  EXPECT_EQ(again.position({"out", 0}), 17);
  consumer no_group{sys, n->broker(), properties{}};
  try {
    no_group.commit({{{"out", 0}, 1}});
    FAIL();
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::invalid_request);
  }
}

// A poll returns part of what a fetch brought (max.poll.records): the
// position, and what commit() commits, is the first record not returned
// yet, never the end of what was fetched; seek and assign keep that true.
// (That the rest is not fetched again: tests/actors/consumer_fetch_test.)
TEST_F(ClientTest, ConsumerPositionAndCommitAreTheFirstRecordNotYetReturned) {
  producer p{sys, n->broker(), properties{}};
  for (int i = 0; i < 10; ++i)
    p.send(to(std::to_string(i)));
  p.flush();
  consumer c{sys, n->broker(), properties{{"group.id", "g"},
                                          {"auto.offset.reset", "earliest"},
                                          {"max.poll.records", "3"}}};
  const topic_partition tp{"out", 0};
  c.assign({tp});
  auto values = [](const std::vector<consumer_record>& rs) {
    std::vector<std::string> v;
    for (auto& r : rs)
      v.push_back(r.value);
    return v;
  };
  EXPECT_EQ(values(c.poll(100ms)), (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(c.position(tp), 3);
  c.commit();
  EXPECT_EQ(c.committed(tp), 3);
  EXPECT_EQ(values(c.poll(100ms)), (std::vector<std::string>{"3", "4", "5"}));
  c.seek(tp, 1); // drops what was fetched
  EXPECT_EQ(c.position(tp), 1);
  EXPECT_EQ(values(c.poll(100ms)), (std::vector<std::string>{"1", "2", "3"}));
  c.assign({tp}); // kept partition: kept position and records
  EXPECT_EQ(values(c.poll(100ms)), (std::vector<std::string>{"4", "5", "6"}));
  EXPECT_EQ(values(c.poll(100ms)), (std::vector<std::string>{"7", "8", "9"}));
  EXPECT_EQ(c.position(tp), 10);
  EXPECT_TRUE(c.poll(10ms).empty());
}

TEST_F(ClientTest, AConsumerReadsTheTransactionCardsOfTheInternalTopic) {
  producer p{sys, n->broker(), properties{{"transactional.id", "reader-tx"}}};
  p.init_transactions();
  p.begin_transaction();
  p.send(to("v"));
  p.commit_transaction();
  // As Kafka's console consumer with TransactionLogMessageFormatter: the
  // shard's partition holds one card per transition (CompleteCommit is
  // written after the markers, so it may come after commit returned).
  topic_partition shard{transaction_state_topic, partition_for("reader-tx", 50)};
  consumer c{sys, n->broker(), properties{{"auto.offset.reset", "earliest"}}};
  c.assign({shard});
  std::vector<std::string> states;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (states.size() < 4 && std::chrono::steady_clock::now() < deadline)
    for (auto& r : c.poll(100ms)) {
      auto line = coordinator_records::describe(r.topic, r.key, r.value, r.null_value);
      ASSERT_EQ(line.rfind("transactional.id=reader-tx producerId=", 0), 0u) << line;
      states.push_back(line.substr(line.find("state="), line.find(" partitions") - line.find("state=")));
    }
  EXPECT_EQ(states, (std::vector<std::string>{"state=Empty", "state=Ongoing", "state=PrepareCommit",
                                              "state=CompleteCommit"}));
}

} // namespace
} // namespace caftx::testing
