package objectio

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// Mem is an in-memory Store for tests and mem://. It keeps nothing across
// restarts. It keeps the bytes it is given and hands them out again, never
// copying them, as the Store contract allows.
type Mem struct {
	mu      sync.RWMutex
	objects map[string][]byte // guarded by mu
}

var _ Store = (*Mem)(nil)

// NewMem returns an empty in-memory store.
func NewMem() *Mem {
	return &Mem{objects: make(map[string][]byte)}
}

// Put implements Store.
func (m *Mem) Put(ctx context.Context, key string, data []byte, opt PutOptions) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Cap the capacity, so that an append to what Get returns cannot
	// write past the object into the caller's spare capacity.
	stored := data[:len(data):len(data)]
	if stored == nil {
		stored = []byte{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objects[key]; ok && opt.IfAbsent {
		return exists(key)
	}
	m.objects[key] = stored
	return nil
}

// Get implements Store.
func (m *Mem) Get(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if err := validateKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	data, ok := m.objects[key]
	if !ok {
		return nil, notFound(key)
	}
	start, n, err := clipRange(int64(len(data)), offset, length)
	if err != nil {
		return nil, err
	}
	return data[start : start+n : start+n], nil
}

// List implements Store. It scans every key, which is fine for the sizes
// tests and mem:// see.
func (m *Mem) List(ctx context.Context, prefix, startAfter string, max int) (ListPage, error) {
	if err := ctx.Err(); err != nil {
		return ListPage{}, err
	}
	if max <= 0 {
		max = listMaxDefault
	}
	m.mu.RLock()
	var matched []ObjectInfo
	for key, data := range m.objects {
		if strings.HasPrefix(key, prefix) && key > startAfter {
			matched = append(matched, ObjectInfo{Key: key, Size: int64(len(data))})
		}
	}
	m.mu.RUnlock()
	// Map order is random; the contract is byte order.
	slices.SortFunc(matched, func(a, b ObjectInfo) int { return strings.Compare(a.Key, b.Key) })
	if len(matched) > max {
		return ListPage{Objects: matched[:max:max], Truncated: true}, nil
	}
	return ListPage{Objects: matched}, nil
}

// Delete implements Store.
func (m *Mem) Delete(ctx context.Context, key string) error {
	if err := validateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objects, key)
	return nil
}
