package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sluicedb/sluice/objectio"
)

// RaceIfAbsent has creatorCount goroutines race an if-absent Put of
// different contents to key, on the stores puts[i%len(puts)], and checks
// that exactly one wins, the rest get ErrExists, and the winner's content
// is what check reads. It is exported so that a backend can race several
// handles on the same storage (two Dir values on one root, two S3 clients),
// as two sequencers would.
func RaceIfAbsent(t *testing.T, puts []objectio.Store, check objectio.Store, key string, creatorCount int) {
	t.Helper()
	errs := make([]error, creatorCount)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range creatorCount {
		s := puts[i%len(puts)]
		wg.Go(func() {
			<-start // release all at once to maximize overlap
			errs[i] = s.Put(context.Background(), key, creatorContent(i), objectio.PutOptions{IfAbsent: true})
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("creators %d and %d both won the if-absent Put of %q", winner, i, key)
		case err == nil:
			winner = i
		case !errors.Is(err, objectio.ErrExists):
			t.Errorf("creator %d: Put(%q, IfAbsent) = %v, want nil or ErrExists", i, key, err)
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d creators won the if-absent Put of %q", creatorCount, key)
	}
	wantContent(t, check, key, creatorContent(winner))
}

// creatorContent differs per creator in length and bytes, so a mix of two
// creators' writes cannot pass for either.
func creatorContent(i int) []byte {
	return append([]byte(fmt.Sprintf("creator %d:", i)), pattern(i, 4096+i)...)
}

func testRacingIfAbsent(t *testing.T, s objectio.Store) {
	for round := range 4 {
		RaceIfAbsent(t, []objectio.Store{s}, s, fmt.Sprintf("meta/log/%020d", round), 32)
	}
}

// testConcurrentOverwriteAtomic has writers replace one object with whole
// versions while readers check that each read is one whole version.
func testConcurrentOverwriteAtomic(t *testing.T, s objectio.Store) {
	const (
		writerCount  = 2
		readerCount  = 4
		versionCount = 20
		versionBytes = 64 << 10
	)
	version := func(v int) []byte { return bytes.Repeat([]byte{byte('A' + v%26)}, versionBytes+v) }
	mustPut(t, s, "hot", version(0), objectio.PutOptions{})

	var (
		writers sync.WaitGroup
		readers sync.WaitGroup
		done    = make(chan struct{})
		errs    = make(chan error, writerCount+readerCount)
	)
	for w := range writerCount {
		writers.Go(func() {
			for v := 1 + w; v < versionCount; v += writerCount {
				if err := s.Put(context.Background(), "hot", version(v), objectio.PutOptions{}); err != nil {
					errs <- fmt.Errorf("Put(hot, version %d) = %v", v, err)
					return
				}
			}
		})
	}
	for range readerCount {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				data, err := s.Get(context.Background(), "hot", 0, -1)
				if err != nil {
					errs <- fmt.Errorf("Get(hot) during overwrites = %v", err)
					return
				}
				v := len(data) - versionBytes
				if v < 0 || v >= versionCount || !bytes.Equal(data, version(v)) {
					errs <- fmt.Errorf("Get(hot) during overwrites = %s, which is no whole version", describe(data))
					return
				}
			}
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
