// Command perf is Ferry's standalone performance harness for the single-phase group aggregate.
//
// It generates Nexmark-shaped bids (seeded, deterministic; a share of the bids goes to a few hot
// auctions, the rest uniformly over the key cardinality) and measures
//
//	SELECT auction, COUNT(*), SUM(price), MAX(price), AVG(price) FROM bid GROUP BY auction
//
// (insert-only, generate_update_before, max parallelism 128; price BIGINT, or DECIMAL(18, 2)
// with -values decimal; -values string aggregates COUNT(*), MIN, MAX, COUNT(channel) over the
// VARCHAR channel instead) at steady state (every key holds state before timing, so each row
// emits -U and +U) through two paths: Go directly (agg.GroupAggregate.Process on engine.Batch
// views) and the C ABI (build/libferry.so loaded with dlopen, ArrowArray structs in C memory). Each cardinality also gets a limit baseline: the same
// rows folded into dense arrays by a precomputed group id. Every cell is reported as a fraction
// of that limit.
//
// Each cardinality runs in child processes of its own (one for the Go path and the limit, one
// for the C ABI path), so memory figures do not mix. Progress goes to stderr; the markdown
// tables to stdout and a CSV file (-csv). Run it with ./build.sh perf [flags]; -quick is a
// smoke run, -h lists the flags.
package main

