// The producer's delivery and limits as a Kafka user relies on them: a
// send's callback and future complete when its batch is acknowledged (not
// at the next flush); buffer.memory with max.block.ms bounds what a fast
// sender queues; max.request.size (client) and max.message.bytes /
// message.max.bytes (partition) refuse oversized records and batches; a
// call whose node went away ends within max.block.ms or
// delivery.timeout.ms. On CAF's deterministic scheduler: the bounds are
// checked on its simulated clock, which only the client's waits advance.
#include "fixture.hpp"

#include <caf/actor_clock.hpp>

#include <chrono>
#include <functional>
#include <future>
#include <string>

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "actors/client/producer.hpp"

namespace caftx::testing {
namespace {

bool ready(std::future<record_metadata>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// What `call` threw as a kafka_exception; code NONE if it returned.
struct thrown {
  error_code code = error_code::none;
  error_class cls = error_class::none;
  std::string what;
  bool says(const std::string& text) const { return what.find(text) != std::string::npos; }
};

thrown error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const kafka_exception& e) {
    return {e.code(), e.cls(), e.what()};
  }
  return {};
}

} // namespace

class ProducerDeliveryTest : public node_fixture {
protected:
  // The scheduler's simulated clock (advanced by the client's waits and by
  // timeouts that fire), in ms.
  int64_t sim_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
             sys.clock().now().time_since_epoch())
      .count();
  }

  // Advances the simulated clock by `ms`, running what becomes due.
  void run_for(int64_t ms) {
    for (int64_t t = 0; t < ms; ++t) {
      now_ms += 1;
      sched.advance_time(std::chrono::milliseconds(1));
      sched.run();
    }
  }

  topic_partition tp{"t", 0};

  void create_topic_with(const std::string& name, std::map<std::string, std::string> configs) {
    auto r = call<txn_response>(broker(), create_topic_request{name, 1, std::move(configs)});
    ASSERT_EQ(r.error, error_code::none) << r.message;
  }
};

