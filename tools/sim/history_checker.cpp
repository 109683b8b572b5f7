#include "tools/sim/history_checker.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

namespace caftx::sim {

const char* to_string(violation_kind kind) {
  switch (kind) {
    case violation_kind::lost_write: return "lost_write";
    case violation_kind::duplicate_write: return "duplicate_write";
    case violation_kind::ack_offset_mismatch: return "ack_offset_mismatch";
    case violation_kind::non_dense_offsets: return "non_dense_offsets";
    case violation_kind::readers_disagree: return "readers_disagree";
    case violation_kind::aborted_read: return "aborted_read";
    case violation_kind::uncommitted_read: return "uncommitted_read";
    case violation_kind::partial_transaction_read: return "partial_transaction_read";
    case violation_kind::offsets_without_outputs: return "offsets_without_outputs";
    case violation_kind::outputs_without_offsets: return "outputs_without_offsets";
    case violation_kind::epoch_regression: return "epoch_regression";
    case violation_kind::zombie_write: return "zombie_write";
    case violation_kind::late_request_effect: return "late_request_effect";
    case violation_kind::stuck_lso: return "stuck_lso";
    case violation_kind::open_state_disagreement: return "open_state_disagreement";
    case violation_kind::replica_divergence: return "replica_divergence";
    case violation_kind::no_progress: return "no_progress";
  }
  return "unknown";
}

std::string to_string(const violation& v) {
  return std::string(to_string(v.kind)) + " at seq " + std::to_string(v.seq) + ": " + v.message;
}

namespace {

struct txn_key {
  std::string tid;
  txn_number txn = 0;
  friend bool operator<(const txn_key& a, const txn_key& b) {
    return std::tie(a.tid, a.txn) < std::tie(b.tid, b.txn);
  }
};

std::string name(const txn_key& k) {
  return k.tid + "#" + std::to_string(k.txn);
}

std::string name(const topic_partition& tp) {
  return caftx::to_string(tp);
}

const char* name(control_type t) {
  return t == control_type::commit ? "COMMIT" : "ABORT";
}

/// The transactional data of one producer id on one partition between two
/// of its control records; `closing` is the later one (null while open).
struct txn_run {
  producer_id pid = no_producer_id;
  std::vector<size_t> entries; // indices into the partition's log
  const log_entry* closing = nullptr;

  bool committed() const { return closing && closing->marker == control_type::commit; }
  bool aborted() const { return closing && closing->marker == control_type::abort; }
  /// The marker is below the high watermark a poll reported (-1: unknown,
  /// then only a run open at the end counts as undecided).
  bool decided_below(int64_t high_watermark) const {
    return closing && (high_watermark < 0 || closing->offset < high_watermark);
  }
};

/// A partition's final log with the indexes the rules need.
struct partition_view {
  const partition_final_state* state = nullptr;
  std::map<int64_t, size_t> at;      // offset -> first index holding it
  std::vector<int> run_of;           // per index: run id, -1 if none
  /// Per index: the later transaction whose range holds this (late) value;
  /// the value's own transaction number for a second range; nullopt if
  /// not late.
  std::vector<std::optional<txn_number>> late_in;
  std::map<producer_id, std::vector<size_t>> by_pid; // indices, log order

  const log_entry* entry(int64_t offset) const {
    auto it = at.find(offset);
    return it == at.end() ? nullptr : &state->log[it->second];
  }
};

struct occurrence {
  const partition_view* view = nullptr;
  size_t index = 0;
};

/// What is known of one transaction.
struct txn_facts {
  bool commit_ok = false;
  bool abort_ok = false;
  bool own_committed = false;
  bool own_aborted = false;

