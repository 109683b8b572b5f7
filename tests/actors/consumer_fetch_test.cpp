// The consumer against a fake partition leader that counts its fetches: a
// fetch that brings more than max.poll.records is returned over several
// polls without fetching again (Kafka's completed fetches), and seek()
// drops what was kept. Against a fake group coordinator whose commit
// marker arrives when the test says: the starting position waits for it
// (require_stable, KIP-447).
#include "fixture.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include <algorithm>
#include <limits>
#include <memory>
#include <ostream>

#include "actors/broker/node_fetch.hpp"
#include "actors/client/consumer.hpp"

namespace caftx::testing {
namespace {

// A fake broker's node-level fetch: fanned out to `leader` as the broker
// does (actors/broker/node_fetch.hpp).
auto node_fetch_handler(caf::event_based_actor* self, std::function<caf::actor()> leader) {
  return [self, leader](node_fetch_request& req) -> caf::result<node_fetch_response> {
    auto rp = self->make_response_promise<node_fetch_response>();
    node_fetch(self, std::move(req), [leader](const topic_partition&) { return caf::actor_cast<partition_actor>(leader()); }, 1000,
               rp);
    return rp;
  };
}

class ConsumerFetchTest : public node_fixture {
protected:
  const topic_partition tp{"t", 0};
  std::vector<int64_t> fetched_at; // fetch offsets, in arrival order
  caf::actor leader_fake, broker_fake;

  void SetUp() override {
    // Offsets 0..9, one record each, all visible; a fetch gets all from
    // its offset on.
    leader_fake = sys.spawn([this]() -> caf::behavior {
      return {[this](const fetch_request& r) {
        fetched_at.push_back(r.fetch_offset);
        fetch_response resp;
        resp.high_watermark = resp.last_stable_offset = 10;
        resp.log_start_offset = 0;
        if (r.fetch_offset > 10) {
          resp.error = error_code::offset_out_of_range;
          resp.message = "fetch offset " + std::to_string(r.fetch_offset) + " outside [0, 10]";
          return resp;
        }
        if (r.fetch_offset < 10) {
          record_batch b;
          b.base_offset = r.fetch_offset;
          for (int64_t o = r.fetch_offset; o < 10; ++o)
            b.records.push_back({"", std::to_string(o), {}, now_ms});
          resp.records = v2::encode(b);
        }
        return resp;
      },
      [](const list_offsets_request& r) {
        return list_offsets_response{error_code::none, r.timestamp == -2 ? 0 : 10};
      }};
    });
    broker_fake = sys.spawn([this](caf::event_based_actor* self) -> caf::behavior {
      return {[this](const metadata_request&) {
                return metadata_response{{topic_metadata{"t", error_code::none, {caf::actor_cast<partition_actor>(leader_fake)}}}};
              },
              node_fetch_handler(self, [this] { return leader_fake; })};
    });
  }

  void TearDown() override {
    caf::anon_send_exit(leader_fake, caf::exit_reason::kill);
    caf::anon_send_exit(broker_fake, caf::exit_reason::kill);
    sched.run();
  }

