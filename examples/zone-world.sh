#!/usr/bin/env bash
# Zone World in five processes on a local redis-server: three zone nodes, the gateway
# and the ops node, each `zone-world --redis URL --role ...`. Starts redis-server on
# port 6379 first when nothing answers there. Ctrl-C stops them all (the zone nodes move
# their zones away first, while others still run).
#
#   examples/zone-world.sh            # the game at http://127.0.0.1:7480/
#   REDIS_URL=redis://host:6379 examples/zone-world.sh
set -euo pipefail
cd "$(dirname "$0")/.."

REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
cargo build -q -p zlink-examples --bin zone-world
BIN=target/debug/zone-world

pids=()
redis_pid=""
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -INT "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -n "$redis_pid" ]]; then kill "$redis_pid" 2>/dev/null || true; fi
}
trap stop INT TERM EXIT

if [[ "$REDIS_URL" == "redis://127.0.0.1:6379" ]] && ! redis-cli -p 6379 ping >/dev/null 2>&1; then
  echo "starting redis-server on 127.0.0.1:6379 (no persistence)"
  redis-server --port 6379 --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
  redis_pid=$!
  until redis-cli -p 6379 ping >/dev/null 2>&1; do sleep 0.1; done
fi

for rid in zn-a zn-b zn-c; do
  "$BIN" --redis "$REDIS_URL" --role zone --rid "$rid" &
  pids+=($!)
done
"$BIN" --redis "$REDIS_URL" --role gateway --port 7480 &
pids+=($!)
"$BIN" --redis "$REDIS_URL" --role ops --port 7482 &
pids+=($!)
echo "game: http://127.0.0.1:7480/   ops: http://127.0.0.1:7482/   (Ctrl-C stops all)"
wait "${pids[@]}"
