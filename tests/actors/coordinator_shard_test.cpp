// A transaction coordinator shard on the deterministic scheduler: the
// expiration of idle transactional ids (T11) in simulated time, and a load
// in chunks that keeps answering COORDINATOR_LOAD_IN_PROGRESS
// (docs/transactions.md §Transitions, §Load).
#include "fixture.hpp"

#include <caf/scheduled_actor.hpp>
#include <caf/send.hpp>
#include <leveldb/write_batch.h>

#include "actors/broker/node_context.hpp"
#include "actors/coordinator/txn_coordinator_actor.hpp"
#include "actors/partition/partition_actor.hpp"
#include "runtime/coordinator_records.hpp"

#include "runtime/partitioner.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"

namespace caftx::testing {
namespace {

const topic_partition t0{"t", 0};
constexpr int32_t one_day_ms = 86400000;
constexpr auto one_hour = std::chrono::milliseconds(3600000);

class CoordinatorShardTest : public node_fixture {
protected:
  /// Opens the stopped node's store (the node must not be running).
  std::unique_ptr<node_store> open_store() {
    node_store_options o;
    o.background_writer = false;
    auto s = node_store::open(dir, o);
    EXPECT_TRUE(s.ok()) << s.error().to_string();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  txn_response add(const std::string& tid, const init_producer_id_response& id,
                   std::vector<topic_partition> tps) {
    return call<txn_response>(coordinator_for(tid),
                              add_partitions_to_txn_request{tid, id.pid, id.epoch, tps});
  }

  /// The last record of `tid` in its shard's partition of
  /// `__transaction_state`, read as a consumer would; nullopt if none.
  std::optional<record> last_record_of(const std::string& tid) {
    topic_partition tp{transaction_state_topic, partition_for(tid, 50)};
    std::optional<record> last;
    auto key = coordinator_records::encode_txn_key(tid);
    for (auto& b : batches_of(fetch(tp, 0, isolation_level::read_uncommitted)))
      for (auto& r : b.records)
        if (r.key == key)
          last = r;
    return last;
  }
};

TEST_F(CoordinatorShardTest, IdleTransactionalIdExpiresFromStorageAndReturnsAsNewAlsoAfterRestart) {
  ncfg.transactional_id_expiration_ms = one_day_ms;
  ncfg.transaction_max_timeout_ms = 2147483647;
  start_node();
  create_topic("t", 1);
  const int32_t shard = partition_for("tx", 50);
  const int32_t open_shard = partition_for("open", 50);
  ASSERT_NE(shard, open_shard);
  // "tx" commits one transaction: CompleteCommit, last written now.
  auto p = init("tx");
  ASSERT_EQ(p.error, error_code::none);
  ASSERT_GE(p.pid.value, 0);
  ASSERT_EQ(add("tx", p, {t0}).error, error_code::none);
  ASSERT_EQ(call<end_txn_response>(coordinator_for("tx"), end_txn_request{"tx", p.pid, p.epoch, true})
              .error,
            error_code::none);
  sched.run();
  ASSERT_EQ(describe("tx").state, "CompleteCommit");
  // "open" keeps a transaction open for two days: never expired.
  auto o = init("open", 2 * one_day_ms);
  ASSERT_EQ(add("open", o, {t0}).error, error_code::none);

  // One ms short of transactional.id.expiration.ms: the hourly check keeps it.
  now_ms += one_day_ms - 1;
  sched.advance_time(one_hour);
  sched.run();
  EXPECT_EQ(describe("tx").state, "CompleteCommit");
  // Exactly expired: the next check deletes its card.
  now_ms += 1;
  sched.advance_time(one_hour);
  sched.run();
  EXPECT_EQ(describe("tx").error, error_code::transactional_id_not_found);
  EXPECT_EQ(describe("open").state, "Ongoing");
  // The old producer is unknown to the coordinator.
  EXPECT_EQ(call<end_txn_response>(coordinator_for("tx"),
                                   end_txn_request{"tx", p.pid, producer_epoch{1}, false})
              .error,
            error_code::invalid_producer_id_mapping);

  // The shard's partition ends with a tombstone for "tx"; "open"'s last
  // record is its Ongoing card.
  auto tomb = last_record_of("tx");
  ASSERT_TRUE(tomb.has_value());
  EXPECT_TRUE(tomb->null_value);
  auto open_card = last_record_of("open");
  ASSERT_TRUE(open_card.has_value());
  ASSERT_FALSE(open_card->null_value);
  auto decoded = coordinator_records::decode_txn_value("open", open_card->value);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->state, txn_state::ongoing);

