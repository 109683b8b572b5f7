// The metrics registry and its Prometheus text renderer (runtime/metrics.hpp,
// docs/metrics.md): exact output of text format 0.0.4.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "runtime/metrics.hpp"

using namespace caftx::metrics;

namespace {

const family_def requests{"reqs_total", "Requests served", metric_type::counter, {}};
const family_def depth{"queue_depth", "Items queued", metric_type::gauge, {}};
const family_def latency{"latency_ms", "Latency (ms)", metric_type::histogram, {1, 2.5, 10}};

std::string render(const registry& r) {
  return render_text(r.collect());
}

} // namespace

TEST(metrics_registry, an_empty_registry_renders_nothing) {
  registry r;
  EXPECT_EQ(render(r), "");
}

TEST(metrics_registry, counters_and_gauges_render_with_help_type_and_sorted_labels) {
  registry r;
  auto b = r.get_counter(requests, {{"request", "Produce"}});
  auto a = r.get_counter(requests, {{"request", "Fetch"}});
  a.inc();
  b.inc(2);
  b.inc(-5); // ignored: a counter never goes down
  auto g = r.get_gauge(depth);
  g.set(7);
  g.add(-2.5);
  EXPECT_EQ(render(r), "# HELP queue_depth Items queued\n"
                       "# TYPE queue_depth gauge\n"
                       "queue_depth 4.5\n"
                       "# HELP reqs_total Requests served\n"
                       "# TYPE reqs_total counter\n"
                       "reqs_total{request=\"Fetch\"} 1\n"
                       "reqs_total{request=\"Produce\"} 2\n");
}

TEST(metrics_registry, a_series_got_twice_is_one_series) {
  registry r;
  r.get_counter(requests, {{"request", "Produce"}}).inc();
  r.get_counter(requests, {{"request", "Produce"}}).inc();
  EXPECT_EQ(r.get_counter(requests, {{"request", "Produce"}}).value(), 2);
  ASSERT_EQ(r.collect().size(), 1u);
  EXPECT_EQ(r.collect()[0].series.size(), 1u);
}

TEST(metrics_registry, histogram_buckets_are_cumulative_with_inf_sum_and_count) {
  registry r;
  auto h = r.get_histogram(latency, {{"request", "EndTxn"}});
  for (double v : {0.5, 1.0, 2.0, 3.0, 100.0})
    h.observe(v);
  EXPECT_EQ(render(r), "# HELP latency_ms Latency (ms)\n"
                       "# TYPE latency_ms histogram\n"
                       "latency_ms_bucket{request=\"EndTxn\",le=\"1\"} 2\n"
                       "latency_ms_bucket{request=\"EndTxn\",le=\"2.5\"} 3\n"
                       "latency_ms_bucket{request=\"EndTxn\",le=\"10\"} 4\n"
                       "latency_ms_bucket{request=\"EndTxn\",le=\"+Inf\"} 5\n"
                       "latency_ms_sum{request=\"EndTxn\"} 106.5\n"
                       "latency_ms_count{request=\"EndTxn\"} 5\n");
}

TEST(metrics_registry, a_histogram_without_labels_has_only_le) {
  registry r;
  r.get_histogram(latency);
  EXPECT_EQ(render(r), "# HELP latency_ms Latency (ms)\n"
                       "# TYPE latency_ms histogram\n"
                       "latency_ms_bucket{le=\"1\"} 0\n"
                       "latency_ms_bucket{le=\"2.5\"} 0\n"
                       "latency_ms_bucket{le=\"10\"} 0\n"
                       "latency_ms_bucket{le=\"+Inf\"} 0\n"
                       "latency_ms_sum 0\n"
                       "latency_ms_count 0\n");
}

