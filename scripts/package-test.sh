#!/usr/bin/env bash
# Installs the .deb of scripts/package.sh on this machine and checks it as a
# user would (run as root; CI does):
#   - `berth version` and `berth --help` from /usr/bin, man pages present;
#   - `berth simulate` on a packaged example from an empty directory (the
#     catalog found under /usr/share/berth, not the checkout);
#   - `systemd-analyze verify` on the installed unit;
#   - the service started the way the unit starts it (its ExecStart with
#     /etc/berth/berth.env, the state in a folder standing for /var/lib/berth):
#     /readyz answers, the dashboard is served at /, a job submitted through
#     the installed CLI runs, SIGTERM stops it;
#   - the package removed and purged again (the machine as it was).
#   scripts/package-test.sh [DEB]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
  echo "package-test: skipped (installing a package needs root)"
  exit 0
fi
DEB="${1:-$(scripts/package.sh | tail -1)}"
echo "package-test: installing $DEB"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq --no-install-recommends "./$DEB" >/dev/null
WORK="$(mktemp -d)"
PID=""
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null || true
  dpkg --purge berth >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "package-test: FAIL: $*" >&2; exit 1; }

/usr/bin/berth version | tee "$WORK/version" | head -3
grep -q "0\." "$WORK/version" || fail "berth version printed no version"
/usr/bin/berth --help >/dev/null || fail "berth --help"
[ -f /usr/share/berth/accelerators.yaml ] || fail "no /usr/share/berth/accelerators.yaml"
[ -f /lib/systemd/system/berth.service ] || fail "no unit"
[ -f /etc/berth/berth.env ] || fail "no /etc/berth/berth.env"
if command -v help2man >/dev/null; then
  [ -f /usr/share/man/man1/berth.1.gz ] || [ -f /usr/share/man/man1/berth.1 ] || fail "no man page"
fi
dpkg -L berth | grep -c . | sed 's/^/package-test: files installed: /'

# The simulator from an empty directory, on packaged examples.
(cd "$WORK" && /usr/bin/berth simulate --cluster /usr/share/berth/examples/clusters/k8s-nodes-16x8.json \
    --trace /usr/share/berth/examples/traces/k8s-gangs.jsonl --policy fifo,topology --json "$WORK/out/sim.json" \
    >"$WORK/simulate.txt") || { cat "$WORK/simulate.txt"; fail "berth simulate from $WORK"; }
grep -q '"jct_mean_s"' "$WORK/out/sim.json" || fail "simulate wrote no jct_mean_s"
echo "package-test: berth simulate from an empty directory: ok"

systemd-analyze verify /lib/systemd/system/berth.service 2>&1 | tee "$WORK/verify.txt"
if grep -qiE "berth.service.*(error|invalid|unknown|failed)" "$WORK/verify.txt"; then fail "systemd-analyze verify"; fi
echo "package-test: systemd-analyze verify: ok"

# The service as the unit runs it: ExecStart with the EnvironmentFile's values.
set -a
# shellcheck disable=SC1091
. /etc/berth/berth.env
set +a
STATE="$WORK/var-lib-berth"
mkdir -p "$STATE"
STORE="${BERTH_STORE/\/var\/lib\/berth/$STATE}"
(cd "$STATE" && exec /usr/bin/berth serve --listen 127.0.0.1:0 --store "$STORE" $BERTH_SERVE_ARGS --virtual-nodes \
    >"$WORK/serve.log" 2>&1) &
PID=$!
PORT=""
for _ in $(seq 1 100); do
  PORT="$(grep -o '"event":"listening"[^}]*"port":[0-9]*' "$WORK/serve.log" | grep -o '[0-9]*$' | head -1 || true)"
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "$PORT" ] || { cat "$WORK/serve.log"; fail "the installed berth serve did not listen"; }
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
export BERTH_SERVER="http://127.0.0.1:$PORT"
# The dashboard is built into the binary: the page and its scripts answer.
curl -fsS "$BERTH_SERVER/" | grep -q 'ui/app.js' || fail "the installed service does not serve the dashboard at /"
curl -fsS -o /dev/null -w '%{content_type}' "$BERTH_SERVER/ui/app.js" | grep -q '^text/javascript' \
  || fail "the dashboard's scripts are not served as JavaScript"
echo '{"name":"packaged","duration_s":1,"groups":[{"count":1,"gpus":8}]}' | /usr/bin/berth submit - >/dev/null \
  || fail "berth submit to the installed service"
/usr/bin/berth status | tee "$WORK/status.txt"
grep -q packaged "$WORK/status.txt" || fail "the job is not listed"
kill -TERM "$PID"
wait "$PID" || true
PID=""
[ -f "$STATE/berth.db" ] || fail "no store under the state directory"
echo "package-test: installed service started, took a job, stopped: ok"
dpkg --purge berth >/dev/null
[ ! -e /usr/bin/berth ] || fail "berth still installed after purge"
echo "package-test: ok"