TEST_F(ProducerDeliveryTest, CallbackAndFutureCompleteWhenTheBatchIsAcknowledgedWithoutAFlush) {
  start_node();
  create_topic("t", 1);
  producer_config cfg;
  cfg.linger_ms = 5;
  producer p{sys, broker(), cfg};
  p.set_driver(deterministic_driver());
  std::vector<std::pair<int64_t, status>> calls;
  auto cb = [&calls](const record_metadata& m, const status& st) {
    calls.push_back({m.offset, st});
  };
  auto f0 = p.send({"t", 0, "k", "a", {}, 1234}, cb);
  auto f1 = p.send({"t", 0, "k", "b", {}, 1235}, cb);
  EXPECT_TRUE(calls.empty()); // nothing acknowledged yet
  run_for(10);                // linger.ms passes: the batch goes and is acknowledged
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].first, 0);
  EXPECT_EQ(calls[1].first, 1);
  EXPECT_TRUE(calls[0].second.ok()) << calls[0].second.to_string();
  ASSERT_TRUE(ready(f0));
  ASSERT_TRUE(ready(f1));
  auto m1 = f1.get();
  EXPECT_EQ(m1.tp, tp);
  EXPECT_EQ(m1.offset, 1);
  EXPECT_EQ(m1.timestamp_ms, 1235);
  EXPECT_EQ(f0.get().offset, 0);
  // The old signature still works: a send without a callback, its future dropped.
  p.send({"t", 0, "k", "c", {}, -1});
  p.flush();
  EXPECT_EQ(visible_values(tp, isolation_level::read_uncommitted),
            (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(ProducerDeliveryTest, AFailedRecordsFutureThrowsItsErrorAndTheBatchIsNotAppended) {
  start_node();
  // The partition takes batches of at most 300 bytes.
  create_topic_with("t", {{"max.message.bytes", "300"}});
  producer p{sys, broker(), producer_config{}};
  p.set_driver(deterministic_driver());
  status seen;
  auto f = p.send({"t", 0, "k", std::string(1024, 'x'), {}, -1},
                  [&seen](const record_metadata&, const status& st) { seen = st; });
  run_for(10);
  ASSERT_TRUE(ready(f));
  EXPECT_EQ(seen.code(), error_code::message_too_large) << seen.to_string();
  auto e = error_of([&] { f.get(); }); // the future of a refused record throws
  EXPECT_EQ(e.code, error_code::message_too_large);
  EXPECT_TRUE(e.says("exceeds the maximum configured value of 300")) << e.what;
  EXPECT_THROW(p.flush(), kafka_exception);
  EXPECT_TRUE(visible_values(tp, isolation_level::read_uncommitted).empty());
  // A small record still goes.
  auto ok = p.send({"t", 0, "k", "small", {}, -1});
  p.flush();
  EXPECT_EQ(ok.get().offset, 0);
}

TEST_F(ProducerDeliveryTest, TheNodesMessageMaxBytesBoundsTopicsWithoutTheirOwn) {
  ncfg.message_max_bytes = 2000;
  start_node();
  create_topic("t", 1);
  producer p{sys, broker(), producer_config{}};
  p.set_driver(deterministic_driver());
  auto big = p.send({"t", 0, "k", std::string(4000, 'x'), {}, -1});
  EXPECT_THROW(p.flush(), kafka_exception);
  ASSERT_TRUE(ready(big));
  EXPECT_EQ(error_of([&] { big.get(); }).code, error_code::message_too_large);
  EXPECT_TRUE(visible_values(tp, isolation_level::read_uncommitted).empty());
}

// acks outside -1, 0 and 1: INVALID_REQUIRED_ACKS, nothing appended; acks=0
// is answered without an offset (Kafka's -1) and the record is there.
TEST_F(ProducerDeliveryTest, AcksOtherThanAllLeaderOrNoneIsInvalidRequiredAcks) {
  start_node();
  create_topic("t", 1);
  auto b = batch(producer_id{-1}, producer_epoch{-1}, -1, {"x"}, false);
  produce_request bad{tp, "", v2::encode(b)};
  bad.acks = 2;
  auto r = call<produce_response>(leader("t", 0), bad);
  EXPECT_EQ(r.error, error_code::invalid_required_acks) << r.message;
  EXPECT_TRUE(visible_values(tp, isolation_level::read_uncommitted).empty());
  produce_request none{tp, "", v2::encode(b)};
  none.acks = 0;
  auto ok = call<produce_response>(leader("t", 0), none);
  EXPECT_EQ(ok.error, error_code::none) << ok.message;
  EXPECT_EQ(ok.base_offset, -1);
  EXPECT_EQ(visible_values(tp, isolation_level::read_uncommitted), std::vector<std::string>{"x"});
}

TEST_F(ProducerDeliveryTest, ARecordAboveMaxRequestSizeIsRefusedAtSendAndNothingIsSent) {
  start_node();
  create_topic("t", 1);
  producer_config cfg;
  cfg.max_request_size = 1000;
  producer p{sys, broker(), cfg};
  p.set_driver(deterministic_driver());
  auto e = error_of([&] { p.send({"t", 0, "k", std::string(1024, 'x'), {}, -1}); });
  EXPECT_EQ(e.code, error_code::message_too_large);
  EXPECT_TRUE(e.says("bytes when serialized which is larger than 1000, which is the value of the "
                     "max.request.size configuration"))
    << e.what;
  p.send({"t", 0, "k", std::string(800, 'y'), {}, -1});
  p.flush();
  auto values = visible_values(tp, isolation_level::read_uncommitted);
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0], std::string(800, 'y'));
}

TEST_F(ProducerDeliveryTest, SendBlocksWhileBufferMemoryIsFullAndTimesOutAfterMaxBlockMs) {
  start_node();
  create_topic("t", 1);
  producer_config cfg;
  cfg.buffer_memory = 3000;
  cfg.max_block_ms = 50;
  cfg.linger_ms = 1000; // the records stay buffered until flushed
  producer p{sys, broker(), cfg};
  p.set_driver(deterministic_driver());
  p.send({"t", 0, "k", std::string(1024, 'a'), {}, -1});
  p.send({"t", 0, "k", std::string(1024, 'b'), {}, -1});
  auto before = sim_ms();
  // 3 x ~1.1 KB > 3000: blocks, then times out
  auto e = error_of([&] { p.send({"t", 0, "k", std::string(1024, 'c'), {}, -1}); });
  EXPECT_EQ(e.code, error_code::request_timed_out);
  EXPECT_EQ(e.cls, error_class::retriable);
  EXPECT_TRUE(e.says("Failed to allocate memory within the configured max blocking time 50 ms"))
    << e.what;
  EXPECT_GE(sim_ms() - before, 50); // it waited max.block.ms on the client's clock...
  EXPECT_LT(sim_ms() - before, 1000); // ...and not until linger.ms freed the buffer
  p.flush(); // acknowledged: the memory is free again
  p.send({"t", 0, "k", std::string(1024, 'c'), {}, -1});
  p.flush();
  auto values = visible_values(tp, isolation_level::read_uncommitted);
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(values[2], std::string(1024, 'c'));
}

