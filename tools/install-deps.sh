#!/usr/bin/env bash
# Installs the Debian 12 packages caftx needs to build and test; a no-op when
# every package is already present. Safe to run as root on a fresh machine.
# ZooKeeper (the jars of libzookeeper-java, run on a headless JRE) is what
# the cluster tests start; libzookeeper-mt-dev is its C client. kcat
# (librdkafka's command-line client) and python3-confluent-kafka (its
# Python binding) judge the Kafka listener in the tests; the kafka-wire
# benchmark links librdkafka-dev. librdkafka's own test suite is built from
# Debian's source package (apt-get source, which wants dpkg-dev and a
# deb-src entry: added for the Debian archive the machine already uses
# when it has none).
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
  dpkg-dev librdkafka-dev
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

# True when apt knows librdkafka's source package.
have_deb_src() {
  apt-cache showsrc librdkafka 2>/dev/null | grep -q '^Version: 2\.0\.2'
}

# Writes a deb-src twin of each Debian archive entry the machine has
# (deb822 files and one-line sources.list alike), for apt-get source.
add_deb_src() {
  local out=/etc/apt/sources.list.d/caftx-deb-src tmp f
  tmp=$(mktemp)
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # Debian's own archive only (deb.debian.org, a mirror, snapshot),
    # not debian-security or a third party's repository with "debian" in
    # its address, which may publish no sources (apt-get update would fail).
    awk 'BEGIN { RS = ""; ORS = "\n\n" }
         /(^|\n)Types:[^\n]*deb/ && /URIs:[^\n]*debian\.org\/(archive\/)?debian([ \/\n]|$)/ {
           sub(/Types:[^\n]*/, "Types: deb-src"); print }' "$f"
  done > "$tmp"
  if [ -s "$tmp" ]; then $SUDO cp "$tmp" "$out.sources"; fi
  if [ -f /etc/apt/sources.list ]; then
    grep -E '^deb[[:space:]].*debian\.org/(archive/)?debian[ /]' /etc/apt/sources.list \
      | sed 's/^deb/deb-src/' > "$tmp" || true
    if [ -s "$tmp" ]; then $SUDO cp "$tmp" "$out.list"; fi
  fi
  rm -f "$tmp"
}

if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive

need_update=0
if ! have_deb_src; then
  echo "caftx: adding a deb-src entry (librdkafka's test suite is built from its Debian source package)" >&2
  add_deb_src
  need_update=1
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "caftx: installing ${missing[*]}" >&2
  need_update=1
fi
if [ "$need_update" -eq 1 ]; then
  $SUDO apt-get update -qq
fi
if [ "${#missing[@]}" -gt 0 ]; then
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
install_js_clients
have_deb_src || echo "caftx: apt knows no librdkafka 2.0.2 source package; the librdkafka-* tests will fail" >&2