  bool committed() const { return commit_ok || (own_committed && !abort_ok); }
  bool aborted() const { return !committed() && (abort_ok || own_aborted); }
};

template <class T>
const T* as(const event* e) {
  return std::get_if<T>(&e->body);
}

class checker {
public:
  explicit checker(const history& h) : h_(h) {
    for (auto& e : h.events)
      events_.push_back(&e);
    std::stable_sort(events_.begin(), events_.end(),
                     [](const event* a, const event* b) { return a->seq < b->seq; });
    for (auto* e : events_) {
      if (auto* s = as<send_event>(e)) {
        first_send_.emplace(s->value, e);
      } else if (auto* a = as<ack_event>(e)) {
        first_ack_.emplace(a->value, e);
      } else if (auto* t = as<end_txn_event>(e)) {
        auto& f = txns_[{t->transactional_id, t->txn}];
        f.commit_ok = f.commit_ok || t->commit_ok();
        f.abort_ok = f.abort_ok || t->abort_ok();
      }
    }
    for (auto& p : h.final.partitions)
      index_log(p);
    classify_runs();
  }

  std::vector<violation> run() {
    check_final_logs();
    check_acks();
    check_values();
    check_polls();
    check_offsets();
    check_epochs_and_writes();
    check_replicas();
    check_liveness();
    check_progress();
    std::stable_sort(out_.begin(), out_.end(), [](const violation& a, const violation& b) {
      return std::tie(a.seq, a.kind) < std::tie(b.seq, b.kind);
    });
    return std::move(out_);
  }

private:
  // -- indexes ---------------------------------------------------------------

  void index_log(const partition_final_state& p) {
    auto& view = parts_[p.tp];
    view.state = &p;
    view.run_of.assign(p.log.size(), -1);
    view.late_in.assign(p.log.size(), std::nullopt);
    std::map<producer_id, int> open;
    for (size_t i = 0; i < p.log.size(); ++i) {
      auto& e = p.log[i];
      view.at.emplace(e.offset, i);
      view.by_pid[e.pid].push_back(i);
      if (e.is_control) {
        if (auto it = open.find(e.pid); it != open.end()) {
          runs_[it->second].closing = &e;
          open.erase(it);
        }
        continue;
      }
      occurrences_[e.value].push_back({&view, i});
      if (!e.transactional)
        continue;
      auto it = open.find(e.pid);
      if (it == open.end()) {
        runs_.push_back(txn_run{e.pid, {}, nullptr});
        run_part_.push_back(&view);
        it = open.emplace(e.pid, static_cast<int>(runs_.size()) - 1).first;
      }
      runs_[it->second].entries.push_back(i);
      view.run_of[i] = it->second;
    }
  }

  std::optional<txn_key> txn_of(value_id v) const {
    auto it = first_send_.find(v);
    if (it == first_send_.end())
      return std::nullopt;
    auto& s = std::get<send_event>(it->second->body);
    if (!s.transactional_id || !s.txn)
      return std::nullopt;
    return txn_key{*s.transactional_id, *s.txn};
  }

  // Marks late values and derives each transaction's own runs.
  void classify_runs() {
    std::map<std::pair<txn_key, const partition_view*>, int> first_own;
    for (size_t r = 0; r < runs_.size(); ++r) {
      auto& run = runs_[r];
      auto& view = *run_part_[r];
      std::map<std::string, txn_number> newest; // per transactional id
      for (auto i : run.entries)
        if (auto k = txn_of(view.state->log[i].value)) {
          auto [it, inserted] = newest.emplace(k->tid, k->txn);
          if (!inserted)
            it->second = std::max(it->second, k->txn);
        }
      for (auto i : run.entries) {
        auto k = txn_of(view.state->log[i].value);
        if (!k)
          continue;
        if (k->txn < newest[k->tid]) {
          view.late_in[i] = newest[k->tid];
          continue;
        }
        auto [it, inserted] = first_own.emplace(std::make_pair(*k, &view), static_cast<int>(r));
        if (!inserted && it->second != static_cast<int>(r)) {
          view.late_in[i] = k->txn;
          continue;
        }
        auto& f = txns_[*k];
        f.own_committed = f.own_committed || run.committed();
        f.own_aborted = f.own_aborted || run.aborted();
      }
    }
  }

  const txn_facts& facts(const txn_key& k) const {
    static const txn_facts none;
    auto it = txns_.find(k);
    return it == txns_.end() ? none : it->second;
  }