  static std::vector<std::string> values(const std::vector<consumer_record>& rs) {
    std::vector<std::string> v;
    for (auto& r : rs)
      v.push_back(r.value);
    return v;
  }
};

TEST_F(ConsumerFetchTest, OneFetchIsReturnedOverSeveralPollsWithoutFetchingAgain) {
  consumer c{sys, broker_fake, properties{{"max.poll.records", "4"}}};
  c.set_driver(deterministic_driver());
  c.assign({tp});
  c.seek(tp, 0);
  EXPECT_EQ(values(c.poll(std::chrono::milliseconds(0))),
            (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(c.position(tp), 4);
  EXPECT_EQ(values(c.poll(std::chrono::milliseconds(0))),
            (std::vector<std::string>{"4", "5", "6", "7"}));
  EXPECT_EQ(values(c.poll(std::chrono::milliseconds(0))), (std::vector<std::string>{"8", "9"}));
  EXPECT_EQ(fetched_at, std::vector<int64_t>{0});
  EXPECT_EQ(c.position(tp), 10);
  // seek drops the kept records: the next poll fetches from there.
  c.seek(tp, 6);
  EXPECT_EQ(values(c.poll(std::chrono::milliseconds(0))),
            (std::vector<std::string>{"6", "7", "8", "9"}));
  EXPECT_EQ(fetched_at, (std::vector<int64_t>{0, 6}));
}

// OFFSET_OUT_OF_RANGE above the leader's log end is a stale leader's
// answer (no clean election loses committed records): the consumer keeps
// its position and looks the leader up again; only if the answer lasts
// default.api.timeout.ms does auto.offset.reset move it (here to the
// earliest offset).
TEST_F(ConsumerFetchTest, APositionAboveTheLogEndIsKeptUntilTheApiTimeoutThenReset) {
  consumer c{sys, broker_fake,
             properties{{"auto.offset.reset", "earliest"}, {"default.api.timeout.ms", "5000"}}};
  c.set_driver(deterministic_driver());
  c.assign({tp});
  c.seek(tp, 12);
  auto start = now_ms;
  std::vector<consumer_record> got;
  for (int i = 0; i < 200 && got.empty(); ++i) {
    got = c.poll(std::chrono::milliseconds(100));
    if (got.empty()) {
      EXPECT_TRUE(now_ms - start >= 5000 || c.position(tp) == 12) << "reset early, at " << now_ms - start;
    }
  }
  EXPECT_GE(now_ms - start, 5000);
  ASSERT_FALSE(got.empty());
  EXPECT_EQ(got.front().value, "0");
  EXPECT_GT(std::count(fetched_at.begin(), fetched_at.end(), 12), 1);
}

// A group "g" whose committed offset of t-0 is 50 while a transaction that
// committed offset 100 has its COMMIT marker on the way to the group
// coordinator: it arrives at `marker_at_ms` (simulated time). The fake
// answers OffsetFetch as caftx's group coordinator does: with
// require_stable, UNSTABLE_OFFSET_COMMIT while the offsets are pending.
class ConsumerCommittedOffsetTest : public node_fixture {
protected:
  const topic_partition tp{"t", 0};
  int64_t marker_at_ms = std::numeric_limits<int64_t>::max();
  struct offset_fetch {
    int64_t at_ms;
    bool require_stable;
    bool operator==(const offset_fetch& o) const {
      return at_ms == o.at_ms && require_stable == o.require_stable;
    }
    friend void PrintTo(const offset_fetch& f, std::ostream* os) {
      *os << "{" << f.at_ms << ", require_stable " << f.require_stable << "}";
    }
  };
  std::vector<offset_fetch> offset_fetches;
  caf::actor leader_fake, group_fake, broker_fake;

  void SetUp() override {
    // Any offset holds a record whose value is the offset.
    leader_fake = sys.spawn([this]() -> caf::behavior {
      return {[this](const fetch_request& r) {
        fetch_response resp;
        resp.high_watermark = resp.last_stable_offset = 1000;
        record_batch b;
        b.base_offset = r.fetch_offset;
        b.records.push_back({"", std::to_string(r.fetch_offset), {}, now_ms});
        resp.records = v2::encode(b);
        return resp;
      }};
    });
    group_fake = sys.spawn([this]() -> caf::behavior {
      return {[this](const offset_fetch_request& r) {
        offset_fetches.push_back({now_ms, r.require_stable});
        bool marker_written = now_ms >= marker_at_ms;
        offset_fetch_response resp;
        if (r.require_stable && !marker_written)
          resp.error = error_code::unstable_offset_commit;
        resp.offsets.push_back(marker_written ? 100 : 50);
        return resp;
      }};
    });
    broker_fake = sys.spawn([this](caf::event_based_actor* self) -> caf::behavior {
      return {
        node_fetch_handler(self, [this] { return leader_fake; }),
        [this](const metadata_request&) {
          return metadata_response{{topic_metadata{"t", error_code::none, {caf::actor_cast<partition_actor>(leader_fake)}}}};
        },
        [this](const find_coordinator_request& r) {
          EXPECT_EQ(r.key_type, 0);
          EXPECT_EQ(r.key, "g");
          return find_coordinator_response{error_code::none, "", 0, group_fake};
        },
      };
    });
  }

  void TearDown() override {
    for (auto* a : {&leader_fake, &group_fake, &broker_fake})
      caf::anon_send_exit(*a, caf::exit_reason::kill);
    sched.run();
  }

  std::unique_ptr<consumer> consumer_of_g(const std::string& isolation) {
    auto c = std::make_unique<consumer>(
      sys, broker_fake,
      properties{{"group.id", "g"}, {"isolation.level", isolation}, {"retry.backoff.ms", "100"},
                 {"default.api.timeout.ms", "1000"}});
    c->set_driver(deterministic_driver());
    c->assign({tp});
    return c;
  }
};

TEST_F(ConsumerCommittedOffsetTest, ConsumerStartedBeforeTheCommitMarkerWaitsAndStartsAtItsOffset) {
  // Kafka's consumer fetches committed offsets with require_stable at
  // either isolation level.
  for (auto isolation : {"read_committed", "read_uncommitted"}) {
    SCOPED_TRACE(isolation);
    offset_fetches.clear();
    auto start = now_ms;
    marker_at_ms = start + 250;
    auto c = consumer_of_g(isolation);
    auto records = c->poll(std::chrono::milliseconds(1000));
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].offset, 100); // not 50: that work is done
    EXPECT_EQ(offset_fetches, (std::vector<offset_fetch>{{start, true},
                                                         {start + 100, true},
                                                         {start + 200, true},
                                                         {start + 300, true}}));
  }
}

TEST_F(ConsumerCommittedOffsetTest, OffsetStillUnstableAtTheTimeoutGivesNoRecordsOrATimeout) {
  auto start = now_ms;
  auto c = consumer_of_g("read_committed");
  // poll: nothing, no error, asked every retry.backoff.ms until its timeout.
  EXPECT_TRUE(c->poll(std::chrono::milliseconds(300)).empty());
  EXPECT_EQ(offset_fetches.size(), 4u);
  EXPECT_EQ(now_ms, start + 300);
  // position: REQUEST_TIMED_OUT after default.api.timeout.ms.
  try {
    c->position(tp);
    ADD_FAILURE() << "position() returned while the offset was unstable";
  } catch (const kafka_exception& e) {
    EXPECT_EQ(e.code(), error_code::request_timed_out);
    EXPECT_EQ(e.cls(), error_class::retriable);
    EXPECT_NE(std::string(e.what()).find("UNSTABLE_OFFSET_COMMIT"), std::string::npos) << e.what();
  }
  EXPECT_EQ(now_ms, start + 1300);
  // The marker arrives: the position is the offset it committed.
  marker_at_ms = now_ms;
  EXPECT_EQ(c->position(tp), 100);
  EXPECT_EQ(c->committed(tp), std::optional<int64_t>{100});
}

} // namespace
} // namespace caftx::testing
