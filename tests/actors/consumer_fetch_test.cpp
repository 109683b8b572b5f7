// The consumer against a fake partition leader that counts its fetches: a
// fetch that brings more than max.poll.records is returned over several
// polls without fetching again (Kafka's completed fetches), and seek()
// drops what was kept.
#include "fixture.hpp"

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>

#include "actors/client/consumer.hpp"

namespace caftx::testing {
namespace {

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
        if (r.fetch_offset < 10) {
          record_batch b;
          b.base_offset = r.fetch_offset;
          for (int64_t o = r.fetch_offset; o < 10; ++o)
            b.records.push_back({"", std::to_string(o), {}, now_ms});
          resp.records = v2::encode(b);
        }
        return resp;
      }};
    });
    broker_fake = sys.spawn([this]() -> caf::behavior {
      return {[this](const metadata_request&) {
        return metadata_response{{topic_metadata{"t", error_code::none, {leader_fake}}}};
      }};
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

} // namespace
} // namespace caftx::testing