import (
	"bufio"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is the run's configuration (the flags).
type config struct {
	keys       []int
	batches    []int
	modes      []string // "go", "cabi"
	minTime    time.Duration
	maxRows    int64
	reps       int
	ring       int
	hotRatio   int
	hotKeys    int
	seed       uint64
	wide       bool
	values     string // value column: "bigint", "decimal" or "string" (workload.values)
	lib        string
	csv        string
	inproc     bool
	cpuprofile string
	child      string // internal: run one group ("limit,go:1000000") and report to stdout
}

// cell is one measurement.
type cell struct {
	Mode     string  `json:"mode"` // "go", "cabi" or "limit"
	Keys     int     `json:"keys"`
	Batch    int     `json:"batch"`
	Rows     int64   `json:"rows"`
	Batches  int64   `json:"batches"`
	Seconds  float64 `json:"seconds"`
	Allocs   float64 `json:"allocs"`    // Go allocations per batch; -1 when not visible
	PeakRSS  int64   `json:"peak_rss"`  // bytes; -1 when unknown
	RSSScope string  `json:"rss_scope"` // "cell" (peak reset before the cell) or "process"
	// Rows, Batches and Seconds are those of the median repetition; RepMin and RepMax are the
	// slowest and fastest repetitions' rows/s.
	RepMin float64 `json:"rep_min"`
	RepMax float64 `json:"rep_max"`
	// CPUShare is the measuring thread's CPU time over wall time in the median repetition: well
	// below 1 means the thread was descheduled (other load on the machine) and the cell is noise.
	CPUShare float64 `json:"cpu_share"`
	// VolCS and InvolCS are the measuring thread's voluntary (it blocked) and involuntary (it was
	// preempted) context switches in the median repetition.
	VolCS   int64   `json:"vol_cs"`
	InvolCS int64   `json:"invol_cs"`
	Limit   float64 `json:"-"` // rows/s as a fraction of the limit baseline
}

func (c cell) rowsPerSec() float64 { return float64(c.Rows) / c.Seconds }
func (c cell) nsPerRow() float64   { return c.Seconds * 1e9 / float64(c.Rows) }

const resultPrefix = "PERFRESULT "

const prepopChunk = 4096 // rows per batch when keys are created before timing

func main() {
	cfg, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(2)
	}
	if cfg.child != "" {
		err = runChild(cfg)
	} else {
		err = run(cfg, os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		os.Exit(1)
	}
}

func parseFlags(fs *flag.FlagSet, args []string) (*config, error) {
	keys := fs.String("keys", "64,10K,1M,10M", "key cardinalities, comma-separated (K = 1e3, M = 1e6)")
	batches := fs.String("batch", "1,64,1024,4096", "batch sizes in rows, comma-separated")
	modes := fs.String("mode", "go,cabi", "paths to measure: go (Go directly), cabi (libferry.so through the C ABI)")
	minTime := fs.Duration("time", time.Second, "a cell ends after this much measured time ...")
	maxRows := fs.Int64("max-rows", 50_000_000, "... or after this many rows, whichever comes first (not the limit baseline)")
	reps := fs.Int("reps", 3, "repetitions per cell, each a share of -time and -max-rows; the median is reported")
	ring := fs.Int("ring", 4<<20, "generated rows per cardinality, cycled through while measuring")
	hotRatio := fs.Int("hot-ratio", 2, "Nexmark's hotAuctionRatio: P(bid is for a hot auction) = 1 - 1/ratio; 1 = uniform keys")
	hotKeys := fs.Int("hot-keys", 16, "number of hot auctions")
	seed := fs.Uint64("seed", 42, "generator seed")
	wide := fs.Bool("wide", false, "feed all five bid columns (auction, bidder, price, channel, dateTime) instead of (auction, value)")
	values := fs.String("values", valuesBigint, "value column: bigint (COUNT(*), SUM, MAX, AVG of price BIGINT), decimal (the same over price DECIMAL(18, 2)), string (COUNT(*), MIN, MAX, COUNT of channel VARCHAR)")
	lib := fs.String("lib", "build/libferry.so", "libferry.so for the cabi path")
	csvPath := fs.String("csv", "build/perf.csv", "CSV output file (empty: none)")
	inproc := fs.Bool("inproc", false, "run every cardinality in this process (peak RSS then includes earlier cells' leftovers)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of each measured go/limit cell to PREFIX-<mode>-k<keys>-b<batch>.pprof")
	quick := fs.Bool("quick", false, "smoke run: keys 64,10K, batches 1,1024, 50ms per cell, 64K-row ring (explicit flags win)")
	child := fs.String("child", "", "internal: run one group of cells in this process")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quickDefaults := map[string]string{"keys": "64,10K", "batch": "1,1024", "time": "50ms", "ring": "65536", "max-rows": "1000000"}
		for name, v := range quickDefaults {
			if !set[name] {
				if err := fs.Set(name, v); err != nil {
					return nil, err
				}
			}
		}
	}
	cfg := &config{
		minTime: *minTime, maxRows: *maxRows, reps: *reps, ring: *ring, hotRatio: *hotRatio, hotKeys: *hotKeys,
		seed: *seed, wide: *wide, values: *values, lib: *lib, csv: *csvPath, inproc: *inproc, cpuprofile: *cpuprofile,
		child: *child,
	}
	if err := checkValues(cfg.values); err != nil {
		return nil, err
	}
	var err error
	if cfg.keys, err = parseCounts(*keys); err != nil {
		return nil, fmt.Errorf("-keys: %w", err)
	}
	if cfg.batches, err = parseCounts(*batches); err != nil {
		return nil, fmt.Errorf("-batch: %w", err)
	}
	for _, m := range strings.Split(*modes, ",") {
		if m = strings.TrimSpace(m); m != "go" && m != "cabi" {
			return nil, fmt.Errorf("-mode: unknown mode %q (go, cabi)", m)
		}
		cfg.modes = append(cfg.modes, strings.TrimSpace(m))
	}
	switch {
	case cfg.ring < slices.Max(cfg.batches) || cfg.ring < prepopChunk:
		return nil, fmt.Errorf("-ring %d is smaller than a batch", cfg.ring)
	case cfg.hotRatio < 1 || cfg.hotKeys < 1:
		return nil, fmt.Errorf("-hot-ratio and -hot-keys must be at least 1")
	case cfg.minTime <= 0 || cfg.maxRows <= 0 || cfg.reps < 1:
		return nil, fmt.Errorf("-time, -max-rows and -reps must be positive")
	case slices.Max(cfg.keys) > 1<<31-1:
		return nil, fmt.Errorf("-keys: at most 2^31-1 keys")
	}
	return cfg, nil
}

