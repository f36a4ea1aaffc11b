#!/usr/bin/env bash
# A real Kubernetes control plane for Berth's tests: kube-apiserver and
# kube-scheduler v1.20.2 built from Debian's `kubernetes` source package with
# Debian's Go, plus Debian's etcd. Nodes are API objects without kubelets.
#
#   scripts/kube-control-plane.sh build          # once per machine; cached in $BERTH_KUBE_CACHE
#   scripts/kube-control-plane.sh start DIR      # etcd + apiserver on loopback; writes DIR/kubeconfig, DIR/env
#   scripts/kube-control-plane.sh stop DIR       # stops exactly the processes `start` started (by PID)
#   scripts/kube-control-plane.sh scheduler DIR CONFIG   # starts the real kube-scheduler with CONFIG
#
# The cache lives outside the clone (default /var/cache/berth/kube-1.20.2) so a
# clean clone in CI reuses a build made earlier on the same machine.
set -euo pipefail

KUBE_VERSION=1.20.2
CACHE="${BERTH_KUBE_CACHE:-/var/cache/berth/kube-${KUBE_VERSION}}"
BIN="$CACHE/bin"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

log() { echo "kube-control-plane: $*" >&2; }

install_packages() {
  local pkgs=(golang-go rsync dpkg-dev golang-github-modern-go-reflect2-dev etcd-server
              openssl curl)
  local missing=()
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# Debian's source index for bookworm main, kept in a private apt configuration
# so the machine's own sources stay untouched.
apt_source_kubernetes() {
  local aptdir="$CACHE/apt"
  mkdir -p "$aptdir/lists/partial" "$aptdir/archives/partial" "$aptdir/sources.list.d"
  cat >"$aptdir/sources.list" <<SRC
deb-src http://deb.debian.org/debian bookworm main
SRC
  local opts=(-o "Dir::Etc::SourceList=$aptdir/sources.list"
              -o "Dir::Etc::SourceParts=$aptdir/sources.list.d"
              -o "Dir::State::Lists=$aptdir/lists"
              -o "Dir::Cache::Archives=$aptdir/archives"
              -o "APT::Sandbox::User=root")
  apt-get "${opts[@]}" update -qq
  (cd "$CACHE/src" && apt-get "${opts[@]}" source -qq kubernetes >/dev/null)
}

build() {
  if [ -x "$BIN/kube-apiserver" ] && [ -x "$BIN/kube-scheduler" ]; then
    log "cached binaries in $BIN"
    return 0
  fi
  install_packages
  mkdir -p "$CACHE/src" "$BIN"
  local srcdir
  srcdir="$(find "$CACHE/src" -maxdepth 1 -type d -name 'kubernetes-*' | head -1)"
  if [ -z "$srcdir" ]; then
    log "fetching Debian's kubernetes source package"
    apt_source_kubernetes
    srcdir="$(find "$CACHE/src" -maxdepth 1 -type d -name 'kubernetes-*' | head -1)"
  fi
  [ -n "$srcdir" ] || { log "no kubernetes source tree under $CACHE/src"; exit 1; }
  # reflect2 1.0.1 (vendored) crashes under Go >= 1.18; use Debian's 1.0.2.
  local r2=/usr/share/gocode/src/github.com/modern-go/reflect2
  if [ ! -f "$srcdir/vendor/github.com/modern-go/reflect2/.berth-debian" ]; then
    rm -rf "$srcdir/vendor/github.com/modern-go/reflect2"
    cp -r "$r2" "$srcdir/vendor/github.com/modern-go/reflect2"
    touch "$srcdir/vendor/github.com/modern-go/reflect2/.berth-debian"
  fi
  log "building kube-apiserver and kube-scheduler (several minutes cold)"
  (cd "$srcdir" && GO111MODULE=off GOFLAGS= GOCACHE="$CACHE/gocache" \
     make WHAT="cmd/kube-apiserver cmd/kube-scheduler" >"$CACHE/build.log" 2>&1) || {
    tail -40 "$CACHE/build.log" >&2; exit 1; }
  local out
  out="$(find "$srcdir/_output" -type f -name kube-apiserver -perm -u+x | head -1)"
  cp "$out" "$(dirname "$out")/kube-scheduler" "$BIN/"
  log "built into $BIN"
}

free_port() {
  python3 - <<'PY'
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

wait_for() {  # wait_for SECONDS CMD...
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

start() {
  local dir="$1"
  [ -x "$BIN/kube-apiserver" ] || build
  command -v etcd >/dev/null || install_packages
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  local etcd_port peer_port api_port token
  etcd_port=$(free_port); peer_port=$(free_port); api_port=$(free_port)
  token="berth-test-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  echo "$token,admin,admin,system:masters" >"$dir/tokens.csv"
  openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
  openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
  etcd --data-dir "$dir/etcd" --listen-client-urls "http://127.0.0.1:$etcd_port" \
       --advertise-client-urls "http://127.0.0.1:$etcd_port" \
       --listen-peer-urls "http://127.0.0.1:$peer_port" \
       --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
       --initial-cluster "default=http://127.0.0.1:$peer_port" >"$dir/etcd.log" 2>&1 &
  echo $! >"$dir/etcd.pid"
  wait_for 30 curl -sf "http://127.0.0.1:$etcd_port/health" || { log "etcd did not start"; tail "$dir/etcd.log" >&2; exit 1; }
  "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
       --bind-address 127.0.0.1 --secure-port "$api_port" --cert-dir "$dir/certs" \
       --token-auth-file "$dir/tokens.csv" --authorization-mode AlwaysAllow \
       --service-account-key-file "$dir/sa.pub" --service-account-signing-key-file "$dir/sa.key" \
       --service-account-issuer https://kubernetes.default.svc \
       --disable-admission-plugins ServiceAccount --service-cluster-ip-range 10.0.0.0/24 \
       --max-requests-inflight 2000 --max-mutating-requests-inflight 1000 \
       --event-ttl 10m >"$dir/apiserver.log" 2>&1 &
  echo $! >"$dir/apiserver.pid"
  local server="https://127.0.0.1:$api_port"
  wait_for 90 curl -skf -H "Authorization: Bearer $token" "$server/readyz" || {
    log "kube-apiserver did not become ready"; tail -30 "$dir/apiserver.log" >&2; stop "$dir"; exit 1; }
  cat >"$dir/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $server
    certificate-authority: $dir/certs/apiserver.crt
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
users:
- name: admin
  user: {token: $token}
KC
  cat >"$dir/env" <<ENV
KUBE_SERVER=$server
KUBE_TOKEN=$token
KUBECONFIG=$dir/kubeconfig
ENV
  # the default namespace and service account objects kubelets would otherwise wait for
  wait_for 30 curl -skf -H "Authorization: Bearer $token" "$server/api/v1/namespaces/default" || true
  log "apiserver ready at $server (kubeconfig $dir/kubeconfig)"
}

scheduler() {
  local dir="$1" config="$2"
  "$BIN/kube-scheduler" --config "$config" --kubeconfig "$dir/kubeconfig" \
       --authentication-kubeconfig "$dir/kubeconfig" --authorization-kubeconfig "$dir/kubeconfig" \
       --bind-address 127.0.0.1 --secure-port 0 >"$dir/kube-scheduler.log" 2>&1 &
  echo $! >"$dir/kube-scheduler.pid"
}

stop() {
  local dir="$1" f pid
  for f in kube-scheduler apiserver etcd; do
    [ -f "$dir/$f.pid" ] || continue
    pid=$(cat "$dir/$f.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/$f.pid"
  done
}

case "${1:-}" in
  build) build ;;
  start) start "${2:?start DIR}" ;;
  stop) stop "${2:?stop DIR}" ;;
  scheduler) scheduler "${2:?scheduler DIR CONFIG}" "${3:?scheduler DIR CONFIG}" ;;
  bin) echo "$BIN" ;;
  *) echo "usage: $0 build|start DIR|stop DIR|scheduler DIR CONFIG|bin" >&2; exit 2 ;;
esac