  const partition_view* view_of(const topic_partition& tp) const {
    auto it = parts_.find(tp);
    return it == parts_.end() ? nullptr : &it->second;
  }

  bool quiescent_for_bound() const {
    auto& f = h_.final;
    return f.quiescent_since_ms >= 0 && f.time_ms - f.quiescent_since_ms >= f.liveness_bound_ms;
  }

  void report(violation_kind kind, uint64_t seq, std::string message) {
    out_.push_back(violation{kind, seq, std::move(message)});
  }

  // -- final logs --------------------------------------------------------------

  void check_final_logs() {
    for (auto& [tp, view] : parts_) {
      auto& log = view.state->log;
      for (size_t i = 1; i < log.size(); ++i)
        if (log[i].offset != log[i - 1].offset + 1) {
          report(violation_kind::non_dense_offsets, h_.final.seq,
                 name(tp) + ": offset " + std::to_string(log[i].offset) + " follows offset "
                   + std::to_string(log[i - 1].offset));
          break;
        }
    }
    for (auto& [v, occ] : occurrences_) {
      if (occ.size() < 2)
        continue;
      std::ostringstream os;
      os << "value " << v << " is at";
      for (auto& o : occ)
        os << " " << name(o.view->state->tp) << "@" << o.view->state->log[o.index].offset;
      auto s = first_send_.find(v);
      report(violation_kind::duplicate_write, s == first_send_.end() ? h_.final.seq : s->second->seq,
             os.str());
    }
  }

  // -- replicas ------------------------------------------------------------------

  static bool same_record(const log_entry& a, const log_entry& b) {
    return a.offset == b.offset && a.is_control == b.is_control && a.pid == b.pid
           && a.epoch == b.epoch
           && (a.is_control ? a.marker == b.marker
                            : a.value == b.value && a.transactional == b.transactional);
  }

  static std::string describe_entry(const log_entry& e) {
    return e.is_control ? std::string(name(e.marker)) + " marker of producer id "
                            + std::to_string(e.pid.value) + " epoch " + std::to_string(e.epoch.value)
                        : "value " + std::to_string(e.value) + " of producer id "
                            + std::to_string(e.pid.value) + " epoch "
                            + std::to_string(e.epoch.value);
  }

  void check_replicas() {
    bool quiet = quiescent_for_bound();
    for (auto& p : h_.final.partitions) {
      std::map<int64_t, const log_entry*> leader;
      for (auto& e : p.log)
        if (e.offset < p.high_watermark)
          leader[e.offset] = &e;
      for (auto& r : p.replicas) {
        auto where = name(p.tp) + " on node " + std::to_string(r.node) + ": ";
        std::string why;
        std::set<int64_t> held;
        for (auto& e : r.log) {
          if (e.offset >= p.high_watermark)
            break;
          held.insert(e.offset);
          auto l = leader.find(e.offset);
          if (l == leader.end() || !same_record(e, *l->second)) {
            why = "offset " + std::to_string(e.offset) + " holds " + describe_entry(e) + ", the leader "
                  + (l == leader.end() ? std::string("nothing") : describe_entry(*l->second));
            break;
          }
        }
        if (why.empty() && quiet)
          for (auto& [off, e] : leader)
            if (!held.count(off)) {
              why = "lacks offset " + std::to_string(off) + " (" + describe_entry(*e)
                    + "), below the high watermark " + std::to_string(p.high_watermark);
              break;
            }
        if (!why.empty())
          report(violation_kind::replica_divergence, h_.final.seq, where + why);
      }
    }
  }

  // -- acks --------------------------------------------------------------------

