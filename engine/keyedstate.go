package engine

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"
)

// PerKey is state an operator keeps for every key of a KeyedState, in flat slices indexed by key
// id (an aggregate's accumulators, a record counter, a join's buffered rows). The KeyedState
// grows, resets, saves and loads every registered PerKey together with the key itself.
type PerKey interface {
	// Grow makes room for key ids below n; new ids are in the initial state.
	Grow(n int)
	// Reset returns key id to the initial state; it runs before a removed key's id is reused.
	Reset(id int32)
	// Save appends the state of key id to dst. Load reads it back into key id, which is in the
	// initial state, and returns the rest of src; it returns an error wrapping ErrData, never
	// panics, on any payload (the snapshot checksum does not protect against every bug).
	Save(dst []byte, id int32) []byte
	Load(src []byte, id int32) ([]byte, error)
	// Bytes estimates the memory the state owns.
	Bytes() int64
}

// EntryState is PerKey state that also holds entries of its own per key (Flink's MapState
// behind a MapView), which under idle-state TTL expire one by one, each at its own last write,
// rather than with the key's value state (the KeyedState's last write). The KeyedState keeps a
// key whose value state expired while it holds entries that did not.
type EntryState interface {
	PerKey
	// ResetValue returns the value state of key id, everything but its entries, to the initial
	// state; its entries stay as they are.
	ResetValue(id int32)
	// LiveEntries reports whether key id holds an entry not expired at nowMs.
	LiveEntries(id int32, nowMs int64) bool
	// SweepEntries deletes the entries expired at nowMs among at most budget of them,
	// continuing where the previous call stopped (Sweeper).
	SweepEntries(nowMs int64, budget int)
}

// StateConfig is what an operator tells NewKeyedState about its state.
type StateConfig struct {
	// KeySize is the size of every encoded key when it is fixed (KeyEncoder.FixedSize), else 0.
	KeySize int
	// TTL is the idle-state retention; zero disables it.
	TTL TTL
	// EntriesOnly: the keys have no value state, only the entries of EntryStates; a key lives
	// while it holds entries, and with TTL no last write is kept per key (Flink's incremental
	// aggregate, whose state is its DISTINCT maps).
	EntriesOnly bool
	// Timers gives the state its timer service (KeyedState.Timers); a key's timers are part of
	// its state.
	Timers bool
	// Layout is everything of the kind's parameters that shapes the state payload, marshalled
	// into the fingerprint (Spec.Fingerprint): restoring a snapshot of another layout fails.
	Layout any
	// Version numbers the form of the kind's payload, from 1 (0 counts as 1). A kind that changes
	// the form takes the next number, which changes the fingerprint, and describes the form
	// before in Earlier.
	Version int
	// Earlier are forms the kind's state had before Version: restore refuses a snapshot of one
	// naming it (EarlierLayouts), rather than as one of another spec.
	Earlier []EarlierLayout
}

// EarlierLayout is a form a kind's state had before its current one: the StateConfig fields it
// was fingerprinted with then (the others are the current configuration's), and the way out for
// a snapshot of it.
type EarlierLayout struct {
	Version int
	Timers  bool
	Layout  any
	Advice  string // what to do with such a snapshot, ending the refusal
}

// Superseded is an earlier form of a state (StateConfig.Earlier): the fingerprint of its snapshots
// and the message that refuses one.
type Superseded struct {
	Fingerprint uint64
	Refusal     string
}

