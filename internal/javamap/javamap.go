// Package javamap reproduces java.util.HashMap (JDK 8 to 25 share the algorithm) structure for
// structure, and with it its iteration order: Flink's heap state backend keeps a MapState as a
// HashMap per key, and operators that iterate one emit in its order. Map is generic over its
// node type, which embeds the links (Entry) and supplies the key's equality and the tree-bin
// order; the caller supplies each key's hashCode.
//
//   - a table of 2^n bins; a key's bin is spread(hashCode) & (capacity-1), with
//     spread(h) = h ^ h>>>16; iteration walks the bins in index order, each along its next links;
//   - a list bin appends a new key; a bin that reaches 9 entries becomes a red-black tree bin
//     (treeifyBin), unless the table has fewer than 64 bins, which then doubles instead. A tree
//     bin links a new key in after its tree parent and moves the tree's root to the front
//     (putTreeVal, moveRootToFront): its iteration order is not insertion order;
//   - the table is allocated at the first insertion (16 bins for `new HashMap<>()`, the requested
//     size for a map created with a capacity) and doubles when the size exceeds capacity*0.75
//     (float arithmetic truncated to int, as HashMap.resize); a doubling splits every bin into
//     its low and high half, each keeping its order, a tree half of at most 6 entries becoming a
//     list and a larger one re-treeified when the other half is not empty;
//   - Remove is an iterator's remove (removeNode with movable false: the root stays, a tree bin
//     is never untreeified); RemoveKey is remove(key) (movable true: a tree bin whose root lacks
//     a grandchild on the left becomes a list, the root moves to the front).
//
// Within a tree bin, nodes of equal hash descend by the node type's Compare: Long.compareTo for
// Long keys; keys that are not Comparable (BinaryRowData) tie-break on identity hash codes in
// Java, which no reproduction can follow (Flink's order is not deterministic there either).
//
// A Map is owned by its user; its nodes are owned by the map while linked in.
package javamap

// Entry is the HashMap node part of a node type N, which embeds it: its hash and its links
// (next links the bin, the other links are a tree bin's).
type Entry[N any] struct {
	node                      *N
	hash                      int32 // spread(hashCode), as HashMap stores it
	next                      *Entry[N]
	prev, parent, left, right *Entry[N] // TreeNode links, in tree bins only
	red                       bool
}

// Node is the constraint on a Map's node type N (through its pointer P): its embedded Entry, the
// equality of its key with a key K (equals), and the order of two nodes of equal hash in a tree
// bin (compareComparables, or a stand-in for tieBreakOrder; never 0 for distinct keys).
type Node[K, N any] interface {
	*N
	Entry() *Entry[N]
	KeyEquals(k K) bool
	Compare(other *N) int
}

// Map is a java.util.HashMap of nodes N with keys K. The zero Map is `new HashMap<>()`.
type Map[K, N any, P Node[K, N]] struct {
	tab       []*Entry[N] // bin heads; nil until the first insertion
	tree      []bool      // per bin: a tree bin
	threshold int         // before allocation: the initial capacity (0: the default, 16)
	size      int
	// only is the map's one node when size is 1 and it is known (nil otherwise), so that
	// iterating a map of one node, the common case, does not read the table.
	only *N
}

const (
	defaultCapacity    = 16
	treeifyThreshold   = 8
	untreeifyThreshold = 6
	minTreeifyCapacity = 64
	maxCapacity        = MaxCapacity
)

// WithCapacity returns an empty `new HashMap<>(c)`.
func WithCapacity[K, N any, P Node[K, N]](c int) *Map[K, N, P] {
	return &Map[K, N, P]{threshold: tableSizeFor(c)}
}