  void check_acks() {
    for (auto* e : events_) {
      auto* a = as<ack_event>(e);
      if (!a)
        continue;
      auto s = first_send_.find(a->value);
      if (s == first_send_.end())
        continue;
      auto& tp = std::get<send_event>(s->second->body).tp;
      auto* view = view_of(tp);
      if (!view)
        continue;
      auto* at = view->entry(a->offset);
      if (at && !at->is_control && at->value == a->value)
        continue;
      if (!at && !occurrences_.count(a->value))
        continue; // absent: lost_write's concern
      std::string holds = !at              ? "nothing"
                          : at->is_control ? std::string("a ") + name(at->marker) + " marker"
                                           : "value " + std::to_string(at->value);
      report(violation_kind::ack_offset_mismatch, e->seq,
             "value " + std::to_string(a->value) + " acknowledged at " + name(tp) + " offset "
               + std::to_string(a->offset) + ", where the final log holds " + holds);
    }
  }

  // -- per value: lost writes and late requests --------------------------------

  void check_values() {
    for (auto& [v, send_ev] : first_send_) {
      auto occ_it = occurrences_.find(v);
      static const std::vector<occurrence> none;
      auto& occ = occ_it == occurrences_.end() ? none : occ_it->second;
      auto ack = first_ack_.find(v);
      bool acked = ack != first_ack_.end();
      auto k = txn_of(v);
      if (!k) {
        if (acked && occ.empty())
          report(violation_kind::lost_write, ack->second->seq,
                 "acknowledged value " + std::to_string(v) + " (no transaction) is not in the final log");
        continue;
      }
      bool in_committed = false;
      bool in_open = false;
      const occurrence* late = nullptr;
      for (auto& o : occ) {
        if (o.view->late_in[o.index] && !late)
          late = &o;
        int r = o.view->run_of[o.index];
        in_committed = in_committed || r < 0 || runs_[r].committed();
        in_open = in_open || (r >= 0 && !runs_[r].closing);
      }
      auto& f = facts(*k);
      auto where = [](const occurrence& o) {
        return name(o.view->state->tp) + " offset " + std::to_string(o.view->state->log[o.index].offset);
      };
      if (late) {
        auto later = *late->view->late_in[late->index];
        report(violation_kind::late_request_effect, send_ev->seq,
               "value " + std::to_string(v) + " of " + name(*k) + " sits at " + where(*late)
                 + (later == k->txn ? ", in a second range of its transaction"
                                    : ", in the range of " + name(txn_key{k->tid, later})));
        continue;
      }
      if (f.abort_ok && in_committed) {
        report(violation_kind::late_request_effect, send_ev->seq,
               "value " + std::to_string(v) + " of " + name(*k)
                 + " is committed in the final log although its abort returned ok");
        continue;
      }
      if (!f.committed() || in_committed || in_open)
        continue;
      if (!acked && !f.commit_ok && occ.empty())
        continue;
      report(violation_kind::lost_write, acked ? ack->second->seq : send_ev->seq,
             "value " + std::to_string(v) + " of committed " + name(*k)
               + (occ.empty() ? " is not in the final log" : " is aborted at " + where(occ.front())));
    }
  }

  // -- polls -------------------------------------------------------------------

  struct reader_state {
    std::optional<int64_t> start;
    std::set<int64_t> seen;
    std::set<int> partial_reported; // run ids
  };