// parseCounts parses "64,10K,1M": positive integers with optional K (1e3) or M (1e6) suffixes.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.ToUpper(strings.TrimSpace(f))
		mul := 1
		switch {
		case strings.HasSuffix(f, "K"):
			mul, f = 1_000, strings.TrimSuffix(f, "K")
		case strings.HasSuffix(f, "M"):
			mul, f = 1_000_000, strings.TrimSuffix(f, "M")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n*mul)
	}
	return out, nil
}

func (c *config) workload() workload { return workload{wide: c.wide, values: c.values} }

// group is the unit of work of one process: one cardinality, one ring of generated bids, one
// or more modes in order.
type group struct {
	keys  int
	modes []string
}

func (g group) String() string { return strings.Join(g.modes, ",") + ":" + strconv.Itoa(g.keys) }

func parseGroup(s string) (group, error) {
	m, k, ok := strings.Cut(s, ":")
	keys, err := strconv.Atoi(k)
	if !ok || err != nil {
		return group{}, fmt.Errorf("-child %q: want modes:keys", s)
	}
	return group{keys: keys, modes: strings.Split(m, ",")}, nil
}

// plan lists the groups: per cardinality the limit baseline and the Go path in one process, the
// C ABI path in another.
func (c *config) plan() []group {
	var gs []group
	for _, k := range c.keys {
		first := group{keys: k, modes: []string{"limit"}}
		if slices.Contains(c.modes, "go") {
			first.modes = append(first.modes, "go")
		}
		gs = append(gs, first)
		if slices.Contains(c.modes, "cabi") {
			gs = append(gs, group{keys: k, modes: []string{"cabi"}})
		}
	}
	return gs
}

// childArgs are the flags a child process gets for group g.
func (c *config) childArgs(g group) []string {
	batches := make([]string, len(c.batches))
	for i, b := range c.batches {
		batches[i] = strconv.Itoa(b)
	}
	return []string{
		"-child", g.String(), "-batch", strings.Join(batches, ","),
		"-time", c.minTime.String(), "-max-rows", strconv.FormatInt(c.maxRows, 10), "-reps", strconv.Itoa(c.reps),
		"-ring", strconv.Itoa(c.ring), "-hot-ratio", strconv.Itoa(c.hotRatio),
		"-hot-keys", strconv.Itoa(c.hotKeys), "-seed", strconv.FormatUint(c.seed, 10),
		"-wide=" + strconv.FormatBool(c.wide), "-values", c.values, "-lib", c.lib, "-cpuprofile", c.cpuprofile,
		"-keys", strconv.Itoa(g.keys),
	}
}

// run measures every group, in child processes unless cfg.inproc, then prints the tables to
// stdout and writes the CSV file. Progress goes to progress.
func run(cfg *config, stdout, progress io.Writer) error {
	start := time.Now()
	var cells []cell
	var failed []error
	for _, g := range cfg.plan() {
		var err error
		if cfg.inproc {
			err = runGroup(cfg, g, func(c cell) { cells = append(cells, c) }, progress)
		} else {
			err = runChildProcess(cfg, g, func(c cell) { cells = append(cells, c) }, progress)
		}
		if err != nil {
			fmt.Fprintf(progress, "perf: %s failed: %v\n", g, err)
			failed = append(failed, fmt.Errorf("%s: %w", g, err))
		}
	}
	limits := map[int]float64{}
	for _, c := range cells {
		if c.Mode == "limit" {
			limits[c.Keys] = c.rowsPerSec()
		}
	}
	for i := range cells {
		if l := limits[cells[i].Keys]; l > 0 {
			cells[i].Limit = cells[i].rowsPerSec() / l
		}
	}
	writeTables(stdout, cfg, cells)
	fmt.Fprintf(progress, "perf: done in %.1f s\n", time.Since(start).Seconds())
	if cfg.csv != "" {
		if err := writeCSV(cfg, cells); err != nil {
			failed = append(failed, err)
		} else {
			fmt.Fprintf(progress, "perf: wrote %s\n", cfg.csv)
		}
	}
	return errors.Join(failed...)
}

