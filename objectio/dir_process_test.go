package objectio_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicedb/sluice/objectio"
)

// These tests run the test binary again as a child process (the os/exec
// helper-process pattern), so that two processes share a root and a writer
// can be killed with SIGKILL in the middle of its Puts.

const (
	helperModeEnv = "OBJECTIO_HELPER_MODE"
	helperRootEnv = "OBJECTIO_HELPER_ROOT"
	helperIDEnv   = "OBJECTIO_HELPER_ID"
	// raceKeyCount is how many keys two processes race to create.
	raceKeyCount = 200
)

// TestHelperProcess is not a test: it is the child's entry point, and
// does nothing unless started by one of the tests below.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv(helperModeEnv)
	if mode == "" {
		t.Skip("helper process entry point; runs only as a child of another test")
	}
	d, err := objectio.NewDir(os.Getenv(helperRootEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	switch mode {
	case "crash":
		helperWriteUntilKilled(d)
	case "race":
		helperRaceCreates(d, os.Getenv(helperIDEnv))
	}
	os.Exit(0)
}

// sealed frames a body as length, CRC-32 and body, so that a reader can
// tell a whole object from a torn one without knowing what was written.
func sealed(body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(body))
	return append(out, body...)
}

func isSealed(data []byte) bool {
	if len(data) < 8 {
		return false
	}
	body := data[8:]
	return binary.BigEndian.Uint32(data) == uint32(len(body)) && binary.BigEndian.Uint32(data[4:]) == crc32.ChecksumIEEE(body)
}

// helperWriteUntilKilled creates new keys and overwrites one hot key until
// it is killed, printing each acknowledged key.
func helperWriteUntilKilled(d *objectio.Dir) {
	ctx := context.Background()
	for i := 0; ; i++ {
		body := bytes.Repeat([]byte{byte(i)}, 1<<10+(i*7919)%(256<<10))
		key := fmt.Sprintf("crash/%08d", i)
		if err := d.Put(ctx, key, sealed(body), objectio.PutOptions{IfAbsent: true}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		fmt.Printf("acked %s\n", key)
		if err := d.Put(ctx, "crash-hot", sealed(body), objectio.PutOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
}

// helperRaceCreates tries to create every race key and prints the ones it won.
func helperRaceCreates(d *objectio.Dir, id string) {
	ctx := context.Background()
	for i := range raceKeyCount {
		key := fmt.Sprintf("race/%04d", i)
		err := d.Put(ctx, key, []byte("process "+id), objectio.PutOptions{IfAbsent: true})
		switch {
		case err == nil:
			fmt.Printf("won %d\n", i)
		case !errors.Is(err, objectio.ErrExists):
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
}

func helperCommand(t *testing.T, mode, root, id string) *exec.Cmd {
	t.Helper()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperModeEnv+"="+mode, helperRootEnv+"="+root, helperIDEnv+"="+id)
	cmd.Stderr = os.Stderr
	return cmd
}

// A writer killed at an arbitrary point leaves only whole objects, keeps
// every object it acknowledged, and leaves temp files that the next NewDir
// removes.
func TestDirKilledWriterLeavesOnlyWholeObjects(t *testing.T) {
	root := t.TempDir()
	cmd := helperCommand(t, "crash", root, "")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	lines := bufio.NewScanner(stdout)
	deadline := time.Now().Add(10 * time.Second)
	for len(acked) < 30 && time.Now().Before(deadline) && lines.Scan() {
		if key, ok := strings.CutPrefix(lines.Text(), "acked "); ok {
			acked = append(acked, key)
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() { // acks printed before the kill landed
		if key, ok := strings.CutPrefix(lines.Text(), "acked "); ok {
			acked = append(acked, key)
		}
	}
	cmd.Wait()
	if len(acked) == 0 {
		t.Fatal("the writer acknowledged nothing before it was killed")
	}

	d := newDir(t, root)
	if files := tempFiles(t, root); len(files) != 0 {
		t.Errorf("after NewDir, .tmp still holds %q", files)
	}
	ctx := context.Background()
	listed, err := objectio.ListAll(ctx, d, "")
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, o := range listed {
		present[o.Key] = true
		data, err := d.Get(ctx, o.Key, 0, -1)
		if err != nil {
			t.Fatalf("Get(%q) of a listed object = %v", o.Key, err)
		}
		if !isSealed(data) || int64(len(data)) != o.Size {
			t.Errorf("object %q is torn: %d bytes, listed as %d", o.Key, len(data), o.Size)
		}
	}
	for _, key := range acked {
		if !present[key] {
			t.Errorf("acknowledged object %q is missing after the writer was killed", key)
		}
	}
	t.Logf("writer acknowledged %d objects before SIGKILL; %d objects listed", len(acked), len(listed))
}

// Two processes racing if-absent creates on the same keys: every key has
// exactly one winner, and its content is the winner's.
func TestTwoProcessesRaceIfAbsentWithOneWinnerPerKey(t *testing.T) {
	root := t.TempDir()
	const processCount = 2
	wins := make([][]int, processCount)
	var wg sync.WaitGroup
	for p := range processCount {
		cmd := helperCommand(t, "race", root, strconv.Itoa(p))
		wg.Go(func() {
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("race process %d: %v", p, err)
				return
			}
			for line := range strings.Lines(string(out)) {
				if s, ok := strings.CutPrefix(strings.TrimSpace(line), "won "); ok {
					i, _ := strconv.Atoi(s)
					wins[p] = append(wins[p], i)
				}
			}
		})
	}
	wg.Wait()

	winner := make([]int, raceKeyCount)
	for i := range winner {
		winner[i] = -1
	}
	for p, keys := range wins {
		for _, i := range keys {
			if winner[i] >= 0 {
				t.Fatalf("key race/%04d was created by both process %d and process %d", i, winner[i], p)
			}
			winner[i] = p
		}
	}
	d := newDir(t, root)
	for i, p := range winner {
		key := fmt.Sprintf("race/%04d", i)
		if p < 0 {
			t.Errorf("no process won %s", key)
			continue
		}
		got, err := d.Get(context.Background(), key, 0, -1)
		if want := fmt.Sprintf("process %d", p); err != nil || string(got) != want {
			t.Errorf("Get(%s) = %q, %v; want the winner's %q", key, got, err, want)
		}
	}
	t.Logf("wins per process: %d and %d", len(wins[0]), len(wins[1]))
}
