package intervaljoin

// bucketMap is one key's row cache of one side, keyed by row time: Flink's
// MapState<Long, List<Tuple2<RowData, Boolean>>> on the heap state backend, which is a
// java.util.HashMap<Long, ...>. Flink's join iterates the whole map on every arriving row and on
// every cleanup timer and emits in iteration order, so bucketMap reproduces HashMap's iteration
// order exactly (JDK 8 to 21 use the same algorithm):
//
//   - a table of 2^n bins; a time's bin is spread(Long.hashCode(t)) & (capacity-1), with
//     Long.hashCode(t) = (int)(t ^ t>>>32) and spread(h) = h ^ h>>>16;
//   - a new key is appended to its bin; iteration walks bins in index order, each bin in list
//     order; removing a key keeps the others' order; the table never shrinks;
//   - the table is allocated at the first insertion (16 bins for `new HashMap<>()`, the
//     requested size for a map created with a capacity), and doubles when the size exceeds
//     capacity*0.75 (float arithmetic truncated to int, as HashMap.resize), or when a bin
//     reaches 9 entries while the table has fewer than 64 bins (treeifyBin); a doubling splits
//     every bin into its low and high half, each keeping its order.
//
// A bin that reaches 9 entries in a table of 64 or more bins becomes a red-black tree in Java,
// whose iteration order is not the list order; bucketMap keeps list order there (see
// docs/operators/interval-join.md). It counts such bins in treeBins.
//
// A bucketMap is owned by one key's joinKey; buckets are owned by the map.
type bucketMap struct {
	bins      [][]*bucket // nil until the first insertion
	threshold int         // before allocation: the initial capacity (0: the default, 16)
	size      int
	treeBins  int // insertions that Java would have turned into a tree bin (order may differ)
}

// bucket holds the rows of one side with one row time, in arrival order, each with Flink's
// "emitted" flag (the row joined at least once; kept only where it decides padding).
type bucket struct {
	time    int64
	rows    [][]byte // encoded rows (rowLayout), owned by the bucket
	matched []bool
}

const (
	defaultCapacity    = 16
	treeifyThreshold   = 8
	minTreeifyCapacity = 64
	maxCapacity        = 1 << 30
)

// newBucketMapWithExpectedSize is Flink's CollectionUtil.newHashMapWithExpectedSize(n), which
// MapSerializer.deserialize uses on restore: new HashMap<>(computeRequiredCapacity(n), 0.75f).
func newBucketMapWithExpectedSize(n int) *bucketMap {
	c := n + 1
	if n > 2 {
		c = ceilDiv34(n)
	}
	return &bucketMap{threshold: tableSizeFor(c)}
}

// ceilDiv34 is (int) Math.ceil(n / 0.75f), in float arithmetic as Java computes it.
func ceilDiv34(n int) int {
	return int(ceilFloat32(float32(n) / float32(0.75)))
}

func ceilFloat32(f float32) float32 {
	i := float32(int64(f))
	if i < f {
		return i + 1
	}
	return i
}

// tableSizeFor is HashMap.tableSizeFor: the smallest power of two >= c (1 for c <= 1).
func tableSizeFor(c int) int {
	n := 1
	for n < c && n < maxCapacity {
		n <<= 1
	}
	return n
}

// javaLongHash is spread(Long.hashCode(t)) of java.util.HashMap.
func javaLongHash(t int64) uint32 {
	h := uint32(uint64(t) ^ uint64(t)>>32)
	return h ^ h>>16
}

// get returns the bucket of time t, or nil.
func (m *bucketMap) get(t int64) *bucket {
	if m.bins == nil {
		return nil
	}
	for _, b := range m.bins[int(javaLongHash(t))&(len(m.bins)-1)] {
		if b.time == t {
			return b
		}
	}
	return nil
}

// insert adds a new bucket for time t, which must be absent (HashMap.putVal for a new key).
func (m *bucketMap) insert(t int64) *bucket {
	if m.bins == nil {
		m.resize()
	}
	b := &bucket{time: t}
	i := int(javaLongHash(t)) & (len(m.bins) - 1)
	before := len(m.bins[i])
	m.bins[i] = append(m.bins[i], b)
	if before >= treeifyThreshold { // putVal: binCount >= TREEIFY_THRESHOLD - 1
		if len(m.bins) < minTreeifyCapacity {
			m.resize()
		} else {
			m.treeBins++
		}
	}
	m.size++
	if m.size > m.threshold {
		m.resize()
	}
	return b
}

// remove deletes the bucket of time t if present.
func (m *bucketMap) remove(t int64) {
	if m.bins == nil {
		return
	}
	i := int(javaLongHash(t)) & (len(m.bins) - 1)
	for j, b := range m.bins[i] {
		if b.time == t {
			m.bins[i] = append(m.bins[i][:j], m.bins[i][j+1:]...)
			m.size--
			return
		}
	}
}

// resize is HashMap.resize: allocate or double the table, keeping each bin's order.
func (m *bucketMap) resize() {
	oldCap, oldThr := len(m.bins), m.threshold
	var newCap, newThr int
	switch {
	case oldCap > 0:
		if oldCap >= maxCapacity {
			m.threshold = 1<<31 - 1
			return
		}
		newCap = oldCap << 1
		if newCap < maxCapacity && oldCap >= defaultCapacity {
			newThr = oldThr << 1
		}
	case oldThr > 0:
		newCap = oldThr
	default:
		newCap, newThr = defaultCapacity, 12
	}
	if newThr == 0 {
		newThr = int(float32(newCap) * 0.75)
	}
	m.threshold = newThr
	bins := make([][]*bucket, newCap)
	for _, bin := range m.bins {
		for _, b := range bin {
			i := int(javaLongHash(b.time)) & (newCap - 1)
			bins[i] = append(bins[i], b)
		}
	}
	m.bins = bins
}

// appendOrder appends the buckets in HashMap iteration order to dst.
func (m *bucketMap) appendOrder(dst []*bucket) []*bucket {
	for _, bin := range m.bins {
		dst = append(dst, bin...)
	}
	return dst
}
