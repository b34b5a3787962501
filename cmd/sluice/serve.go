package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluicedb/sluice/objectio"
	"github.com/sluicedb/sluice/server"
)

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:9092", "Kafka listener address")
	store := fs.String("store", "dir://./sluice-data", "object store: dir://PATH or mem://")
	adminAddr := fs.String("admin-addr", "127.0.0.1:9644", "address for /metrics and /debug/pprof (empty: off)")
	advertise := fs.String("advertise", "", "host:port clients are told to connect to (default: the listen address)")
	flushWindow := fs.Duration("flush-window", server.DefaultFlushWindow, "how long produced batches wait to share one object")
	flushBytes := fs.Int("flush-bytes", server.DefaultFlushBytes, "seal an object early at this many bytes")
	cacheBytes := fs.Int64("cache-bytes", server.DefaultCacheBytes, "segment cache size in bytes")
	autoCreate := fs.Bool("auto-create-topics", true, "create unknown topics on Metadata and Produce")
	defaultPartitions := fs.Int("default-partitions", 1, "partitions of auto-created topics")
	maxRequestBytes := fs.Int("max-request-bytes", 100<<20, "larger request frames close the connection")
	groupDelay := fs.Duration("group-initial-rebalance-delay", 3*time.Second, "how long a new consumer group waits for more members before its first rebalance (Kafka's group.initial.rebalance.delay.ms)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	s3AccessKey := fs.String("s3-access-key", "", "S3 access key (else access_key in --store, SLUICE_S3_ACCESS_KEY, AWS_ACCESS_KEY_ID or the AWS chain)")
	s3SecretKey := fs.String("s3-secret-key", "", "S3 secret key (else secret_key in --store, SLUICE_S3_SECRET_KEY, AWS_SECRET_ACCESS_KEY or the AWS chain)")
	storeLatency := fs.String("store-latency", "", "testing: add this latency to every store request, e.g. 30ms-70ms")
	storeErrorRate := fs.Float64("store-error-rate", 0, "testing: fraction of store requests that fail without happening")
	storeLostRate := fs.Float64("store-lost-response-rate", 0, "testing: fraction of store requests that happen but report an error")
	if err := parseWithEnv(fs, args); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)

	storeURL, err := withS3Credentials(*store, *s3AccessKey, *s3SecretKey)
	if err != nil {
		return err
	}
	st, err := objectio.Open(storeURL)
	if err != nil {
		return err
	}
	st, err = objectio.WrapFaulty(st, objectio.FaultyConfig{
		Latency: *storeLatency, ErrorRate: *storeErrorRate, LostResponseRate: *storeLostRate, Seed: uint64(time.Now().UnixNano()),
	})
	if err != nil {
		return fmt.Errorf("--store-latency/--store-error-rate/--store-lost-response-rate: %w", err)
	}
	cfg := server.Config{
		AgentID:                    "serve",
		FlushWindow:                *flushWindow,
		FlushBytes:                 *flushBytes,
		CacheBytes:                 *cacheBytes,
		AutoCreateTopics:           *autoCreate,
		DefaultPartitions:          int32(*defaultPartitions),
		MaxRequestBytes:            int32(*maxRequestBytes),
		GroupInitialRebalanceDelay: noneIfZero(*groupDelay),
		Logger:                     log,
	}
	if *advertise != "" {
		host, port, err := splitHostPort(*advertise)
		if err != nil {
			return fmt.Errorf("--advertise: %w", err)
		}
		cfg.AdvertiseHost, cfg.AdvertisePort = host, port
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sa, err := server.StartStandalone(ctx, st, *listen, cfg)
	if err != nil {
		return explainStoreError(err, *store)
	}
	log.Info("sluice serving", "kafka", sa.Addr(), "store", objectio.RedactStoreURL(*store), "flush_window", *flushWindow)
	if *adminAddr != "" {
		go serveAdmin(*adminAddr, sa, log)
	}
	<-ctx.Done()
	log.Info("shutting down: flushing and acknowledging buffered batches")
	closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sa.Close(closeCtx)
	return nil
}

// parseWithEnv parses flags, taking unset ones from SLUICE_<NAME> variables.
func parseWithEnv(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		env := "SLUICE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok && !set[f.Name] {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", env, err))
			}
		}
	})
	return errors.Join(errs...)
}

func serveAdmin(addr string, sa *server.Standalone, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		sa.Agent.WriteMetrics(w)
	})
	if err := http.ListenAndServe(addr, mux); err != nil {
		log.Error("admin listener stopped", "addr", addr, "err", err)
	}
}

// noneIfZero maps a flag's explicit 0 to the config's "none" (-1), since the
// config's zero value means "Kafka's default".
func noneIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// explainStoreError turns the store errors a user can fix into a sentence
// saying what to fix.
func explainStoreError(err error, storeURL string) error {
	where := objectio.RedactStoreURL(storeURL)
	switch {
	case errors.Is(err, objectio.ErrBucketMissing):
		return fmt.Errorf("the bucket of %s does not exist: create it first (%w)", where, err)
	case errors.Is(err, objectio.ErrCredentials):
		return fmt.Errorf("the store %s refused our credentials: check access_key/secret_key or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (%w)", where, err)
	case errors.Is(err, objectio.ErrConditionalCreateIgnored):
		return fmt.Errorf("the store %s ignores If-None-Match: * on PUT, so two sequencers could both extend the metadata log; use a store that honours conditional writes (AWS S3, R2, MinIO, versitygw) (%w)", where, err)
	}
	return err
}

// withS3Credentials adds credentials given as flags to an s3:// store URL.
func withS3Credentials(store, access, secret string) (string, error) {
	if access == "" && secret == "" {
		return store, nil
	}
	u, err := url.Parse(store)
	if err != nil || u.Scheme != "s3" {
		return "", fmt.Errorf("--s3-access-key and --s3-secret-key need an s3:// --store")
	}
	q := u.Query()
	if access != "" {
		q.Set("access_key", access)
	}
	if secret != "" {
		q.Set("secret_key", secret)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}
