package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicedb/sluice/bench"
)

func TestBenchWithoutSubcommandProduces(t *testing.T) {
	cfg, _, err := parseBench([]string{"--brokers", "a:1,b:2", "--rate-bytes", "0", "--acks", "1"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != bench.ModeProduce || len(cfg.Brokers) != 2 || cfg.RateBytesPerSec != 0 || cfg.Acks != "1" {
		t.Fatalf("got %+v, want a max-rate acks=1 produce to two brokers", cfg)
	}
}

func TestBenchSubcommandsAndTheirDefaults(t *testing.T) {
	cfg, out, err := parseBench([]string{"e2e", "-json", "--clients", "3", "--compression", "zstd"})
	if err != nil || cfg.Mode != bench.ModeE2E || cfg.Clients != 3 || cfg.Compression != "zstd" || !out.json {
		t.Fatalf("e2e: got %+v %+v %v", cfg, out, err)
	}
	if cfg.Topic == "" || cfg.Duration != 10*time.Second {
		t.Fatalf("e2e: want a fresh topic and 10s, got %q and %v", cfg.Topic, cfg.Duration)
	}
	// consume reads an existing topic to its end unless told to stop earlier.
	if _, _, err := parseBench([]string{"consume"}); err == nil || !strings.Contains(err.Error(), "--topic") {
		t.Fatalf("consume without --topic: got %v, want an error naming --topic", err)
	}
	cfg, _, err = parseBench([]string{"consume", "--topic", "t"})
	if err != nil || cfg.Mode != bench.ModeConsume || cfg.Duration != 0 {
		t.Fatalf("consume: got %+v %v, want no time limit", cfg, err)
	}
}

func TestBenchRejectsUnknownSubcommandAndStrayArguments(t *testing.T) {
	for _, args := range [][]string{{"fetch"}, {"produce", "--duration", "1s", "extra"}} {
		if _, _, err := parseBench(args); err == nil {
			t.Errorf("%q: parsed, want an error", args)
		}
	}
}