// runChildProcess runs group g in a child process of this executable and collects its cells.
func runChildProcess(cfg *config, g group, emit func(cell), progress io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, cfg.childArgs(g)...)
	cmd.Stderr = progress
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var parseErr error
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), resultPrefix)
		if !ok {
			fmt.Fprintln(progress, sc.Text())
			continue
		}
		var c cell
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			parseErr = errors.Join(parseErr, fmt.Errorf("child result %q: %w", line, err))
			continue
		}
		emit(c)
	}
	return errors.Join(parseErr, sc.Err(), cmd.Wait())
}

// runChild is the child process: one group, each cell as a JSON line on stdout.
func runChild(cfg *config) error {
	g, err := parseGroup(cfg.child)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	var encErr error
	err = runGroup(cfg, g, func(c cell) {
		fmt.Print(resultPrefix)
		if err := enc.Encode(c); err != nil {
			encErr = err
		}
	}, os.Stderr)
	return errors.Join(err, encErr)
}

// runGroup generates the bids of one cardinality once and measures each mode of g on them.
func runGroup(cfg *config, g group, emit func(cell), progress io.Writer) error {
	gen := genConfig{keys: g.keys, hotRatio: cfg.hotRatio, hotKeys: cfg.hotKeys, seed: cfg.seed}
	w := cfg.workload()
	t0 := time.Now()
	ring := generate(gen, cfg.ring, w.keep())
	fmt.Fprintf(progress, "perf: keys=%s: generated %d bids in %.2f s\n", countName(g.keys), ring.n, time.Since(t0).Seconds())
	for i, mode := range g.modes {
		var err error
		switch mode {
		case "limit":
			l := newLimit(g.keys, w, ring)
			var c cell
			if c, err = measure(cfg, l, "limit", g.keys, prepopChunk, progress); err == nil {
				if l.total() < c.Rows {
					err = fmt.Errorf("limit baseline folded %d rows, measured %d", l.total(), c.Rows)
				}
				c.Batch = 0
				emit(c)
			}
		case "go", "cabi":
			err = runDriver(cfg, w, gen, g.keys, mode, ring, i < len(g.modes)-1, emit, progress)
		default:
			err = fmt.Errorf("unknown mode %q", mode)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		runtime.GC()
		debug.FreeOSMemory()
	}
	return nil
}

// runDriver opens the operator of one path, creates every key, then measures each batch size.
// Unless keepRing, a C ABI driver frees the Go copy of the ring once it is in C memory.
func runDriver(cfg *config, w workload, gen genConfig, keys int, mode string, ring *bids, keepRing bool, emit func(cell), progress io.Writer) error {
	var d driver
	var cd *cDriver
	if mode == "go" {
		gd, err := newGoDriver(w, ring)
		if err != nil {
			return err
		}
		d = gd
	} else {
		lib, err := loadLib(cfg.lib)
		if err != nil {
			return err
		}
		if cd, err = newCDriver(lib, w, ring); err != nil {
			return err
		}
		d = cd
		if !keepRing {
			*ring = bids{n: ring.n}
			runtime.GC()
			debug.FreeOSMemory()
		}
	}
	defer d.close()
	t0 := time.Now()
	if err := d.prepopulate(keys, generate(gen, prepopChunk, w.keep())); err != nil {
		return err
	}
	if n := d.groups(); n >= 0 && n != keys {
		return fmt.Errorf("after prepopulation %d keys hold state, want %d", n, keys)
	}
	rss, _ := readRSS("VmHWM")
	fmt.Fprintf(progress, "perf: %s keys=%s: created every key in %.2f s (peak RSS so far %s)\n",
		mode, countName(keys), time.Since(t0).Seconds(), bytesName(rss))
	for _, size := range cfg.batches {
		c, err := measure(cfg, d, mode, keys, size, progress)
		if err != nil {
			return fmt.Errorf("batch=%d: %w", size, err)
		}
		if cd != nil {
			c.Allocs = -1 // libferry.so's own runtime: its allocations are not visible here
			if n := cd.outstanding(); n != 0 {
				return fmt.Errorf("batch=%d: %d output bytes not released", size, n)
			}
		}
		emit(c)
	}
	if n := d.groups(); n >= 0 && n != keys {
		return fmt.Errorf("after measuring %d keys hold state, want %d", n, keys)
	}
	return nil
}

// runner is what measure times: count batches of size rows from *pos on.
type runner interface {
	run(size, count int, pos *int) error
}

// minCPUShare is the share of a core the measuring thread must get for a cell to count.
const minCPUShare = 0.9

// measure measures one cell, again (at most twice more) when the measuring thread was
// descheduled during the median repetition: on a shared machine other load only slows a cell
// down, so such a cell says little about Ferry.
func measure(cfg *config, r runner, mode string, keys, size int, progress io.Writer) (cell, error) {
	for attempt := 1; ; attempt++ {
		c, err := measureOnce(cfg, r, mode, keys, size, progress)
		if err != nil || c.CPUShare >= minCPUShare || attempt == 3 {
			return c, err
		}
		fmt.Fprintf(progress, "perf: %s keys=%s batch=%d: descheduled (cpu share %.2f), measuring again\n",
			mode, countName(keys), size, c.CPUShare)
	}
}

// measureOnce times one cell: a short warm-up, then cfg.reps repetitions, each running batches
// until its share of cfg.minTime has passed or its share of cfg.maxRows rows was processed; the
// median repetition is reported. The clock is read every ~4096 rows.
func measureOnce(cfg *config, r runner, mode string, keys, size int, progress io.Writer) (cell, error) {
	c := cell{Mode: mode, Keys: keys, Batch: size, Allocs: -1, PeakRSS: -1, RSSScope: "process"}
	chunk := max(1, prepopChunk/size)
	pos := 0
	warm := time.Now().Add(min(cfg.minTime/5, 200*time.Millisecond))
	for time.Now().Before(warm) {
		if err := r.run(size, chunk, &pos); err != nil {
			return c, err
		}
	}
	runtime.GC()
	if resetPeakRSS() {
		c.RSSScope = "cell"
	}
	var prof *os.File
	if cfg.cpuprofile != "" && mode != "cabi" {
		var err error
		name := fmt.Sprintf("%s-%s-k%d-b%d.pprof", cfg.cpuprofile, mode, keys, size)
		if prof, err = os.Create(name); err != nil {
			return c, err
		}
		defer prof.Close()
	}
	type rep struct {
		rows, batches int64
		seconds       float64
		use           threadUse
	}
	// Every batch runs on this thread (the C ABI path too: the library's exported functions run
	// on the calling thread), so its CPU time tells whether it had the core to itself.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	reps := make([]rep, cfg.reps)
	repTime, repRows := cfg.minTime/time.Duration(cfg.reps), max(1, cfg.maxRows/int64(cfg.reps))
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if prof != nil {
		if err := pprof.StartCPUProfile(prof); err != nil {
			return c, err
		}
	}
	for i := range reps {
		rp := &reps[i]
		use0 := threadUsage()
		start := time.Now()
		for {
			if err := r.run(size, chunk, &pos); err != nil {
				if prof != nil {
					pprof.StopCPUProfile()
				}
				return c, err
			}
			rp.batches += int64(chunk)
			rp.rows += int64(chunk * size)
			// The row cap keeps fast cells short; the limit baseline, every cell's
			// denominator, always runs the full time.
			if el := time.Since(start); el >= repTime || (rp.rows >= repRows && mode != "limit") {
				rp.seconds = el.Seconds()
				rp.use = threadUsage().minus(use0)
				break
			}
		}
	}
	if prof != nil {
		pprof.StopCPUProfile()
	}
	runtime.ReadMemStats(&m1)
	var batches int64
	for _, rp := range reps {
		batches += rp.batches
	}
	c.Allocs = float64(m1.Mallocs-m0.Mallocs) / float64(batches)
	rate := func(rp rep) float64 { return float64(rp.rows) / rp.seconds }
	slices.SortFunc(reps, func(a, b rep) int { return cmp.Compare(rate(a), rate(b)) })
	med := reps[len(reps)/2]
	c.Rows, c.Batches, c.Seconds = med.rows, med.batches, med.seconds
	c.RepMin, c.RepMax = rate(reps[0]), rate(reps[len(reps)-1])
	c.CPUShare = med.use.cpu / med.seconds
	c.VolCS, c.InvolCS = med.use.vol, med.use.invol
	if rss, ok := readRSS("VmHWM"); ok {
		c.PeakRSS = rss
	}
	fmt.Fprintf(progress, "perf: %-5s keys=%-4s batch=%-4d %9s rows/s %8.1f ns/row (median of %d: %s..%s; cpu share %.2f, cs %d/%d)\n",
		mode, countName(keys), size, rateName(c.rowsPerSec()), c.nsPerRow(), cfg.reps, rateName(c.RepMin), rateName(c.RepMax),
		c.CPUShare, c.VolCS, c.InvolCS)
	return c, nil
}

// threadUse is the calling thread's resource use: user plus system CPU seconds, voluntary and
// involuntary context switches.
type threadUse struct {
	cpu        float64
	vol, invol int64
}

func threadUsage() threadUse {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return threadUse{}
	}
	return threadUse{float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9, ru.Nvcsw, ru.Nivcsw}
}

