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

# Node.js and npm run KafkaJS (pinned in tests/clients/js/package-lock.json,
# installed from the npm registry into tests/clients/js/node_modules): the
# machine's own if it has them, else Debian's.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

install_js_clients() {
  local dir
  dir="$(cd "$(dirname "$0")/.." && pwd)/tests/clients/js"
  if [ ! -f "$dir/node_modules/kafkajs/package.json" ]; then
    echo "caftx: installing KafkaJS into $dir/node_modules" >&2
    npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >/dev/null
  fi
}

if [ "${#missing[@]}" -eq 0 ]; then
  install_js_clients
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
install_js_clients