// KeyedState is the keyed state of one operator instance, shared by every stateful kind: the key
// table (keys encoded as Flink's BinaryRowData, partitioned by key group), the PerKey states the
// operator registers, idle-state TTL per key (Flink's OnCreateAndWrite / NeverReturnExpired, with
// a bounded sweep of never-read keys), event- and processing-time timers per key, and the
// per-key-group snapshot and restore of all of it.
//
// Ids: Insert hands out dense key ids; Remove retires one, which stays reserved (its PerKey state
// intact, its timers gone) until EndBatch resets it for reuse, so a batch can address the state of
// ids it saw. Operators call EndBatch once per call that removed keys, before returning.
//
// A KeyedState is used by one goroutine at a time, besides the writers of its Frozen views.
type KeyedState struct {
	keys        *KeyTable
	perKey      []PerKey
	entries     []EntryState // the EntryStates of perKey, with TTL only
	grown       int          // ids every PerKey, lastWrite and the timers have room for
	ttl         TTL
	lastWrite   []int64 // per key id, the processing time of its last write; nil without TTL
	sweep       Sweeper
	timers      *TimerService // nil unless StateConfig.Timers
	maxPar      int
	kgStart     int
	kgEnd       int
	fingerprint uint64
	earlier     []Superseded

	added []int32 // keys of the payload being restored, for its rollback

	mu     sync.Mutex // Lock: between the goroutine using the state and Frozen views' writers
	frozen []*Frozen  // the open views, which save keys' pre-images before they change
}

// NewKeyedState returns the empty keyed state of an operator of spec, whose keys are those of its
// inputs' key columns (every input of a kind keys by the same types).
func NewKeyedState(spec *Spec, cfg StateConfig) *KeyedState {
	start, end := spec.KeyGroupRange()
	s := &KeyedState{
		keys:        NewKeyTable(spec.MaxParallelism, start, end, cfg.KeySize),
		ttl:         cfg.TTL,
		maxPar:      spec.MaxParallelism,
		kgStart:     start,
		kgEnd:       end,
		fingerprint: spec.Fingerprint(newStateLayout(cfg.TTL.Enabled(), cfg.Timers, cfg.Layout, cfg.Version)),
	}
	if s.ttl.Enabled() && !cfg.EntriesOnly {
		s.lastWrite = []int64{}
	}
	if cfg.Timers {
		s.timers = newTimerService()
	}
	current := max(cfg.Version, 1)
	for _, e := range cfg.Earlier {
		s.earlier = append(s.earlier, Superseded{
			Fingerprint: spec.Fingerprint(newStateLayout(cfg.TTL.Enabled(), e.Timers, e.Layout, e.Version)),
			Refusal: fmt.Sprintf("written by Ferry's %s state layout %d, which this library does not read (it reads layout %d); %s",
				strings.ReplaceAll(spec.Kind, "_", " "), max(e.Version, 1), current, e.Advice),
		})
	}
	return s
}

// stateLayout is what the fingerprint hashes besides the spec's header. Version 1 is left out,
// so the first form of every kind keeps the fingerprint it had before versions.
type stateLayout struct {
	TTL     bool `json:"ttl"`
	Timers  bool `json:"timers"`
	Kind    any  `json:"kind"`
	Version int  `json:"version,omitempty"`
}

func newStateLayout(ttl, timers bool, kind any, version int) stateLayout {
	if version <= 1 {
		version = 0
	}
	return stateLayout{TTL: ttl, Timers: timers, Kind: kind, Version: version}
}

// Register adds per-key state; its payload follows the previously registered ones'. Register
// every PerKey before the first key is inserted.
func (s *KeyedState) Register(p PerKey) {
	if s.keys.Cap() > 0 {
		panic("engine: KeyedState.Register after the first key")
	}
	s.perKey = append(s.perKey, p)
	if e, ok := p.(EntryState); ok && s.ttl.Enabled() {
		s.entries = append(s.entries, e)
	}
}

// Fingerprint identifies the state layout (snapshot.Header.Fingerprint).
func (s *KeyedState) Fingerprint() uint64 { return s.fingerprint }

// EarlierLayouts are the earlier forms of the state that a restore recognizes and refuses
// (StateConfig.Earlier).
func (s *KeyedState) EarlierLayouts() []Superseded { return s.earlier }

// Len is the number of live keys.
func (s *KeyedState) Len() int { return s.keys.Len() }

// Cap is one more than the largest key id ever handed out.
func (s *KeyedState) Cap() int { return s.keys.Cap() }

// KeyGroupOf maps a key hash to its key group and checks that it lies in the operator's range.
func (s *KeyedState) KeyGroupOf(hash int32) (int, error) { return s.keys.KeyGroupOf(hash) }

