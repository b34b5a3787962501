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
	sf := addStoreFlags(fs)
	af := addAgentFlags(fs)
	if err := parseWithEnv(fs, args); err != nil {
		return err
	}
	log, st, err := sf.open()
	if err != nil {
		return err
	}
	cfg, err := af.config("serve", log)
	if err != nil {
		return err
	}
	limitMemory(cfg, st, log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	sa, err := server.StartStandalone(ctx, st, *listen, cfg)
	if err != nil {
		return explainStoreError(err, *sf.store)
	}
	log.Info("sluice serving", "kafka", sa.Addr(), "store", objectio.RedactStoreURL(*sf.store), "flush_window", cfg.FlushWindow)
	if *sf.adminAddr != "" {
		go serveAdmin(*sf.adminAddr, sa.Agent, log)
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

// serveAdmin serves pprof and, for an agent, its metrics.
func serveAdmin(addr string, agent *server.Agent, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	if agent != nil {
		mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			agent.WriteMetrics(w)
		})
	}
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
