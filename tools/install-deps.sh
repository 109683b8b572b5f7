#!/usr/bin/env bash
# Installs the Debian 12 packages caftx needs to build and test; a no-op when
# every package is already present. Safe to run as root on a fresh machine.
# ZooKeeper (the jars of libzookeeper-java, run on a headless JRE) is what
# the cluster tests start; libzookeeper-mt-dev is its C client. kcat
# (librdkafka's command-line client) and python3-confluent-kafka (its
# Python binding) judge the Kafka listener in the tests.
set -euo pipefail

packages=(
  g++ cmake make ccache pkg-config
  libcaf-dev
  libssl-dev
  libleveldb-dev libsnappy-dev zlib1g-dev liblz4-dev libzstd-dev
  libboost-dev libboost-serialization-dev
  libgtest-dev librapidcheck-dev
  libcli11-dev
  nlohmann-json3-dev
  libbenchmark-dev
  libfccp-dev
  libspdlog-dev
  libcpp-httplib-dev
  libzookeeper-mt-dev
  libzookeeper-java openjdk-17-jre-headless
  kcat python3-confluent-kafka
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "caftx: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
