package windowjoin

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/ferrystream/ferry/engine"
)

// Zone is the shift time zone of TIMESTAMP_LTZ windows as Java's rules define it; the host
// derives it from java.time's ZoneRules, so Ferry computes timer times from the JVM's own zone
// data rather than Go's.
type Zone struct {
	// ID is the zone's name (for messages).
	ID string `json:"id"`
	// UsesDaylightTime is java.util.TimeZone.useDaylightTime(): whether the zone observes
	// daylight saving time under its current rules. It selects Flink's DST branch of
	// TimeWindowUtil.toEpochMillsForTimer.
	UsesDaylightTime bool `json:"uses_daylight_time"`
	// Transitions are the zone's offset transitions in ascending order: epoch milliseconds,
	// offset before and offset after (milliseconds east of UTC).
	Transitions [][3]int64 `json:"transitions,omitempty"`
	// Offset is the zone's offset (ms) when it has no transitions.
	Offset int64 `json:"offset"`
	// Until is the epoch millisecond up to which Transitions are complete; later times are an
	// error (a zone with recurring rules lists its transitions up to a horizon). 0: complete.
	Until int64 `json:"until,omitempty"`
}

// Validate checks the transitions: ascending, each offset before the previous one's offset
// after, no offset beyond 18 hours.
func (z *Zone) Validate() error {
	for i, t := range z.Transitions {
		if i > 0 && t[0] <= z.Transitions[i-1][0] {
			return engine.ParamError("shift_zone.transitions", "not ascending at %d", i)
		}
		if i > 0 && t[1] != z.Transitions[i-1][2] {
			return engine.ParamError("shift_zone.transitions", "offset before transition %d differs from the offset after the previous one", i)
		}
		if abs(t[1]) > 18*3600_000 || abs(t[2]) > 18*3600_000 {
			return engine.ParamError("shift_zone.transitions", "offset of transition %d beyond 18 hours", i)
		}
	}
	return nil
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// AtZone is Java's LocalDateTime.AtZone(zone) in epoch milliseconds, for a local time given as
// milliseconds since the local epoch: a local time in a gap moves forward by the gap's length, one
// in an overlap takes the earlier offset. Both amount to subtracting the offset before the first
// transition whose later local boundary lies after the local time.
func (z *Zone) AtZone(local int64) (int64, error) {
	if z.Until != 0 && local > z.Until {
		return 0, fmt.Errorf("%w: window end %d lies beyond the rules of time zone %s the host sent (until %d)", engine.ErrData, local, z.ID, z.Until)
	}
	ts := z.Transitions
	if len(ts) == 0 {
		return local - z.Offset, nil
	}
	lo, hi := 0, len(ts)
	for lo < hi { // first i with local < ts[i][0] + max(before, after)
		m := (lo + hi) / 2
		if local < ts[m][0]+max(ts[m][1], ts[m][2]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	if lo == len(ts) {
		return local - ts[lo-1][2], nil
	}
	return local - ts[lo][1], nil
}

const hourMs = 3600_000

// TimerTime is Flink's SlicingWindowTimerServiceImpl timer time of a window end:
// TimeWindowUtil.toEpochMillsForTimer(windowEnd - 1, shiftTimeZone); z nil is UTC.
func (z *Zone) TimerTime(windowEnd int64) (int64, error) {
	v := windowEnd - 1
	if z == nil || v == math.MaxInt64 {
		return v, nil
	}
	if !z.UsesDaylightTime {
		return z.AtZone(v)
	}
	t1, err := z.AtZone(v)
	if err != nil {
		return 0, err
	}
	t2, err := z.AtZone(v + hourMs)
	if err != nil {
		return 0, err
	}
	switch {
	case t1 == t2:
		return t1 - t1%hourMs, nil
	case t2-t1 > hourMs:
		return t1 + hourMs, nil
	}
	return t1, nil
}

// ToLocal is Flink's TimeWindowUtil.toUtcTimestampMills for a zone: the local wall clock, in
// milliseconds since the local epoch, of the instant epochMs (LocalDateTime.ofInstant); z nil is
// UTC. Instants beyond Until are an error wrapping engine.ErrData.
func (z *Zone) ToLocal(epochMs int64) (int64, error) {
	if z == nil {
		return epochMs, nil
	}
	if z.Until != 0 && epochMs > z.Until {
		return 0, fmt.Errorf("%w: time %d lies beyond the rules of time zone %s the host sent (until %d)", engine.ErrData, epochMs, z.ID, z.Until)
	}
	ts := z.Transitions
	if len(ts) == 0 {
		return epochMs + z.Offset, nil
	}
	// the first transition after epochMs: the offset before it applies.
	i, _ := slices.BinarySearchFunc(ts, epochMs, func(t [3]int64, v int64) int { return cmp.Compare(t[0], v+1) })
	if i == len(ts) {
		return epochMs + ts[i-1][2], nil
	}
	return epochMs + ts[i][1], nil
}
