// The storage benchmark: a node holding a small and a large log (1 GB and
// 4 GB of 1 KiB records in 4 partitions by default, --storage-gb), what it
// costs in memory, in start time and in reads of old data.
//
// Every node runs in a child process: the benchmark binary itself, started
// again with the hidden subcommand `--storage-child` (posix_spawn of
// /proc/self/exe), which prints one JSON object on its stdout. A child's
// VmRSS is then the node's and nothing else's: not the allocator's cache
// of an earlier node, of the other size or of the other benchmarks of the
// run, nor the page cache (VmRSS counts no file pages LevelDB read through
// read()). Only the public embedding API is used (node::start,
// create_topic, producer, consumer), so that the benchmark measures
// whatever the node does with its log.
//
//   write    one child per size: a fresh node, 4 idempotent producers, one
//            per partition, sending 1 KiB incompressible values as fast as
//            they go, each flushing every 16 384 records; VmRSS once every
//            record is acknowledged; then a clean stop.
//   restart  per size and repetition (interleaved), one child: node::start
//            on the written directory, then a read_committed consumer
//            (max.poll.records 100 000) asks each partition's end offset
//            (ListOffsets; it must equal what was written) and polls until
//            it gets a record. Figure: ms from before node::start to that
//            record. Then it reads a window (64 MiB, or a quarter of the
//            log if smaller) from offset 0 and the same window up to the
//            end of the log, 3 times each, ABBA (BAAB in the next
//            repetition), one partition at a time: MiB/s of record keys
//            and values delivered, the median round. VmRSS after the reads.
// Lines: rss after write / after restart (MiB, growth from the small to the
// large size: target <= 64 MiB), start (large / small: target <= 1.5),
// fetch oldest / tail (target >= 0.5 on the large size), write (records/s).
// The page cache is warm (the files were just written): "oldest" measures
// the node's read path for data it does not hold, not the disk.
#include "bench/suite.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include <caf/actor_system.hpp>

#include "actors/broker/node.hpp"
#include "actors/client/consumer.hpp"
#include "actors/client/producer.hpp"

extern char** environ;

namespace caftx::bench {

namespace {

using namespace std::chrono_literals;

constexpr int32_t partitions = 4;
constexpr size_t record_bytes = 1024;
constexpr int64_t flush_every = 16384;
constexpr double window_bytes = 64.0 * 1024 * 1024;
constexpr int read_rounds = 3;
const std::string topic_name = "storage";

// VmRSS and VmHWM of this process, in kB.
struct memory {
  int64_t rss_kb = 0;
  int64_t hwm_kb = 0;
};

memory own_memory() {
  std::ifstream in{"/proc/self/status"};
  memory m;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0)
      m.rss_kb = std::stoll(line.substr(6));
    else if (line.rfind("VmHWM:", 0) == 0)
      m.hwm_kb = std::stoll(line.substr(6));
  }
  return m;
}

uint64_t disk_bytes(const std::string& dir) {
  uint64_t n = 0;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file())
      n += e.file_size();
  return n;
}

std::unique_ptr<node> start_node(const std::string& dir) {
  node_config cfg;
  cfg.data_dir = dir;
  auto started = node::start(shared_system(), cfg);
  if (!started.ok())
    throw std::runtime_error("node did not start on " + dir + ": " + started.error().to_string());
  return std::move(started).value();
}

// Incompressible values (LevelDB compresses its blocks with Snappy): 1 KiB
// slices of a random pool.
class values {
public:
  values() : pool_(1 << 20, '\0') {
    std::mt19937_64 rng{42};
    for (auto& c : pool_)
      c = static_cast<char>(rng());
  }
  std::string at(int64_t n) const {
    auto off = static_cast<size_t>(n * 1031) % (pool_.size() - record_bytes);
    return pool_.substr(off, record_bytes);
  }

private:
  std::string pool_;
};

