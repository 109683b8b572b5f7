#include "fixture.hpp"

#include "actors/client/read_committed_filter.hpp"

namespace caftx::testing {

std::vector<std::string> node_fixture::visible_values(const topic_partition& tp,
                                                      isolation_level iso) {
  auto r = fetch(tp, 0, iso);
  EXPECT_EQ(r.error, error_code::none);
  auto f = filter_fetched(tp, 0, batches_of(r), r.aborted_transactions, iso, 1000000);
  std::vector<std::string> values;
  for (auto& rec : f.records)
    values.push_back(rec.value);
  return values;
}

} // namespace caftx::testing
