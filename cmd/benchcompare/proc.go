package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicksPerSec is USER_HZ, the unit of utime and stime in
// /proc/PID/stat. Linux fixes it at 100 for userland on every architecture
// Go runs on, so it is not read from sysconf (which would need cgo).
const clockTicksPerSec = 100

// procCPU returns the CPU time (user plus system) process pid has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

// parseStatCPU reads utime and stime, fields 14 and 15 of /proc/PID/stat.
// The command name, field 2, is in parentheses and may hold spaces and
// parentheses itself, so fields are counted from the last ')'.
func parseStatCPU(stat []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc stat without a command name: %q", stat)
	}
	fields := strings.Fields(string(stat[end+1:]))
	// fields[0] is field 3 (state), so field n is fields[n-3].
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc stat has %d fields after the name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[14-3 : 15-3+1] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc stat cpu field %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicksPerSec, nil
}

// procPeakRSS returns the process's peak resident set size (VmHWM).
func procPeakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("VmHWM %q: %w", rest, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// procsCPU sums procCPU over processes.
func procsCPU(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		d, err := procCPU(pid)
		if err != nil {
			return 0, err
		}
		total += d
	}
	return total, nil
}

// procsPeakRSS sums procPeakRSS over processes.
func procsPeakRSS(pids []int) (int64, error) {
	var total int64
	for _, pid := range pids {
		n, err := procPeakRSS(pid)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}