// Child `write`: fills a fresh node with `per_partition` records in each
// partition.
nlohmann::json child_write(const std::string& dir, int64_t per_partition) {
  auto n = start_node(dir);
  auto st = n->create_topic(topic_name, partitions);
  if (!st.ok())
    throw std::runtime_error("create_topic: " + st.to_string());
  values vals;
  std::mutex mtx;
  std::string error;
  auto t0 = clock_type::now();
  std::vector<std::thread> producers;
  for (int32_t p = 0; p < partitions; ++p)
    producers.emplace_back([&, p] {
      try {
        producer prod{shared_system(), n->broker(), properties{}}; // idempotent
        for (int64_t i = 0; i < per_partition;) {
          prod.send({topic_name, p, "", vals.at(i + p), {}, -1});
          if (++i % flush_every == 0)
            prod.flush();
        }
        prod.flush();
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> guard{mtx};
        error = e.what();
      }
    });
  for (auto& t : producers)
    t.join();
  if (!error.empty())
    throw std::runtime_error("producer: " + error);
  double write_ms = ms_since(t0);
  auto mem = own_memory();
  auto t1 = clock_type::now();
  n->stop();
  double stop_ms = ms_since(t1);
  n.reset();
  return {{"write_ms", write_ms}, {"rss_kb", mem.rss_kb}, {"hwm_kb", mem.hwm_kb},
          {"stop_ms", stop_ms}, {"disk_bytes", disk_bytes(dir)}};
}

struct read_figures {
  uint64_t bytes = 0;
  uint64_t records = 0;
  double ms = 0;
};

// Reads the partitions one at a time, each from `from` until its position
// reaches `to`, and counts the records in [from, to). One partition at a
// time, so that no fetch goes to a partition already read to its end:
// the leader would hold it (fetch.max.wait.ms) and the window ending at
// the log's end would pay for waits the one from offset 0 does not.
read_figures read_window(consumer& c, const std::vector<topic_partition>& tps, int64_t from,
                         int64_t to) {
  read_figures r;
  for (auto& tp : tps) {
    c.assign({tp});
    c.seek(tp, from);
    auto t0 = clock_type::now();
    while (c.position(tp) < to)
      for (auto& rec : c.poll(100ms))
        if (rec.offset >= from && rec.offset < to) { // not what a whole fetch brings beyond
          r.bytes += rec.key.size() + rec.value.size();
          ++r.records;
        }
    r.ms += ms_since(t0);
  }
  return r;
}

// The round of median throughput, and every round's MiB/s.
nlohmann::json read_json(const std::vector<read_figures>& rounds) {
  auto rate = [](const read_figures& r) {
    return static_cast<double>(r.bytes) / (1 << 20) / (r.ms / 1000);
  };
  auto sorted = rounds;
  std::sort(sorted.begin(), sorted.end(),
            [&](const read_figures& x, const read_figures& y) { return rate(x) < rate(y); });
  auto& m = sorted[sorted.size() / 2];
  nlohmann::json each = nlohmann::json::array();
  for (auto& r : rounds)
    each.push_back(rate(r));
  return {{"bytes", m.bytes}, {"records", m.records}, {"ms", m.ms}, {"mib_per_s", rate(m)},
          {"rounds_mib_per_s", each}};
}

// Child `restart`: starts a node on a written directory, times it until it
// serves, reads the oldest and the newest window.
nlohmann::json child_restart(const std::string& dir, int64_t per_partition, int64_t window,
                             bool oldest_first) {
  shared_system(); // the actor system is not part of the node's start
  auto before = own_memory();
  auto t0 = clock_type::now();
  auto n = start_node(dir);
  double start_ms = ms_since(t0);
  // request.timeout.ms far above Kafka's 30 s: a node that takes longer
  // to serve is measured, not failed.
  consumer c{shared_system(), n->broker(),
             properties{{"isolation.level", "read_committed"},
                        {"auto.offset.reset", "earliest"},
                        {"max.poll.records", "100000"},
                        {"request.timeout.ms", "600000"}}};
  std::vector<topic_partition> tps;
  for (int32_t p = 0; p < partitions; ++p)
    tps.push_back({topic_name, p});
  c.assign(tps);
  for (auto& tp : tps) {
    auto end = c.end_offset(tp);
    if (end != per_partition)
      throw std::runtime_error("after the restart, " + tp.topic + "-" + std::to_string(tp.partition)
                               + " ends at " + std::to_string(end) + ", "
                               + std::to_string(per_partition) + " records were written");
  }
  double list_offsets_ms = ms_since(t0);
  auto first_deadline = clock_type::now() + 120s;
  while (c.poll(100ms).empty())
    if (clock_type::now() > first_deadline)
      throw std::runtime_error("after the restart, no record within 120 s");
  double first_record_ms = ms_since(t0);
  auto serving = own_memory();
  // Each window read `read_rounds` times, ABBA... (or BAAB...): the
  // figure is the median round. One 64 MiB read takes tens of ms here, so
  // one round alone moves with the machine.
  std::vector<read_figures> oldest, tail;
  for (int k = 0; k < 2 * read_rounds; ++k) {
    bool old = ((k + 1) / 2 % 2 == 0) == oldest_first;
    if (old)
      oldest.push_back(read_window(c, tps, 0, window));
    else
      tail.push_back(read_window(c, tps, per_partition - window, per_partition));
  }
  auto after = own_memory();
  c.close();
  n->stop();
  n.reset();
  return {{"start_returned_ms", start_ms}, {"list_offsets_ms", list_offsets_ms},
          {"first_record_ms", first_record_ms}, {"rss_before_start_kb", before.rss_kb},
          {"rss_serving_kb", serving.rss_kb}, {"rss_kb", after.rss_kb}, {"hwm_kb", after.hwm_kb},
          {"oldest", read_json(oldest)}, {"tail", read_json(tail)},
          {"oldest_first", oldest_first}};
}

