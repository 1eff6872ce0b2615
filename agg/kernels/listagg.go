package kernels

import (
	"fmt"

	"github.com/ferrystream/ferry/agg/internal/scratch"
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// listAggAcc is LISTAGG(x [, delimiter]) without retraction: Flink's declarative ListAggFunction,
// whose accumulator is (accDelimiter STRING, acc STRING), initially (',', NULL). Accumulating a
// row sets accDelimiter to the row's delimiter (the literal ',' for the one-argument call, NULL
// when the delimiter argument is NULL) whatever x is, and acc to: acc for a NULL x, else x while
// acc is NULL, else CONCAT(acc, delimiter, x), which is NULL when the delimiter is NULL. A
// FILTER or DISTINCT that leaves a row out skips both. Merging a partial (accDelimiter', acc')
// takes accDelimiter' as it is, and acc' into acc as accumulating does, with accDelimiter' as
// the delimiter. The value is acc. Retracting input gets Flink's ListAggWithRetractAggFunction
// (listAggRetractAcc). Strings are bytes: Flink's CONCAT of BinaryStringData joins UTF-8 bytes.
// Its recorder's per-row methods are opsValues', specialized (kernels_gen.go).
//
//kernels:specialize
type listAggAcc struct {
	col      int            // x
	delimCol int            // the delimiter argument, or -1 for the literal ','
	st       []listAggState // per group
	opsValues[values.StrRef, *values.StrOps]
	part rowValues[values.StrRef] // partial values being written
}

// listAggState is one group's accumulator: acc, and accDelimiter.
type listAggState struct {
	acc values.StrRef // owned by ops when has
	delimState
}

// delimState is a LISTAGG delimiter held in an accumulator: its kind and (for delimStored) a
// string owned by the accumulator's ops.
type delimState struct {
	delim values.StrRef
	kind  delimKind
}

// delimKind tells accDelimiter's three states apart: the initial literal ',', NULL, or a string.
type delimKind uint8

const (
	delimComma delimKind = iota
	delimNull
	delimStored
)

var comma = []byte(",")

func newListAgg(col, delimCol int) *listAggAcc {
	return &listAggAcc{col: col, delimCol: delimCol, opsValues: opsValues[values.StrRef, *values.StrOps]{ops: values.NewStrOps(-1)}}
}

func (a *listAggAcc) Grow(n int) { a.st = scratch.Extend(a.st, n) }

func (a *listAggAcc) Reset(g int32) {
	a.drop(&a.st[g])
	a.st[g] = listAggState{}
}

func (a *listAggAcc) drop(s *listAggState) {
	a.ops.Drop(s.acc)
	s.release(a.ops)
}

// release drops the stored delimiter string, if any.
func (d *delimState) release(ops *values.StrOps) {
	if d.kind == delimStored {
		ops.Drop(d.delim)
	}
}

func (a *listAggAcc) Bytes() int64 {
	var zero listAggState
	return int64(cap(a.st))*int64(sizeOf(zero)) + a.ops.Bytes()
}

// tidy compacts the arena when due, before a batch records references into it.
func (a *listAggAcc) tidy() {
	if !a.ops.CompactDue() {
		return
	}
	a.ops.CompactStart()
	for g := range a.st {
		s := &a.st[g]
		s.acc = a.ops.Move(s.acc)
		s.move(a.ops)
	}
	a.ops.CompactEnd()
}

// move moves the stored delimiter string during a compaction of ops' arena.
func (d *delimState) move(ops *values.StrOps) {
	if d.kind == delimStored {
		d.delim = ops.Move(d.delim)
	}
}

// bytes returns the delimiter's bytes, or nil for NULL.
func (d *delimState) bytes(ops *values.StrOps) []byte {
	switch d.kind {
	case delimComma:
		return comma
	case delimStored:
		return ops.Arena().Get(d.delim)
	}
	return nil
}

// delimiter returns s's accDelimiter bytes, or nil for NULL.
func (a *listAggAcc) delimiter(s *listAggState) []byte { return s.bytes(a.ops) }

// setDelimiter makes d (nil: NULL) s's accDelimiter, keeping the stored copy when equal.
func (a *listAggAcc) setDelimiter(s *listAggState, d []byte) { s.set(a.ops, d) }

// set makes d (nil: NULL) the delimiter, keeping the stored copy when equal.
func (s *delimState) set(ops *values.StrOps, d []byte) {
	cur := s.bytes(ops)
	if (d == nil) == (cur == nil) && string(d) == string(cur) {
		return
	}
	s.release(ops)
	switch {
	case d == nil:
		s.kind, s.delim = delimNull, values.StrRef{}
	case string(d) == ",":
		s.kind, s.delim = delimComma, values.StrRef{}
	default:
		s.kind, s.delim = delimStored, ops.Arena().Add(d, false)
	}
}

// add folds x (nil: NULL) with delimiter d (nil: NULL) into acc.
func (a *listAggAcc) add(s *listAggState, x, d []byte) {
	switch {
	case x == nil:
	case !s.acc.Has():
		s.acc = a.ops.Arena().Add(x, false)
	case d == nil:
		a.ops.Drop(s.acc)
		s.acc = values.StrRef{}
	default:
		h := a.ops.Arena()
		off := h.Len()
		h.Append(h.Get(s.acc)) // appended first: a move of the arena copies from the old array
		h.Append(d)
		h.Append(x)
		a.ops.Drop(s.acc)
		s.acc = h.Since(off)
	}
}

// bytesAt returns row i's bytes of a VARCHAR column, or nil for NULL (an empty string is
// non-nil).
func bytesAt(c *engine.Column, i int) []byte {
	if c.IsNull(i) {
		return nil
	}
	if b := c.Bytes(i); b != nil {
		return b
	}
	return []byte{}
}

func (a *listAggAcc) Fold(in *engine.Batch, gids []int32, act []int8, changed []bool) {
	a.tidy()
	col := &in.Cols[a.col]
	var delims *engine.Column
	if a.delimCol >= 0 {
		delims = &in.Cols[a.delimCol]
	}
	for i, g := range a.rows(in.Len, gids) {
		s := &a.st[g]
		pv, pn := s.acc, !s.acc.Has()
		if act[i] > 0 {
			d := comma
			if delims != nil {
				d = bytesAt(delims, i)
			}
			a.add(s, bytesAt(col, i), d)
			a.setDelimiter(s, d)
		}
		a.note(i, pv, pn, s.acc, !s.acc.Has(), changed)
	}
}

func (a *listAggAcc) VarBytes(pick []int32) int { return a.ops.VarBytes(a.vals, a.nulls, pick) }

// Save writes accDelimiter's kind (and string), then acc's NULL flag (and string).
func (a *listAggAcc) Save(dst []byte, g int32) []byte {
	s := &a.st[g]
	dst = s.save(a.ops, dst)
	dst = values.PutBool(dst, s.acc.Has())
	if s.acc.Has() {
		dst = a.ops.Put(dst, s.acc)
	}
	return dst
}

// save appends the delimiter's kind (and string).
func (d *delimState) save(ops *values.StrOps, dst []byte) []byte {
	dst = append(dst, byte(d.kind))
	if d.kind == delimStored {
		dst = ops.Put(dst, d.delim)
	}
	return dst
}

// loadDelimiter reads a delimiter save wrote into ops' arena.
func loadDelimiter(ops *values.StrOps, src []byte) (delimState, []byte, error) {
	if len(src) == 0 || delimKind(src[0]) > delimStored {
		return delimState{}, nil, fmt.Errorf("%w: LISTAGG delimiter kind missing or invalid", engine.ErrData)
	}
	d := delimState{kind: delimKind(src[0])}
	src = src[1:]
	if d.kind == delimStored {
		v, rest, err := ops.Get(src)
		if err != nil {
			return delimState{}, nil, err
		}
		d.delim, src = v, rest
	}
	return d, src, nil
}

func (a *listAggAcc) Load(src []byte, g int32) ([]byte, error) {
	s := &a.st[g]
	d, src, err := loadDelimiter(a.ops, src)
	if err != nil {
		return nil, err
	}
	has, src, err := values.GetBool(src)
	if err != nil {
		return nil, err
	}
	var acc values.StrRef
	if has {
		v, rest, err := a.ops.Get(src)
		if err != nil {
			return nil, err
		}
		acc, src = v, rest
	}
	s.delimState, s.acc = d, acc
	return src, nil
}

var listAggPartial = []engine.Type{{ID: engine.Varchar, Nullable: true}, {ID: engine.Varchar, Nullable: true}}

func (a *listAggAcc) PartialTypes() ([]engine.Type, error) { return listAggPartial, nil }

// gather collects acc of groups into a.part (entry j for groups[j]).
func (a *listAggAcc) gather(groups []int32) {
	a.part.fill(len(groups), func(j int) (values.StrRef, bool) { s := &a.st[groups[j]]; return s.acc, s.acc.Has() })
}

func (a *listAggAcc) PartialVarBytes(groups []int32, dst []int) {
	n := 0
	for _, g := range groups {
		n += len(a.delimiter(&a.st[g]))
	}
	dst[0] = n
	a.gather(groups)
	dst[1] = a.ops.VarBytes(a.part.vals, a.part.nulls, nil)
}

func (a *listAggAcc) WritePartial(out []engine.OutColumn, groups []int32) error {
	d := &out[0]
	pos := int32(0)
	for j, g := range groups {
		d.Offs[j] = pos
		s := &a.st[g]
		if s.kind == delimNull {
			d.SetNull(j)
			continue
		}
		pos += int32(copy(d.Data[pos:], a.delimiter(s)))
	}
	d.Offs[len(groups)] = pos
	a.gather(groups)
	a.ops.Write(&out[1], a.part.vals, a.part.nulls, nil)
	return nil
}

func (a *listAggAcc) Merge(in *engine.Batch, first int, gids []int32, changed []bool) error {
	if err := checkPartial(in, first, listAggPartial); err != nil {
		return err
	}
	a.tidy()
	delims, accs := &in.Cols[first], &in.Cols[first+1]
	for i, g := range a.rows(in.Len, gids) {
		s := &a.st[g]
		pv, pn := s.acc, !s.acc.Has()
		d := bytesAt(delims, i)
		a.add(s, bytesAt(accs, i), d)
		a.setDelimiter(s, d)
		a.note(i, pv, pn, s.acc, !s.acc.Has(), changed)
	}
	return nil
}
