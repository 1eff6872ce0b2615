package intervaljoin

// bucketMap is one key's row cache of one side, keyed by row time: Flink's
// MapState<Long, List<Tuple2<RowData, Boolean>>> on the heap state backend, which is a
// java.util.HashMap<Long, ...>. Flink's join iterates the whole map on every arriving row and on
// every cleanup timer and emits in iteration order, so bucketMap reproduces HashMap's structure,
// and with it its iteration order, operation for operation (JDK 8 to 25 share the algorithm):
//
//   - a table of 2^n bins; a time's bin is spread(Long.hashCode(t)) & (capacity-1), with
//     Long.hashCode(t) = (int)(t ^ t>>>32) and spread(h) = h ^ h>>>16; iteration walks the bins
//     in index order, each along its next links;
//   - a list bin appends a new key; a bin that reaches 9 entries becomes a red-black tree bin
//     (treeifyBin), unless the table has fewer than 64 bins, which then doubles instead. A tree
//     bin links a new key in after its tree parent and moves the tree's root to the front
//     (putTreeVal, moveRootToFront): its iteration order is not insertion order;
//   - the table is allocated at the first insertion (16 bins for `new HashMap<>()`, the requested
//     size for a map created with a capacity) and doubles when the size exceeds capacity*0.75
//     (float arithmetic truncated to int, as HashMap.resize); a doubling splits every bin into
//     its low and high half, each keeping its order, a tree half of at most 6 entries becoming a
//     list and a larger one re-treeified when the other half is not empty;
//   - entries are only ever removed through an iterator (Flink's join does), which unlinks the
//     entry without moving the root and never untreeifies (removeNode with movable false).
//
// A bucketMap is owned by one key's keyState; its buckets are owned by the map.
type bucketMap struct {
	tab       []*bucket // bin heads; nil until the first insertion
	tree      []bool    // per bin: a tree bin
	threshold int       // before allocation: the initial capacity (0: the default, 16)
	size      int
	// only is the map's one bucket when size is 1 and it is known (nil otherwise), so that
	// iterating a map of one bucket, the common case, does not read the table.
	only *bucket
}

// bucket holds the rows of one side with one row time, in arrival order, each with Flink's
// "emitted" flag (the row joined at least once; kept only where it decides padding). It is
// also its HashMap node: next links the bin, the other links are a tree bin's.
type bucket struct {
	time    int64
	rows    [][]byte // encoded rows (rowLayout), owned by the bucket
	matched []bool
	// fired is Flink's IntervalJoinLeftFired / IntervalJoinRightFired list, aligned with rows
	// when early fire is enabled (nil otherwise): the row's early-fire pad was emitted.
	fired []bool
	// The first row's storage (most buckets hold one row): rows, matched and fired start on these.
	row0     [1][]byte
	matched0 [1]bool
	fired0   [1]bool

	hash                      int32 // spread(Long.hashCode(time)), as HashMap stores it
	next                      *bucket
	prev, parent, left, right *bucket // TreeNode links, in tree bins only
	red                       bool
}

const (
	defaultCapacity    = 16
	treeifyThreshold   = 8
	untreeifyThreshold = 6
	minTreeifyCapacity = 64
	maxCapacity        = 1 << 30
)