  void check_polls() {
    std::map<std::pair<topic_partition, int64_t>, std::pair<value_id, uint64_t>> first_polled;
    std::set<std::pair<topic_partition, int64_t>> disagreement_reported;
    std::map<std::pair<std::string, topic_partition>, reader_state> readers;
    for (auto* e : events_) {
      auto* p = as<poll_event>(e);
      if (!p)
        continue;
      auto* view = view_of(p->tp);
      auto record_name = [&](const polled_record& r) {
        return name(p->tp) + " offset " + std::to_string(r.offset) + " (value "
               + std::to_string(r.value) + ")";
      };
      bool disagreement_done = false;
      for (auto& r : p->records) {
        std::string why;
        if (view) {
          auto* at = view->entry(r.offset);
          if (!at)
            why = "the final log has no such offset";
          else if (at->is_control)
            why = std::string("the final log holds a ") + name(at->marker) + " marker there";
          else if (at->value != r.value)
            why = "the final log holds value " + std::to_string(at->value) + " there";
        } else {
          auto [it, inserted] =
            first_polled.emplace(std::make_pair(p->tp, r.offset), std::make_pair(r.value, e->seq));
          if (!inserted && it->second.first != r.value)
            why = "the poll at seq " + std::to_string(it->second.second) + " returned value "
                  + std::to_string(it->second.first) + " there";
        }
        if (!why.empty() && !disagreement_done
            && disagreement_reported.emplace(p->tp, r.offset).second) {
          report(violation_kind::readers_disagree, e->seq,
                 "reader " + p->reader_id + " got " + record_name(r) + ", but " + why);
          disagreement_done = true;
        }
      }
      if (p->isolation != isolation_level::read_committed)
        continue;
      auto& rs = readers[{p->reader_id, p->tp}];
      if (!rs.start) {
        if (p->fetch_offset >= 0)
          rs.start = p->fetch_offset;
        else if (!p->records.empty())
          rs.start = p->records.front().offset;
      }
      bool uncommitted_done = false;
      bool aborted_done = false;
      bool partial_done = false;
      auto prefix = "read_committed reader " + p->reader_id + " got ";
      for (auto& r : p->records) {
        int run_id = -1;
        if (view)
          if (auto* at = view->entry(r.offset); at && !at->is_control && at->value == r.value)
            run_id = view->run_of[view->at.at(r.offset)];
        const txn_run* run = run_id >= 0 ? &runs_[run_id] : nullptr;
        bool above_lso = p->last_stable_offset >= 0 && r.offset >= p->last_stable_offset;
        bool undecided = run && !run->decided_below(p->high_watermark);
        if (above_lso || undecided) {
          if (!uncommitted_done) {
            std::string why =
              above_lso ? "at or above the last stable offset " + std::to_string(p->last_stable_offset)
                          + " it reported"
              : !run->closing
                ? "of a transaction of producer id " + std::to_string(run->pid.value)
                    + " that is still open at the end"
                : "of a transaction of producer id " + std::to_string(run->pid.value)
                    + " whose marker at offset " + std::to_string(run->closing->offset)
                    + " was not below the high watermark " + std::to_string(p->high_watermark);
            report(violation_kind::uncommitted_read, e->seq, prefix + record_name(r) + ", " + why);
            uncommitted_done = true;
          }
        } else if (run && run->aborted()) {
          if (!aborted_done) {
            report(violation_kind::aborted_read, e->seq,
                   prefix + record_name(r) + " of a transaction aborted at offset "
                     + std::to_string(run->closing->offset));
            aborted_done = true;
          }
        } else if (run && run->committed() && rs.start && !partial_done
                   && !rs.partial_reported.count(run_id)) {
          auto& log = view->state->log;
          for (auto i : run->entries) {
            auto off = log[i].offset;
            if (off >= *rs.start && off < r.offset && !rs.seen.count(off)) {
              report(violation_kind::partial_transaction_read, e->seq,
                     prefix + record_name(r) + " but not offset " + std::to_string(off)
                       + " (value " + std::to_string(log[i].value) + ") of the same transaction");
              rs.partial_reported.insert(run_id);
              partial_done = true;
              break;
            }
          }
        }
        rs.seen.insert(r.offset);
      }
    }
  }

  // -- offsets in transactions ---------------------------------------------------

