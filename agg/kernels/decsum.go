package kernels

import (
	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// decSum is the DECIMAL(38, s) sum of $SUM0 and AVG over DECIMAL(p, s) (aggDecimalPlus and
// aggDecimalMinus): it starts at 0; once an addition or subtraction overflows 38 digits, or a
// NULL partial sum is merged (NULL + x is NULL), it is NULL for the life of the group. Its
// snapshot is the NULL flag, then the sum; as partial state it is one nullable DECIMAL(38, s).
// add and sub inline into the kernels' loops (each is one call of DecAdd or DecSub).
type decSum struct {
	sum  values.Dec128
	null bool // overflowed
}

// add adds v, unless the sum is NULL.
func (s *decSum) add(v values.Dec128) {
	if !s.null {
		var ok bool
		s.sum, ok = values.DecAdd(s.sum, v)
		s.null = !ok
	}
}

// sub subtracts v, unless the sum is NULL.
func (s *decSum) sub(v values.Dec128) {
	if !s.null {
		var ok bool
		s.sum, ok = values.DecSub(s.sum, v)
		s.null = !ok
	}
}

func (s *decSum) save(dst []byte) []byte { return values.PutDec(values.PutBool(dst, s.null), s.sum) }

func (s *decSum) load(src []byte) ([]byte, error) {
	var err error
	if s.null, src, err = values.GetBool(src); err != nil {
		return nil, err
	}
	s.sum, src, err = values.GetDec(src)
	return src, err
}

// write writes the sum to row j of the partial column out, whose values are sums.
func (s *decSum) write(out *engine.OutColumn, sums []values.Dec128, j int) {
	sums[j] = s.sum
	if s.null {
		sums[j] = values.Dec128{}
		out.SetNull(j)
	}
}
