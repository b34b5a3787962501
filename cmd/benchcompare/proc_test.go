package main

import (
	"os"
	"testing"
	"time"
)

func TestParseStatCPUAddsUserAndSystemTicks(t *testing.T) {
	// A command name with spaces and a parenthesis, as the kernel allows;
	// utime 250 and stime 50 ticks are fields 14 and 15.
	stat := []byte("4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 1000 12345 678 18446744073709551615\n")
	got, err := parseStatCPU(stat)
	if err != nil || got != 3*time.Second {
		t.Fatalf("got %v, %v; want 3s (300 ticks at 100 Hz)", got, err)
	}
	if _, err := parseStatCPU([]byte("4242 (cmd) S 1 2")); err == nil {
		t.Fatal("a truncated stat line parsed")
	}
}

func TestProcReadsThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	deadline := time.Now().Add(50 * time.Millisecond)
	for time.Now().Before(deadline) { // burn some CPU, so there is some to read
	}
	cpu, err := procCPU(os.Getpid())
	if err != nil || cpu <= 0 {
		t.Fatalf("own CPU time %v, %v; want > 0", cpu, err)
	}
	rss, err := procPeakRSS(os.Getpid())
	if err != nil || rss < 1<<20 {
		t.Fatalf("own peak RSS %d, %v; want at least 1 MiB", rss, err)
	}
}