  void check_offsets() {
    using group_tp = std::pair<std::string, topic_partition>;
    // (group, tp, offset) -> transactions that put it there, with their event seq
    std::map<std::tuple<std::string, topic_partition, int64_t>, std::vector<txn_key>> put;
    std::map<group_tp, std::vector<std::pair<int64_t, txn_key>>> by_group_tp;
    std::set<std::tuple<std::string, topic_partition, int64_t>> reported;
    std::map<group_tp, const event*> last_fetch;
    for (auto* e : events_) {
      if (auto* t = as<txn_offsets_event>(e)) {
        txn_key k{t->transactional_id, t->txn};
        put[{t->group, t->tp, t->offset}].push_back(k);
        by_group_tp[{t->group, t->tp}].emplace_back(t->offset, k);
        continue;
      }
      auto* f = as<offset_fetch_event>(e);
      if (!f)
        continue;
      last_fetch[{f->group, f->tp}] = e;
      auto it = put.find({f->group, f->tp, f->committed_offset});
      if (f->committed_offset < 0 || it == put.end())
        continue;
      bool all_aborted = std::all_of(it->second.begin(), it->second.end(), [&](const txn_key& k) {
        auto& tf = facts(k);
        return tf.aborted() && !tf.own_committed;
      });
      if (all_aborted && reported.insert(it->first).second)
        report(violation_kind::offsets_without_outputs, e->seq,
               "group " + f->group + " has committed offset " + std::to_string(f->committed_offset)
                 + " for " + name(f->tp) + ", put there only by aborted " + name(it->second.front()));
    }
    if (!quiescent_for_bound())
      return;
    auto end_ms = h_.final.quiescent_since_ms + h_.final.liveness_bound_ms;
    for (auto& [key, e] : last_fetch) {
      if (e->time_ms < end_ms)
        continue;
      auto x = std::get<offset_fetch_event>(e->body).committed_offset;
      const std::pair<int64_t, txn_key>* highest = nullptr;
      for (auto& put_by : by_group_tp[key])
        if (facts(put_by.second).committed() && put_by.first > x
            && (!highest || put_by.first > highest->first))
          highest = &put_by;
      if (highest)
        report(violation_kind::outputs_without_offsets, e->seq,
               "group " + key.first + " has committed offset " + std::to_string(x) + " for "
                 + name(key.second) + " at the end, below offset " + std::to_string(highest->first)
                 + " of committed " + name(highest->second));
    }
  }

  // -- epochs and fencing ----------------------------------------------------------

  void check_epochs_and_writes() {
    std::map<std::string, std::map<producer_id, producer_epoch>> by_tid; // highest handed
    std::map<producer_id, std::set<producer_epoch>> handed;
    auto hand = [&](const event* e, const std::string& tid, producer_id pid, producer_epoch epoch) {
      if (pid == no_producer_id)
        return;
      auto& highest = by_tid[tid];
      if (auto it = highest.find(pid); it != highest.end() && epoch <= it->second)
        report(violation_kind::epoch_regression, e->seq,
               tid + " was handed producer id " + std::to_string(pid.value) + " epoch "
                 + std::to_string(epoch.value) + " after epoch " + std::to_string(it->second.value));
      if (auto [it, inserted] = highest.emplace(pid, epoch); !inserted)
        it->second = std::max(it->second, epoch);
      handed[pid].insert(epoch);
    };
    for (auto* e : events_) {
      if (auto* i = as<init_transactions_event>(e)) {
        hand(e, i->transactional_id, i->pid, i->epoch);
      } else if (auto* t = as<end_txn_event>(e)) {
        if (t->ok())
          hand(e, t->transactional_id, t->pid, t->epoch);
      } else if (auto* w = as<write_accepted_event>(e)) {
        if (auto why = zombie(*w, handed); !why.empty())
          report(violation_kind::zombie_write, e->seq,
                 name(w->tp) + " accepted offsets " + std::to_string(w->base_offset) + "-"
                   + std::to_string(w->last_offset) + " of producer id " + std::to_string(w->pid.value)
                   + " epoch " + std::to_string(w->epoch.value) + " after " + why);
      }
    }
  }

  /// Whether the final log holds the write `w` accepted: with replicas, a
  /// leader that was deposed may have accepted batches that no follower
  /// had; they were truncated and never reached anyone (acks=all).
  static bool survived(const write_accepted_event& w, const std::vector<log_entry>& log) {
    auto i = std::lower_bound(log.begin(), log.end(), w.base_offset,
                              [](const log_entry& e, int64_t off) { return e.offset < off; });
    return i != log.end() && i->offset == w.base_offset && i->pid == w.pid && i->epoch == w.epoch;
  }

