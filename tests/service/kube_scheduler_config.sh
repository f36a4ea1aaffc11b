#!/usr/bin/env bash
# The KubeSchedulerConfigurations in deploy/ against the real kube-scheduler
# 1.20.2 (scripts/kube-control-plane.sh build): the v1beta1 one loads
# (decoding is strict: a misspelt field fails), with and without bindVerb;
# the v1 one (for 1.25+) is rejected by 1.20, as documented. No API server is
# needed: --write-config-to loads, validates, writes and exits. The extender's
# tlsConfig files are made here with openssl (kube-scheduler opens them).
# Exits 77 (skipped) when the kube-scheduler binary is not built.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BIN="${BERTH_KUBE_CACHE:-/var/cache/berth/kube-1.20.2}/bin/kube-scheduler"
if [ ! -x "$BIN" ]; then
  echo "skipped: $BIN not built (scripts/kube-control-plane.sh build)"
  exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# A kubeconfig the scheduler only parses (it never connects here).
cat >"$WORK/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: unused}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
KC

# The extender's tlsConfig files (kube-scheduler reads them at start).
mkdir -p "$WORK/tls"
(cd "$WORK/tls" &&
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=berth-test-ca -keyout ca.key -out ca.crt &&
  openssl req -newkey rsa:2048 -nodes -subj /CN=kube-scheduler -keyout client.key -out client.csr &&
  openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -out client.crt) >/dev/null 2>&1

# Loads CONFIG (with the kubeconfig above); prints kube-scheduler's output on failure.
load() {
  local config="$1" out="$WORK/out.yaml"
  rm -f "$out"
  if ! timeout 60 "$BIN" --config "$config" --write-config-to "$out" >"$WORK/log" 2>&1 || [ ! -s "$out" ]; then
    cat "$WORK/log" >&2
    return 1
  fi
}
with_client() {  # the deploy file with clientConnection.kubeconfig set
  sed -e 's|^# clientConnection:|clientConnection:|' -e "s|^#   kubeconfig: .*|  kubeconfig: $WORK/kubeconfig|" \
      -e "s|/etc/berth/tls/|$WORK/tls/|g" "$1"
}

V1BETA1="$ROOT/deploy/kube-scheduler-config-v1beta1.yaml"
grep -q '^# clientConnection:' "$V1BETA1"
with_client "$V1BETA1" >"$WORK/v1beta1.yaml"
load "$WORK/v1beta1.yaml"
for key in urlPrefix filterVerb prioritizeVerb preemptVerb weight nodeCacheCapable 'enableHTTPS: true' certFile keyFile caFile; do
  grep -q "$key" "$WORK/out.yaml" || { echo "FAIL: $key not in the loaded configuration" >&2; exit 1; }
done
echo "ok: v1beta1 loads"

sed 's|# bindVerb: bind|bindVerb: bind|' "$WORK/v1beta1.yaml" >"$WORK/bind.yaml"
load "$WORK/bind.yaml"
grep -q 'bindVerb: bind' "$WORK/out.yaml"
echo "ok: v1beta1 with bindVerb loads"

sed 's|filterVerb:|filterVerbs:|' "$WORK/v1beta1.yaml" >"$WORK/typo.yaml"
if load "$WORK/typo.yaml" 2>/dev/null; then echo "FAIL: a misspelt field was accepted" >&2; exit 1; fi
echo "ok: a misspelt field is rejected (strict decoding)"

with_client "$ROOT/deploy/kube-scheduler-config.yaml" >"$WORK/v1.yaml"
if load "$WORK/v1.yaml" 2>/dev/null; then echo "FAIL: kube-scheduler 1.20 accepted kubescheduler.config.k8s.io/v1" >&2; exit 1; fi
grep -q 'no kind "KubeSchedulerConfiguration" is registered for version "kubescheduler.config.k8s.io/v1"' "$WORK/log"
echo "ok: v1 is rejected by 1.20 (it is for 1.25+)"
