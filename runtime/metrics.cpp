#include "runtime/metrics.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace caftx::metrics {

const char* to_string(metric_type t) {
  switch (t) {
    case metric_type::counter: return "counter";
    case metric_type::gauge: return "gauge";
    case metric_type::histogram: return "histogram";
  }
  return "untyped";
}

namespace {

void atomic_add(std::atomic<double>& a, double by) {
  auto cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + by, std::memory_order_relaxed)) {
  }
}

} // namespace

void counter::inc(double by) const {
  if (c_ && by > 0)
    atomic_add(c_->value, by);
}

double counter::value() const {
  return c_ ? c_->value.load(std::memory_order_relaxed) : 0;
}

void gauge::set(double v) const {
  if (c_)
    c_->value.store(v, std::memory_order_relaxed);
}

void gauge::add(double delta) const {
  if (c_ && delta != 0)
    atomic_add(c_->value, delta);
}

void gauge::set_max(double v) const {
  if (!c_)
    return;
  auto cur = c_->value.load(std::memory_order_relaxed);
  while (cur < v && !c_->value.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

double gauge::value() const {
  return c_ ? c_->value.load(std::memory_order_relaxed) : 0;
}

void histogram::observe(double v) const {
  if (!c_)
    return;
  auto i = static_cast<size_t>(std::lower_bound(c_->bounds.begin(), c_->bounds.end(), v)
                               - c_->bounds.begin());
  std::lock_guard<std::mutex> guard{c_->mtx};
  ++c_->counts[i];
  ++c_->count;
  c_->sum += v;
}

void request_timer::observe() const {
  if (!h_)
    return;
  std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start_;
  h_.observe(ms.count());
}

gauge_share& gauge_share::operator=(gauge_share&& o) noexcept {
  if (this != &o) {
    g_.add(-mine_);
    g_ = std::move(o.g_);
    mine_ = o.mine_;
    o.g_ = gauge{};
  }
  return *this;
}

void gauge_share::set(double v) {
  g_.add(v - mine_);
  mine_ = v;
}

std::shared_ptr<detail::cell> registry::get(const family_def& f, label_set labels, bool replace) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto [i, fresh] = families_.try_emplace(f.name);
  auto& fam = i->second;
  if (fresh)
    fam.def = f;
  else if (fam.def.type != f.type)
    throw std::logic_error("metric " + f.name + " declared as " + to_string(fam.def.type)
                           + ", used as " + to_string(f.type));
  auto& slot = fam.series[labels];
  if (!slot || replace) {
    slot = std::make_shared<detail::cell>();
    slot->family = f.name;
    slot->labels = std::move(labels);
    if (f.type == metric_type::histogram) {
      slot->bounds = fam.def.buckets;
      slot->counts.assign(slot->bounds.size() + 1, 0);
    }
  }
  return slot;
}

counter registry::get_counter(const family_def& f, label_set labels) {
  return counter{get(f, std::move(labels))};
}

gauge registry::get_gauge(const family_def& f, label_set labels) {
  return gauge{get(f, std::move(labels))};
}

counter registry::replace_counter(const family_def& f, label_set labels) {
  return counter{get(f, std::move(labels), true)};
}

gauge registry::replace_gauge(const family_def& f, label_set labels) {
  return gauge{get(f, std::move(labels), true)};
}

histogram registry::get_histogram(const family_def& f, label_set labels) {
  return histogram{get(f, std::move(labels))};
}

void registry::remove(const std::shared_ptr<detail::cell>& c) {
  if (!c)
    return;
  std::lock_guard<std::mutex> guard{mtx_};
  auto f = families_.find(c->family);
  if (f == families_.end())
    return;
  auto s = f->second.series.find(c->labels);
  if (s != f->second.series.end() && s->second == c)
    f->second.series.erase(s);
}

std::vector<family_snapshot> registry::collect() const {
  std::lock_guard<std::mutex> guard{mtx_};
  std::vector<family_snapshot> out;
  for (auto& [name, fam] : families_) {
    if (fam.series.empty())
      continue;
    family_snapshot fs;
    fs.def = fam.def;
    for (auto& [labels, c] : fam.series) {
      series_snapshot s;
      s.labels = labels;
      if (fam.def.type == metric_type::histogram) {
        std::lock_guard<std::mutex> g{c->mtx};
        uint64_t total = 0;
        for (auto n : c->counts) {
          total += n;
          s.cumulative.push_back(total);
        }
        s.count = c->count;
        s.sum = c->sum;
      } else {
        s.value = c->value.load(std::memory_order_relaxed);
      }
      fs.series.push_back(std::move(s));
    }
    out.push_back(std::move(fs));
  }
  return out;
}

std::string format_value(double v) {
  if (std::isnan(v))
    return "NaN";
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9007199254740992.0) // 2^53: exact integers
    return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

namespace {

// `\` and newline escaped, and `"` too when `quote` (a label value; HELP
// text keeps its quotes).
std::string escape(const std::string& v, bool quote) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"' && quote)
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

} // namespace

std::string escape_label_value(const std::string& v) {
  return escape(v, true);
}

namespace {

std::string escape_help(const std::string& v) {
  return escape(v, false);
}

// `{a="x",b="y"}` with `extra` (le) last; "" without any label.
std::string label_text(const label_set& labels, const std::pair<std::string, std::string>* extra) {
  if (labels.empty() && !extra)
    return {};
  std::string out = "{";
  bool first = true;
  auto put = [&](const std::string& k, const std::string& v) {
    out += (first ? "" : ",") + k + "=\"" + escape_label_value(v) + "\"";
    first = false;
  };
  for (auto& [k, v] : labels)
    put(k, v);
  if (extra)
    put(extra->first, extra->second);
  return out + "}";
}

} // namespace

std::string render_text(const std::vector<family_snapshot>& families) {
  std::string out;
  for (auto& f : families) {
    auto& name = f.def.name;
    out += "# HELP " + name + " " + escape_help(f.def.help) + "\n";
    out += "# TYPE " + name + " " + to_string(f.def.type) + "\n";
    for (auto& s : f.series) {
      if (f.def.type != metric_type::histogram) {
        out += name + label_text(s.labels, nullptr) + " " + format_value(s.value) + "\n";
        continue;
      }
      for (size_t i = 0; i < s.cumulative.size(); ++i) {
        std::pair<std::string, std::string> le{
          "le", i < f.def.buckets.size() ? format_value(f.def.buckets[i]) : "+Inf"};
        out += name + "_bucket" + label_text(s.labels, &le) + " "
               + std::to_string(s.cumulative[i]) + "\n";
      }
      out += name + "_sum" + label_text(s.labels, nullptr) + " " + format_value(s.sum) + "\n";
      out += name + "_count" + label_text(s.labels, nullptr) + " " + std::to_string(s.count)
             + "\n";
    }
  }
  return out;
}

} // namespace caftx::metrics
