//go:build ferrytest

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"

	"github.com/ferrystream/ferry/engine"
)

// TestCDataMalformedInput feeds malformed input batches to Ferry's importer and to arrow-go's
// cdata import and records what each does, for docs/dependencies.md. Each side of each case runs
// in a child process (the test binary re-executed), because some outcomes kill the process. After
// a successful import the child reads every value of every column, as a kernel would; every
// buffer ends at an inaccessible page, so a read past what a buffer holds faults instead of
// silently reading a neighbour's bytes.
//
// Outcomes: "error" (the import returned an error), "ok" (imported and read without complaint),
// "panic" (a Go panic, recovered; inside libferry.so a recovered panic poisons the library),
// "crash" (the process died: a fault or an abort). The expectations pin arrow-go v18.8.0's
// behaviour: when a new arrow-go version changes one, this test says so, and the section
// "Arrow C Data import and export" of docs/dependencies.md needs the new outcome.
func TestCDataMalformedInput(t *testing.T) {
	if os.Getenv(malformedChildEnv) != "" {
		t.Skip("inside a child process")
	}
	if testing.Short() {
		t.Skip("starts two processes per case")
	}
	for _, c := range malformedCases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			got := [2]string{runMalformedChild(t, c.name, "ferry"), runMalformedChild(t, c.name, "arrow-go")}
			for i, side := range []string{"Ferry", "arrow-go"} {
				want := []string{c.ferry, c.arrow}[i]
				if outcome := got[i][:strings.IndexAny(got[i]+" ", " :")]; outcome != want {
					t.Errorf("%s: %s, want %s", side, got[i], want)
				}
			}
			t.Logf("| %s | %s | %s |", c.name, got[0], got[1])
		})
	}
}

const malformedChildEnv = "FERRY_TEST_CDATA_MALFORMED"

// runMalformedChild runs one side of a case in a child process and returns its outcome with
// the detail: the error or panic message, or how the process died.
func runMalformedChild(t *testing.T, name, side string) string {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCDataMalformedChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), malformedChildEnv+"="+side+":"+name, "GOTRACEBACK=single")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	phase := "before import"
	for _, line := range strings.Split(stdout.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "outcome: "); ok {
			if err != nil {
				t.Fatalf("%s: child reported %q but failed: %v\n%s", side, rest, err, stderr.String())
			}
			return rest
		}
		if rest, ok := strings.CutPrefix(line, "phase: "); ok {
			phase = rest
		}
	}
	if err == nil {
		t.Fatalf("%s: child reported no outcome:\n%s\n%s", side, stdout.String(), stderr.String())
	}
	msg := stderr.String() + stdout.String()
	for _, sig := range []string{"SIGSEGV", "SIGBUS", "SIGABRT"} {
		if strings.Contains(msg, sig) {
			detail := sig
			if i := strings.Index(msg, "Assertion"); i >= 0 {
				line, _, _ := strings.Cut(msg[i:], "\n")
				detail += " (" + strings.TrimSpace(line) + ")"
			} else if i := strings.Index(msg, "unexpected fault address"); i >= 0 {
				detail += " (unexpected fault address)"
			}
			return "crash (" + phase + "): " + detail
		}
	}
	first, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	return "crash (" + phase + "): " + first
}

