#include "storage/partition_removal.hpp"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <leveldb/write_batch.h>

#include "storage/codec.hpp"

namespace caftx {

void remove_partition_data(node_store& store, const topic_partition& tp,
                           node_store::callback done, size_t keys_per_write) {
  if (keys_per_write == 0)
    keys_per_write = 1;
  std::vector<leveldb::WriteBatch> batches(1);
  size_t in_last = 0;
  auto add = [&](std::string_view key) {
    if (in_last == keys_per_write) {
      batches.emplace_back();
      in_last = 0;
    }
    batches.back().Delete(leveldb::Slice(key.data(), key.size()));
    ++in_last;
  };
  try {
    for (const auto& prefix : {keys::log_prefix(tp), keys::producer_snapshot_prefix(tp),
                               keys::aborted_txn_prefix(tp)}) {
      std::string after;
      for (;;) {
        size_t visited = store.scan_after(prefix, after, keys_per_write,
                                          [&](std::string_view key, std::string_view) {
                                            add(key);
                                            after.assign(key.data(), key.size());
                                          });
        if (visited < keys_per_write)
          break;
      }
    }
  } catch (const storage_read_error& e) {
    done(status{error_code::kafka_storage_error,
                "reading the keys of " + to_string(tp) + " to delete them: " + e.reason()});
    return;
  }
  for (const auto& key : {keys::log_start(tp), keys::leader_epochs(tp), keys::high_watermark(tp),
                          keys::cleaner_checkpoint(tp)})
    add(key);
  // The writes complete in order: the last one's callback reports the
  // first failure of any.
  struct outcome {
    std::mutex mtx;
    status first;
  };
  auto shared = std::make_shared<outcome>();
  const size_t n = batches.size();
  for (size_t i = 0; i < n; ++i) {
    const bool last = i + 1 == n;
    store.write(std::move(batches[i]), [shared, last, done](const status& st) {
      status result;
      {
        std::lock_guard<std::mutex> guard{shared->mtx};
        if (!st.ok() && shared->first.ok())
          shared->first = st;
        result = shared->first;
      }
      if (last)
        done(result);
    });
  }
}

} // namespace caftx
