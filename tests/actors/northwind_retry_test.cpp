// The Northwind load sent by an idempotent producer whose every batch is
// retried twice, as if the first two replies were dropped: the topic holds
// every order once, in order, at dense offsets, and every retry was
// answered with the original offset.
#include "fixture.hpp"

#include "northwind.hpp"

namespace caftx::testing {
namespace {

class NorthwindRetry : public node_fixture {};

TEST_F(NorthwindRetry, RetryingEveryBatchTwiceLeavesTheTopicUnchanged) {
  start_node();
  create_topic("orders", 1);
  auto id = call<init_producer_id_response>(broker(), init_producer_id_request{});
  ASSERT_EQ(id.error, error_code::none);
  const topic_partition tp{"orders", 0};
  auto lines = northwind::read_order_lines(std::string(CAFTX_NORTHWIND_DIR) + "/order_details.csv");
  std::vector<northwind::order> orders;
  northwind::for_each_order(std::string(CAFTX_NORTHWIND_DIR) + "/orders.csv", lines,
                            [&](const northwind::order& o) { orders.push_back(o); });
  ASSERT_EQ(orders.size(), 830u);
  int32_t sequence = 0;
  int64_t expected_offset = 0;
  for (size_t first = 0; first < orders.size(); first += 7) {
    record_batch b;
    b.pid = id.pid;
    b.epoch = id.epoch;
    b.base_sequence = sequence;
    for (size_t i = first; i < std::min(first + 7, orders.size()); ++i)
      b.records.push_back({std::to_string(orders[i].order_id), northwind::encode_order(orders[i]), {}, now_ms});
    sequence += b.record_count();
    for (int attempt = 0; attempt < 3; ++attempt) {
      auto r = produce(tp, "", b);
      ASSERT_EQ(r.error, error_code::none) << "batch at " << first << " attempt " << attempt;
      EXPECT_EQ(r.base_offset, expected_offset) << "batch at " << first << " attempt " << attempt;
    }
    expected_offset += b.record_count();
  }
  auto f = fetch(tp, 0, isolation_level::read_committed);
  EXPECT_EQ(f.high_watermark, 830);
  int64_t offset = 0;
  size_t k = 0;
  for (auto& b : batches_of(f))
    for (auto& r : b.records) {
      ASSERT_LT(k, orders.size());
      EXPECT_EQ(r.key, std::to_string(orders[k].order_id));
      EXPECT_EQ(b.base_offset + static_cast<int64_t>(&r - &b.records[0]), offset);
      ++k;
      ++offset;
    }
  EXPECT_EQ(k, 830u);
}

} // namespace
} // namespace caftx::testing
