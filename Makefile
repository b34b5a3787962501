# Sluice: see README.md.
GO ?= go
DURATION ?= 2m
SEEDS ?= 500

.PHONY: build run test bench bench-compare flush-sweep profile compat lint sim chaos

build:
	$(GO) build -o bin/sluice ./cmd/sluice

run:
	$(GO) run ./cmd/sluice serve --listen 127.0.0.1:9092 --store dir://./sluice-data --admin-addr 127.0.0.1:9644

# The whole suite, then the race detector over the packages with concurrency
# (with -short, the client tests move fewer records).
test:
	$(GO) test -count=1 -timeout 20m ./...
	$(GO) test -race -short -count=1 -timeout 20m ./codec/... ./objectio/... ./sequencer/... ./cache/... ./server/... ./internal/...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./codec/ ./bench/

# kfake, `sluice serve` on mem and `sluice serve` on dir, one after the
# other, with the same load: produce and consume MB/s, latency at a fixed
# rate, broker CPU-seconds per GB (from /proc) and peak RSS.
bench-compare:
	$(GO) run ./cmd/benchcompare --go $(GO) $(BENCH_COMPARE_FLAGS)

# CPU, heap and allocation profiles of the standard load into profiles/.
profile:
	scripts/profile.sh

# p50, p99, PUTs/s and S3 request cost per --flush-window (README table).
flush-sweep:
	scripts/flush-sweep.sh

# The deterministic simulator over SEEDS seeds on all cores.
sim:
	$(GO) run ./cmd/sluice sim -seeds $(SEEDS)

# The live chaos test: MinIO, two sequencers (both --standby: one takes
# over), three agents behind a TCP balancer, franz-go producers and a
# consumer group; SIGKILLs of agents and of the active sequencer throughout,
# then a history check. `make chaos DURATION=10m` is the long run.
chaos:
	$(GO) run ./cmd/chaos -duration $(DURATION)

# franz-go's own kgo integration tests against `sluice serve`.
compat:
	scripts/compat.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt wants to rewrite:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
