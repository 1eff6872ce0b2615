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
	// ErrQuery marks a runtime error of the query itself that Flink raises as a
	// TableRuntimeException, e.g. SINGLE_VALUE's second row (FERRY_EQUERY; QueryError).
	ErrQuery = errors.New("query failed")
	// ErrExternal marks a failure of an external system the operator talks to (a database it
	// looks rows up in: server down, credentials refused, a missing table, errors after its
	// retries) (FERRY_EEXTERNAL). The operator stays usable; the host fails the task as Flink's
	// connector would.
	ErrExternal = errors.New("external system failed")
)

// QueryError is a runtime error of the query, raised where Flink's generated code throws
// TableRuntimeException(Msg); Msg is Flink's message verbatim, which the host throws as is. It
// matches ErrQuery under errors.Is. The operator is broken afterwards, as a Flink job fails.
type QueryError struct{ Msg string }

func (e *QueryError) Error() string { return e.Msg }

// Is reports whether target is ErrQuery.
func (e *QueryError) Is(target error) bool { return target == ErrQuery }