// Find returns the id of key (hash = HashRow(key), in key group kg), or -1. An expired key is
// still found: see Expired.
func (s *KeyedState) Find(key []byte, hash int32, kg int) int32 {
	id := s.keys.Find(key, hash, kg)
	if id >= 0 && s.frozen != nil {
		s.preserve(id)
	}
	return id
}

// Warm prepares the Finds of a batch's keys, whose hashes and key groups are given
// (KeyTable.Warm).
func (s *KeyedState) Warm(hashes, kgs []int32) { s.keys.Warm(hashes, kgs) }

// Insert adds key, which must not be present, and returns its id, whose PerKey states are in the
// initial state.
func (s *KeyedState) Insert(key []byte, hash int32, kg int) int32 {
	id := s.keys.Insert(key, hash, kg)
	if s.frozen != nil {
		s.preserveNew(id)
	}
	if int(id) >= s.grown {
		s.grow()
	}
	return id
}

func (s *KeyedState) grow() {
	n := s.keys.Cap()
	for _, p := range s.perKey {
		p.Grow(n)
	}
	if s.lastWrite != nil {
		for len(s.lastWrite) < n {
			s.lastWrite = append(s.lastWrite, 0)
		}
	}
	if s.timers != nil {
		s.timers.grow(n)
	}
	s.grown = n
}

// Remove deletes key id and its timers (each as TimerService.Delete does). Its PerKey state stays
// readable until EndBatch.
func (s *KeyedState) Remove(id int32) {
	if s.frozen != nil {
		s.preserve(id)
	}
	if s.timers != nil {
		s.timers.removeKey(id)
	}
	s.keys.Remove(id)
}

// EndBatch resets the keys removed since the last call and makes their ids reusable.
func (s *KeyedState) EndBatch() {
	for _, id := range s.keys.EndBatch() {
		if s.lastWrite != nil {
			s.lastWrite[id] = 0
		}
		for _, p := range s.perKey {
			p.Reset(id)
		}
	}
}

// Live reports whether id holds a key (ids run from 0 to Cap).
func (s *KeyedState) Live(id int32) bool {
	_, live := s.keys.keyGroupIndex(id)
	return live
}

// LiveIDs appends to ids the live ids from *next on, moving *next past them, until ids holds n
// ids or the ids run out: one chunk of a walk over the keys in id order.
func (s *KeyedState) LiveIDs(ids []int32, next *int32, n int) []int32 {
	id := *next
	for ; id < int32(s.Cap()) && len(ids) < n; id++ {
		if s.Live(id) {
			ids = append(ids, id)
			if s.frozen != nil {
				s.preserve(id)
			}
		}
	}
	*next = id
	return ids
}

// Key returns the encoded key of a live id.
func (s *KeyedState) Key(id int32) []byte { return s.keys.Key(id) }

// KeyBytes is the size of the keys of ids, live ids or below 0 (which count nothing).
func (s *KeyedState) KeyBytes(ids []int32) int {
	n := 0
	for _, id := range ids {
		if id >= 0 {
			n += len(s.keys.Key(id))
		}
	}
	return n
}

// WriteKeys writes the key of each of ids (its encoded bytes, Flink's BinaryRowData; an empty
// value for an id below 0) into out, a BINARY column Init laid out for len(ids) rows and
// KeyBytes(ids) bytes: the key column of a FlinkState export.
func (s *KeyedState) WriteKeys(out *OutColumn, ids []int32) {
	at := int32(0)
	for j, id := range ids {
		out.Offs[j] = at
		if id >= 0 {
			at += int32(copy(out.Data[at:], s.keys.Key(id)))
		}
	}
	out.Offs[len(ids)] = at
}

// Expired reports whether key id's state is expired at nowMs: it then reads as absent, and the
// operator removes it (NeverReturnExpired). Always false without TTL.
func (s *KeyedState) Expired(id int32, nowMs int64) bool {
	return s.lastWrite != nil && s.ttl.Expired(s.lastWrite[id], nowMs)
}

