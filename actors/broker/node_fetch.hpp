// A node's multi-partition fetch (node_fetch_request, Kafka's FetchRequest
// of many partitions): the node fans the request out to its partition
// leaders and gathers their answers. Used by the broker actor; also by test
// doubles of a broker, which supply their own leaders.
#pragma once

#include <cstdint>
#include <functional>

#include <caf/fwd.hpp>

#include "runtime/actor_interfaces.hpp"
#include "runtime/metrics.hpp"

namespace caftx {

struct node_fetch_request;
struct node_fetch_response;
struct topic_partition;

/// Answers `req` through `rp`: first every partition at once (max_wait 0);
/// if their records together stay below min_bytes and none answered an
/// error, every partition again with max_wait_ms, held by its leader until
/// it has something, and the answer goes as soon as the records reach
/// min_bytes, a partition answers an error, or every held fetch returned
/// (each after at most max_wait_ms). `leader_of` gives a partition's leader
/// (a null handle: not led here, UNKNOWN_TOPIC_OR_PARTITION);
/// `request_timeout_ms` bounds the wait for a leader beyond max_wait_ms
/// (then REQUEST_TIMED_OUT for that partition). The answer keeps at most
/// max_bytes of records (node_fetch_request in runtime/messages.hpp).
void node_fetch(caf::event_based_actor* self, node_fetch_request req,
                const std::function<partition_actor(const topic_partition&)>& leader_of,
                int32_t request_timeout_ms, caf::typed_response_promise<node_fetch_response> rp,
                metrics::request_timer timer = {});
/// The same from a broker; `timer` is observed when the answer goes.
void node_fetch(broker_impl_actor::pointer self, node_fetch_request req,
                const std::function<partition_actor(const topic_partition&)>& leader_of,
                int32_t request_timeout_ms, caf::typed_response_promise<node_fetch_response> rp,
                metrics::request_timer timer = {});

/// The fetch.max.bytes budget of a gathered answer: in order, a
/// partition's records are kept while the total stays within `max_bytes`,
/// the first partition with records always; the records of a later one
/// over the budget are dropped (it answers nothing, no error, and is
/// fetched again from the same offset). Returns the bytes kept.
int64_t apply_fetch_max_bytes(node_fetch_response& resp, int32_t max_bytes);

} // namespace caftx
