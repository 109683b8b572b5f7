// One config of a topic or a node as Kafka's DescribeConfigs reports it
// (config/config.hpp describes them; runtime/broker_messages.hpp carries
// them). Pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace caftx {

/// Kafka's ConfigSource of a DescribeConfigs entry (KIP-226).
enum class config_source : int8_t {
  unknown = 0,
  dynamic_topic_config = 1,
  dynamic_broker_config = 2,
  dynamic_default_broker_config = 3,
  static_broker_config = 4,
  default_config = 5,
};

/// Another key whose value a config entry takes (DescribeConfigs v1+
/// synonyms): a topic key's broker key, in Kafka's order of precedence.
struct config_synonym {
  std::string name;
  std::string value;
  config_source source = config_source::default_config;
};

/// One config of a topic or a node as Kafka's DescribeConfigs reports it.
/// caftx has no dynamic broker configs and no sensitive ones: node keys
/// are read-only, topic keys are not (a topic's configs are set when it is
/// created).
struct config_entry {
  std::string name;
  std::string value;
  bool read_only = false;
  config_source source = config_source::default_config;
  std::vector<config_synonym> synonyms;
};

} // namespace caftx