// ExpireValue handles key id whose value state Expired at nowMs: it reads as absent. When an
// EntryState holds an entry of the key that did not expire, or the key has timers (which Flink's
// TTL never expires), the key stays, its value state reset (EntryState.ResetValue, PerKey.Reset
// for the others) and its entries untouched, and ExpireValue returns id; the key's value state
// then still reads as expired until Touch. Otherwise the key is removed (Remove) and ExpireValue
// returns -1.
func (s *KeyedState) ExpireValue(id int32, nowMs int64) int32 {
	if s.frozen != nil {
		s.preserve(id)
	}
	if !s.keeps(id, nowMs) {
		s.Remove(id)
		return -1
	}
	for _, p := range s.perKey {
		if e, ok := p.(EntryState); ok {
			e.ResetValue(id)
		} else {
			p.Reset(id)
		}
	}
	return id
}

// keeps reports whether key id outlives its expired value state at nowMs: an EntryState holds an
// entry of it not expired, or it has timers.
func (s *KeyedState) keeps(id int32, nowMs int64) bool {
	if s.timers != nil && s.timers.HasTimers(id) {
		return true
	}
	for _, e := range s.entries {
		if e.LiveEntries(id, nowMs) {
			return true
		}
	}
	return false
}

// Touch records that key id's state was written at nowMs (OnCreateAndWrite). A no-op without TTL.
func (s *KeyedState) Touch(id int32, nowMs int64) {
	if s.lastWrite != nil {
		if s.frozen != nil {
			s.preserve(id)
		}
		s.lastWrite[id] = nowMs
	}
}

// LastWrite is the processing time (ms) key id's state was last written at; 0 without TTL.
func (s *KeyedState) LastWrite(id int32) int64 {
	if s.lastWrite == nil {
		return 0
	}
	return s.lastWrite[id]
}

// sweepBudget is how many key ids each Sweep inspects.
const sweepBudget = 1024

// Sweep removes the expired state of keys nobody reads again, a bounded slice of the id space
// and of every EntryState's entries per call (continuing where the last call stopped), so idle
// keys do not hold memory forever; reading them would find them absent anyway. A key goes when
// its value state expired (or it has none, EntriesOnly), none of its entries is live and it has
// no timers. It ends the batch (EndBatch). A no-op without TTL. The entries' sweep pauses while a
// Frozen view is open.
func (s *KeyedState) Sweep(nowMs int64) {
	if !s.ttl.Enabled() {
		return
	}
	if s.frozen == nil {
		for _, e := range s.entries {
			e.SweepEntries(nowMs, sweepBudget)
		}
	}
	from, to := s.sweep.Next(s.keys.Cap(), sweepBudget)
	for id := int32(from); id < int32(to); id++ {
		if !s.keys.Live(id) || (s.lastWrite != nil && !s.ttl.Expired(s.lastWrite[id], nowMs)) {
			continue
		}
		if !s.keeps(id, nowMs) {
			s.Remove(id)
		}
	}
	s.EndBatch()
}

// Timers returns the timer service of the state: the timers of its keys in Flink's heap order
// (TimerService); nil unless StateConfig.Timers.
func (s *KeyedState) Timers() *TimerService { return s.timers }

// CheckKeyGroup fails with ErrInvalid when kg lies outside the operator's key-group range.
func (s *KeyedState) CheckKeyGroup(kg int) error {
	if kg < s.kgStart || kg > s.kgEnd {
		return fmt.Errorf("%w: key group %d outside this operator's range [%d, %d]", ErrInvalid, kg, s.kgStart, s.kgEnd)
	}
	return nil
}

// HasState reports whether key group kg holds any key.
func (s *KeyedState) HasState(kg int) bool {
	return s.CheckKeyGroup(kg) == nil && s.keys.KeyGroupLen(kg) > 0
}

// Snapshot serialises the state of every key group of the range in one pass over the keys in id
// order, so every PerKey's slices are read front to back rather than once per key at a random id,
// and hands each non-empty key group's payload to emit in chunks: a chunk ends after the first key
// that brings it to limit bytes. emit owns the chunk and returns an empty buffer (or nil) for the
// key group's next one. A key group's chunks come in order, the last with last set; key groups
// without keys get no call. An error from emit stops the pass and is returned. The state must not
// change during the call (restored timers join their heaps first, as at any use of the timers).
//
// A payload is a sequence of keys, in id order, each: the encoded key (uvarint length, bytes),
// its last write time (varint; with TTL only), its timers with their heap positions (with timers
// only: see TimerService.save), then every PerKey's Save in registration order.
func (s *KeyedState) Snapshot(limit int, emit func(kg int, chunk []byte, last bool) ([]byte, error)) error {
	return s.Freeze().Snapshot(limit, emit)
}