func (u threadUse) minus(v threadUse) threadUse {
	return threadUse{u.cpu - v.cpu, u.vol - v.vol, u.invol - v.invol}
}

const rusageThread = 1 // RUSAGE_THREAD (Linux)

// resetPeakRSS resets the process's peak RSS (VmHWM) to its current RSS (Linux >= 4.0).
func resetPeakRSS() bool {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// readRSS reads a field of /proc/self/status ("VmHWM", "VmRSS") in bytes.
func readRSS(field string) (int64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return -1, false
			}
			return kb << 10, true
		}
	}
	return -1, false
}

// writeTables prints one markdown table per path, and the limit baseline.
func writeTables(w io.Writer, cfg *config, cells []cell) {
	wl := cfg.workload()
	var names []string
	for _, f := range wl.fields() {
		names = append(names, f.Name)
	}
	fmt.Fprintf(w, "GROUP BY auction: %s (-values %s), insert-only, -U/+U per row; input %s; "+
		"hot-ratio %d (P(hot) = %.0f %%) over %d hot auctions; ring %d rows; seed %d; GOMAXPROCS %d; %s\n",
		wl.query(), cfg.values, "("+strings.Join(names, ", ")+")", cfg.hotRatio, 100*(1-1/float64(cfg.hotRatio)), cfg.hotKeys, cfg.ring, cfg.seed, runtime.GOMAXPROCS(0), runtime.Version())
	titles := []struct{ mode, title string }{
		{"go", "Go direct (agg.GroupAggregate.Process, engine.Batch views, reused output slab)"},
		{"cabi", "C ABI (libferry.so via dlopen: ferry_operator_process + output release; allocs not visible: the library's own Go runtime)"},
	}
	for _, t := range titles {
		if !slices.ContainsFunc(cells, func(c cell) bool { return c.Mode == t.mode }) {
			continue
		}
		fmt.Fprintf(w, "\n### %s\n\n", t.title)
		fmt.Fprintln(w, "| keys | batch | rows/s | ns/row | allocs/batch | peak RSS | of limit |")
		fmt.Fprintln(w, "|---:|---:|---:|---:|---:|---:|---:|")
		for _, c := range cells {
			if c.Mode != t.mode {
				continue
			}
			fmt.Fprintf(w, "| %s | %d | %s | %.1f | %s | %s | %s |\n", countName(c.Keys), c.Batch,
				rateName(c.rowsPerSec()), c.nsPerRow(), allocsName(c.Allocs), bytesName(c.PeakRSS), fracName(c.Limit))
		}
	}
	fmt.Fprintf(w, "\n### Limit baseline (dense %d-byte slots indexed by a precomputed group id; no hashing, key encoding or changelog)\n\n",
		limitSlotBytes(cfg.values))
	fmt.Fprintln(w, "| keys | rows/s | ns/row | peak RSS |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|")
	for _, c := range cells {
		if c.Mode == "limit" {
			fmt.Fprintf(w, "| %s | %s | %.2f | %s |\n", countName(c.Keys), rateName(c.rowsPerSec()), c.nsPerRow(), bytesName(c.PeakRSS))
		}
	}
	scope := "per cell (VmHWM reset before each cell; each process holds one path and one cardinality)"
	if cfg.inproc {
		scope = "per cell (VmHWM reset before each cell); -inproc: one process, earlier cells' memory may still be mapped"
	}
	if slices.ContainsFunc(cells, func(c cell) bool { return c.RSSScope != "cell" }) {
		scope = "process-wide VmHWM (resetting it through /proc/self/clear_refs failed)"
	}
	fmt.Fprintf(w, "\nPeak RSS: %s.\n", scope)
	var noisy []string
	for _, c := range cells {
		if c.CPUShare > 0 && c.CPUShare < minCPUShare {
			noisy = append(noisy, fmt.Sprintf("%s %s/%d (%.2f)", c.Mode, countName(c.Keys), c.Batch, c.CPUShare))
		}
	}
	if len(noisy) > 0 {
		fmt.Fprintf(w, "Descheduled in three attempts (measuring thread got < 90 %% of a core; other load): %s.\n", strings.Join(noisy, ", "))
	}
}