TEST_F(ProducerDeliveryTest, SendWaitsForBufferMemoryFreedByAcknowledgements) {
  start_node();
  create_topic("t", 1);
  producer_config cfg;
  cfg.buffer_memory = 3000;
  cfg.max_block_ms = 60000;
  cfg.linger_ms = 20; // the buffered records go after 20 ms
  producer p{sys, broker(), cfg};
  p.set_driver(deterministic_driver());
  for (int i = 0; i < 10; ++i) // each send beyond two waits for the previous batch
    p.send({"t", 0, "k", std::string(1024, static_cast<char>('a' + i)), {}, -1});
  p.flush();
  EXPECT_EQ(visible_values(tp, isolation_level::read_uncommitted).size(), 10u);
}

TEST_F(ProducerDeliveryTest, CoordinatorCallsAfterTheNodeStoppedEndWithinMaxBlockMs) {
  start_node();
  create_topic("t", 1);
  producer_config cfg;
  cfg.max_block_ms = 500;
  cfg.delivery_timeout_ms = 400;
  cfg.request_timeout_ms = 300;
  auto expect_timeout = [&](const char* what, const std::function<void()>& call) {
    auto before = sim_ms();
    auto e = error_of(call);
    EXPECT_EQ(e.code, error_code::request_timed_out) << what << ": " << e.what;
    EXPECT_EQ(e.cls, error_class::retriable) << what << ": " << e.what;
    EXPECT_LE(sim_ms() - before, cfg.max_block_ms + cfg.retry_backoff_ms) << what;
  };
  {
    cfg.transactional_id = "a";
    producer a{sys, broker(), cfg};
    cfg.transactional_id = "b";
    producer b{sys, broker(), cfg};
    for (auto* p : {&a, &b}) {
      p->set_driver(deterministic_driver());
      p->init_transactions();
      p->begin_transaction();
      p->send({"t", 0, "k", "v", {}, -1});
      p->flush();
    }
    stop_node();
    expect_timeout("send_offsets_to_transaction",
                   [&] { a.send_offsets_to_transaction({{{"in", 0}, 5}}, "group"); });
    expect_timeout("abort_transaction", [&] { a.abort_transaction(); });
    expect_timeout("abort_transaction again", [&] { a.abort_transaction(); });
    expect_timeout("commit_transaction", [&] { b.commit_transaction(); });
    // As Kafka's: a commit that timed out is repeated, not aborted.
    expect_timeout("commit_transaction again", [&] { b.commit_transaction(); });
  }
  {
    cfg.transactional_id = "c";
    producer c{sys, caf::actor{}, cfg}; // no node at all
    c.set_driver(deterministic_driver());
    expect_timeout("init_transactions", [&] { c.init_transactions(); });
    // After a TimeoutException init_transactions may be called again.
    expect_timeout("init_transactions again", [&] { c.init_transactions(); });
  }
  sched.run(); // the producers' sessions end
}

// A commit that gave up waiting for its records (max.block.ms) is called
// again after one of them failed at delivery.timeout.ms: it must not
// commit without the record (Kafka's TransactionManager is abortable from
// the failed batch on), however the failure reached the producer.
TEST_F(ProducerDeliveryTest, ARepeatedCommitAfterARecordFailedWhileNobodyWaitedIsAbortable) {
  auto black_hole = sys.spawn([](caf::event_based_actor* self) -> caf::behavior {
    self->set_default_handler(caf::drop); // markers too: never answered
    return {[](const produce_request&) -> caf::result<produce_response> {
      return caf::delegated<produce_response>{}; // never answered
    }};
  });
  network = [black_hole](const std::string& address, const caf::actor& a) {
    return address == "partition:t-0" ? black_hole : a;
  };
  start_node();
  create_topic("t", 1);
  producer_config cfg;
  cfg.transactional_id = "tx";
  cfg.max_block_ms = 300;
  cfg.request_timeout_ms = 300;
  cfg.delivery_timeout_ms = 1000;
  status seen;
  {
    producer p{sys, broker(), cfg};
    auto driver = deterministic_driver();
    p.set_driver(driver);
    p.init_transactions();
    p.begin_transaction();
    p.send({"t", 0, "k", "v", {}, -1}, [&seen](const record_metadata&, const status& st) { seen = st; });
    auto first = error_of([&] { p.commit_transaction(); });
    EXPECT_EQ(first.code, error_code::request_timed_out) << first.what;
    EXPECT_EQ(first.cls, error_class::retriable); // may be called again (KIP-588)
    EXPECT_TRUE(seen.ok());                       // not failed yet
    driver.sleep_ms(cfg.delivery_timeout_ms);     // nobody waits while the record fails
    EXPECT_EQ(seen.code(), error_code::request_timed_out);
    auto again = error_of([&] { p.commit_transaction(); });
    EXPECT_EQ(again.code, error_code::request_timed_out) << again.what;
    EXPECT_EQ(again.cls, error_class::abortable);
    EXPECT_EQ(describe("tx").state, "Ongoing"); // no EndTxn was sent
  }
  sched.run(); // the producer's session ends
  caf::anon_send_exit(black_hole, caf::exit_reason::kill);
  sched.run();
}