// WithExpectedSize is Flink's CollectionUtil.newHashMapWithExpectedSize(n), which
// MapSerializer.deserialize uses on restore: new HashMap<>(computeRequiredCapacity(n), 0.75f).
func WithExpectedSize[K, N any, P Node[K, N]](n int) *Map[K, N, P] {
	c := n + 1
	if n > 2 {
		c = int(ceilFloat32(float32(n) / float32(0.75))) // (int) Math.ceil(n / 0.75f)
	}
	return WithCapacity[K, N, P](c)
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

// LongHashCode is Long.hashCode(t).
func LongHashCode(t int64) int32 { return int32(uint32(uint64(t) ^ uint64(t)>>32)) }

// spread is HashMap.hash for a key of hashCode h.
func spread(h int32) int32 { u := uint32(h); return int32(u ^ u>>16) }

func (m *Map[K, N, P]) index(h int32) int { return int(h) & (len(m.tab) - 1) }

// Len is the number of entries.
func (m *Map[K, N, P]) Len() int { return m.size }

// Capacity is the table's length, 0 before the first insertion.
func (m *Map[K, N, P]) Capacity() int { return len(m.tab) }

// TreeBins is the number of tree bins.
func (m *Map[K, N, P]) TreeBins() int {
	n := 0
	for _, t := range m.tree {
		if t {
			n++
		}
	}
	return n
}

// Get returns the node of key k, whose hashCode is hashCode, or nil.
func (m *Map[K, N, P]) Get(k K, hashCode int32) *N {
	if m.tab == nil {
		return nil
	}
	h := spread(hashCode)
	for e := m.tab[m.index(h)]; e != nil; e = e.next {
		if e.hash == h && P(e.node).KeyEquals(k) {
			return e.node
		}
	}
	return nil
}

// Insert links in x, a node whose key is absent, of hashCode hashCode (HashMap.putVal for a new
// key). x's Entry must be zero.
func (m *Map[K, N, P]) Insert(x *N, hashCode int32) {
	if m.tab == nil {
		m.resize()
	}
	e := P(x).Entry()
	e.node, e.hash = x, spread(hashCode)
	i := m.index(e.hash)
	switch p := m.tab[i]; {
	case p == nil:
		m.tab[i] = e
	case m.tree[i]:
		m.putTreeVal(i, e)
	default:
		for binCount := 0; ; binCount++ {
			if p.next == nil {
				p.next = e
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
}

// ComputeIfAbsent is HashMap.computeIfAbsent(k, f) for an f that never returns null: the table
// is resized first when the size exceeds the threshold (or allocated), also when k is present;
// then the node of k, whose hashCode is hashCode, is returned, or newNode's node linked in: at
// the head of its list bin (unlike Insert's putVal, which appends), a bin that held 7 or more
// nodes then treeified (a table shorter than 64 doubled instead), or into its tree bin; no resize
// follows the insertion. newNode's node must have a zero Entry.
func (m *Map[K, N, P]) ComputeIfAbsent(k K, hashCode int32, newNode func() *N) *N {
	if m.size > m.threshold || m.tab == nil {
		m.resize()
	}
	h := spread(hashCode)
	i := m.index(h)
	binCount := 0
	for e := m.tab[i]; e != nil; e = e.next { // a tree bin's nodes are linked by next too
		if e.hash == h && P(e.node).KeyEquals(k) {
			return e.node
		}
		binCount++
	}
	x := newNode()
	e := P(x).Entry()
	e.node, e.hash = x, h
	if m.tree[i] {
		m.putTreeVal(i, e)
	} else {
		e.next, m.tab[i] = m.tab[i], e
		if binCount >= treeifyThreshold-1 {
			m.treeifyBin(i)
		}
	}
	m.size++
	m.only = nil
	if m.size == 1 {
		m.only = x
	}
	return x
}

// Remove unlinks node x as an iterator's remove does (removeNode with movable false).
func (m *Map[K, N, P]) Remove(x *N) { m.remove(P(x).Entry(), false) }

// RemoveKey unlinks node x as remove(key) does (removeNode with movable true).
func (m *Map[K, N, P]) RemoveKey(x *N) { m.remove(P(x).Entry(), true) }

func (m *Map[K, N, P]) remove(b *Entry[N], movable bool) {
	i := m.index(b.hash)
	if m.tree[i] {
		m.removeTreeNode(i, b, movable)
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
	*b = Entry[N]{}
}

// AppendOrder appends the nodes in iteration order to dst.
func (m *Map[K, N, P]) AppendOrder(dst []*N) []*N {
	switch {
	case m.size == 0:
		return dst
	case m.only != nil:
		return append(dst, m.only)
	}
	for _, e := range m.tab {
		for ; e != nil; e = e.next {
			dst = append(dst, e.node)
		}
	}
	if m.size == 1 {
		m.only = dst[len(dst)-1]
	}
	return dst
}

// Recycle reports whether m, empty, is as a `new HashMap<>()` after its first insertion (its
// table of the default capacity, every bin an empty list), so that it may stand in for a new
// map; it then forgets its last node.
func (m *Map[K, N, P]) Recycle() bool {
	if m.size != 0 || len(m.tab) != defaultCapacity {
		return false
	}
	m.threshold, m.only = int(defaultCapacity*0.75), nil
	clear(m.tree)
	return true
}

// resize is HashMap.resize: allocate or double the table.
func (m *Map[K, N, P]) resize() {
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
	m.tab, m.tree = make([]*Entry[N], newCap), make([]bool, newCap)
	for j, e := range oldTab {
		switch {
		case e == nil:
		case e.next == nil: // a lone node moves as it is, a TreeNode staying one
			m.tab[m.index(e.hash)] = e
			m.tree[m.index(e.hash)] = oldTree[j]
		case oldTree[j]:
			m.split(e, j, oldCap)
		default:
			var loHead, loTail, hiHead, hiTail *Entry[N]
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

// ---- tree bins: HashMap.TreeNode, ported statement for statement ----

// treeifyBin turns bin i into a tree bin, or doubles a small table instead.
func (m *Map[K, N, P]) treeifyBin(i int) {
	if len(m.tab) < minTreeifyCapacity {
		m.resize()
		return
	}
	var tl *Entry[N]
	for e := m.tab[i]; e != nil; e = e.next {
		e.prev, e.parent, e.left, e.right, e.red = tl, nil, nil, nil, false
		tl = e
	}
	m.tree[i] = true
	m.treeify(m.tab[i])
}

// treeify builds the red-black tree of the bin that starts at hd, inserting its nodes in list
// order, then moves the root to the front of the bin.
func (m *Map[K, N, P]) treeify(hd *Entry[N]) {
	var root *Entry[N]
	for x := hd; x != nil; x = x.next {
		x.left, x.right = nil, nil
		if root == nil {
			x.parent, x.red = nil, false
			root = x
			continue
		}
		for p := root; ; {
			dir := m.compareNodes(x, p)
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

// compareNodes is the descent direction of x at p: by hash (signed int), then the nodes' Compare.
func (m *Map[K, N, P]) compareNodes(x, p *Entry[N]) int {
	switch {
	case p.hash > x.hash:
		return -1
	case p.hash < x.hash:
		return 1
	}
	return P(x.node).Compare(p.node)
}

// untreeify turns bin i back into a list bin, in its current order.
func (m *Map[K, N, P]) untreeify(i int) {
	for e := m.tab[i]; e != nil; e = e.next {
		e.prev, e.parent, e.left, e.right, e.red = nil, nil, nil, nil, false
	}
	m.tree[i] = false
}

func (m *Map[K, N, P]) root(b *Entry[N]) *Entry[N] {
	for b.parent != nil {
		b = b.parent
	}
	return b
}

// putTreeVal links x into tree bin i after its tree parent and rebalances.
func (m *Map[K, N, P]) putTreeVal(i int, x *Entry[N]) {
	root := m.root(m.tab[i])
	for p := root; ; {
		dir := m.compareNodes(x, p)
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
func (m *Map[K, N, P]) moveRootToFront(root *Entry[N]) {
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
func (m *Map[K, N, P]) split(b *Entry[N], j, bit int) {
	var loHead, loTail, hiHead, hiTail *Entry[N]
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

// removeTreeNode is TreeNode.removeTreeNode(map, tab, movable) for node p of bin i: movable
// false for an iterator's remove, true for remove(key), which also turns a small tree back into a
// list and moves the root to the front.
func (m *Map[K, N, P]) removeTreeNode(i int, p *Entry[N], movable bool) {
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
	if movable && (root.right == nil || root.left == nil || root.left.left == nil) {
		m.untreeify(i) // too small
		return
	}
	pl, pr := p.left, p.right
	var replacement *Entry[N]
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
	r := root
	if !p.red {
		r = balanceDeletion(root, replacement)
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
	if movable {
		m.moveRootToFront(r)
	}
}

func rotateLeft[N any](root, p *Entry[N]) *Entry[N] {
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

func rotateRight[N any](root, p *Entry[N]) *Entry[N] {
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

func balanceInsertion[N any](root, x *Entry[N]) *Entry[N] {
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

func isRed[N any](b *Entry[N]) bool { return b != nil && b.red }

func balanceDeletion[N any](root, x *Entry[N]) *Entry[N] {
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

// Clear is HashMap.clear: the map empties and keeps its table (its length, and with it the
// iteration order of the keys put next). The nodes it held are dropped, never to be linked again.
func (m *Map[K, N, P]) Clear() {
	clear(m.tab)
	clear(m.tree)
	m.size, m.only = 0, nil
}

// Allocate allocates the table if there is none yet, as the first insertion does: a map Flink
// created and then emptied.
func (m *Map[K, N, P]) Allocate() {
	if m.tab == nil {
		m.resize()
	}
}

// Each calls f with every node in iteration order; f must not change the map.
func (m *Map[K, N, P]) Each(f func(*N)) {
	for _, e := range m.tab {
		for ; e != nil; e = e.next {
			f(e.node)
		}
	}
}

// MaxCapacity is HashMap's largest table length.
const MaxCapacity = 1 << 30
