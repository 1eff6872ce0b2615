package main

import (
	"bytes"
	"encoding/binary"
	"encoding/csv"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const testLib = "../../build/libferry.so"

// TestQuickSmoke runs the quick mode on one small cell in this process, for each value column,
// and checks the shape of the report: the workload in the header, one row per path and the
// limit baseline, every figure positive. Nothing is asserted about speed.
func TestQuickSmoke(t *testing.T) {
	for _, values := range []string{valuesBigint, valuesDecimal, valuesString} {
		t.Run(values, func(t *testing.T) { quickSmoke(t, values) })
	}
}

func quickSmoke(t *testing.T, values string) {
	modes := []string{"go"}
	if _, err := os.Stat(testLib); err == nil {
		modes = append(modes, "cabi")
	} else {
		t.Logf("%s missing (./build.sh builds it): the C ABI path is not exercised", testLib)
	}
	csvPath := filepath.Join(t.TempDir(), "perf.csv")
	cfg, err := parseFlags(flag.NewFlagSet("perf", flag.ContinueOnError), []string{
		"-quick", "-inproc", "-keys", "64", "-batch", "64", "-time", "20ms", "-ring", "8192",
		"-mode", strings.Join(modes, ","), "-lib", testLib, "-csv", csvPath, "-values", values,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out, progress bytes.Buffer
	if err := run(cfg, &out, &progress); err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	t.Logf("\n%s", out.String())
	if head, _, _ := strings.Cut(out.String(), "\n"); !strings.Contains(head, "(-values "+values+")") {
		t.Errorf("header %q does not name -values %s", head, values)
	}

	sections := tableRows(out.String())
	for _, mode := range modes {
		title := map[string]string{"go": "Go direct", "cabi": "C ABI"}[mode]
		rows := sections[title]
		if len(rows) != 1 {
			t.Fatalf("%s: %d table rows, want 1:\n%s", title, len(rows), out.String())
		}
		r := rows[0] // keys | batch | rows/s | ns/row | allocs/batch | peak RSS | of limit
		if len(r) != 7 || r[0] != "64" || r[1] != "64" {
			t.Fatalf("%s: row %q, want keys 64, batch 64 and 7 columns", title, r)
		}
		positive(t, title+" rows/s", r[2])
		positive(t, title+" ns/row", r[3])
		positive(t, title+" peak RSS", r[5])
		positive(t, title+" of limit", r[6])
		if mode == "go" {
			if a, err := strconv.ParseFloat(r[4], 64); err != nil || a < 0 {
				t.Errorf("%s allocs/batch %q", title, r[4])
			}
		} else if r[4] != "n/a" {
			t.Errorf("%s allocs/batch %q, want n/a", title, r[4])
		}
	}
	limit := sections["Limit baseline"]
	if len(limit) != 1 || limit[0][0] != "64" {
		t.Fatalf("limit baseline rows %q, want one for 64 keys", limit)
	}
	positive(t, "limit rows/s", limit[0][1])

	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+1+len(modes) { // header, limit, one cell per path
		t.Fatalf("CSV has %d records, want %d", len(recs), 2+len(modes))
	}
	if last := recs[0][len(recs[0])-1]; last != "values" {
		t.Fatalf("CSV's last column is %q, want values", last)
	}
	for _, rec := range recs[1:] {
		if rec[len(rec)-1] != values {
			t.Errorf("CSV %s: values = %q, want %q", rec[0], rec[len(rec)-1], values)
		}
		for _, col := range []int{3, 6, 7, 9} { // rows, rows_per_s, ns_per_row, peak_rss_bytes
			if v, err := strconv.ParseFloat(rec[col], 64); err != nil || v <= 0 {
				t.Errorf("CSV %s: column %s = %q, want positive", rec[0], recs[0][col], rec[col])
			}
		}
	}
}

// tableRows splits the markdown report into its tables' data rows, by the first words of each
// section title.
func tableRows(report string) map[string][][]string {
	out := map[string][][]string{}
	section := ""
	for _, line := range strings.Split(report, "\n") {
		if title, ok := strings.CutPrefix(line, "### "); ok {
			section = title
			for _, name := range []string{"Go direct", "C ABI", "Limit baseline"} {
				if strings.HasPrefix(title, name) {
					section = name
				}
			}
			continue
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| keys") {
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.TrimSpace(c))
		}
		out[section] = append(out[section], cells)
	}
	return out
}

// positive checks that a table figure such as "3.54 M", "82.1", "9 MiB" or "2.0 %" is > 0.
func positive(t *testing.T, what, s string) {
	t.Helper()
	f, _, _ := strings.Cut(s, " ")
	if v, err := strconv.ParseFloat(f, 64); err != nil || v <= 0 {
		t.Errorf("%s = %q, want a positive number", what, s)
	}
}

// TestWorkloadResults opens each workload (narrow and wide) on the Go path, checks the result
// types Flink's planner declares, folds a ring of fresh bids in one batch and checks the last
// output row (+I or +U of the last row's auction) against the same aggregates computed here.
func TestWorkloadResults(t *testing.T) {
	wantTypes := map[string][]string{
		valuesBigint:  {"BIGINT", "BIGINT", "BIGINT", "BIGINT"},
		valuesDecimal: {"BIGINT", "DECIMAL(38, 2)", "DECIMAL(18, 2)", "DECIMAL(38, 6)"},
		valuesString:  {"BIGINT", "VARCHAR", "VARCHAR", "BIGINT"},
	}
	for _, values := range []string{valuesBigint, valuesDecimal, valuesString} {
		for _, wide := range []bool{false, true} {
			w := workload{wide: wide, values: values}
			t.Run(fmt.Sprintf("%s/wide=%v", values, wide), func(t *testing.T) {
				const n = 5000
				ring := generate(genConfig{keys: 100, hotRatio: 2, hotKeys: 16, seed: 7}, n, w.keep())
				d, err := newGoDriver(w, ring)
				if err != nil {
					t.Fatal(err)
				}
				defer d.close()
				outFields := d.op.Output()
				var got []string
				for _, f := range outFields[1:] {
					got = append(got, strings.TrimSuffix(f.Type.String(), " NOT NULL"))
				}
				if !slices.Equal(got, wantTypes[values]) {
					t.Fatalf("result types %q, want %q", got, wantTypes[values])
				}
				if err := d.process(window(&d.view, ring.kinds, 0, n)); err != nil {
					t.Fatal(err)
				}
				r := d.out.Len - 1
				cols := d.out.Cols
				key := ring.auction[n-1]
				if a := int64(binary.LittleEndian.Uint64(cols[0].Data[8*r:])); a != key {
					t.Fatalf("last output row is auction %d, want %d", a, key)
				}
				var count, sum, top int64
				var first, last string
				for i := range n {
					if ring.auction[i] != key {
						continue
					}
					count++
					p := ring.price[i]
					sum, top = sum+p, max(top, p)
					if values == valuesString {
						ch := string(ring.channelData[ring.channelOffs[i]:ring.channelOffs[i+1]])
						if count == 1 || ch < first {
							first = ch
						}
						if count == 1 || ch > last {
							last = ch
						}
					}
				}
				at := func(c int) int64 { // BIGINT, or the low word of a DECIMAL that fits 64 bits
					width := cols[c].Type.Width()
					return int64(binary.LittleEndian.Uint64(cols[c].Data[width*r:]))
				}
				str := func(c int) string { return string(cols[c].Data[cols[c].Offs[r]:cols[c].Offs[r+1]]) }
				if c := at(1); c != count {
					t.Errorf("COUNT(*) = %d, want %d", c, count)
				}
				switch values {
				case valuesString:
					if str(2) != first || str(3) != last || at(4) != count {
						t.Errorf("MIN, MAX, COUNT(channel) = %q, %q, %d; want %q, %q, %d", str(2), str(3), at(4), first, last, count)
					}
				case valuesDecimal: // unscaled: SUM and MAX at scale 2, AVG at scale 6
					if at(2) != sum || at(3) != top || at(4) != sum*10_000/count && at(4) != sum*10_000/count+1 {
						t.Errorf("SUM, MAX, AVG = %d, %d, %d (unscaled); want %d, %d, %d", at(2), at(3), at(4), sum, top, sum*10_000/count)
					}
				default:
					if at(2) != sum || at(3) != top || at(4) != sum/count {
						t.Errorf("SUM, MAX, AVG = %d, %d, %d; want %d, %d, %d", at(2), at(3), at(4), sum, top, sum/count)
					}
				}
			})
		}
	}
}
