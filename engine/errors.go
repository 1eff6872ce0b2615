package engine

import "errors"

// Sentinel errors. Operators wrap them with %w and context; the C ABI maps them to status codes
// with errors.Is.
var (
	// ErrInvalid marks a bad argument or spec (FERRY_EINVAL).
	ErrInvalid = errors.New("invalid argument")
	// ErrData marks malformed input data or state blobs (FERRY_EDATA).
	ErrData = errors.New("malformed data")
	// ErrState marks a call that is not valid now: concurrent use of one operator, a call while
	// output is pending, an operator broken by an earlier failure (FERRY_ESTATE).
	ErrState = errors.New("invalid state")
	// ErrUnsupported marks a valid request Ferry does not run natively (FERRY_EUNSUPPORTED).
	ErrUnsupported = errors.New("not supported natively")
	// ErrMemory marks a memory limit (FERRY_ENOMEM).
	ErrMemory = errors.New("memory limit reached")
)
