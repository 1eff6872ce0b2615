package engine

import "math"

// TTL is an operator's idle-state retention as Flink's table runtime configures it
// (StateConfigUtil.createTtlConfig): StateTtlConfig with UpdateType.OnCreateAndWrite and
// StateVisibility.NeverReturnExpired. A value written at lastWrite (milliseconds of the host's
// processing-time clock) is expired at now iff lastWrite + ttl <= now; expired state reads as
// absent and is deleted on read. The clock is passed in per call, never read here. A zero or
// negative TTL disables expiry. KeyedState applies it per key.
type TTL struct {
	Ms int64
}

// Enabled reports whether state expires.
func (p TTL) Enabled() bool { return p.Ms > 0 }

// Expired reports whether a value last written at lastWriteMs is expired at nowMs, as Flink's
// TtlUtils.expired: the expiration timestamp saturates at math.MaxInt64 instead of overflowing.
func (p TTL) Expired(lastWriteMs, nowMs int64) bool {
	if p.Ms <= 0 {
		return false
	}
	ttl := p.Ms
	if lastWriteMs > 0 && lastWriteMs > math.MaxInt64-ttl {
		ttl = math.MaxInt64 - lastWriteMs
	}
	return lastWriteMs+ttl <= nowMs
}

// Sweeper walks a dense id space round robin in bounded steps, so expired entries that are never
// read again are deleted without scanning all of them in one call.
type Sweeper struct {
	next int
}

// Next returns the half-open id range [from, to) to inspect in this step, at most budget ids of
// [0, n), continuing where the previous step stopped and wrapping around.
func (s *Sweeper) Next(n, budget int) (from, to int) {
	if n <= 0 || budget <= 0 {
		return 0, 0
	}
	if s.next >= n {
		s.next = 0
	}
	from = s.next
	to = min(n, from+budget)
	s.next = to
	return from, to
}