func writeCSV(cfg *config, cells []cell) error {
	if err := os.MkdirAll(filepath.Dir(cfg.csv), 0o755); err != nil {
		return err
	}
	f, err := os.Create(cfg.csv)
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	cw.Write([]string{"mode", "keys", "batch", "rows", "batches", "seconds", "rows_per_s", "ns_per_row",
		"allocs_per_batch", "peak_rss_bytes", "rss_scope", "limit_fraction", "reps", "rep_min_rows_per_s", "rep_max_rows_per_s", "cpu_share", "voluntary_cs", "involuntary_cs",
		"hot_ratio", "hot_keys", "wide", "ring", "seed", "values"})
	for _, c := range cells {
		allocs := ""
		if c.Allocs >= 0 {
			allocs = strconv.FormatFloat(c.Allocs, 'f', 3, 64)
		}
		frac := ""
		if c.Mode != "limit" && c.Limit > 0 {
			frac = strconv.FormatFloat(c.Limit, 'f', 4, 64)
		}
		cw.Write([]string{c.Mode, strconv.Itoa(c.Keys), strconv.Itoa(c.Batch), strconv.FormatInt(c.Rows, 10),
			strconv.FormatInt(c.Batches, 10), strconv.FormatFloat(c.Seconds, 'f', 4, 64),
			strconv.FormatFloat(c.rowsPerSec(), 'f', 0, 64), strconv.FormatFloat(c.nsPerRow(), 'f', 2, 64),
			allocs, strconv.FormatInt(c.PeakRSS, 10), c.RSSScope, frac, strconv.Itoa(cfg.reps),
			strconv.FormatFloat(c.RepMin, 'f', 0, 64), strconv.FormatFloat(c.RepMax, 'f', 0, 64),
			strconv.FormatFloat(c.CPUShare, 'f', 3, 64), strconv.FormatInt(c.VolCS, 10), strconv.FormatInt(c.InvolCS, 10),
			strconv.Itoa(cfg.hotRatio),
			strconv.Itoa(cfg.hotKeys), strconv.FormatBool(cfg.wide), strconv.Itoa(cfg.ring), strconv.FormatUint(cfg.seed, 10), cfg.values})
	}
	cw.Flush()
	return errors.Join(cw.Error(), f.Close())
}

func countName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1_000 && n%1_000 == 0:
		return strconv.Itoa(n/1_000) + "K"
	}
	return strconv.Itoa(n)
}

func rateName(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.2f M", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.1f K", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

func bytesName(b int64) string {
	if b < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%d MiB", (b+1<<19)>>20)
}

func allocsName(a float64) string {
	if a < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", a)
}

func fracName(f float64) string {
	if f <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f %%", 100*f)
}
