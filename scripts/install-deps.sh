#!/usr/bin/env bash
# Installs everything Berth needs to build, test and benchmark, from Debian
# packages only. Safe to run again. Run as root (or with sudo available).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libyaml-cpp-dev zlib1g-dev
  libglpk-dev
  libcpp-httplib-dev libsqlite3-dev curl
  libssl-dev openssl   # TLS for berth serve (src/berth/http); openssl makes the tests' certificates
  etcd-server etcd-client   # the replicated store's tests start local etcd members
  clang-14 libclang-rt-14-dev   # libFuzzer, ASan and UBSan for scripts/fuzz.sh
  dpkg-dev help2man systemd     # the .deb (CPack, dpkg-shlibdeps), its man pages, systemd-analyze verify of its unit
  prometheus                    # promtool check metrics on /metrics (the daemon itself is not started)
  chromium                      # the dashboard's browser test (tests/dashboard, playwright-core from npm)
  python3-torch                 # the agents' end-to-end torch.distributed job (gloo on CPU, /usr/bin/python3)
  openmpi-bin libopenmpi-dev    # the agents' end-to-end mpirun job (mpirun; mpicc builds its MPI program)
)
# Node.js and npm for that test: Debian's packages unless a node is already
# installed (NodeSource's nodejs carries its own npm and conflicts with Debian's).
if ! command -v node > /dev/null; then PACKAGES+=(nodejs npm); fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
