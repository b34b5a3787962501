package objectio_test

import (
	"context"
	"testing"

	"github.com/sluicedb/sluice/objectio"
)

// BenchmarkS3GetObject reads a whole flush-sized object back, as an agent
// does when a consumer reads past its cache: into fresh memory (Get), and
// into a recycled buffer (GetInto). The server is gofakes3 in this process,
// so B/op includes its side too; the difference between the two is the
// client's copy of the object.
func BenchmarkS3GetObject(b *testing.B) {
	const size = 1 << 20
	s := newS3WithConfig(b, newFakeS3(b, nil).config("bench/"))
	ctx := context.Background()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i)
	}
	if err := s.Put(ctx, "data/object", data, objectio.PutOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Run("read=fresh/size=1MiB", func(b *testing.B) {
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.Get(ctx, "data/object", 0, -1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read=recycled/size=1MiB", func(b *testing.B) {
		buf := make([]byte, 0, size)
		b.SetBytes(size)
		b.ReportAllocs()
		for b.Loop() {
			got, err := objectio.GetInto(ctx, s, "data/object", buf)
			if err != nil {
				b.Fatal(err)
			}
			buf = got[:0]
		}
	})
}
