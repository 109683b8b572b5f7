// A node's metrics (docs/metrics.md): a thread-safe registry of counters,
// gauges and histograms with fixed buckets, each a family (name, help,
// type) of series told apart by their labels, and the renderer of
// Prometheus' text exposition format 0.0.4. The actors update series as
// things happen; an HTTP server thread only reads the registry (collect()),
// so a scrape never waits for an actor. No CAF.
//
// Kafka reports the same things through Yammer/JMX MBeans
// (kafka.server:type=...,name=...); docs/metrics.md maps every family to
// its MBean. A Kafka "per second" meter is a monotonic `_total` counter
// here: the rate is the dashboard's job (PromQL rate()).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace caftx::metrics {

enum class metric_type { counter, gauge, histogram };

/// "counter", "gauge", "histogram" (the `# TYPE` word).
const char* to_string(metric_type t);

/// Label name/value pairs in the order given (rendered in that order).
using label_set = std::vector<std::pair<std::string, std::string>>;

/// A family: every series of one metric name. `buckets` (histograms
/// only) are the finite upper bounds in increasing order; +Inf is implied.
struct family_def {
  std::string name;
  std::string help;
  metric_type type = metric_type::gauge;
  std::vector<double> buckets;
};

namespace detail {

struct cell {
  std::string family;
  label_set labels;
  std::atomic<double> value{0};
  // histograms: per-bucket (not cumulative) counts, the last one +Inf
  mutable std::mutex mtx;
  std::vector<double> bounds;
  std::vector<uint64_t> counts;
  uint64_t count = 0;
  double sum = 0;
};

} // namespace detail

/// A handle of one series; copies share it. An empty handle (no registry)
/// ignores every update. Thread-safe.
class series_handle {
public:
  series_handle() = default;
  explicit series_handle(std::shared_ptr<detail::cell> c) : c_(std::move(c)) {}
  explicit operator bool() const { return c_ != nullptr; }
  const std::shared_ptr<detail::cell>& cell() const { return c_; }

protected:
  std::shared_ptr<detail::cell> c_;
};

/// A counter series: only goes up.
class counter : public series_handle {
public:
  using series_handle::series_handle;
  /// Adds `by` (>= 0; a negative value is ignored).
  void inc(double by = 1) const;
  double value() const;
};

/// A gauge series: set to a value, or moved by a delta.
class gauge : public series_handle {
public:
  using series_handle::series_handle;
  void set(double v) const;
  void add(double delta) const;
  /// Sets the gauge to `v` if `v` is greater (a running maximum).
  void set_max(double v) const;
  double value() const;
};

/// A histogram series with its family's buckets.
class histogram : public series_handle {
public:
  using series_handle::series_handle;
  /// Counts `v` into the first bucket whose upper bound is >= v (Prometheus'
  /// `le`), or +Inf; adds it to the sum.
  void observe(double v) const;
};

/// The time from a request's arrival to its reply, in milliseconds, into
/// a histogram (Kafka's RequestMetrics TotalTimeMs). A copyable value:
/// observe() once where the reply is delivered. Empty: no-op.
class request_timer {
public:
  request_timer() = default;
  explicit request_timer(histogram h)
    : h_(std::move(h)), start_(h_ ? std::chrono::steady_clock::now()
                                  : std::chrono::steady_clock::time_point{}) {}
  void observe() const;

private:
  histogram h_;
  std::chrono::steady_clock::time_point start_;
};

/// A request_timer observed when this goes out of scope (a handler that
/// answers at once, on every return path), unless take() handed it on to
/// where the reply is delivered later.
class scoped_request_timer {
public:
  explicit scoped_request_timer(request_timer t) : t_(std::move(t)) {}
  scoped_request_timer(const scoped_request_timer&) = delete;
  scoped_request_timer& operator=(const scoped_request_timer&) = delete;
  ~scoped_request_timer() {
    if (armed_)
      t_.observe();
  }
  request_timer take() {
    armed_ = false;
    return t_;
  }

private:
  request_timer t_;
  bool armed_ = true;
};

/// One series as collect() saw it.
struct series_snapshot {
  label_set labels;
  double value = 0; // counters and gauges
  // histograms: cumulative counts per bound of the family's buckets, then +Inf
  std::vector<uint64_t> cumulative;
  uint64_t count = 0;
  double sum = 0;
};

struct family_snapshot {
  family_def def;
  std::vector<series_snapshot> series; // ordered by labels
};

/// Families and their series. Getting a series creates it (at 0) if it is
/// not there; its family is declared by the first get with that name (a
/// later get with another type of the same name throws std::logic_error).
/// Thread-safe; the handles stay valid after the registry is gone.
class registry {
public:
  counter get_counter(const family_def& f, label_set labels = {});
  gauge get_gauge(const family_def& f, label_set labels = {});
  histogram get_histogram(const family_def& f, label_set labels = {});

  /// A series created anew (at 0), replacing one with the same labels: for
  /// an owner (an actor restarted, a leadership back) whose predecessor may
  /// still remove() its own series after this; that removal then leaves
  /// this one alone, and the predecessor's writes go nowhere.
  counter replace_counter(const family_def& f, label_set labels = {});
  gauge replace_gauge(const family_def& f, label_set labels = {});

  /// Removes the series behind `c` if it is still that one (a series got
  /// again after a removal is a new one, which an old handle's removal
  /// leaves alone). Writes through `c` after that go nowhere.
  void remove(const std::shared_ptr<detail::cell>& c);

  /// Every family with at least one series, by name, each series by labels.
  std::vector<family_snapshot> collect() const;

private:
  std::shared_ptr<detail::cell> get(const family_def& f, label_set labels, bool replace = false);

  struct family {
    family_def def;
    std::map<label_set, std::shared_ptr<detail::cell>> series;
  };
  mutable std::mutex mtx_;
  std::map<std::string, family> families_;
};

/// Prometheus text format 0.0.4: per family `# HELP name help` (backslash
/// and newline escaped), `# TYPE name type`, then one line per series,
/// `name{a="x",b="y"} value` (label values with backslash, double quote
/// and newline escaped); a histogram as `name_bucket{...,le="b"}` with
/// cumulative counts for every bound and `le="+Inf"`, then `name_sum`
/// and `name_count`. Values: integers without a fraction, other numbers
/// in their shortest round-trip form, `+Inf`, `-Inf`, `NaN`.
std::string render_text(const std::vector<family_snapshot>& families);

/// The Content-Type of render_text's output.
inline constexpr const char* text_content_type = "text/plain; version=0.0.4; charset=utf-8";

/// A number as render_text writes it.
std::string format_value(double v);

/// A label value with `\`, `"` and newline escaped.
std::string escape_label_value(const std::string& v);

/// A share of a node-wide gauge that one component adds to (Kafka's
/// node-wide sums such as ReplicaManager's ProducerIdCount over the
/// partitions): set() moves the gauge by the change of this share; the
/// share is taken back when this is destroyed. Movable, not copyable.
class gauge_share {
public:
  gauge_share() = default;
  explicit gauge_share(gauge g) : g_(std::move(g)) {}
  gauge_share(gauge_share&& o) noexcept : g_(std::move(o.g_)), mine_(o.mine_) { o.g_ = gauge{}; }
  gauge_share& operator=(gauge_share&& o) noexcept;
  gauge_share(const gauge_share&) = delete;
  gauge_share& operator=(const gauge_share&) = delete;
  ~gauge_share() { g_.add(-mine_); }
  void set(double v);
  double value() const { return mine_; }

private:
  gauge g_;
  double mine_ = 0;
};

} // namespace caftx::metrics
