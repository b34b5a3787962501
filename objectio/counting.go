package objectio

import (
	"context"
	"sync/atomic"
)

// Counting wraps a Store and counts its requests, for measuring cost
// (requests per MB produced and fetched).
type Counting struct {
	Inner                   Store
	Puts, Gets, Lists, Dels atomic.Int64
	PutBytes, GetBytes      atomic.Int64
}

var _ Store = (*Counting)(nil)

// ReleasesData is the inner store's answer (see objectio.ReleasesData).
func (c *Counting) ReleasesData() bool { return ReleasesData(c.Inner) }

// Put implements Store.
func (c *Counting) Put(ctx context.Context, key string, data []byte, opt PutOptions) error {
	c.Puts.Add(1)
	c.PutBytes.Add(int64(len(data)))
	return c.Inner.Put(ctx, key, data, opt)
}

// Get implements Store.
func (c *Counting) Get(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	c.Gets.Add(1)
	b, err := c.Inner.Get(ctx, key, offset, length)
	c.GetBytes.Add(int64(len(b)))
	return b, err
}

// GetInto counts like Get.
func (c *Counting) GetInto(ctx context.Context, key string, buf []byte) ([]byte, error) {
	c.Gets.Add(1)
	b, err := GetInto(ctx, c.Inner, key, buf)
	c.GetBytes.Add(int64(len(b)))
	return b, err
}

// List implements Store.
func (c *Counting) List(ctx context.Context, prefix, startAfter string, max int) (ListPage, error) {
	c.Lists.Add(1)
	return c.Inner.List(ctx, prefix, startAfter, max)
}

// Delete implements Store.
func (c *Counting) Delete(ctx context.Context, key string) error {
	c.Dels.Add(1)
	return c.Inner.Delete(ctx, key)
}
