#!/usr/bin/env bash
# make profile: CPU, heap and allocation profiles of `sluice serve` (mem
# store) under the standard load: 4 franz-go producers at full speed, 1 KiB
# records, 8 partitions; then 4 consumers reading it all back. Writes
# profiles/*.pprof and a top-30 text summary of each (profiles/*.top.txt).
# profiles/README.md reads them.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-20} # seconds of produce; the CPU profile covers the middle
out=profiles
mkdir -p "$out"
bin=$(mktemp -d)/sluice
go build -o "$bin" ./cmd/sluice

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
kafka=127.0.0.1:$(free_port)
admin=127.0.0.1:$(free_port)
"$bin" serve --listen "$kafka" --admin-addr "$admin" --store mem:// --log-level warn &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -s "http://$admin/metrics" >/dev/null 2>&1 && break; sleep 0.05; done

topic=profile-$(date +%s)
"$bin" bench produce --brokers "$kafka" --topic "$topic" --rate-bytes 0 --clients 4 --partitions 8 \
  --record-bytes 1024 --duration "${DURATION}s" --quiet &
load=$!
sleep 3
curl -s -o "$out/cpu-produce.pprof" "http://$admin/debug/pprof/profile?seconds=$((DURATION - 6))"
curl -s -o "$out/allocs.pprof" "http://$admin/debug/pprof/allocs"
wait $load
curl -s -o "$out/heap.pprof" "http://$admin/debug/pprof/heap?gc=1"

"$bin" bench consume --brokers "$kafka" --topic "$topic" --clients 4 --quiet &
load=$!
curl -s -o "$out/cpu-consume.pprof" "http://$admin/debug/pprof/profile?seconds=5"
wait $load

for p in cpu-produce cpu-consume; do
  go tool pprof -top -nodecount=30 "$bin" "$out/$p.pprof" > "$out/$p.top.txt" 2>/dev/null
done
go tool pprof -top -nodecount=30 -sample_index=inuse_space "$bin" "$out/heap.pprof" > "$out/heap.top.txt" 2>/dev/null
go tool pprof -top -nodecount=30 -sample_index=alloc_space "$bin" "$out/allocs.pprof" > "$out/allocs.top.txt" 2>/dev/null
echo "profiles written to $out/"
