package main

import (
	"bytes"
	"encoding/csv"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const testLib = "../../build/libferry.so"

// TestQuickSmoke runs the quick mode on one small cell in this process and checks the shape of
// the report: one row per path and the limit baseline, every figure positive. Nothing is
// asserted about speed.
func TestQuickSmoke(t *testing.T) {
	modes := []string{"go"}
	if _, err := os.Stat(testLib); err == nil {
		modes = append(modes, "cabi")
	} else {
		t.Logf("%s missing (./build.sh builds it): the C ABI path is not exercised", testLib)
	}
	csvPath := filepath.Join(t.TempDir(), "perf.csv")
	cfg, err := parseFlags(flag.NewFlagSet("perf", flag.ContinueOnError), []string{
		"-quick", "-inproc", "-keys", "64", "-batch", "64", "-time", "20ms", "-ring", "8192",
		"-mode", strings.Join(modes, ","), "-lib", testLib, "-csv", csvPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out, progress bytes.Buffer
	if err := run(cfg, &out, &progress); err != nil {
		t.Fatalf("run: %v\n%s", err, progress.String())
	}
	t.Logf("\n%s", out.String())

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
	for _, rec := range recs[1:] {
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
