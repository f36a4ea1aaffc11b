# Sourced by the service scripts: starts one `berth serve` on a free loopback
# port over a SQLite store in a fresh work folder, and stops it by its PID on
# exit.
#   serve_start BERTH TOKEN [SERVE FLAGS...]
# sets WORK (removed on exit), TOKEN, SERVER_PID and URL once /readyz answers;
# the daemon's log is $WORK/serve.log. Waits at most 60 s in all.
WORK="$(mktemp -d)"
SERVER_PID=""
serve_cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill "$SERVER_PID"; wait "$SERVER_PID" || true; fi
  rm -rf "$WORK"
}
trap serve_cleanup EXIT

serve_start() {
  local berth="$1"
  TOKEN="$2"
  shift 2
  echo "$TOKEN" > "$WORK/token"
  "$berth" serve --listen 127.0.0.1:0 --store "sqlite:$WORK/data/berth.db" --token-file "$WORK/token" "$@" \
    2> "$WORK/serve.log" &
  SERVER_PID=$!
  local port="" i
  for i in $(seq 1 600); do
    port=$(grep -o '"event":"listening"[^}]*' "$WORK/serve.log" 2>/dev/null | grep -o '"port":[0-9]*' | cut -d: -f2 || true)
    [ -n "$port" ] && break
    sleep 0.05
  done
  [ -n "$port" ] || { echo "server did not start"; cat "$WORK/serve.log"; exit 1; }
  URL="http://127.0.0.1:$port"
  for i in $(seq 1 600); do
    curl -sf "$URL/readyz" > /dev/null && return 0
    sleep 0.05
  done
  echo "server not ready"; cat "$WORK/serve.log"; exit 1
}
