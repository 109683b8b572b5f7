#include "pipeline.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <chrono>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "actors/broker/node.hpp"
#include "actors/client/admin.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"

namespace northwind {

using caftx::consumer;
using caftx::kafka_exception;
using caftx::producer;
using caftx::topic_partition;
using namespace std::chrono_literals;

namespace {

// Every committed record of `topic` below the end offsets (last stable
// offsets) seen at the start of the call.
std::vector<caftx::consumer_record> read_all(const cluster_access& at, const std::string& topic,
                                             int32_t partitions) {
  auto owned = at.consumer({{"isolation.level", "read_committed"},
                            {"auto.offset.reset", "earliest"},
                            {"max.poll.records", "10000"}});
  auto& c = *owned;
  std::vector<topic_partition> tps;
  for (int32_t p = 0; p < partitions; ++p)
    tps.push_back({topic, p});
  c.assign(tps);
  std::map<topic_partition, int64_t> ends;
  for (auto& tp : tps) {
    ends[tp] = c.end_offset(tp);
    c.seek(tp, 0);
  }
  auto done = [&] {
    for (auto& tp : tps)
      if (c.position(tp) < ends[tp])
        return false;
    return true;
  };
  std::vector<caftx::consumer_record> out;
  while (!done())
    for (auto& r : c.poll(100ms))
      if (r.offset < ends[{r.topic, r.partition}])
        out.push_back(std::move(r));
  return out;
}

void call_hook(const crash_hook& hook, const std::string& point, int txn, int send) {
  if (hook)
    hook(point, txn, send);
}

} // namespace

namespace {

// A producer or consumer (Client) reaching caftx the way `at` says.
template <class Client>
std::unique_ptr<Client> make_client(const cluster_access& at, caftx::properties props) {
  if (!at.bootstrap_servers.empty()) {
    props["bootstrap.servers"] = at.bootstrap_servers;
    return std::make_unique<Client>(props);
  }
  auto c = std::make_unique<Client>(*at.sys, at.broker, props);
  c->set_driver(at.driver);
  return c;
}

} // namespace

std::unique_ptr<caftx::producer> cluster_access::producer(caftx::properties props) const {
  return make_client<caftx::producer>(*this, std::move(props));
}

std::unique_ptr<caftx::consumer> cluster_access::consumer(caftx::properties props) const {
  return make_client<caftx::consumer>(*this, std::move(props));
}

caftx::status cluster_access::create_topic(const std::string& name, int32_t partitions) const {
  if (bootstrap_servers.empty())
    return caftx::create_topic(*sys, broker, name, partitions);
  caftx::admin_client admin{caftx::properties{{"bootstrap.servers", bootstrap_servers}}};
  return admin.create_topic(name, partitions);
}

caftx::status_or<std::string>
cluster_access::transaction_state(const std::string& transactional_id) const {
  auto d = [&] {
    if (bootstrap_servers.empty())
      return caftx::describe_transaction(*sys, broker, transactional_id);
    caftx::admin_client admin{caftx::properties{{"bootstrap.servers", bootstrap_servers}}};
    return admin.describe_transaction(transactional_id);
  }();
  if (!d.ok())
    return d.error();
  return d->state;
}

void create_topics(caf::actor_system& sys, const caf::actor& broker) {
  create_topics(cluster_access::embedded(sys, broker));
}

void create_topics(const cluster_access& at) {
  const std::vector<std::pair<const char*, int32_t>> topics = {
    {orders_topic, 1}, {confirmed_topic, 3}, {rejected_topic, 1}, {stock_topic, 4}};
  for (auto& [name, n] : topics) {
    auto st = at.create_topic(name, n);
    if (!st.ok() && st.code() != caftx::error_code::topic_already_exists)
      throw std::runtime_error("create topic " + std::string(name) + ": " + st.to_string());
  }
}

int64_t load_orders(caf::actor_system& sys, const caf::actor& broker, const std::string& dir,
                    const caftx::client_driver& driver) {
  return load_orders(cluster_access::embedded(sys, broker, driver), dir);
}

int64_t load_orders(const cluster_access& at, const std::string& dir) {
  auto lines = read_order_lines(dir + "/order_details.csv");
  auto owned = at.producer({{"transactional.id", "order-loader"}});
  auto& p = *owned;
  p.init_transactions(); // finishes or aborts a load that was interrupted
  // The load is one transaction: committed orders mean it is complete (an
  // aborted load leaves only aborted records, which read_committed skips).
  // A complete load must be of this very input.
  auto loaded = read_all(at, orders_topic, 1);
  if (!loaded.empty()) {
    std::vector<std::pair<std::string, std::string>> input;
    for_each_order(dir + "/orders.csv", lines, [&](const order& o) {
      input.emplace_back(std::to_string(o.order_id), encode_order(o));
    });
    bool same = input.size() == loaded.size();
    for (size_t i = 0; same && i < input.size(); ++i)
      same = input[i].first == loaded[i].key && input[i].second == loaded[i].value;
    if (!same)
      throw std::runtime_error("the data directory holds a load of " + std::to_string(loaded.size())
                               + " orders that differs from the " + std::to_string(input.size())
                               + " orders of " + dir + "; use another --data-dir");
    return 0;
  }
  p.begin_transaction();
  int64_t n = 0;
  try {
    for_each_order(dir + "/orders.csv", lines, [&](const order& o) {
      p.send({orders_topic, 0, std::to_string(o.order_id), encode_order(o), {}, -1});
      ++n;
    });
  } catch (const std::runtime_error&) {
    p.abort_transaction(); // nothing of this load becomes visible
    throw;
  }
  p.commit_transaction();
  return n;
}

void run_processor(caf::actor_system& sys, const caf::actor& broker, const std::string& dir,
                   int orders_per_transaction, const crash_hook& hook, int& committed,
                   const caftx::client_driver& driver) {
  run_processor(cluster_access::embedded(sys, broker, driver), dir, orders_per_transaction, hook,
                committed);
}

void run_processor(const cluster_access& at, const std::string& dir, int orders_per_transaction,
                   const crash_hook& hook, int& committed) {
  const stock_map opening = read_products(dir + "/products.csv");
  int txn = 0;
  auto owned_producer =
    at.producer({{"transactional.id", processor_id}, {"transaction.timeout.ms", "60000"}});
  auto& p = *owned_producer;
  p.set_fault_hook([&](const char* point) { call_hook(hook, point, txn, -1); });
  p.init_transactions(); // fences an earlier incarnation, finishes its transaction
  // The stock is rebuilt from what was committed, nowhere else.
  stock_map stock = opening;
  for (auto& r : read_all(at, stock_topic, 4)) {
    auto s = decode_stock_reduced(r.value);
    stock[s.product_id] = s.new_stock;
  }
  auto owned_in = at.consumer({{"isolation.level", "read_committed"},
                               {"group.id", processor_id},
                               {"auto.offset.reset", "earliest"},
                               {"max.poll.records", std::to_string(orders_per_transaction)}});
  auto& in = *owned_in;
  const topic_partition in_tp{orders_topic, 0};
  in.assign({in_tp});
  // The load's commit returns once it is decided; its marker follows.
  // Until the marker is written the last stable offset hides the orders, and
  // "done" below would be decided on nothing: wait until the last stable
  // offset reaches the high watermark (nothing else writes the orders).
  auto owned_probe = at.consumer({{"isolation.level", "read_uncommitted"}});
  auto& probe = *owned_probe;
  probe.assign({in_tp});
  while (in.end_offset(in_tp) < probe.end_offset(in_tp))
    (void) probe.poll(10ms); // waits 10 ms: the probe sits at the end
  for (;;) {
    if (in.position(in_tp) >= in.end_offset(in_tp))
      return;
    auto records = in.poll(200ms);
    if (records.empty())
      continue;
    const stock_map saved = stock;
    ++txn;
    call_hook(hook, "begin_transaction", txn, 0);
    try {
      p.begin_transaction();
      int sends = 0;
      auto send = [&](const char* topic, const std::string& key, const std::string& value) {
        p.send({topic, std::nullopt, key, value, {}, -1});
        call_hook(hook, "between_sends", txn, sends++);
      };
      for (auto& r : records) {
        auto o = decode_order(r.value);
        auto before = stock;
        if (apply_order(stock, o)) {
          send(confirmed_topic, o.customer_id, r.value);
          for (auto& l : o.lines) {
            before[l.product_id] -= l.quantity;
            send(stock_topic, std::to_string(l.product_id),
                 encode_stock_reduced(l.product_id, o.order_id, l.quantity, before[l.product_id]));
          }
        } else {
          send(rejected_topic, std::to_string(o.order_id), r.value);
        }
      }
      p.send_offsets_to_transaction({{in_tp, records.back().offset + 1}}, processor_id);
      p.commit_transaction();
      ++committed;
    } catch (const kafka_exception& e) {
      if (!e.is_abortable())
        throw;
      p.abort_transaction(); // and roll back the in-memory stock with it
      stock = saved;
      in.seek(in_tp, records.front().offset);
    }
  }
}

void await_transaction_completion(caf::actor_system& sys, const caf::actor& broker,
                                  const std::string& transactional_id) {
  await_transaction_completion(cluster_access::embedded(sys, broker), transactional_id);
}

void await_transaction_completion(const cluster_access& at, const std::string& transactional_id) {
  auto deadline = std::chrono::steady_clock::now() + 60s;
  for (;;) {
    auto d = at.transaction_state(transactional_id);
    if (d.ok() && (*d == "CompleteCommit" || *d == "CompleteAbort" || *d == "Empty"))
      return;
    if (std::chrono::steady_clock::now() > deadline)
      throw std::runtime_error("transaction of " + transactional_id + " did not complete: "
                               + (d.ok() ? *d : d.error().to_string()));
    std::this_thread::sleep_for(10ms);
  }
}

result read_result(caf::actor_system& sys, const caf::actor& broker, const std::string& dir,
                   const caftx::client_driver& driver) {
  return read_result(cluster_access::embedded(sys, broker, driver), dir);
}

result read_result(const cluster_access& at, const std::string& dir) {
  result r;
  std::set<int32_t> seen;
  auto note = [&](int32_t id, std::vector<int32_t>& into) {
    if (!seen.insert(id).second)
      throw std::runtime_error("order " + std::to_string(id) + " appears twice in the output");
    into.push_back(id);
  };
  for (auto& rec : read_all(at, confirmed_topic, 3))
    note(decode_order(rec.value).order_id, r.confirmed);
  for (auto& rec : read_all(at, rejected_topic, 1))
    note(decode_order(rec.value).order_id, r.rejected);
  std::sort(r.confirmed.begin(), r.confirmed.end());
  std::sort(r.rejected.begin(), r.rejected.end());
  r.final_stock = read_products(dir + "/products.csv");
  for (auto& rec : read_all(at, stock_topic, 4)) {
    auto s = decode_stock_reduced(rec.value);
    r.final_stock[s.product_id] = s.new_stock; // one product, one partition: in order
    ++r.lines_written;
  }
  return r;
}

namespace {

// The job on the node behind broker(): loads, runs the processor with the
// injected crashes and (when restart_node is set) node restarts, reads
// the result.
job_report run_plan(const std::function<cluster_access()>& at,
                    const std::function<void()>& restart_node, const job_options& opts) {
  job_report report;
  report.expected = sequential_result(opts.input_dir);
  create_topics(at());
  report.orders_loaded = load_orders(at(), opts.input_dir);
  report.crashes_requested = opts.crashes;
  report.node_restarts_requested = opts.node_restarts;

  // The fault plan: each fault fires once, at a transaction attempt, at a
  // crash point; node restarts crash the processor and restart the node.
  struct fault {
    int attempt;
    std::string point;
    int send;
    bool node_restart;
    bool fired = false;
  };
  std::mt19937_64 rng{opts.seed};
  int expected_txns = static_cast<int>((report.expected.confirmed.size()
                                        + report.expected.rejected.size()
                                        + opts.orders_per_transaction - 1)
                                       / opts.orders_per_transaction);
  std::uniform_int_distribution<int> attempt_dist{1, std::max(1, expected_txns - 1)};
  std::uniform_int_distribution<int> send_dist{0, opts.orders_per_transaction - 1};
  const std::vector<std::string> points = {"between_sends", "after_send_offsets",
                                           "after_end_txn_sent"};
  std::uniform_int_distribution<size_t> point_dist{0, points.size() - 1};
  std::vector<fault> plan;
  for (int i = 0; i < opts.crashes + opts.node_restarts; ++i) {
    bool restart = i >= opts.crashes;
    plan.push_back({attempt_dist(rng), restart ? "between_sends" : points[point_dist(rng)],
                    send_dist(rng), restart});
  }
  int attempt = 0;
  fault* firing = nullptr;
  crash_hook hook = [&](const std::string& point, int, int send) {
    if (point == "begin_transaction") {
      ++attempt;
      return;
    }
    for (auto& f : plan)
      if (!f.fired && f.attempt <= attempt && f.point == point
          && (point != "between_sends" || send >= f.send)) {
        f.fired = true;
        firing = &f;
        throw simulated_crash(point);
      }
  };
  for (size_t incarnation = 0; incarnation <= plan.size() + 1; ++incarnation) {
    try {
      run_processor(at(), opts.input_dir, opts.orders_per_transaction, hook,
                    report.transactions_committed);
      break;
    } catch (const simulated_crash& c) {
      auto& f = *firing;
      std::string where = f.point + (f.point == "between_sends" ? " #" + std::to_string(f.send) : "");
      if (f.node_restart) {
        report.events.push_back("transaction attempt " + std::to_string(attempt)
                                + ": processor and node killed at " + where);
        restart_node();
        ++report.node_restarts;
      } else {
        report.events.push_back("transaction attempt " + std::to_string(attempt)
                                + ": processor killed at " + where);
        ++report.crashes_injected;
      }
    }
  }
  // commit_transaction() returns once the commit is decided; its markers
  // follow. Wait for CompleteCommit so every output is below the LSO.
  await_transaction_completion(at(), processor_id);
  report.actual = read_result(at(), opts.input_dir);
  return report;
}

} // namespace

job_report run_job(caf::actor_system& sys, const job_options& opts) {
  caftx::node_config cfg;
  cfg.data_dir = opts.data_dir;
  auto start = [&] {
    auto n = caftx::node::start(sys, cfg);
    if (!n.ok())
      throw std::runtime_error("cannot start node: " + n.error().to_string());
    return std::move(n).value();
  };
  auto node = start();
  return run_plan(
    [&] { return cluster_access::embedded(sys, node->broker()); },
    [&] {
      node->stop();
      node.reset();
      node = start();
    },
    opts);
}

job_report run_job_against(const std::string& bootstrap_servers, const job_options& opts) {
  if (opts.node_restarts != 0)
    throw std::invalid_argument("a job against a running node cannot restart it: "
                                "node_restarts must be 0");
  return run_plan([&] { return cluster_access::remote(bootstrap_servers); }, [] {}, opts);
}

} // namespace northwind
