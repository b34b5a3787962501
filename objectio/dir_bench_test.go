package objectio_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicedb/sluice/objectio"
)

// BenchmarkDirPut measures one durable Put (temp write, two fsyncs, link or
// rename). It bounds how fast `sluice serve` can flush and append.
func BenchmarkDirPut(b *testing.B) {
	for _, sizeBytes := range []int{64 << 10, 1 << 20} {
		data := make([]byte, sizeBytes)
		for i := range data {
			data[i] = byte(i)
		}
		name := fmt.Sprintf("size=%dKiB", sizeBytes>>10)
		// overwrite: rename over one key, as a hot key would see.
		b.Run("op=overwrite/"+name, func(b *testing.B) {
			d, err := objectio.NewDir(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(sizeBytes))
			b.ReportAllocs()
			for b.Loop() {
				if err := d.Put(context.Background(), "data/bench", data, objectio.PutOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		// create: if-absent link to a new key, as data objects and log
		// entries are written. The delete that keeps the disk from filling
		// is not timed.
		b.Run("op=create/"+name, func(b *testing.B) {
			d, err := objectio.NewDir(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(sizeBytes))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				key := fmt.Sprintf("data/%020d", i)
				i++
				if err := d.Put(context.Background(), key, data, objectio.PutOptions{IfAbsent: true}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := d.Delete(context.Background(), key); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
