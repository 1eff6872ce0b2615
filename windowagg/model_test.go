package windowagg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// modelWindow is one window of the model: its rows' aggregates.
type modelWindow struct {
	count, sum, max int64
	dsum            float64
}

// model is an independent statement of what a window aggregate emits (COUNT(*), SUM(v),
// MAX(v), SUM(v/2) per key and window): a row counts in every window containing its row time
// that had not fired (end - 1 > the watermark) when it arrived; when the watermark reaches a
// window's end - 1, the window is emitted once if a row counts in it. It knows nothing of
// slices, buffers or timers, and orders each watermark's rows by their text.
type model struct {
	size, step int64 // step: the slide (HOP), the step (CUMULATE), size (TUMBLE)
	cumulate   bool
	wm         int64
	windows    map[[2]any]*modelWindow // (key, end)
}

func (m *model) ends(ts int64) []int64 {
	var ends []int64
	if m.cumulate {
		start := ts - ((ts%m.size)+m.size)%m.size
		for e := start + m.step; e <= start+m.size; e += m.step {
			if ts < e {
				ends = append(ends, e)
			}
		}
		return ends
	}
	first := ts - ((ts%m.step)+m.step)%m.step + m.step // the first end after ts
	for e := first; e-m.size <= ts; e += m.step {
		ends = append(ends, e)
	}
	return ends
}

func (m *model) row(k string, ts, v int64) {
	for _, e := range m.ends(ts) {
		if e-1 <= m.wm {
			continue
		}
		w := m.windows[[2]any{k, e}]
		if w == nil {
			w = &modelWindow{max: math.MinInt64}
			m.windows[[2]any{k, e}] = w
		}
		w.count++
		w.sum += v
		w.max = max(w.max, v)
		w.dsum += float64(v) / 2
	}
}

func (m *model) advance(wm int64) []string {
	if wm <= m.wm {
		return nil
	}
	m.wm = wm
	var out []string
	for kw, w := range m.windows {
		e := kw[1].(int64)
		if e-1 > wm {
			continue
		}
		start := e - m.size
		if m.cumulate {
			start = (e - 1) - (((e-1)%m.size)+m.size)%m.size
		}
		out = append(out, fmt.Sprintf(`+I[%q, %d, %d, %d, %v, ts(%d,0), ts(%d,0), ts(%d,0)]`, kw[0], w.count, w.sum, w.max, w.dsum, start, e, e-1))
		delete(m.windows, kw)
	}
	return sorted(out)
}

func TestModel(t *testing.T) {
	for _, c := range []struct {
		name, window string
		m            model
	}{
		{"tumble", `"window":"TUMBLE","size_ms":10`, model{size: 10, step: 10}},
		{"hop", `"window":"HOP","size_ms":12,"slide_ms":4`, model{size: 12, step: 4}},
		{"hop-gcd", `"window":"HOP","size_ms":9,"slide_ms":3`, model{size: 9, step: 3}},
		{"cumulate", `"window":"CUMULATE","size_ms":12,"step_ms":3`, model{size: 12, step: 3, cumulate: true}},
	} {
		for seed := range uint64(6) {
			t.Run(fmt.Sprintf("%s/%d", c.name, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 7))
				m := c.m
				m.wm, m.windows = math.MinInt64, map[[2]any]*modelWindow{}
				r := start(t, specOf(c.window, ""))
				keys := []string{"a", "b", "c", "a key longer than seven bytes"}
				base, wm := int64(-20), int64(math.MinInt64)
				var batch [][]any
				for range 400 {
					switch x := rng.IntN(10); {
					case x < 7:
						k, ts, v := keys[rng.IntN(len(keys))], base+rng.Int64N(40)-15, rng.Int64N(100)-30
						batch = append(batch, row(k, ts, v))
						m.row(k, ts, v)
						base += rng.Int64N(3)
					case x < 9:
						if len(batch) > 0 {
							r.rows(batch...)
							batch = nil
						}
						wm = max(wm, base-rng.Int64N(10))
						want(t, sorted(r.wm(wm)), m.advance(wm)...)
					default:
						if len(batch) > 0 {
							r.rows(batch...)
							batch = nil
						}
						if seed%2 == 1 && wm != math.MinInt64 {
							r.move(wm)
						} else {
							r.flush()
						}
					}
				}
				if len(batch) > 0 {
					r.rows(batch...)
				}
				want(t, sorted(r.wm(math.MaxInt64)), m.advance(math.MaxInt64)...)
				if n := r.keys(); n != 0 {
					t.Fatalf("%d keys left at the end", n)
				}
			})
		}
	}
}
