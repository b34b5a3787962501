package main

import (
	"strings"
	"testing"
)

// TestSkippedBrokerIsSaidNotCompared: a broker whose store server is not
// installed gets a row that says so, and no line in the comparison with
// kfake (whose ratios would be zeros).
func TestSkippedBrokerIsSaidNotCompared(t *testing.T) {
	rows := []row{
		{Broker: "kfake", ProduceMBps: 100, ConsumeMBps: 100, CPUSecPerGB: 2, Verified: "ok"},
		{Broker: "sluice-mem", ProduceMBps: 200, ConsumeMBps: 300, CPUSecPerGB: 1, Verified: "ok"},
		{Broker: "sluice-minio", Skipped: "s3server: server binary not installed"},
	}
	var out strings.Builder
	writeTable(&out, config{}, rows, nil)
	table := out.String()
	if !strings.Contains(table, "| sluice-minio | – | – | – | – | – | – | skipped: s3server: server binary not installed |") {
		t.Errorf("no skipped row for sluice-minio in:\n%s", table)
	}
	if !strings.Contains(table, "| sluice-mem | 2.00 | 3.00 | 0.50 |") {
		t.Errorf("no comparison of sluice-mem with kfake in:\n%s", table)
	}
	if strings.Count(table, "| sluice-minio |") != 1 {
		t.Errorf("sluice-minio appears beyond its skipped row in:\n%s", table)
	}
}
