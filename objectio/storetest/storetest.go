// Package storetest is the conformance suite for objectio.Store. Every
// backend (mem, dir, and the S3 ones against gofakes3, MinIO and versitygw)
// runs the same cases, so the log's correctness arguments, which rest on
// these properties, hold whichever store is plugged in.
//
// A backend's test calls Run with a constructor that returns an empty store;
// each case gets a fresh one. Run it with -race: several cases are
// concurrent.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sluicedb/sluice/objectio"
)

// Run runs every conformance case against stores made by newStore, which
// must return an empty store and arrange its own cleanup with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) objectio.Store) {
	cases := []struct {
		name string
		run  func(t *testing.T, s objectio.Store)
	}{
		{"PutThenGetReturnsTheSameBytes", testPutGetRoundTrip},
		{"EmptyObjectRoundTrips", testEmptyObject},
		{"LargeObjectRoundTrips", testLargeObject},
		{"UnusualKeyCharactersRoundTrip", testUnusualKeyCharacters},
		{"RangedGetReturnsTheRange", testRangedGet},
		{"RangedGetPastEndIsClipped", testRangedGetClipped},
		{"RangedGetAtBadOffsetFails", testRangedGetBadOffset},
		{"GetMissingIsNotFound", testGetMissing},
		{"PutWithoutIfAbsentOverwrites", testOverwrite},
		{"IfAbsentPutOnExistingKeyIsExistsAndKeepsContent", testIfAbsentExisting},
		{"IfAbsentPutOnNewKeyCreates", testIfAbsentNew},
		{"IfAbsentPutAfterDeleteCreates", testIfAbsentAfterDelete},
		{"ListIsInByteOrderAndFiltersByPrefix", testListOrderAndPrefix},
		{"ListStartsStrictlyAfterStartAfter", testListStartAfter},
		{"ListPagesWithMaxAndTruncated", testListPaging},
		{"ListWithPrefixEndingMidNameFilters", testListMidNamePrefix},
		{"ListOfMissingPrefixIsEmpty", testListMissingPrefix},
		{"DeleteThenGetIsNotFound", testDeleteThenGet},
		{"DeleteMissingKeySucceeds", testDeleteMissing},
		{"AppendToGetDoesNotChangeStoredData", testAppendToGet},
		{"GetIntoReadsTheWholeObject", testGetInto},
		{"InvalidKeysAreRejected", testInvalidKeys},
		{"CanceledContextFails", testCanceledContext},
		{"RacingIfAbsentPutsHaveExactlyOneWinner", testRacingIfAbsent},
		{"ConcurrentOverwriteIsNeverTorn", testConcurrentOverwriteAtomic},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, newStore(t))
		})
	}
}

// mustPut stores data under key or fails the test.
func mustPut(t *testing.T, s objectio.Store, key string, data []byte, opt objectio.PutOptions) {
	t.Helper()
	if err := s.Put(context.Background(), key, data, opt); err != nil {
		t.Fatalf("Put(%q, %d bytes, %+v) = %v, want nil", key, len(data), opt, err)
	}
}

// mustGet reads a range or fails the test.
func mustGet(t *testing.T, s objectio.Store, key string, offset, length int64) []byte {
	t.Helper()
	data, err := s.Get(context.Background(), key, offset, length)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d) = %v, want nil", key, offset, length, err)
	}
	return data
}

// wantContent fails the test unless the whole object under key is want.
func wantContent(t *testing.T, s objectio.Store, key string, want []byte) {
	t.Helper()
	got := mustGet(t, s, key, 0, -1)
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q) = %s, want %s", key, describe(got), describe(want))
	}
}

// wantNotFound fails the test unless key has no object.
func wantNotFound(t *testing.T, s objectio.Store, key string) {
	t.Helper()
	data, err := s.Get(context.Background(), key, 0, -1)
	if !errors.Is(err, objectio.ErrNotFound) {
		t.Fatalf("Get(%q) = %s, %v; want ErrNotFound", key, describe(data), err)
	}
}

// mustList returns one page or fails the test.
func mustList(t *testing.T, s objectio.Store, prefix, startAfter string, max int) objectio.ListPage {
	t.Helper()
	page, err := s.List(context.Background(), prefix, startAfter, max)
	if err != nil {
		t.Fatalf("List(%q, %q, %d) = %v, want nil", prefix, startAfter, max, err)
	}
	return page
}

// wantKeys fails the test unless the listing's keys are want, in order.
func wantKeys(t *testing.T, what string, objects []objectio.ObjectInfo, want []string) {
	t.Helper()
	got := keys(objects)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: keys = %q, want %q", what, got, want)
	}
}

func keys(objects []objectio.ObjectInfo) []string {
	out := make([]string, 0, len(objects))
	for _, o := range objects {
		out = append(out, o.Key)
	}
	return out
}

// describe prints short data whole and long data by length and ends, so a
// failure message stays readable.
func describe(data []byte) string {
	if len(data) <= 64 {
		return fmt.Sprintf("%q", data)
	}
	return fmt.Sprintf("%d bytes %q…%q", len(data), data[:16], data[len(data)-16:])
}

// pattern returns n bytes that differ with seed and position, so a misplaced
// range or a mixed-up object shows.
func pattern(seed, n int) []byte {
	out := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range out {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		out[i] = byte(x)
	}
	return out
}
