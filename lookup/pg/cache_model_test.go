package pg

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"
	"time"
)

// modelCache is the cache's specification written the slow way: every Put scans all entries for
// expired ones, then evicts the least recently used beyond MaxRows.
type modelCache struct {
	opts    CacheOptions
	entries map[string]*cacheEntry
	used    map[string]int64 // a counter per read or write: the LRU order
	tick    int64
}

func (m *modelCache) expired(e *cacheEntry, now time.Time) bool {
	return (m.opts.ExpireAfterAccess > 0 && now.Sub(e.access) >= m.opts.ExpireAfterAccess) ||
		(m.opts.ExpireAfterWrite > 0 && now.Sub(e.written) >= m.opts.ExpireAfterWrite)
}

func (m *modelCache) get(key string, now time.Time) ([]Row, bool) {
	e, ok := m.entries[key]
	if !ok {
		return nil, false
	}
	if m.expired(e, now) {
		delete(m.entries, key)
		return nil, false
	}
	e.access = now
	m.tick++
	m.used[key] = m.tick
	return e.rows, true
}

func (m *modelCache) put(key string, rows []Row, now time.Time) {
	if len(rows) == 0 && !m.opts.CacheMissingKey {
		return
	}
	m.entries[key] = &cacheEntry{key: key, rows: rows, written: now, access: now}
	m.tick++
	m.used[key] = m.tick
	for k, e := range m.entries {
		if m.expired(e, now) {
			delete(m.entries, k)
		}
	}
	for m.opts.MaxRows >= 0 && int64(len(m.entries)) > m.opts.MaxRows {
		oldest := ""
		for k := range m.entries {
			if oldest == "" || m.used[k] < m.used[oldest] {
				oldest = k
			}
		}
		delete(m.entries, oldest)
	}
}

// TestCacheMatchesModel runs random reads and writes on a fake clock against the model: the same
// answers and the same cached keys after every step.
func TestCacheMatchesModel(t *testing.T) {
	for _, opts := range []CacheOptions{
		{MaxRows: 5, CacheMissingKey: true},
		{MaxRows: -1, ExpireAfterWrite: 7 * time.Second, CacheMissingKey: true},
		{MaxRows: -1, ExpireAfterAccess: 5 * time.Second},
		{MaxRows: 8, ExpireAfterWrite: 9 * time.Second, ExpireAfterAccess: 4 * time.Second, CacheMissingKey: true},
	} {
		rng := rand.New(rand.NewSource(1))
		now := time.Unix(1000, 0)
		c, err := NewCache(opts, func() time.Time { return now })
		if err != nil {
			t.Fatal(err)
		}
		m := &modelCache{opts: opts, entries: map[string]*cacheEntry{}, used: map[string]int64{}}
		for step := 0; step < 5000; step++ {
			now = now.Add(time.Duration(rng.Intn(1500)) * time.Millisecond)
			key := fmt.Sprint(rng.Intn(15))
			if rng.Intn(2) == 0 {
				got, ok := c.Get(key)
				want, wantOK := m.get(key, now)
				if ok != wantOK || len(got) != len(want) {
					t.Fatalf("%+v step %d: Get(%s) = %v %v, the model's %v %v", opts, step, key, got, ok, want, wantOK)
				}
			} else {
				var rows []Row
				if rng.Intn(3) > 0 {
					rows = []Row{{int64(step)}}
				}
				c.Put(key, rows)
				m.put(key, rows, now)
			}
			var keys, want []string
			for k := range c.byKey {
				keys = append(keys, k)
			}
			for k := range m.entries {
				want = append(want, k)
			}
			sort.Strings(keys)
			sort.Strings(want)
			if fmt.Sprint(keys) != fmt.Sprint(want) || c.byWrite.Len() != c.lru.Len() {
				t.Fatalf("%+v step %d: cached %v, the model's %v", opts, step, keys, want)
			}
		}
	}
}

// BenchmarkCachePut is a put of a new key into a cache holding many: constant time, not
// proportional to the cache's size.
func BenchmarkCachePut(b *testing.B) {
	c, err := NewCache(CacheOptions{MaxRows: 1 << 21, ExpireAfterWrite: time.Hour, CacheMissingKey: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 100_000; i++ {
		c.Put(fmt.Sprint("warm", i), nil)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Put(fmt.Sprint(i), nil)
	}
}
