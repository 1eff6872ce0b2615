package engine

// Queue holds rows of one row type in Go memory, appended batch by batch (input views are valid
// only during their call), until an operator consumes them through views of its head (Window).
// Columns keep the Arrow layout of Column: a nullable column always has its bitmap, VARCHAR and
// BINARY offsets are rebased as rows are appended. Bits past the last row are kept zero. A Queue
// is not safe for concurrent use.
type Queue struct {
	Types []Type
	cols  []queueCol
	kinds []RowKind
	head  int // first row not consumed
	rows  int // rows stored, consumed ones included
	spare *Queue
}

type queueCol struct {
	valid []byte
	data  []byte
	offs  []int32 // VARCHAR/BINARY: rows+1 entries
}

// NewQueue returns an empty queue of rows of the given types.
func NewQueue(types []Type) *Queue {
	q := &Queue{Types: types, cols: make([]queueCol, len(types))}
	q.reset()
	return q
}

func (q *Queue) reset() {
	for i, t := range q.Types {
		c := &q.cols[i]
		clear(c.valid)
		clear(c.data)
		c.valid, c.data = c.valid[:0], c.data[:0]
		if t.Variable() {
			c.offs = append(c.offs[:0], 0)
		}
	}
	q.kinds = q.kinds[:0]
	q.head, q.rows = 0, 0
}

// Len is the number of rows queued and not consumed.
func (q *Queue) Len() int { return q.rows - q.head }

// Append copies the rows of b (a batch of the queue's types) to the tail.
func (q *Queue) Append(b *Batch) {
	n := b.Len
	for i, t := range q.Types {
		c, src := &q.cols[i], &b.Cols[i]
		if t.Nullable {
			c.valid = appendBits(c.valid, q.rows, src.Valid, src.Offset, n, true)
		}
		switch {
		case t.ID == Boolean:
			c.data = appendBits(c.data, q.rows, src.Data, src.Offset, n, false)
		case t.Variable():
			from, to := int32(0), int32(0)
			if n > 0 {
				from, to = src.Offs[src.Offset], src.Offs[src.Offset+n]
			}
			base := int32(len(c.data)) - from
			for _, o := range src.Offs[src.Offset+1 : src.Offset+n+1] {
				c.offs = append(c.offs, o+base)
			}
			c.data = append(c.data, src.Data[from:to]...)
		default:
			w := t.Width()
			c.data = append(c.data, src.Data[src.Offset*w:(src.Offset+n)*w]...)
		}
	}
	q.kinds = append(q.kinds, b.Kinds[:n]...)
	q.rows += n
}

// Truncate drops the rows appended after the queue held rows rows (rows >= the consumed rows),
// undoing a failed sequence of Appends.
func (q *Queue) Truncate(rows int) {
	for i, t := range q.Types {
		c := &q.cols[i]
		if t.Nullable {
			c.valid = truncBits(c.valid, rows)
		}
		switch {
		case t.ID == Boolean:
			c.data = truncBits(c.data, rows)
		case t.Variable():
			c.offs = c.offs[:rows+1]
			end := int(c.offs[rows])
			clear(c.data[end:])
			c.data = c.data[:end]
		default:
			w := t.Width()
			clear(c.data[rows*w:])
			c.data = c.data[:rows*w]
		}
	}
	q.kinds = q.kinds[:rows]
	q.rows = rows
}

// Stored is the number of rows stored, consumed ones included: the argument of Truncate that
// undoes later Appends.
func (q *Queue) Stored() int { return q.rows }

// Window makes b a view of the first n unconsumed rows (n <= Len), through Column.Offset: no
// copy. The view is valid until the next Append, Truncate or Compact.
func (q *Queue) Window(n int, b *Batch) {
	b.Len, b.Retracts = n, false
	b.Cols = b.Cols[:0]
	for i, t := range q.Types {
		c := &q.cols[i]
		col := Column{Type: t, Offset: q.head, Data: c.data}
		if t.Nullable {
			col.Valid = c.valid
		}
		if t.Variable() {
			col.Offs = c.offs
		}
		b.Cols = append(b.Cols, col)
	}
	b.Kinds = q.kinds[q.head : q.head+n]
	for _, k := range b.Kinds {
		if !IsAccumulate(k) {
			b.Retracts = true
		}
	}
}

// Consume marks the first n unconsumed rows consumed. Their memory is reused once Compact
// moves the rest to the front.
func (q *Queue) Consume(n int) { q.head += n }

// Compact moves the unconsumed rows to the front, copying them once; the queue is empty of
// consumed rows afterwards.
func (q *Queue) Compact() {
	if q.head == 0 {
		return
	}
	if q.Len() == 0 {
		q.reset()
		return
	}
	if q.spare == nil {
		q.spare = NewQueue(q.Types)
	}
	var b Batch
	q.Window(q.Len(), &b)
	q.spare.Append(&b)
	spare := q.spare
	q.cols, spare.cols = spare.cols, q.cols
	q.kinds, spare.kinds = spare.kinds, q.kinds
	q.head, q.rows = 0, spare.rows
	spare.reset()
	q.spare = spare
}

// appendBits appends n bits of src starting at bit from to dst, which holds have bits (the bits
// past them zero), and returns it; src nil appends n set bits when ones, else n clear bits.
// Byte-aligned runs are copied or filled a byte at a time.
func appendBits(dst []byte, have int, src []byte, from, n int, ones bool) []byte {
	need := (have + n + 7) / 8
	if len(dst) < need {
		dst = append(dst, make([]byte, need-len(dst))...)
	}
	switch {
	case n == 0 || (src == nil && !ones):
		return dst
	case src == nil:
		setBits(dst, have, n)
		return dst
	case have%8 == 0 && from%8 == 0:
		copy(dst[have/8:need], src[from/8:])
		if r := (have + n) % 8; r != 0 {
			dst[need-1] &= 1<<r - 1 // the bits past the last row stay zero
		}
		return dst
	}
	for j := range n {
		k := from + j
		if src[k>>3]&(1<<(k&7)) != 0 {
			k = have + j
			dst[k>>3] |= 1 << (k & 7)
		}
	}
	return dst
}

// setBits sets bits [at, at+n) of b.
func setBits(b []byte, at, n int) {
	end := at + n
	for ; at < end && at%8 != 0; at++ {
		b[at>>3] |= 1 << (at & 7)
	}
	for ; at+8 <= end; at += 8 {
		b[at>>3] = 0xff
	}
	for ; at < end; at++ {
		b[at>>3] |= 1 << (at & 7)
	}
}

// truncBits keeps the first n bits of b, clearing the others.
func truncBits(b []byte, n int) []byte {
	keep := (n + 7) / 8
	clear(b[keep:])
	if n%8 != 0 {
		b[keep-1] &= 1<<(n%8) - 1
	}
	return b[:keep]
}