// malformedCases: a valid 8-row batch of the benchmark shape (k BIGINT NOT NULL, v BIGINT,
// s VARCHAR, d DECIMAL(18,2), RowKind), then one defect.
var malformedCases = []struct {
	name         string
	ferry, arrow string
	spoil        func(in *cdataBatch, g *guardArena)
}{
	{"root already released", "error", "crash", func(in *cdataBatch, g *guardArena) {
		view(in.root).Release = nil
	}},
	{"column already released", "error", "ok", func(in *cdataBatch, g *guardArena) {
		view(in.kids[1]).Release = nil
	}},
	{"column pointer NULL", "error", "error", func(in *cdataBatch, g *guardArena) {
		unsafe.Slice((**cArray)(view(in.root).Children), len(in.kids))[2] = nil
	}},
	{"root buffers pointer NULL", "error", "error", func(in *cdataBatch, g *guardArena) {
		view(in.root).Buffers = nil
	}},
	{"negative column offset", "error", "error", func(in *cdataBatch, g *guardArena) {
		view(in.kids[1]).Offset = -1
	}},
	{"VARCHAR with 2 buffers", "error", "error", func(in *cdataBatch, g *guardArena) {
		view(in.kids[2]).NBuffers = 2
	}},
	{"struct with one column too few", "error", "error", func(in *cdataBatch, g *guardArena) {
		view(in.root).NChildren--
	}},
	{"null count without validity buffer", "error", "error", func(in *cdataBatch, g *guardArena) {
		buffers(in.kids[1])[0] = nil
		view(in.kids[1]).NullCount = 2
	}},
	{"values buffer NULL", "error", "error", func(in *cdataBatch, g *guardArena) {
		buffers(in.kids[3])[1] = nil
	}},
	{"column shorter than the batch", "error", "panic", func(in *cdataBatch, g *guardArena) {
		view(in.kids[1]).Length = 5
		view(in.kids[1]).NullCount = -1
	}},
	{"column length 2^50", "error", "ok", func(in *cdataBatch, g *guardArena) {
		view(in.kids[1]).Length = 1 << 50
		view(in.kids[1]).NullCount = -1
	}},
	{"VARCHAR offsets not monotonic", "error", "panic", func(in *cdataBatch, g *guardArena) {
		in.offs[3] = in.offs[in.rows] + 100
	}},
	{"VARCHAR first offset negative", "error", "panic", func(in *cdataBatch, g *guardArena) {
		in.offs[0] = -4
	}},
	{"VARCHAR last offset negative", "error", "error", func(in *cdataBatch, g *guardArena) {
		in.offs[in.rows] = -1
	}},
	{"VARCHAR column longer than its buffers", "ok", "crash", func(in *cdataBatch, g *guardArena) {
		// The column claims 32 rows, its buffers hold the batch's 8: a reader that stays inside
		// the batch never notices.
		view(in.kids[2]).Length = int64(in.rows) + 24
		view(in.kids[2]).NullCount = -1
	}},
	{"VARCHAR data buffer shorter than the last offset", "crash", "crash", func(in *cdataBatch, g *guardArena) {
		in.offs[in.rows] += 64
	}},
	{"BIGINT values buffer shorter than the batch", "crash", "crash", func(in *cdataBatch, g *guardArena) {
		short := g.alloc(8 * (in.rows - 2))
		copy(unsafe.Slice((*byte)(short), 8*(in.rows-2)), unsafe.Slice((*byte)(buffers(in.kids[1])[1]), 8*(in.rows-2)))
		buffers(in.kids[1])[1] = short
	}},
	{"struct with a NULL row", "error", "ok", func(in *cdataBatch, g *guardArena) {
		valid := g.alloc(1)
		*(*byte)(valid) = 0xfe
		buffers(in.root)[0] = valid
		view(in.root).NullCount = 1
	}},
	{"NOT NULL column holding a NULL", "error", "ok", func(in *cdataBatch, g *guardArena) {
		valid := g.alloc(1)
		*(*byte)(valid) = 0x7f
		buffers(in.kids[0])[0] = valid
		view(in.kids[0]).NullCount = 1
	}},
	{"RowKind byte 9", "error", "ok", func(in *cdataBatch, g *guardArena) {
		*(*byte)(buffers(in.kids[4])[1]) = 9
	}},
}

// TestCDataMalformedChild is the child side of TestCDataMalformedInput; it skips in a normal run.
func TestCDataMalformedChild(t *testing.T) {
	side, name, ok := strings.Cut(os.Getenv(malformedChildEnv), ":")
	if !ok {
		t.Skip("runs only as a child process of TestCDataMalformedInput")
	}
	var g guardArena // never freed: the process ends after this case
	in := newCDataBatch(8, 3, g.alloc)
	found := false
	for _, c := range malformedCases {
		if c.name == name {
			c.spoil(in, &g)
			found = true
		}
	}
	if !found {
		t.Fatalf("no case %q", name)
	}
	phase := "import"
	fmt.Println("phase: import")
	reading := func() {
		phase = "reading"
		fmt.Println("phase: reading")
	}
	outcome := func() (res string) {
		defer func() {
			if p := recover(); p != nil {
				res = fmt.Sprintf("panic (%s): %v", phase, p)
			}
		}()
		switch side {
		case "ferry":
			im := engine.Importer{Types: cdataTypes, Names: cdataNames}
			var bt engine.Batch
			if err := im.Import(view(in.root), &bt); err != nil {
				return "error: " + err.Error()
			}
			reading()
			readFerry(&bt)
		case "arrow-go":
			rec, err := cdata.ImportCRecordBatchWithSchema((*cdata.CArrowArray)(unsafe.Pointer(in.root)), cdataSchema)
			if err != nil {
				return "error: " + err.Error()
			}
			reading()
			readArrow(rec)
		default:
			t.Fatalf("no side %q", side)
		}
		return "ok"
	}()
	fmt.Printf("outcome: %s\n", outcome)
}

// readFerry reads every value of a batch, as a kernel does, NULL slots included.
func readFerry(b *engine.Batch) {
	n := b.Len
	for i := range n {
		cdataSink += int(engine.Values[int64](&b.Cols[0], n)[i] + engine.Values[int64](&b.Cols[1], n)[i])
		cdataSink += sumBytes(b.Cols[2].Bytes(i)) + sumBytes(b.Cols[3].Fixed(i)) + int(b.Kinds[i])
		if b.Cols[1].IsNull(i) || b.Cols[2].IsNull(i) || b.Cols[3].IsNull(i) {
			cdataSink++
		}
	}
}

// readArrow reads every value of a record through arrow-go's typed arrays, NULL slots included.
func readArrow(rec arrow.RecordBatch) {
	k := rec.Column(0).(*array.Int64)
	v := rec.Column(1).(*array.Int64)
	s := rec.Column(2).(*array.String)
	d := rec.Column(3).(*array.Decimal128)
	kinds := rec.Column(4).(*array.Int8)
	for i := range int(rec.NumRows()) {
		cdataSink += int(k.Value(i)+v.Value(i)) + sumBytes([]byte(s.Value(i))) + int(d.Value(i).LowBits()) + int(kinds.Value(i))
		if v.IsNull(i) || s.IsNull(i) || d.IsNull(i) {
			cdataSink++
		}
	}
	rec.Release()
}

func sumBytes(b []byte) int {
	n := 0
	for _, c := range b {
		n += int(c)
	}
	return n
}