TEST_F(ProducerDeliveryTest, FlushAfterTheNodeStoppedEndsWithinDeliveryTimeout) {
  start_node();
  create_topic("t", 1);
  producer_config cfg;
  cfg.delivery_timeout_ms = 400;
  cfg.request_timeout_ms = 300;
  cfg.linger_ms = 1000;
  producer p{sys, broker(), cfg};
  p.set_driver(deterministic_driver());
  p.send({"t", 0, "k", "a", {}, -1});
  p.flush();
  auto f = p.send({"t", 0, "k", "b", {}, -1});
  stop_node();
  auto before = sim_ms();
  EXPECT_EQ(error_of([&] { p.flush(); }).code, error_code::request_timed_out);
  EXPECT_LE(sim_ms() - before, cfg.delivery_timeout_ms + cfg.retry_backoff_ms);
  ASSERT_TRUE(ready(f));
  EXPECT_THROW(f.get(), kafka_exception);
  caf::anon_send_exit(p.session_actor(), caf::exit_reason::kill);
  sched.run();
}

TEST_F(ProducerDeliveryTest, SendOffsetsForAnUnknownTopicEndsWithinMaxBlockMs) {
  start_node();
  create_topic("t", 1);
  producer_config cfg;
  cfg.transactional_id = "tx";
  cfg.max_block_ms = 500;
  producer p{sys, broker(), cfg};
  p.set_driver(deterministic_driver());
  p.init_transactions();
  p.begin_transaction();
  p.send({"t", 0, "k", "a", {}, -1});
  auto before = sim_ms();
  auto e = error_of([&] { p.send_offsets_to_transaction({{{"no-such-topic", 0}, 5}}, "group"); });
  EXPECT_EQ(e.code, error_code::request_timed_out) << e.what;
  EXPECT_TRUE(e.says("UNKNOWN_TOPIC_OR_PARTITION")) << e.what;
  EXPECT_LE(sim_ms() - before, cfg.max_block_ms + cfg.retry_backoff_ms);
  p.abort_transaction(); // the producer goes on
  p.begin_transaction();
  p.send({"t", 0, "k", "b", {}, -1});
  p.commit_transaction();
  sched.run();
  EXPECT_EQ(visible_values(tp, isolation_level::read_committed), (std::vector<std::string>{"b"}));
}

// A partition leader that takes produce requests and never answers (a node
// that went away without closing its connections).
TEST_F(ProducerDeliveryTest, ABatchWhoseLeaderNeverAnswersFailsAtDeliveryTimeoutNotRequestTimeout) {
  auto black_hole = sys.spawn([]() -> caf::behavior {
    return {[](const produce_request&) -> caf::result<produce_response> {
      return caf::delegated<produce_response>{}; // never answered
    }};
  });
  auto fake_broker = sys.spawn([black_hole]() -> caf::behavior {
    return {[black_hole](const metadata_request& r) {
      metadata_response m;
      for (auto& t : r.topics)
        m.topics.push_back({t, error_code::none, {caf::actor_cast<partition_actor>(black_hole)}});
      return m;
    }};
  });
  producer_config cfg;
  cfg.enable_idempotence = false; // no InitProducerId: the fake broker answers metadata only
  cfg.delivery_timeout_ms = 400;
  cfg.request_timeout_ms = 30000;
  auto p_owner = std::make_unique<producer>(sys, fake_broker, cfg);
  auto& p = *p_owner;
  p.set_driver(deterministic_driver());
  status seen;
  auto f = p.send({"t", 0, "k", "a", {}, -1},
                  [&seen](const record_metadata&, const status& st) { seen = st; });
  auto before = sim_ms();
  EXPECT_EQ(error_of([&] { p.flush(); }).code, error_code::request_timed_out);
  EXPECT_LE(sim_ms() - before, cfg.delivery_timeout_ms + cfg.retry_backoff_ms);
  EXPECT_EQ(seen.code(), error_code::request_timed_out);
  ASSERT_TRUE(ready(f));
  EXPECT_THROW(f.get(), kafka_exception);
  p_owner.reset(); // stops its session
  for (auto* a : {&black_hole, &fake_broker})
    caf::anon_send_exit(*a, caf::exit_reason::kill);
  sched.run();
}

} // namespace caftx::testing
