package bench

import (
	"testing"
)

// rec makes a load record's value.
func rec(writer, seq uint64) []byte {
	v := make([]byte, HeaderBytes+8)
	EncodeValue(v, RecordHeader{Writer: writer, Seq: seq})
	return v
}

func TestVerifierPassesWritersInterleavedAcrossPartitions(t *testing.T) {
	v := NewVerifier()
	acked := NewAckedSet()
	// Writer 1's records spread over two partitions, each in order;
	// writer 2 interleaved with it.
	for seq := range uint64(10) {
		v.Observe(int32(seq%2), rec(1, seq))
		v.Observe(0, rec(2, seq))
		acked.Add(1, seq)
		acked.Add(2, seq)
	}
	rep := v.Report(Expect{Acked: acked, ExactlyOnceInOrder: true, ReadEverything: true})
	if !rep.OK() || rep.Records != 20 || rep.Acked != 20 || rep.Missing != 0 || rep.Gaps != 0 {
		t.Fatalf("want a clean report of 20 records, got %v", &rep)
	}
}

func TestVerifierFindsEachKindOfProblem(t *testing.T) {
	v := NewVerifier()
	acked := NewAckedSet()
	for seq := range uint64(5) {
		acked.Add(1, seq)
	}
	v.Observe(0, rec(1, 0))
	v.Observe(0, rec(1, 2)) // 1 is missing
	v.Observe(0, rec(1, 2)) // duplicate, and not above the last
	v.Observe(0, rec(1, 4))
	v.Observe(0, rec(1, 3)) // out of order
	bad := rec(1, 5)
	bad[len(bad)-1] ^= 1
	v.Observe(0, bad)
	v.Observe(0, []byte("someone else's record"))
	rep := v.Report(Expect{Acked: acked, ExactlyOnceInOrder: true, ReadEverything: true})
	if len(rep.Problems) != 4 {
		t.Errorf("want 4 problems (checksum, missing, duplicate, order), got %q", rep.Problems)
	}
	want := VerifyReport{Records: 5, Foreign: 1, BadChecksum: 1, OutOfOrder: 2, Duplicates: 1, Acked: 5, Missing: 1, Gaps: 1, Writers: 1}
	rep.Problems = nil
	if rep.Records != want.Records || rep.Foreign != want.Foreign || rep.BadChecksum != want.BadChecksum ||
		rep.OutOfOrder != want.OutOfOrder || rep.Duplicates != want.Duplicates || rep.Acked != want.Acked ||
		rep.Missing != want.Missing || rep.Gaps != want.Gaps || rep.Writers != want.Writers {
		t.Fatalf("got %+v\nwant %+v", rep, want)
	}
}

func TestVerifierWithoutIdempotenceToleratesDuplicatesButNotLoss(t *testing.T) {
	v := NewVerifier()
	acked := NewAckedSet()
	acked.Add(1, 0)
	acked.Add(1, 1)
	v.Observe(0, rec(1, 0))
	v.Observe(0, rec(1, 0)) // an acks=1 retry may duplicate
	if rep := v.Report(Expect{Acked: acked, ReadEverything: true}); rep.OK() || len(rep.Problems) != 1 || rep.Missing != 1 || rep.Duplicates != 1 {
		t.Fatalf("want a failure for the one missing record only, got %v", &rep)
	}
}

func TestVerifierCountsButForgivesMissingRecordsWhenConsumersStoppedEarly(t *testing.T) {
	v := NewVerifier()
	acked := NewAckedSet()
	acked.Add(1, 0)
	acked.Add(1, 1)
	v.Observe(0, rec(1, 0))
	if rep := v.Report(Expect{Acked: acked, ExactlyOnceInOrder: true}); !rep.OK() || rep.Missing != 1 {
		t.Fatalf("want 1 missing and no failure (the early stop is reported elsewhere), got %v", &rep)
	}
}

func TestVerifierMergeCountsRecordsReadByBoth(t *testing.T) {
	a, b := NewVerifier(), NewVerifier()
	a.Observe(0, rec(1, 0))
	b.Observe(1, rec(1, 1))
	b.Observe(1, rec(1, 0)) // also read by a, from another partition
	a.Merge(b)
	rep := a.Report(Expect{})
	if rep.Records != 3 || rep.Duplicates != 1 || rep.Acked != -1 || rep.Missing != -1 {
		t.Fatalf("got %v, want 3 records with 1 duplicate and no acked set", &rep)
	}
}