TEST(metrics_registry, label_values_and_help_are_escaped) {
  registry r;
  family_def f{"odd", "a \\ help\nwith \"quotes\"", metric_type::gauge, {}};
  r.get_gauge(f, {{"component", "partition a\"b\\c\nd"}}).set(1);
  EXPECT_EQ(render(r), "# HELP odd a \\\\ help\\nwith \"quotes\"\n"
                       "# TYPE odd gauge\n"
                       "odd{component=\"partition a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(metrics_registry, values_are_formatted_as_prometheus_reads_them) {
  EXPECT_EQ(format_value(0), "0");
  EXPECT_EQ(format_value(-3), "-3");
  EXPECT_EQ(format_value(123456789012), "123456789012");
  EXPECT_EQ(format_value(0.1), "0.1");
  EXPECT_EQ(format_value(2.5), "2.5");
  EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_value(std::nan("")), "NaN");
  EXPECT_EQ(format_value(1e300), "1e+300");
}

TEST(metrics_registry, removal_takes_only_the_series_of_that_handle) {
  registry r;
  auto old = r.get_gauge(depth, {{"q", "a"}});
  old.set(1);
  r.remove(old.cell());
  EXPECT_EQ(render(r), ""); // a family without series is not rendered
  old.set(5);               // goes nowhere
  auto fresh = r.get_gauge(depth, {{"q", "a"}});
  EXPECT_EQ(fresh.value(), 0);
  r.remove(old.cell()); // the new series stays
  ASSERT_EQ(r.collect().size(), 1u);
  EXPECT_EQ(r.collect()[0].series.size(), 1u);
}

TEST(metrics_registry, a_replaced_series_survives_its_predecessors_removal) {
  registry r;
  auto old = r.replace_gauge(depth, {{"q", "a"}});
  old.set(1);
  auto fresh = r.replace_gauge(depth, {{"q", "a"}});
  EXPECT_EQ(fresh.value(), 0);
  fresh.set(2);
  old.set(9);           // the predecessor's late write goes nowhere
  r.remove(old.cell()); // and so does its removal
  EXPECT_EQ(render(r), "# HELP queue_depth Items queued\n"
                       "# TYPE queue_depth gauge\n"
                       "queue_depth{q=\"a\"} 2\n");
  auto c = r.replace_counter(requests);
  c.inc();
  EXPECT_EQ(r.replace_counter(requests).value(), 0);
}

TEST(metrics_registry, a_name_keeps_its_first_type) {
  registry r;
  r.get_gauge(depth);
  family_def as_counter = depth;
  as_counter.type = metric_type::counter;
  EXPECT_THROW(r.get_counter(as_counter), std::logic_error);
}

TEST(metrics_registry, empty_handles_ignore_everything) {
  counter c;
  gauge g;
  histogram h;
  c.inc();
  g.set(3);
  g.set_max(4);
  h.observe(1);
  request_timer{}.observe();
  EXPECT_EQ(c.value(), 0);
  EXPECT_EQ(g.value(), 0);
  EXPECT_FALSE(static_cast<bool>(h));
}

TEST(metrics_registry, set_max_keeps_the_largest) {
  registry r;
  auto g = r.get_gauge(depth);
  g.set_max(3);
  g.set_max(1);
  g.set_max(7);
  EXPECT_EQ(g.value(), 7);
}

TEST(metrics_registry, gauge_shares_add_up_and_leave_with_their_owner) {
  registry r;
  auto total = r.get_gauge(depth);
  {
    gauge_share a{total};
    gauge_share b{total};
    a.set(3);
    b.set(4);
    EXPECT_EQ(total.value(), 7);
    a.set(1);
    EXPECT_EQ(total.value(), 5);
    gauge_share moved = std::move(b);
    EXPECT_EQ(total.value(), 5);
  }
  EXPECT_EQ(total.value(), 0);
}

TEST(metrics_registry, concurrent_updates_are_all_counted) {
  registry r;
  auto c = r.get_counter(requests);
  auto h = r.get_histogram(latency);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.inc();
        h.observe(2);
      }
    });
  for (auto& t : threads)
    t.join();
  EXPECT_EQ(c.value(), 40000);
  auto fams = r.collect();
  ASSERT_EQ(fams.size(), 2u);
  EXPECT_EQ(fams[0].def.name, "latency_ms");
  EXPECT_EQ(fams[0].series[0].count, 40000u);
  EXPECT_EQ(fams[0].series[0].cumulative, (std::vector<uint64_t>{0, 40000, 40000, 40000}));
}
