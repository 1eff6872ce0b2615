package session

import (
	"errors"
	"slices"
	"testing"

	"github.com/ferrystream/ferry/engine"
	"github.com/ferrystream/ferry/engine/enginetest"
)

const viewSpec = `{"kind":"group_aggregate","inputs":[{"fields":[{"name":"k","type":"BIGINT","nullable":false},{"name":"v","type":"BIGINT"}],"keys":[0]}],
	"max_parallelism":128,"params":{"aggs":[{"func":"COUNT"},{"func":"SUM","args":[1]}]}}`

// viewBatch is 1024 rows adding v to keys from, from+step, ...
func viewBatch(from, step, v int64) *engine.CArray {
	types := []engine.Type{{ID: engine.BigInt}, {ID: engine.BigInt, Nullable: true}}
	var rows [][]any
	for i := range int64(1024) {
		rows = append(rows, []any{from + i*step, v})
	}
	return enginetest.CArray(enginetest.Batch(types, rows, make([]engine.RowKind, len(rows)), enginetest.Options{}))
}

// viewChunks hands out every chunk of view id, key group by key group.
func viewChunks(s testSession, id int64) ([][][]byte, error) {
	all := make([][][]byte, 128)
	for kg := range 128 {
		for {
			var c []byte
			ok, err := s.SnapshotView(id, kg, &c)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			all[kg] = append(all[kg], c)
		}
	}
	return all, nil
}

// A view frozen between calls and handed out on another goroutine while Process keeps changing
// the state holds exactly the chunks a synchronous snapshot at the freeze holds.
func TestSnapshotViewWhileProcessing(t *testing.T) {
	s := open(t, viewSpec, &recorder{})
	for b := range int64(40) {
		if _, err := s.process(0, viewBatch(b*1024, 1, 1), 0); err != nil {
			t.Fatal(err)
		}
	}
	want := make([][][]byte, 128)
	for kg := range 128 {
		want[kg] = s.chunks(t, kg)
	}
	id, err := s.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		chunks [][][]byte
		err    error
	}
	done := make(chan result, 1)
	go func() {
		c, err := viewChunks(s, id)
		done <- result{c, err}
	}()
	var got result
	for i := int64(0); ; i++ {
		select {
		case got = <-done:
		default:
			// existing keys (every 40th) and new ones
			if _, err := s.process(0, viewBatch(i%40, 40, 5), 0); err != nil {
				t.Fatal(err)
			}
			if _, err := s.process(0, viewBatch(100_000+i*1024, 1, 1), 0); err != nil {
				t.Fatal(err)
			}
			continue
		}
		break
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	for kg := range 128 {
		if !slices.EqualFunc(got.chunks[kg], want[kg], func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Fatalf("key group %d: the view differs from the state at its freeze", kg)
		}
	}
	if now := s.chunks(t, 0); slices.EqualFunc(now, want[0], func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatal("the processing did not reach the state")
	}
	s.ReleaseView(id)
	if _, err := s.SnapshotView(id, 0, new([]byte)); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("a released view: %v", err)
	}
}

// Close releases open views; a view released before it is written fails.
func TestSnapshotViewReleased(t *testing.T) {
	s := open(t, viewSpec, &recorder{})
	if _, err := s.process(0, viewBatch(0, 1, 1), 0); err != nil {
		t.Fatal(err)
	}
	a, err := s.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	s.ReleaseView(a)
	s.ReleaseView(a)
	if _, err := s.SnapshotView(a, 0, new([]byte)); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("a released view: %v", err)
	}
	b, err := s.Freeze()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SnapshotView(b, 0, new([]byte)); !errors.Is(err, engine.ErrInvalid) {
		t.Fatalf("a view of a closed operator: %v", err)
	}
}
