#!/usr/bin/env bash
# The flush-window sweep: for each --flush-window (and with and without
# --flush-idle), run `sluice serve` on the mem store with S3-like latency
# (--store-latency 30ms-70ms), produce 1 KiB records at 2 MB/s with one
# idempotent franz-go client, and print p50, p99, PUTs per second and the
# S3 request cost per month of those PUTs.
#
#   scripts/flush-sweep.sh                  # 20 s per setting
#   DURATION=60s scripts/flush-sweep.sh
#
# PUTs are data objects plus metadata log entries, read from the agent's
# /metrics. Cost: S3 Standard PUT price, $0.005 per 1000, 30-day month.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-20s}
WINDOWS=${WINDOWS:-"50ms 100ms 250ms 500ms"}
IDLES=${IDLES:-"0 30ms"}
RATE=${RATE:-2000000}
bin=$(mktemp -d)/sluice
go build -o "$bin" ./cmd/sluice

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
metric() { curl -s "http://$1/metrics" | awk -v m="$2" '$1==m {print $2}'; }

echo "| --flush-window | --flush-idle | p50 ms | p99 ms | PUTs/s | S3 PUT cost / month |"
echo "|---:|---:|---:|---:|---:|---:|"
for window in $WINDOWS; do
  for idle in $IDLES; do
    kafka=127.0.0.1:$(free_port)
    admin=127.0.0.1:$(free_port)
    "$bin" serve --listen "$kafka" --admin-addr "$admin" --store mem:// --store-latency 30ms-70ms \
      --flush-window "$window" --flush-idle "$idle" --log-level warn &
    pid=$!
    for _ in $(seq 100); do curl -s "http://$admin/metrics" >/dev/null 2>&1 && break; sleep 0.05; done
    objects0=$(metric "$admin" sluice_objects_written_total)
    entries0=$(metric "$admin" sluice_metadata_log_index)
    start=$(date +%s.%N)
    json=$("$bin" bench produce --brokers "$kafka" --rate-bytes "$RATE" --record-bytes 1024 --duration "$DURATION" --quiet -json 2>/dev/null)
    end=$(date +%s.%N)
    objects1=$(metric "$admin" sluice_objects_written_total)
    entries1=$(metric "$admin" sluice_metadata_log_index)
    kill "$pid"; wait "$pid" 2>/dev/null || true
    python3 - "$window" "$idle" "$json" "$objects0" "$objects1" "$entries0" "$entries1" "$start" "$end" <<'PY'
import json, sys
window, idle, js, o0, o1, e0, e1, start, end = sys.argv[1:]
lat = json.loads(js)["produce"]["latency"]
puts = (int(o1) - int(o0) + int(e1) - int(e0)) / (float(end) - float(start))
cost = puts * 86400 * 30 / 1000 * 0.005
print(f"| {window} | {idle} | {lat['p50_ms']:.0f} | {lat['p99_ms']:.0f} | {puts:.1f} | ${cost:,.0f} |")
PY
  done
done