// --- the parent -------------------------------------------------------------

volatile std::sig_atomic_t interrupted = 0;

extern "C" void on_interrupt(int) {
  interrupted = 1;
}

// SIGINT / SIGTERM stop the waiting for a child (which is then killed) so
// that the data directories are removed; the old handlers come back after.
class interrupt_guard {
public:
  interrupt_guard() {
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~interrupt_guard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// Runs `caftx-bench --storage-child <args>` and returns the JSON object it
// prints; kills it after `timeout` (a node that never starts, a hang).
nlohmann::json run_child(const std::vector<std::string>& args, std::chrono::seconds timeout,
                         const std::string& what) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec); // argv[0], for ps
  std::vector<std::string> argv_s{ec ? "caftx-bench" : self.string(), "--storage-child"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s)
    argv.push_back(s.data());
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe: " + std::string(std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::runtime_error("cannot start the child for " + what + ": " + std::strerror(rc));
  }
  std::string out;
  std::string failure;
  auto deadline = clock_type::now() + timeout;
  char buf[4096];
  for (;;) {
    if (interrupted) {
      failure = "interrupted";
      break;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    if (left.count() <= 0) {
      failure = "did not finish within " + std::to_string(timeout.count()) + " s";
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      continue;
    auto got = ::read(fds[0], buf, sizeof(buf));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break; // EOF: the child closed its stdout (exited)
    out.append(buf, static_cast<size_t>(got));
  }
  ::close(fds[0]);
  if (!failure.empty())
    ::kill(pid, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!failure.empty())
    throw std::runtime_error("storage: the child for " + what + " " + failure + "; killed");
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
    throw std::runtime_error("storage: the child for " + what
                             + (WIFSIGNALED(wstatus)
                                  ? " died of signal " + std::to_string(WTERMSIG(wstatus))
                                  : " exited with " + std::to_string(WEXITSTATUS(wstatus)))
                             + " (its error is on stderr above)");
  try {
    return nlohmann::json::parse(out);
  } catch (const std::exception&) {
    throw std::runtime_error("storage: the child for " + what + " printed no JSON: " + out);
  }
}

// "1GB", "4GB", "256MB", "2MB".
std::string size_label(double gb) {
  char buf[32];
  if (gb >= 1)
    std::snprintf(buf, sizeof(buf), "%gGB", gb);
  else
    std::snprintf(buf, sizeof(buf), "%gMB", gb * 1024);
  return buf;
}

// Removes the data directories at the end, also on failure.
struct dir_guard {
  std::vector<std::string> dirs;
  ~dir_guard() {
    for (auto& d : dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
};

// Median over `l`'s repetitions of the number at `path` of their extra.
double extra_median(const line& l, const nlohmann::json::json_pointer& path) {
  std::vector<double> xs;
  for (auto& r : l.reps)
    xs.push_back(r.extra.at(path).get<double>());
  return summarize(xs).median;
}

line derived(const line& from, const std::string& variant, const std::string& unit,
             bool higher_is_better, const nlohmann::json::json_pointer& path, double factor) {
  line l;
  l.benchmark = "storage";
  l.variant = variant;
  l.unit = unit;
  l.higher_is_better = higher_is_better;
  for (auto& r : from.reps) {
    rep_result x = r;
    x.value = r.extra.at(path).get<double>() * factor;
    l.reps.push_back(std::move(x));
  }
  return l;
}

void target(line& l, double value, const std::string& of, const std::string& bound, bool met) {
  l.ratio = value;
  l.ratio_of = of;
  l.has_target = true;
  l.target = bound;
  l.met = met;
}

} // namespace

int storage_child_main(int argc, char** argv) {
  // write DIR PER_PARTITION | restart DIR PER_PARTITION WINDOW OLDEST_FIRST
  int status = 0;
  try {
    std::vector<std::string> args(argv, argv + argc);
    nlohmann::json out;
    if (args.size() == 3 && args[0] == "write")
      out = child_write(args[1], std::stoll(args[2]));
    else if (args.size() == 5 && args[0] == "restart")
      out = child_restart(args[1], std::stoll(args[2]), std::stoll(args[3]), args[4] == "1");
    else
      throw std::runtime_error("usage: --storage-child write DIR PER_PARTITION | restart DIR "
                               "PER_PARTITION WINDOW OLDEST_FIRST");
    std::printf("%s\n", out.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "caftx-bench --storage-child: %s\n", e.what());
    status = 1;
  }
  std::fflush(stdout);
  stop_shared_system();
  return status;
}

void bench_storage(const context& ctx) {
  const auto& gbs = ctx.storage_gb;
  if (gbs.size() != 2 || !(gbs[0] > 0) || !(gbs[1] > gbs[0]))
    throw std::runtime_error("storage: --storage-gb needs two sizes, the smaller first (1,4)");
  std::vector<int64_t> per_partition;
  std::vector<std::string> labels, dirs;
  double total_gb = 0;
  for (double gb : gbs) {
    auto records = static_cast<int64_t>(gb * (1 << 30) / record_bytes / partitions);
    if (records < 16)
      throw std::runtime_error("storage: " + size_label(gb) + " is too small");
    per_partition.push_back(records);
    labels.push_back(size_label(gb));
    dirs.push_back(ctx.dir + "/storage-" + labels.back());
    total_gb += gb;
  }
  // The log, LevelDB's overhead and a compaction in progress.
  auto space = std::filesystem::space(ctx.dir);
  double need = total_gb * 1.5 * (1 << 30) + (256 << 20);
  if (static_cast<double>(space.available) < need)
    throw std::runtime_error("storage: needs about " + fmt("%.1f", need / (1 << 30))
                             + " GB free in " + ctx.dir + ", has "
                             + fmt("%.1f", static_cast<double>(space.available) / (1 << 30))
                             + " GB (--dir, --storage-gb)");
  dir_guard guard{dirs};
  interrupt_guard on_signal;
  interrupted = 0;
  int reps = ctx.storage_reps;
  if (!ctx.json)
    std::printf("storage: %s and %s of 1 KiB records in 4 partitions, each node in a child "
                "process; 1 write and %d restart%s per size (fewer repetitions than the other "
                "benchmarks)\n",
                labels[0].c_str(), labels[1].c_str(), reps, reps == 1 ? "" : "s");
  std::fflush(stdout);

  // Writes: one each, the small size first.
  std::vector<line> writes(2);
  for (size_t i = 0; i < 2; ++i) {
    writes[i].benchmark = "storage";
    writes[i].variant = "write " + labels[i] + " 4p idem.";
    writes[i].unit = "records/s";
  }
  context once = ctx;
  once.reps = 1;
  interleave(once, writes, [&](size_t i, int) {
    std::filesystem::create_directories(dirs[i]);
    auto timeout = std::chrono::seconds(120 + static_cast<int64_t>(gbs[i] * 600));
    auto j = run_child({"write", dirs[i], std::to_string(per_partition[i])}, timeout,
                       "write " + labels[i]);
    rep_result r;
    auto secs = j["write_ms"].get<double>() / 1000;
    r.value = static_cast<double>(per_partition[i] * partitions) / secs;
    r.extra = j;
    return r;
  });

  // Restarts, interleaved; the order of the two reads alternates.
  std::vector<line> starts(2);
  for (size_t i = 0; i < 2; ++i) {
    starts[i].benchmark = "storage";
    starts[i].variant = "start " + labels[i];
    starts[i].unit = "ms";
    starts[i].higher_is_better = false;
  }
  context restarts = ctx;
  restarts.reps = reps;
  interleave(restarts, starts, [&](size_t i, int rep) {
    auto window = std::min<int64_t>(static_cast<int64_t>(window_bytes / record_bytes / partitions),
                                    per_partition[i] / 4);
    auto timeout = std::chrono::seconds(120 + static_cast<int64_t>(gbs[i] * 600));
    auto j = run_child({"restart", dirs[i], std::to_string(per_partition[i]),
                        std::to_string(window), rep % 2 == 0 ? "1" : "0"},
                       timeout, "restart " + labels[i]);
    rep_result r;
    r.value = j["first_record_ms"].get<double>();
    r.extra = j;
    return r;
  });
  if (writes[0].reps.empty() || writes[1].reps.empty() || starts[0].reps.empty()
      || starts[1].reps.empty())
    return; // --variant left one out: nothing to compare

  using ptr = nlohmann::json::json_pointer;
  auto rss_growth = [&](line& small, line& large) {
    double growth = large.stats().median - small.stats().median;
    target(large, growth, "MiB growth from " + labels[0], "<= 64 MiB", growth <= 64);
  };
  auto w_small = derived(writes[0], "rss after write " + labels[0], "MiB", false, ptr{"/rss_kb"},
                         1.0 / 1024);
  auto w_large = derived(writes[1], "rss after write " + labels[1], "MiB", false, ptr{"/rss_kb"},
                         1.0 / 1024);
  rss_growth(w_small, w_large);
  auto r_small = derived(starts[0], "rss after restart " + labels[0], "MiB", false, ptr{"/rss_kb"},
                         1.0 / 1024);
  auto r_large = derived(starts[1], "rss after restart " + labels[1], "MiB", false, ptr{"/rss_kb"},
                         1.0 / 1024);
  rss_growth(r_small, r_large);
  for (auto* l : {&r_small, &r_large})
    l->note = "serving (before the reads) "
              + fmt("%.0f", extra_median(*l, ptr{"/rss_serving_kb"}) / 1024) + " MiB, peak "
              + fmt("%.0f", extra_median(*l, ptr{"/hwm_kb"}) / 1024) + " MiB";
  for (size_t i = 0; i < 2; ++i) {
    auto& w = writes[i];
    w.note = fmt("%.1f", extra_median(w, ptr{"/write_ms"}) / 1000) + " s, "
             + fmt("%.0f", static_cast<double>(per_partition[i] * partitions) * record_bytes
                             / (1 << 20) / (extra_median(w, ptr{"/write_ms"}) / 1000))
             + " MiB/s, " + fmt("%.0f", extra_median(w, ptr{"/disk_bytes"}) / (1 << 20))
             + " MiB on disk";
    auto& s = starts[i];
    s.note = "until the first record; node::start "
             + fmt("%.0f", extra_median(s, ptr{"/start_returned_ms"})) + " ms, end offsets "
             + fmt("%.0f", extra_median(s, ptr{"/list_offsets_ms"})) + " ms; "
             + std::to_string(s.reps.size()) + " rep" + (s.reps.size() == 1 ? "" : "s");
  }
  double start_ratio = starts[1].stats().median / starts[0].stats().median;
  target(starts[1], start_ratio, "/ start " + labels[0], "<= 1.50", start_ratio <= 1.5);

  std::vector<line> fetches;
  for (size_t i = 0; i < 2; ++i) {
    auto oldest = derived(starts[i], "fetch oldest " + labels[i], "MiB/s", true,
                          ptr{"/oldest/mib_per_s"}, 1.0);
    auto tail = derived(starts[i], "fetch tail " + labels[i], "MiB/s", true,
                        ptr{"/tail/mib_per_s"}, 1.0);
    double ratio = oldest.stats().median / tail.stats().median;
    if (i == 1)
      target(oldest, ratio, "/ tail " + labels[i], ">= 0.50", ratio >= 0.5);
    else {
      oldest.ratio = ratio;
      oldest.ratio_of = "/ tail " + labels[i];
    }
    auto rounds = std::to_string(read_rounds);
    oldest.note = "read_committed from offset 0, median of " + rounds + " rounds, "
                  + fmt("%.1f", extra_median(oldest, ptr{"/oldest/bytes"}) / (1 << 20)) + " MiB";
    tail.note = "read_committed up to the end, median of " + rounds + " rounds, "
                + fmt("%.1f", extra_median(tail, ptr{"/tail/bytes"}) / (1 << 20)) + " MiB";
    fetches.push_back(std::move(oldest));
    fetches.push_back(std::move(tail));
  }
  for (auto* l : {&writes[0], &writes[1], &w_small, &w_large, &starts[0], &starts[1], &r_small,
                  &r_large})
    report(*l);
  for (auto& l : fetches)
    report(l);
}

} // namespace caftx::bench