  stop_node();
  start_node();
  // Still gone after the restart, and a returning id is new: a producer
  // id of the shard's new block (blocks only move forward), epoch 0.
  EXPECT_EQ(describe("tx").error, error_code::transactional_id_not_found);
  auto again = init("tx");
  ASSERT_EQ(again.error, error_code::none);
  EXPECT_GT(again.pid, p.pid);
  EXPECT_EQ(again.epoch, producer_epoch{0});
  EXPECT_EQ(describe("tx").state, "Empty");
  EXPECT_EQ(describe("open").state, "Ongoing");
}

TEST_F(CoordinatorShardTest, LargeShardAnswersLoadInProgressBetweenItsChunksThenServes) {
  const int32_t shard = partition_for("tx", 50);
  // 1 000 cards of ids of this shard in its partition, as an earlier node
  // would have appended them, "tx" among them: Empty, epoch 3.
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  {
    const topic_partition tp{transaction_state_topic, shard};
    leveldb::WriteBatch wb;
    txn_card tx;
    tx.transactional_id = "tx";
    tx.pid = producer_id{shard + 50 * 7};
    tx.epoch = producer_epoch{3};
    tx.txn_timeout_ms = 60000;
    tx.last_update_ms = now_ms;
    int64_t offset = 0;
    auto append = [&](const txn_card& c) {
      record_batch b;
      b.records.push_back({coordinator_records::encode_txn_key(c.transactional_id),
                           coordinator_records::encode_txn_value(c), {}, now_ms});
      auto bytes = v2::encode(b);
      v2::stamp(bytes, offset, 0);
      wb.Put(keys::log_entry(tp, offset++), bytes);
    };
    append(tx);
    for (int i = 0; offset < 1000; ++i) {
      auto tid = "load-" + std::to_string(i);
      if (partition_for(tid, 50) != shard)
        continue;
      txn_card c = tx;
      c.transactional_id = tid;
      c.pid = producer_id{shard + 50 * (100 + offset)};
      append(c);
    }
    wb.Put(keys::next_pid(shard), codec::encode_int64(1100));
    ASSERT_TRUE(store->write_now(wb).ok());
  }
  // The shard and its partition alone, loading 100 cards per message to
  // itself.
  auto ctx = std::make_shared<node_context>();
  ctx->config = ncfg;
  ctx->config.coordinator_load_chunk_cards = 100;
  ctx->store = std::move(store);
  ctx->directory = std::make_shared<actor_directory>();
  ctx->clock_ms = [this] { return now_ms; };
  spawn_topic_leaders(sys, ctx, transaction_state_topic, 50, {-1, -1});
  sched.run();
  auto coordinator = spawn_txn_coordinator(sys, ctx, shard);
  // Step the scheduler one message at a time, counting the chunks the
  // shard read, until the reply to one InitProducerId is there.
  int chunks = 0;
  auto step_until_reply = [&] {
    auto handle = self->request(coordinator, caf::infinite,
                                init_producer_id_request{true, "tx", 60000, no_producer_id,
                                                         no_producer_epoch});
    while (self->mailbox().empty() && sched.has_job()) {
      auto* next = sched.next_job<caf::scheduled_actor>().mailbox().peek();
      if (next != nullptr && next->content().match_elements<coordinator_load_chunk>())
        ++chunks;
      sched.run_once();
    }
    init_producer_id_response r;
    handle.receive([&](init_producer_id_response& x) { r = std::move(x); },
                   [&](caf::error& e) { ADD_FAILURE() << sys.render(e); });
    return r;
  };
  // The election and the first fetch come first (chunk 0: several
  // requests answered while they are on their way); the fetch is replayed
  // 100 records per message, the last of the 1 000 in the tenth step (9
  // messages after the first, direct one): every request before is
  // answered COORDINATOR_LOAD_IN_PROGRESS, between every two chunks.
  std::vector<std::pair<int, error_code>> answers;
  for (int i = 0; i < 40; ++i) {
    auto r = step_until_reply();
    answers.emplace_back(chunks, r.error);
    if (r.error != error_code::coordinator_load_in_progress) {
      // The same request, served: "tx" as loaded, epoch + 1.
      EXPECT_EQ(r.error, error_code::none);
      EXPECT_EQ(r.pid, producer_id{shard + 50 * 7});
      EXPECT_EQ(r.epoch, producer_epoch{4});
      break;
    }
  }
  ASSERT_FALSE(answers.empty());
  EXPECT_EQ(answers.back(), std::make_pair(9, error_code::none));
  for (int k = 0; k < 9; ++k)
    EXPECT_NE(std::find(answers.begin(), answers.end(),
                        std::make_pair(k, error_code::coordinator_load_in_progress)),
              answers.end())
      << "no request answered while loading after chunk " << k;
  for (size_t i = 0; i + 1 < answers.size(); ++i)
    EXPECT_EQ(answers[i].second, error_code::coordinator_load_in_progress) << i;
  caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
  for (auto& a : ctx->directory->all())
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  sched.run();
}

} // namespace
} // namespace caftx::testing