// appendKey appends the snapshot of key id to dst, its timers those of timers (current heap
// positions: TimerService.positions).
func (s *KeyedState) appendKey(dst []byte, id int32, timers *TimerService) []byte {
	key := s.keys.Key(id)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	if s.lastWrite != nil {
		dst = binary.AppendVarint(dst, s.lastWrite[id])
	}
	if s.timers != nil {
		dst = timers.save(dst, id)
	}
	for _, p := range s.perKey {
		dst = p.Save(dst, id)
	}
	return dst
}

// RestoreKeyGroup adds the keys of one payload (chunk) Snapshot wrote for key group kg. Every key
// must hash into kg and be new. On error nothing of the payload stays behind. The restored timers
// join their heaps at the next use of the timer service, in Flink's restore order whatever the
// order of the key groups' payloads (TimerService).
func (s *KeyedState) RestoreKeyGroup(kg int, payload []byte) error {
	if err := s.CheckKeyGroup(kg); err != nil {
		return err
	}
	s.added = s.added[:0]
	if err := s.restore(kg, payload); err != nil {
		for _, id := range s.added {
			s.Remove(id)
		}
		s.EndBatch()
		return fmt.Errorf("key group %d: %w", kg, err)
	}
	return nil
}

func (s *KeyedState) restore(kg int, src []byte) error {
	for len(src) > 0 {
		n, rest, err := getUvarint(src)
		if err != nil {
			return err
		}
		src = rest
		size := s.keys.KeySize()
		if n < 8 || n%8 != 0 || n > uint64(len(src)) || (size > 0 && n != uint64(size)) {
			return fmt.Errorf("%w: key length %d invalid", ErrData, n)
		}
		key := src[:n]
		src = src[n:]
		hash := HashRow(key)
		if got := KeyGroup(hash, s.maxPar); got != kg {
			return fmt.Errorf("%w: key hashes to key group %d", ErrData, got)
		}
		if s.keys.Find(key, hash, kg) >= 0 {
			return fmt.Errorf("%w: duplicate key", ErrData)
		}
		id := s.Insert(key, hash, kg)
		s.added = append(s.added, id)
		if s.lastWrite != nil {
			if s.lastWrite[id], src, err = getVarint(src); err != nil {
				return err
			}
		}
		if s.timers != nil {
			if src, err = s.timers.load(src, id, kg); err != nil {
				return err
			}
		}
		for _, p := range s.perKey {
			if src, err = p.Load(src, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// Stats reports the figures of the state, without a pass over it; it adds no restored timer to
// its heap.
func (s *KeyedState) Stats() Stats {
	n := s.keys.Bytes() + int64(cap(s.lastWrite))*8
	if s.timers != nil {
		n += s.timers.bytes()
	}
	for _, p := range s.perKey {
		n += p.Bytes()
	}
	next := int64(math.MaxInt64)
	if s.timers != nil {
		next = s.timers.nextProcessing()
	}
	return Stats{Keys: int64(s.keys.Len()), StateBytes: n, NextTimerMs: next}
}

// Stats are the figures of an operator's state that the host reports as metrics, and when it
// must next call Advance.
type Stats struct {
	Keys        int64 // keys the state holds
	StateBytes  int64 // estimated bytes of memory the state owns
	NextTimerMs int64 // the time of the earliest processing-time timer (TimerService), math.MaxInt64 when none
}

var errStateTruncated = fmt.Errorf("%w: state payload truncated", ErrData)

func getVarint(src []byte) (int64, []byte, error) {
	v, n := binary.Varint(src)
	if n <= 0 {
		return 0, nil, errStateTruncated
	}
	return v, src[n:], nil
}

func getUvarint(src []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, nil, errStateTruncated
	}
	return v, src[n:], nil
}