  /// Why the write is a zombie write; empty if it is not.
  std::string zombie(const write_accepted_event& w,
                     const std::map<producer_id, std::set<producer_epoch>>& handed) const {
    auto* view = view_of(w.tp);
    const std::vector<size_t>* mine = nullptr;
    if (view)
      if (auto it = view->by_pid.find(w.pid); it != view->by_pid.end())
        mine = &it->second;
    if (view && !survived(w, view->state->log))
      return {}; // appended by a leader that was then deposed: truncated away
    if (mine) {
      auto& log = view->state->log;
      for (auto i : *mine) {
        if (log[i].offset >= w.base_offset)
          break;
        if (log[i].epoch > w.epoch)
          return "the partition held epoch " + std::to_string(log[i].epoch.value) + " at offset "
                 + std::to_string(log[i].offset);
      }
    }
    auto h = handed.find(w.pid);
    if (h == handed.end() || *h->second.rbegin() <= w.epoch)
      return {};
    auto next_epoch = *h->second.upper_bound(w.epoch);
    if (mine) {
      auto& log = view->state->log;
      for (auto i : *mine)
        if (log[i].offset > w.last_offset && log[i].is_control) {
          if (log[i].epoch == next_epoch)
            return {}; // a straggler of the transaction that EndTxn was ending
          break;
        }
    }
    return "epoch " + std::to_string(h->second.rbegin()->value) + " had been handed out";
  }

  // -- liveness ----------------------------------------------------------------------

  void check_liveness() {
    if (!quiescent_for_bound())
      return;
    auto seq = h_.final.seq;
    for (auto& [tp, view] : parts_) {
      auto& p = *view.state;
      if (p.last_stable_offset < p.high_watermark)
        report(violation_kind::stuck_lso, seq,
               name(tp) + ": last stable offset " + std::to_string(p.last_stable_offset)
                 + " below high watermark " + std::to_string(p.high_watermark) + " after quiescence");
    }
    std::set<std::pair<topic_partition, producer_id>> coordinator_open;
    auto open_txns = h_.final.coordinator_open_transactions;
    std::stable_sort(open_txns.begin(), open_txns.end(),
                     [](auto& a, auto& b) { return a.transactional_id < b.transactional_id; });
    for (auto& t : open_txns) {
      report(violation_kind::stuck_lso, seq,
             "the transaction coordinator still holds " + t.transactional_id + " (producer id "
               + std::to_string(t.pid.value) + ") open after quiescence");
      for (auto& tp : t.partitions)
        coordinator_open.emplace(tp, t.pid);
    }
    for (auto& [tp, view] : parts_) {
      std::set<producer_id> open(view.state->open_transactions.begin(),
                                 view.state->open_transactions.end());
      for (auto pid : open)
        if (!coordinator_open.count({tp, pid}))
          report(violation_kind::open_state_disagreement, seq,
                 name(tp) + " has an open transaction of producer id " + std::to_string(pid.value)
                   + " that the transaction coordinator does not hold open there");
    }
  }

  void check_progress() {
    auto& f = h_.final;
    if (f.progress_since_ms < 0)
      return;
    auto until = f.progress_since_ms + f.progress_bound_ms;
    uint64_t seq = f.seq;
    for (auto& e : h_.events) {
      if (e.time_ms > until) {
        seq = e.seq;
        break;
      }
      if (auto* t = std::get_if<end_txn_event>(&e.body);
          t && t->commit_ok() && e.time_ms >= f.progress_since_ms)
        return;
    }
    report(violation_kind::no_progress, seq,
           "no transaction committed in the " + std::to_string(f.progress_bound_ms)
             + " ms after the faults stopped");
  }

  const history& h_;
  std::vector<const event*> events_; // by seq
  std::map<value_id, const event*> first_send_;
  std::map<value_id, const event*> first_ack_;
  std::map<txn_key, txn_facts> txns_;
  std::map<topic_partition, partition_view> parts_;
  std::vector<txn_run> runs_;
  std::vector<partition_view*> run_part_; // per run
  std::map<value_id, std::vector<occurrence>> occurrences_;
  std::vector<violation> out_;
};

} // namespace

std::vector<violation> check_history(const history& h) {
  return checker{h}.run();
}

} // namespace caftx::sim
