// The controller's znodes (under the cluster's chroot) and their JSON
// codecs, after Kafka's ZkData.scala (docs/controller.md §Znodes). Every
// znode's JSON carries "version":1; a znode that does not parse, lacks a
// field, has a field of the wrong type or another version decodes to
// UNKNOWN_SERVER_ERROR "malformed znode <path>: <what>".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/controller_model.hpp"
#include "runtime/status.hpp"

namespace caftx::controller {

// -- paths -------------------------------------------------------------------

inline const std::string nodes_path = "/nodes";
inline const std::string controller_path = "/controller";
inline const std::string controller_epoch_path = "/controller_epoch";
inline const std::string topics_path = "/topics";
/// Parent of the topic deletion markers (Kafka's /admin/delete_topics).
inline const std::string delete_topics_path = "/delete_topics";
inline const std::string producer_id_block_path = "/producer_id_block";
inline const std::string cluster_id_path = "/cluster_id";

/// "/nodes/<id>" (ephemeral, Kafka's /brokers/ids/<id>).
std::string node_path(node_id id);
/// "/topics/<t>" (Kafka's /brokers/topics/<t>).
std::string topic_path(std::string_view topic);
/// "/delete_topics/<t>": topic <t> is being deleted (Kafka's
/// /admin/delete_topics/<t>); no data. A new controller resumes the
/// deletion of every topic marked so.
std::string delete_topic_path(std::string_view topic);
/// "/topics/<t>/<p>", the parent of the state znode (no data).
std::string partition_path(const topic_partition& tp);
/// "/topics/<t>/<p>/state" (Kafka's /brokers/topics/<t>/partitions/<p>/state).
std::string partition_state_path(const topic_partition& tp);

// -- /nodes/<id> -------------------------------------------------------------

/// What a node writes into its /nodes/<id> znode.
struct node_registration {
  endpoint ep;
  std::string rack;        // "" = none (the key is then omitted)
  std::string caftx_build; // the node's build, for operators
  int64_t started_ms = 0;  // wall clock of the node's start
  /// The advertised PLAINTEXT:// listener (port 0: none), written as
  /// Kafka's BrokerIdZNode "endpoints" entry.
  endpoint kafka;
};

/// {"version":1,"host":"h","port":p,["rack":"r",]"caftx_build":"b","started_ms":t
///  [,"endpoints":["PLAINTEXT://kh:kp"]]}
std::string encode_node(const node_registration& reg);
status_or<node_registration> decode_node(const std::string& path, std::string_view data);
/// The live node of a registration read from /nodes/<id> with czxid `node_epoch`.
live_node to_live_node(node_id id, int64_t node_epoch, const node_registration& reg);

// -- /controller, /controller_epoch -------------------------------------------

/// {"version":1,"node_id":n,"timestamp":"<ms>"} (Kafka's ControllerZNode
/// writes the timestamp as a string too).
std::string encode_controller(node_id id, int64_t timestamp_ms);
/// The controller's node id.
status_or<node_id> decode_controller(std::string_view data);

/// {"version":1,"epoch":e}. Kafka's ControllerEpochZNode holds the bare
/// number; caftx versions it like every other persisted record.
std::string encode_controller_epoch(int32_t epoch);
status_or<int32_t> decode_controller_epoch(std::string_view data);

// -- /topics/<t>, /topics/<t>/<p>/state ----------------------------------------

/// {"version":1,"partitions":{"0":[1,2,3],...},"config":{"k":"v",...}}
/// (Kafka's TopicZNode plus its /config/topics/<t> in one znode).
std::string encode_topic(const topic_assignment& topic);
/// The topic of /topics/<name>; partitions must be numbered 0..n-1 and
/// each replica list non-empty, without duplicates.
status_or<topic_assignment> decode_topic(const std::string& name, std::string_view data);

/// {"version":1,"leader":l,"leader_epoch":e,"controller_epoch":c,"isr":[...]}
/// (Kafka's TopicPartitionStateZNode).
std::string encode_partition_state(const partition_state& st);
/// The state read from `path` whose znode data version is `version` (the
/// partition epoch).
status_or<partition_state> decode_partition_state(const std::string& path, std::string_view data,
                                                  int32_t version);

// -- /producer_id_block, /cluster_id -------------------------------------------

/// A block of producer ids, both ends inclusive (Kafka's ProducerIdBlock).
struct producer_id_block {
  node_id owner = -1;
  int64_t block_start = 0;
  int64_t block_end = 0;
  friend bool operator==(const producer_id_block& a, const producer_id_block& b) {
    return a.owner == b.owner && a.block_start == b.block_start && a.block_end == b.block_end;
  }
};

/// {"version":1,"node_id":n,"block_start":"s","block_end":"e"} (ids as
/// strings, as Kafka's ProducerIdBlockZNode).
std::string encode_producer_id_block(const producer_id_block& block);
status_or<producer_id_block> decode_producer_id_block(std::string_view data);

/// {"version":1,"id":"<id>"} (Kafka's ClusterIdZNode).
std::string encode_cluster_id(std::string_view id);
status_or<std::string> decode_cluster_id(std::string_view data);

} // namespace caftx::controller
