package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"time"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/server"
)

// storeFlags are the flags of every command that opens the object store,
// and its logging and admin listener.
type storeFlags struct {
	store, s3AccessKey, s3SecretKey *string
	storeLatency, storePutLatency   *string
	storeErrorRate, storeLostRate   *float64
	logLevel, adminAddr             *string
}

func addStoreFlags(fs *flag.FlagSet) *storeFlags {
	return &storeFlags{
		store:           fs.String("store", "dir://./sluice-data", "object store: dir://PATH, mem:// or s3://BUCKET/PREFIX?endpoint=…&region=…&path_style=true"),
		s3AccessKey:     fs.String("s3-access-key", "", "S3 access key (else access_key in --store, SLUICE_S3_ACCESS_KEY, AWS_ACCESS_KEY_ID or the AWS chain)"),
		s3SecretKey:     fs.String("s3-secret-key", "", "S3 secret key (else secret_key in --store, SLUICE_S3_SECRET_KEY, AWS_SECRET_ACCESS_KEY or the AWS chain)"),
		storeLatency:    fs.String("store-latency", "", "testing: add this latency to every store request, e.g. 30ms-70ms"),
		storePutLatency: fs.String("store-put-latency", "", "testing: add this latency to every PUT, before it happens"),
		storeErrorRate:  fs.Float64("store-error-rate", 0, "testing: fraction of store requests that fail without happening"),
		storeLostRate:   fs.Float64("store-lost-response-rate", 0, "testing: fraction of store requests that happen but report an error"),
		logLevel:        fs.String("log-level", "info", "debug, info, warn or error"),
		adminAddr:       fs.String("admin-addr", "127.0.0.1:9644", "address for /metrics and /debug/pprof (empty: off)"),
	}
}

// open sets up logging and opens the store, wrapped in the testing faults.
func (f *storeFlags) open() (*slog.Logger, objectio.Store, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*f.logLevel)); err != nil {
		return nil, nil, fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	storeURL, err := withS3Credentials(*f.store, *f.s3AccessKey, *f.s3SecretKey)
	if err != nil {
		return nil, nil, err
	}
	st, err := objectio.Open(storeURL)
	if err != nil {
		return nil, nil, err
	}
	st, err = objectio.WrapFaulty(st, objectio.FaultyConfig{
		Latency: *f.storeLatency, PutLatency: *f.storePutLatency,
		ErrorRate: *f.storeErrorRate, LostResponseRate: *f.storeLostRate, Seed: uint64(time.Now().UnixNano()),
	})
	if err != nil {
		return nil, nil, fmt.Errorf("--store-latency/--store-put-latency/--store-error-rate/--store-lost-response-rate: %w", err)
	}
	return log, st, nil
}

// agentFlags are the flags of the commands that run an agent.
type agentFlags struct {
	advertise                                 *string
	flushWindow, flushIdle                    *time.Duration
	flushBytes, defaultPartitions, maxRequest *int
	cacheBytes                                *int64
	autoCreate                                *bool
	groupDelay                                *time.Duration
}

func addAgentFlags(fs *flag.FlagSet) *agentFlags {
	return &agentFlags{
		advertise:         fs.String("advertise", "", "host:port clients are told to connect to (default: the listen address); behind a load balancer, its address"),
		flushWindow:       fs.Duration("flush-window", server.DefaultFlushWindow, "how long produced batches wait to share one object"),
		flushIdle:         fs.Duration("flush-idle", server.DefaultFlushIdle, "seal an object sooner, once no batch has come for this long (0: always wait out --flush-window); lower latency at low load, for more PUTs"),
		flushBytes:        fs.Int("flush-bytes", server.DefaultFlushBytes, "seal an object early at this many bytes"),
		cacheBytes:        fs.Int64("cache-bytes", server.DefaultCacheBytes, "segment cache size in bytes"),
		autoCreate:        fs.Bool("auto-create-topics", true, "create unknown topics on Metadata and Produce"),
		defaultPartitions: fs.Int("default-partitions", 1, "partitions of auto-created topics"),
		maxRequest:        fs.Int("max-request-bytes", 100<<20, "larger request frames close the connection"),
		groupDelay:        fs.Duration("group-initial-rebalance-delay", 3*time.Second, "how long a new consumer group waits for more members before its first rebalance (Kafka's group.initial.rebalance.delay.ms)"),
	}
}

func (f *agentFlags) config(agentID string, log *slog.Logger) (server.Config, error) {
	cfg := server.Config{
		AgentID:                    agentID,
		FlushWindow:                *f.flushWindow,
		FlushIdle:                  *f.flushIdle,
		FlushBytes:                 *f.flushBytes,
		CacheBytes:                 *f.cacheBytes,
		AutoCreateTopics:           *f.autoCreate,
		DefaultPartitions:          int32(*f.defaultPartitions),
		MaxRequestBytes:            int32(*f.maxRequest),
		GroupInitialRebalanceDelay: noneIfZero(*f.groupDelay),
		Logger:                     log,
	}
	if *f.advertise != "" {
		host, port, err := splitHostPort(*f.advertise)
		if err != nil {
			return cfg, fmt.Errorf("--advertise: %w", err)
		}
		cfg.AdvertiseHost, cfg.AdvertisePort = host, port
	}
	return cfg, nil
}

// limitMemory makes the agent's memory budget the Go runtime's soft memory
// limit (see server.Config.MemoryBudget), unless GOMEMLIMIT already sets
// one, or the store keeps the bytes it is given (mem://), whose objects then
// live in the heap beyond any budget: a limit below the live heap would keep
// the collector running.
func limitMemory(cfg server.Config, st objectio.Store, log *slog.Logger) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set || !objectio.ReleasesData(st) {
		return
	}
	limit := cfg.MemoryBudget()
	debug.SetMemoryLimit(limit)
	log.Info("memory limit set from the cache and flush sizes (GOMEMLIMIT overrides)", "bytes", limit)
}
