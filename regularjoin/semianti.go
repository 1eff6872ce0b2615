package regularjoin

import (
	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/joincore"
)

// The values of Join.semiAnti.
const (
	semiJoin uint8 = 1 + iota
	antiJoin
)

// processSemiAnti is StreamingSemiAntiJoinOperator's processElement1 (side 0) and
// processElement2 (side 1) for row in of row kind kind. The output is left rows alone. The left
// side keeps its rows with their association counts (OuterJoinRecordStateView), the right side
// its rows (JoinRecordStateView), each in its layout, as a LEFT join does:
//
//   - a left row is emitted, with its own row kind, when it has a match (SEMI) or none (ANTI),
//     then stored with the number of its matches (accumulate) or retracted;
//   - a right accumulate message is stored, and each matching left row whose association count
//     was 0 is emitted (SEMI: with the input's kind, +I or +U; ANTI: -D); a right retraction is
//     retracted, and each matching left row whose count was 1 is emitted (SEMI: with the input's
//     kind, -U or -D; ANTI: +I); the counts go up or down by one, also below 0 (Flink's
//     leniency: a retraction of a row never stored still lowers them).
//
// A key that can never match (joincore.KeyJoins) is not stored, as process explains: a left row
// of it is emitted by an ANTI join, a right row emits nothing.
func (j *Join) processSemiAnti(side int, in *input, kind engine.RowKind) {
	anti := j.semiAnti == antiJoin
	acc := engine.IsAccumulate(kind)
	joins := joincore.KeyJoins(in.key, j.filterNulls)
	id := int32(-1)
	if joins {
		id = j.state.Find(in.key, in.hash, int(in.kg))
		if id < 0 && acc {
			id = j.state.Insert(in.key, in.hash, int(in.kg))
		}
	}
	if id < 0 { // no state: nothing on the other side, and nothing to retract
		if side == 0 && anti {
			j.out.AddKind(in.row, nil, kind)
		}
		return
	}
	ks := &j.keys.k[id]
	vs := j.associate(ks, side, in.row)
	if side == 0 {
		var n int32
		for _, v := range vs {
			n += v.times
		}
		if (n == 0) == anti {
			j.out.AddKind(in.row, nil, kind)
		}
		if acc {
			j.keys.add(ks, 0, in.row, in.mk, in.mh, n)
		} else {
			j.keys.retract(ks, 0, in.mk, in.mh)
		}
	} else {
		if acc {
			j.keys.add(ks, 1, in.row, in.mk, in.mh, -1)
		} else {
			j.keys.retract(ks, 1, in.mk, in.mh)
		}
		for _, v := range vs {
			for range v.times {
				switch {
				case acc && v.n == 0 && anti:
					j.out.AddKind(v.r.row, nil, engine.Delete)
				case !acc && v.n == 1 && anti:
					j.out.AddKind(v.r.row, nil, engine.Insert)
				case acc && v.n == 0, !acc && v.n == 1:
					j.out.AddKind(v.r.row, nil, kind)
				}
				if acc {
					v.r.assoc = v.n + 1
				} else {
					v.r.assoc = v.n - 1
				}
			}
		}
	}
	if ks.empty() {
		j.state.Remove(id)
	}
}
