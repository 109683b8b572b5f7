#include "fixture.hpp"

#include "actors/client/read_committed_filter.hpp"

namespace caftx::testing {

std::vector<std::string> node_fixture::visible_values(const topic_partition& tp,
                                                      isolation_level iso, int64_t from) {
  auto r = fetch(tp, from, iso);
  EXPECT_EQ(r.error, error_code::none);
  auto f = filter_fetched(tp, from, batches_of(r), r.aborted_transactions, iso, 1000000);
  std::vector<std::string> values;
  for (auto& rec : f.records)
    values.push_back(rec.value);
  return values;
}

} // namespace caftx::testing
