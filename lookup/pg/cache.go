package pg

import (
	"container/list"
	"errors"
	"sync"
	"time"
)

// CacheOptions are the JDBC connector's `lookup.cache = PARTIAL` options (Flink's
// DefaultLookupCache.fromConfig). A zero duration or MaxRows < 0 means "not set"; at least one
// of the three bounds must be set, as Flink requires.
type CacheOptions struct {
	// MaxRows is lookup.partial-cache.max-rows: the number of cached KEYS (Guava's maximumSize
	// counts entries; an entry holds all rows of one key). -1: unbounded.
	MaxRows int64
	// ExpireAfterWrite is lookup.partial-cache.expire-after-write.
	ExpireAfterWrite time.Duration
	// ExpireAfterAccess is lookup.partial-cache.expire-after-access.
	ExpireAfterAccess time.Duration
	// CacheMissingKey is lookup.partial-cache.cache-missing-key (Flink's default: true): a key
	// with no rows is cached as an empty result; otherwise it is looked up again every time.
	CacheMissingKey bool
}

// Cache is the partial lookup cache with the semantics of Flink's DefaultLookupCache (a Guava
// cache): an entry expires when now - written >= ExpireAfterWrite or now - lastRead >=
// ExpireAfterAccess (a read refreshes lastRead, a write both); beyond MaxRows keys the least
// recently used key is evicted. Guava evicts approximately (per segment, possibly before the
// limit); this cache evicts exactly, so the two differ only in WHICH keys are re-fetched, which
// shows only when the table changes. Safe for concurrent use. Cached rows are shared: callers
// must not modify them.
type Cache struct {
	opts CacheOptions
	now  func() time.Time

	mu      sync.Mutex
	lru     *list.List // of *cacheEntry, most recently used (read or written) first
	byWrite *list.List // of *cacheEntry, least recently written first
	byKey   map[string]*list.Element
}

// cacheEntry is one key's rows. Its place in lru orders it by access and in byWrite by write, so
// the entries expired after access are a suffix of lru and those expired after write a prefix of
// byWrite (the clock never runs backwards): Put removes every expired entry in time proportional
// to their number.
type cacheEntry struct {
	key             string
	rows            []Row
	written, access time.Time
	writeEl         *list.Element // in byWrite
}

// NewCache returns an empty cache; now is the clock (nil: time.Now), a fake one in tests.
func NewCache(opts CacheOptions, now func() time.Time) (*Cache, error) {
	if opts.MaxRows < 0 && opts.ExpireAfterWrite <= 0 && opts.ExpireAfterAccess <= 0 {
		return nil, errors.New("Missing 'lookup.partial-cache.expire-after-access', 'lookup.partial-cache.expire-after-write' or 'lookup.partial-cache.max-rows' in the configuration")
	}
	if now == nil {
		now = time.Now
	}
	return &Cache{opts: opts, now: now, lru: list.New(), byWrite: list.New(), byKey: map[string]*list.Element{}}, nil
}

// Get returns the rows cached for key (possibly none: a cached miss) and whether it was cached.
func (c *Cache) Get(key string) ([]Row, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	now := c.now()
	if c.expired(e, now) {
		c.remove(el)
		return nil, false
	}
	e.access = now
	c.lru.MoveToFront(el)
	return e.rows, true
}

// Put caches rows for key, unless rows is empty and CacheMissingKey is off.
func (c *Cache) Put(key string, rows []Row) {
	if len(rows) == 0 && !c.opts.CacheMissingKey {
		return
	}
	if rows == nil {
		rows = []Row{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if el, ok := c.byKey[key]; ok {
		e := el.Value.(*cacheEntry)
		e.rows, e.written, e.access = rows, now, now
		c.lru.MoveToFront(el)
		c.byWrite.MoveToBack(e.writeEl)
	} else {
		e := &cacheEntry{key: key, rows: rows, written: now, access: now}
		e.writeEl = c.byWrite.PushBack(e)
		c.byKey[key] = c.lru.PushFront(e)
	}
	// Guava cleans expired entries on writes, then evicts down to maximumSize.
	for el := c.lru.Back(); el != nil && c.expired(el.Value.(*cacheEntry), now); el = c.lru.Back() {
		c.remove(el)
	}
	for w := c.byWrite.Front(); w != nil && c.expired(w.Value.(*cacheEntry), now); w = c.byWrite.Front() {
		c.remove(c.byKey[w.Value.(*cacheEntry).key])
	}
	for c.opts.MaxRows >= 0 && int64(c.lru.Len()) > c.opts.MaxRows {
		c.remove(c.lru.Back())
	}
}

// Len is the number of cached keys (expired ones not yet cleaned included, as Guava's size()).
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

func (c *Cache) expired(e *cacheEntry, now time.Time) bool {
	return (c.opts.ExpireAfterAccess > 0 && now.Sub(e.access) >= c.opts.ExpireAfterAccess) ||
		(c.opts.ExpireAfterWrite > 0 && now.Sub(e.written) >= c.opts.ExpireAfterWrite)
}

func (c *Cache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	delete(c.byKey, e.key)
	c.lru.Remove(el)
	c.byWrite.Remove(e.writeEl)
}
