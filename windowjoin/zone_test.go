package windowjoin

import (
	"testing"
	"time"
)

// TestZoneAtZone checks atZone and timerTime against what java.time gives for
// America/Los_Angeles in 2024 (spring forward 2024-03-10 02:00 local, fall back 2024-11-03 02:00).
func TestZoneAtZone(t *testing.T) {
	ms := func(s string) int64 {
		v, err := time.Parse("2006-01-02T15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return v.UnixMilli()
	}
	const h = 3600_000
	z := &Zone{ID: "America/Los_Angeles", UsesDaylightTime: true, Transitions: [][3]int64{
		{ms("2024-03-10T10:00"), -8 * h, -7 * h},
		{ms("2024-11-03T09:00"), -7 * h, -8 * h},
	}}
	for _, c := range []struct{ local, want string }{
		{"2024-01-01T00:00", "2024-01-01T08:00"},
		{"2024-03-10T01:59", "2024-03-10T09:59"},
		{"2024-03-10T02:30", "2024-03-10T10:30"}, // in the gap: moved forward by an hour
		{"2024-03-10T03:00", "2024-03-10T10:00"},
		{"2024-11-03T00:59", "2024-11-03T07:59"},
		{"2024-11-03T01:30", "2024-11-03T08:30"}, // in the overlap: the earlier offset
		{"2024-11-03T02:00", "2024-11-03T10:00"},
		{"2025-01-01T00:00", "2025-01-01T08:00"},
	} {
		if got, _ := z.AtZone(ms(c.local)); got != ms(c.want) {
			t.Errorf("atZone(%s) = %s, want %s", c.local, time.UnixMilli(got).UTC().Format("2006-01-02T15:04"), c.want)
		}
	}
	// Flink's DST branch: window end 2024-03-10T03:00 local, timer at 02:59:59.999 local, a
	// time in the gap whose hour later is regular: t1 = 10:59:59.999Z, t2 = 10:59:59.999Z + 0?
	got, err := z.TimerTime(ms("2024-03-10T03:00"))
	if err != nil {
		t.Fatal(err)
	}
	// t1 = atZone(02:59:59.999) = 10:59:59.999Z, t2 = atZone(03:59:59.999) = 10:59:59.999Z:
	// equal, so the timer is t1 rounded down to the hour.
	if want := ms("2024-03-10T10:00"); got != want {
		t.Errorf("timerTime = %d, want %d", got, want)
	}
	// Beyond the horizon is an error.
	z.Until = ms("2030-01-01T00:00")
	if _, err := z.TimerTime(ms("2031-01-01T00:00")); err == nil {
		t.Error("no error beyond the zone's horizon")
	}
}
