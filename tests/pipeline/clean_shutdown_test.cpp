// A clean node stop writes every partition's producer-state snapshot at its
// log end (docs/producer-state.md §Snapshots), so the next start replays
// nothing.
#include "fixture.hpp"

#include "actors/client/producer.hpp"
#include "runtime/record_batch_v2.hpp"
#include "storage/codec.hpp"
#include "storage/node_store.hpp"

namespace caftx::testing {
namespace {

class CleanShutdownTest : public threaded_fixture {};

TEST_F(CleanShutdownTest, StopWritesASnapshotAtEachLogEnd) {
  start_node();
  ASSERT_TRUE(n->create_topic("t", 2).ok());
  {
    producer p{sys, n->broker(), properties{}};
    for (int i = 0; i < 5; ++i)
      p.send({"t", 0, "", "v" + std::to_string(i), {}, -1});
    p.send({"t", 1, "", "w", {}, -1});
    p.flush();
  }
  n->stop();
  n.reset();
  auto store = node_store::open(dir, node_store_options{});
  ASSERT_TRUE(store.ok()) << store.error().to_string();
  auto last_snapshot = [&](int32_t partition) {
    auto s = (*store)->last(keys::producer_snapshot_prefix({"t", partition}));
    return s ? keys::offset_of(s->first) : -1;
  };
  auto end_of = [&](int32_t partition) {
    auto l = (*store)->last(keys::log_prefix({"t", partition}));
    if (!l)
      return int64_t{-1};
    auto h = v2::read_header(l->second);
    return h.ok() ? h->last_offset() + 1 : -1;
  };
  EXPECT_EQ(end_of(0), 5);
  EXPECT_EQ(last_snapshot(0), 5);
  EXPECT_EQ(end_of(1), 1);
  EXPECT_EQ(last_snapshot(1), 1);
}

} // namespace
} // namespace caftx::testing
