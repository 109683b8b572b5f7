// The CAF inspectors every message header builds on: the macros that give
// a message struct its registered name ("caftx::<type>") and fields, and
// the inspectors of the value types messages carry (ids, records,
// topic-partitions). Messages are split by the actor kind that receives
// them (runtime/*_messages.hpp); runtime/messages.hpp registers them all.
#pragma once

#include <caf/meta/type_name.hpp>

#include "runtime/ids.hpp"
#include "runtime/record_batch.hpp"

/// inspect() of a message struct with fields, named "caftx::<type>".
#define CAFTX_INSPECT(type, ...)                                                                   \
  template <class Inspector>                                                                       \
  typename Inspector::result_type inspect(Inspector& f, type& x) {                                 \
    return f(caf::meta::type_name("caftx::" #type), __VA_ARGS__);                                  \
  }

/// inspect() of a message struct without fields.
#define CAFTX_INSPECT_EMPTY(type)                                                                  \
  template <class Inspector>                                                                       \
  typename Inspector::result_type inspect(Inspector& f, type&) {                                   \
    return f(caf::meta::type_name("caftx::" #type));                                               \
  }

namespace caftx {

template <class Inspector, class Tag, class Rep>
typename Inspector::result_type inspect(Inspector& f, strong_id<Tag, Rep>& x) {
  return f(x.value);
}

CAFTX_INSPECT(topic_partition, x.topic, x.partition)
CAFTX_INSPECT(record_header, x.key, x.value)
CAFTX_INSPECT(record, x.key, x.value, x.headers, x.timestamp_ms, x.null_value, x.offset_delta)
CAFTX_INSPECT(aborted_transaction, x.pid, x.first_offset)

} // namespace caftx