// newBucketMapWithExpectedSize is Flink's CollectionUtil.newHashMapWithExpectedSize(n), which
// MapSerializer.deserialize uses on restore: new HashMap<>(computeRequiredCapacity(n), 0.75f).
func newBucketMapWithExpectedSize(n int) *bucketMap {
	c := n + 1
	if n > 2 {
		c = int(ceilFloat32(float32(n) / float32(0.75))) // (int) Math.ceil(n / 0.75f)
	}
	return &bucketMap{threshold: tableSizeFor(c)}
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
func javaLongHash(t int64) int32 {
	h := uint32(uint64(t) ^ uint64(t)>>32)
	return int32(h ^ h>>16)
}

func (m *bucketMap) index(h int32) int { return int(h) & (len(m.tab) - 1) }

// get returns the bucket of time t, or nil.
func (m *bucketMap) get(t int64) *bucket {
	if m.tab == nil {
		return nil
	}
	for b := m.tab[m.index(javaLongHash(t))]; b != nil; b = b.next {
		if b.time == t {
			return b
		}
	}
	return nil
}

// insert adds a new bucket for time t, which must be absent (HashMap.putVal for a new key).
func (m *bucketMap) insert(t int64) *bucket { return m.insertNode(&bucket{}, t) }

// insertNode is insert with x, a zero bucket, as the new node.
func (m *bucketMap) insertNode(x *bucket, t int64) *bucket {
	if m.tab == nil {
		m.resize()
	}
	x.time, x.hash = t, javaLongHash(t)
	i := m.index(x.hash)
	switch p := m.tab[i]; {
	case p == nil:
		m.tab[i] = x
	case m.tree[i]:
		m.putTreeVal(i, x)
	default:
		for binCount := 0; ; binCount++ {
			if p.next == nil {
				p.next = x
				if binCount >= treeifyThreshold-1 {
					m.treeifyBin(i)
				}
				break
			}
			p = p.next
		}
	}
	m.size++
	m.only = nil
	if m.size == 1 {
		m.only = x
	}
	if m.size > m.threshold {
		m.resize()
	}
	return x
}

// remove deletes bucket b, as an iterator's remove does (removeNode with movable false).
func (m *bucketMap) remove(b *bucket) {
	i := m.index(b.hash)
	if m.tree[i] {
		m.removeTreeNode(i, b)
	} else if m.tab[i] == b {
		m.tab[i] = b.next
	} else {
		p := m.tab[i]
		for p.next != b {
			p = p.next
		}
		p.next = b.next
	}
	m.size--
	m.only = nil
	if m.tab[i] == nil {
		m.tree[i] = false
	}
}

// resize is HashMap.resize: allocate or double the table.
func (m *bucketMap) resize() {
	oldTab, oldCap, oldThr := m.tab, len(m.tab), m.threshold
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
	oldTree := m.tree
	m.tab, m.tree = make([]*bucket, newCap), make([]bool, newCap)
	for j, e := range oldTab {
		switch {
		case e == nil:
		case e.next == nil: // a lone node moves as it is, a TreeNode staying one
			m.tab[m.index(e.hash)] = e
			m.tree[m.index(e.hash)] = oldTree[j]
		case oldTree[j]:
			m.split(e, j, oldCap)
		default:
			var loHead, loTail, hiHead, hiTail *bucket
			for ; e != nil; e = e.next {
				if int(e.hash)&oldCap == 0 {
					if loTail == nil {
						loHead = e
					} else {
						loTail.next = e
					}
					loTail = e
				} else {
					if hiTail == nil {
						hiHead = e
					} else {
						hiTail.next = e
					}
					hiTail = e
				}
			}
			if loTail != nil {
				loTail.next = nil
				m.tab[j] = loHead
			}
			if hiTail != nil {
				hiTail.next = nil
				m.tab[j+oldCap] = hiHead
			}
		}
	}
}

// appendOrder appends the buckets in HashMap iteration order to dst.
func (m *bucketMap) appendOrder(dst []*bucket) []*bucket {
	switch {
	case m.size == 0:
		return dst
	case m.only != nil:
		return append(dst, m.only)
	}
	for _, b := range m.tab {
		for ; b != nil; b = b.next {
			dst = append(dst, b)
		}
	}
	if m.size == 1 {
		m.only = dst[len(dst)-1]
	}
	return dst
}

// ---- tree bins: HashMap.TreeNode, ported statement for statement ----

// treeifyBin turns bin i into a tree bin, or doubles a small table instead.
func (m *bucketMap) treeifyBin(i int) {
	if len(m.tab) < minTreeifyCapacity {
		m.resize()
		return
	}
	var tl *bucket
	for e := m.tab[i]; e != nil; e = e.next {
		e.prev, e.parent, e.left, e.right, e.red = tl, nil, nil, nil, false
		tl = e
	}
	m.tree[i] = true
	m.treeify(m.tab[i])
}

// treeify builds the red-black tree of the bin that starts at hd, inserting its nodes in list
// order, then moves the root to the front of the bin.
func (m *bucketMap) treeify(hd *bucket) {
	var root *bucket
	for x := hd; x != nil; x = x.next {
		x.left, x.right = nil, nil
		if root == nil {
			x.parent, x.red = nil, false
			root = x
			continue
		}
		for p := root; ; {
			dir := compareNodes(x, p)
			xp := p
			if dir <= 0 {
				p = p.left
			} else {
				p = p.right
			}
			if p == nil {
				x.parent = xp
				if dir <= 0 {
					xp.left = x
				} else {
					xp.right = x
				}
				root = balanceInsertion(root, x)
				break
			}
		}
	}
	m.moveRootToFront(root)
}

// compareNodes is the descent direction of x at p: by hash (signed int), then Long.compareTo.
func compareNodes(x, p *bucket) int {
	switch {
	case p.hash > x.hash:
		return -1
	case p.hash < x.hash:
		return 1
	case x.time < p.time:
		return -1
	case x.time > p.time:
		return 1
	}
	return 0
}

// untreeify turns bin i back into a list bin, in its current order.
func (m *bucketMap) untreeify(i int) {
	for e := m.tab[i]; e != nil; e = e.next {
		e.prev, e.parent, e.left, e.right, e.red = nil, nil, nil, nil, false
	}
	m.tree[i] = false
}

func (m *bucketMap) root(b *bucket) *bucket {
	for b.parent != nil {
		b = b.parent
	}
	return b
}

// putTreeVal links x into tree bin i after its tree parent and rebalances.
func (m *bucketMap) putTreeVal(i int, x *bucket) {
	root := m.root(m.tab[i])
	for p := root; ; {
		dir := compareNodes(x, p)
		xp := p
		if dir <= 0 {
			p = p.left
		} else {
			p = p.right
		}
		if p == nil {
			xpn := xp.next
			x.next = xpn
			if dir <= 0 {
				xp.left = x
			} else {
				xp.right = x
			}
			xp.next = x
			x.parent, x.prev = xp, xp
			if xpn != nil {
				xpn.prev = x
			}
			m.moveRootToFront(balanceInsertion(root, x))
			return
		}
	}
}

// moveRootToFront makes root the first node of its bin.
func (m *bucketMap) moveRootToFront(root *bucket) {
	if root == nil || len(m.tab) == 0 {
		return
	}
	i := m.index(root.hash)
	first := m.tab[i]
	if root == first {
		return
	}
	m.tab[i] = root
	rp := root.prev
	if rn := root.next; rn != nil {
		rn.prev = rp
	}
	if rp != nil {
		rp.next = root.next
	}
	if first != nil {
		first.prev = root
	}
	root.next = first
	root.prev = nil
}

// split is TreeNode.split: the halves of tree bin j (head b) for a table doubled from bit bins.
func (m *bucketMap) split(b *bucket, j, bit int) {
	var loHead, loTail, hiHead, hiTail *bucket
	lc, hc := 0, 0
	for e := b; e != nil; {
		next := e.next
		e.next = nil
		if int(e.hash)&bit == 0 {
			if e.prev = loTail; loTail == nil {
				loHead = e
			} else {
				loTail.next = e
			}
			loTail = e
			lc++
		} else {
			if e.prev = hiTail; hiTail == nil {
				hiHead = e
			} else {
				hiTail.next = e
			}
			hiTail = e
			hc++
		}
		e = next
	}
	if loHead != nil {
		m.tab[j] = loHead
		if lc <= untreeifyThreshold {
			m.untreeify(j)
		} else {
			m.tree[j] = true
			if hiHead != nil {
				m.treeify(loHead)
			}
		}
	}
	if hiHead != nil {
		m.tab[j+bit] = hiHead
		if hc <= untreeifyThreshold {
			m.untreeify(j + bit)
		} else {
			m.tree[j+bit] = true
			if loHead != nil {
				m.treeify(hiHead)
			}
		}
	}
}

// removeTreeNode is TreeNode.removeTreeNode(map, tab, movable=false) for node p of bin i.
func (m *bucketMap) removeTreeNode(i int, p *bucket) {
	first := m.tab[i]
	root := first
	succ, pred := p.next, p.prev
	if pred == nil {
		m.tab[i] = succ
		first = succ
	} else {
		pred.next = succ
	}
	if succ != nil {
		succ.prev = pred
	}
	if first == nil {
		return
	}
	if root.parent != nil {
		root = m.root(root)
	}
	pl, pr := p.left, p.right
	var replacement *bucket
	switch {
	case pl != nil && pr != nil:
		s := pr
		for s.left != nil { // find successor
			s = s.left
		}
		s.red, p.red = p.red, s.red // swap colors
		sr := s.right
		pp := p.parent
		if s == pr { // p was s's direct parent
			p.parent = s
			s.right = p
		} else {
			sp := s.parent
			if p.parent = sp; sp != nil {
				if s == sp.left {
					sp.left = p
				} else {
					sp.right = p
				}
			}
			if s.right = pr; pr != nil {
				pr.parent = s
			}
		}
		p.left = nil
		if p.right = sr; sr != nil {
			sr.parent = p
		}
		if s.left = pl; pl != nil {
			pl.parent = s
		}
		if s.parent = pp; pp == nil {
			root = s
		} else if p == pp.left {
			pp.left = s
		} else {
			pp.right = s
		}
		if sr != nil {
			replacement = sr
		} else {
			replacement = p
		}
	case pl != nil:
		replacement = pl
	case pr != nil:
		replacement = pr
	default:
		replacement = p
	}
	if replacement != p {
		pp := p.parent
		replacement.parent = pp
		if pp == nil {
			root = replacement
			root.red = false
		} else if p == pp.left {
			pp.left = replacement
		} else {
			pp.right = replacement
		}
		p.left, p.right, p.parent = nil, nil, nil
	}
	if !p.red {
		balanceDeletion(root, replacement)
	}
	if replacement == p { // detach
		pp := p.parent
		p.parent = nil
		if pp != nil {
			if p == pp.left {
				pp.left = nil
			} else if p == pp.right {
				pp.right = nil
			}
		}
	}
}

func rotateLeft(root, p *bucket) *bucket {
	if p == nil || p.right == nil {
		return root
	}
	r := p.right
	if p.right = r.left; r.left != nil {
		r.left.parent = p
	}
	pp := p.parent
	if r.parent = pp; pp == nil {
		root = r
		r.red = false
	} else if pp.left == p {
		pp.left = r
	} else {
		pp.right = r
	}
	r.left = p
	p.parent = r
	return root
}

func rotateRight(root, p *bucket) *bucket {
	if p == nil || p.left == nil {
		return root
	}
	l := p.left
	if p.left = l.right; l.right != nil {
		l.right.parent = p
	}
	pp := p.parent
	if l.parent = pp; pp == nil {
		root = l
		l.red = false
	} else if pp.right == p {
		pp.right = l
	} else {
		pp.left = l
	}
	l.right = p
	p.parent = l
	return root
}

func balanceInsertion(root, x *bucket) *bucket {
	x.red = true
	for {
		xp := x.parent
		if xp == nil {
			x.red = false
			return x
		}
		xpp := xp.parent
		if !xp.red || xpp == nil {
			return root
		}
		if xppl := xpp.left; xp == xppl {
			if xppr := xpp.right; xppr != nil && xppr.red {
				xppr.red, xp.red, xpp.red = false, false, true
				x = xpp
			} else {
				if x == xp.right {
					x = xp
					root = rotateLeft(root, x)
					xp = x.parent
					xpp = nil
					if xp != nil {
						xpp = xp.parent
					}
				}
				if xp != nil {
					xp.red = false
					if xpp != nil {
						xpp.red = true
						root = rotateRight(root, xpp)
					}
				}
			}
		} else {
			if xppl != nil && xppl.red {
				xppl.red, xp.red, xpp.red = false, false, true
				x = xpp
			} else {
				if x == xp.left {
					x = xp
					root = rotateRight(root, x)
					xp = x.parent
					xpp = nil
					if xp != nil {
						xpp = xp.parent
					}
				}
				if xp != nil {
					xp.red = false
					if xpp != nil {
						xpp.red = true
						root = rotateLeft(root, xpp)
					}
				}
			}
		}
	}
}

func isRed(b *bucket) bool { return b != nil && b.red }

func balanceDeletion(root, x *bucket) *bucket {
	for {
		if x == nil || x == root {
			return root
		}
		xp := x.parent
		switch {
		case xp == nil:
			x.red = false
			return x
		case x.red:
			x.red = false
			return root
		case xp.left == x:
			xpr := xp.right
			if isRed(xpr) {
				xpr.red = false
				xp.red = true
				root = rotateLeft(root, xp)
				if xp = x.parent; xp == nil {
					xpr = nil
				} else {
					xpr = xp.right
				}
			}
			if xpr == nil {
				x = xp
				continue
			}
			sl, sr := xpr.left, xpr.right
			if !isRed(sr) && !isRed(sl) {
				xpr.red = true
				x = xp
				continue
			}
			if !isRed(sr) {
				if sl != nil {
					sl.red = false
				}
				xpr.red = true
				root = rotateRight(root, xpr)
				if xp = x.parent; xp == nil {
					xpr = nil
				} else {
					xpr = xp.right
				}
			}
			if xpr != nil {
				xpr.red = xp != nil && xp.red
				if sr = xpr.right; sr != nil {
					sr.red = false
				}
			}
			if xp != nil {
				xp.red = false
				root = rotateLeft(root, xp)
			}
			x = root
		default: // symmetric
			xpl := xp.left
			if isRed(xpl) {
				xpl.red = false
				xp.red = true
				root = rotateRight(root, xp)
				if xp = x.parent; xp == nil {
					xpl = nil
				} else {
					xpl = xp.left
				}
			}
			if xpl == nil {
				x = xp
				continue
			}
			sl, sr := xpl.left, xpl.right
			if !isRed(sl) && !isRed(sr) {
				xpl.red = true
				x = xp
				continue
			}
			if !isRed(sl) {
				if sr != nil {
					sr.red = false
				}
				xpl.red = true
				root = rotateLeft(root, xpl)
				if xp = x.parent; xp == nil {
					xpl = nil
				} else {
					xpl = xp.left
				}
			}
			if xpl != nil {
				xpl.red = xp != nil && xp.red
				if sl = xpl.left; sl != nil {
					sl.red = false
				}
			}
			if xp != nil {
				xp.red = false
				root = rotateRight(root, xp)
			}
			x = root
		}
	}
}
