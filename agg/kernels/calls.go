package kernels

import (
	"fmt"
	"strings"

	"github.com/ferrystream/ferry/agg/internal/values"
	"github.com/ferrystream/ferry/engine"
)

// numericCall builds the accumulator of SUM, SUM0, AVG, MIN or MAX over an argument of type arg
// whose values are the numbers T (a numeric type, or DATE and TIMESTAMP(p <= 3) for MIN and MAX),
// AVG summing in S. This is the whole (aggregate, type) table for them: one kernel per aggregate
// kind, instantiated per physical type. arg's SQL type is the type of the partial state.
func numericCall[T values.Number, S int64 | float64](fn string, col int, retract bool, arg engine.Type) Accumulator {
	arg.Nullable = true
	switch fn {
	case "SUM":
		return &numSumAcc[T]{sumAcc[T, *values.NumOps[T]]{col: col, retract: retract, typ: arg, ops: &values.NumOps[T]{}}}
	case "SUM0":
		return &sum0Acc[T]{col: col, typ: arg}
	case "AVG":
		sum := engine.Type{ID: engine.BigInt, Nullable: true}
		if S(1)/2 != 0 { // floating point: DOUBLE
			sum.ID = engine.Double
		}
		return &avgAcc[T, S]{col: col, sumType: sum}
	case "MIN", "MAX":
		if retract {
			return &numMinMaxRetractAcc[T]{newMinMaxRetract[T](fn, col, arg, &values.NumOps[T]{})}
		}
		return &numMinMaxAcc[T]{newMinMax[T](fn, col, arg, &values.NumOps[T]{})}
	}
	return nil
}

var numericCalls = map[engine.TypeID]func(fn string, col int, retract bool, arg engine.Type) Accumulator{
	engine.TinyInt:  numericCall[int8, int64],
	engine.SmallInt: numericCall[int16, int64],
	engine.Int:      numericCall[int32, int64],
	engine.BigInt:   numericCall[int64, int64],
	engine.Float:    numericCall[float32, float64],
	engine.Double:   numericCall[float64, float64],
}

// Support reports whether Ferry runs aggregate fn (COUNT, SUM, SUM0, AVG, MIN, MAX, FIRST_VALUE,
// LAST_VALUE, LISTAGG, WELFORD_M2, SINGLE_VALUE) over an argument of type arg natively: every
// function but LISTAGG over the numeric types and DECIMAL (WELFORD_M2: not DECIMAL), MIN, MAX,
// FIRST_VALUE and LAST_VALUE over VARCHAR, DATE and every TIMESTAMP(p), and also over BOOLEAN,
// LISTAGG over VARCHAR (and CHAR), SINGLE_VALUE over every type but BINARY/VARBINARY
// (supportMore), COUNT over anything. The error wraps engine.ErrUnsupported and reads like
// "SUM over VARCHAR: not native yet".
func Support(fn string, arg engine.Type) error {
	if ok, decided := supportMore(fn, arg); decided {
		if ok {
			return nil
		}
		arg.Nullable = true
		return fmt.Errorf("%w: %s over %s: not native yet", engine.ErrUnsupported, fn, arg)
	}
	switch fn {
	case "COUNT":
		return nil
	case "LISTAGG":
		if arg.ID == engine.Varchar {
			return nil
		}
	case "WELFORD_M2":
		if _, ok := welfordCalls[arg.ID]; ok {
			return nil
		}
	case "SUM", "SUM0", "AVG", "MIN", "MAX", "FIRST_VALUE", "LAST_VALUE":
		if _, ok := numericCalls[arg.ID]; ok || arg.ID == engine.Decimal {
			return nil
		}
		keeps := fn != "SUM" && fn != "SUM0" && fn != "AVG" // the value-keeping functions
		if _, ok := orderedCalls(arg); ok && keeps {
			return nil
		}
		if arg.ID == engine.Varchar && keeps {
			return nil
		}
	default:
		return fmt.Errorf("%w: aggregate function %s: not native yet", engine.ErrUnsupported, fn)
	}
	arg.Nullable = true
	return fmt.Errorf("%w: %s over %s: not native yet", engine.ErrUnsupported, fn, arg)
}

// Call is one aggregate call as the kernels see it.
type Call struct {
	// Func is the function, in any case: COUNT, SUM, SUM0, AVG, MIN, MAX, FIRST_VALUE,
	// LAST_VALUE, LISTAGG, WELFORD_M2 or SINGLE_VALUE.
	Func string
	// Args are the argument columns: indices of the types New is given.
	Args []int
	// Retract selects the function's retracting variant (Flink's ...WithRetractAggFunction).
	Retract bool
	// Distinct: the call sees each argument value once per key. The caller applies it (a
	// distinct set); New refuses the calls it cannot apply to.
	Distinct bool
	// JavaStrings is, for MIN and MAX over VARCHAR, the BOOLEAN column that is TRUE where the row
	// holds the argument as a Java String; -1 for none.
	JavaStrings int
	// NeedRetraction: the input retracts.
	NeedRetraction bool
	// StateTTL: idle-state TTL is on.
	StateTTL bool
}

// New returns the accumulator of call, whose arguments are columns of types args, and its
// result type. field names the call in errors ("aggs[2]"), which wrap engine.ErrUnsupported
// (not native) or engine.ErrInvalid (a malformed call).
func New(field string, call Call, args []engine.Type) (Accumulator, engine.Type, error) {
	fn := strings.ToUpper(call.Func)
	if call.Distinct {
		switch {
		case fn == "AVG":
			return nil, engine.Type{}, fmt.Errorf("%w: %s: AVG(DISTINCT): not native yet", engine.ErrUnsupported, field)
		case len(call.Args) != 1:
			return nil, engine.Type{}, fmt.Errorf("%w: %s: DISTINCT over %d arguments: not native yet", engine.ErrUnsupported, field, len(call.Args))
		}
		if err := distinctMore(field, fn, args[call.Args[0]]); err != nil {
			return nil, engine.Type{}, err
		}
	}
	switch fn {
	case "COUNT":
		if len(call.Args) > 1 {
			return nil, engine.Type{}, fmt.Errorf("%w: %s: COUNT over %d arguments: not native yet", engine.ErrUnsupported, field, len(call.Args))
		}
		col := -1
		if len(call.Args) == 1 {
			col = call.Args[0]
		}
		return &countAcc{col: col}, engine.Type{ID: engine.BigInt}, nil
	case "LISTAGG":
		return listAggCall(field, call, args)
	case "SINGLE_VALUE":
		return singleValueNewCall(field, call, args)
	case "WELFORD_M2":
		if len(call.Args) != 1 {
			return nil, engine.Type{}, fmt.Errorf("%w: spec: params.%s.args: WELFORD_M2 takes 1 argument, got %d", engine.ErrInvalid, field, len(call.Args))
		}
		arg := args[call.Args[0]]
		if err := Support(fn, arg); err != nil {
			return nil, engine.Type{}, fmt.Errorf("%s: %w", field, err)
		}
		return welfordCalls[arg.ID](call.Args[0]), engine.Type{ID: engine.Double, Nullable: true}, nil
	case "SUM", "SUM0", "AVG", "MIN", "MAX", "FIRST_VALUE", "LAST_VALUE":
	default:
		return nil, engine.Type{}, fmt.Errorf("%w: %s.func: %q: not native yet", engine.ErrUnsupported, field, call.Func)
	}
	if len(call.Args) != 1 {
		return nil, engine.Type{}, fmt.Errorf("%w: spec: params.%s.args: %s takes 1 argument, got %d", engine.ErrInvalid, field, fn, len(call.Args))
	}
	col := call.Args[0]
	arg := args[col]
	if err := Support(fn, arg); err != nil {
		return nil, engine.Type{}, fmt.Errorf("%s: %w", field, err)
	}
	if fn == "SUM" && call.NeedRetraction && !call.Retract {
		// Flink's SumAggFunction has no retract; the planner never pairs it with retracting input.
		return nil, engine.Type{}, fmt.Errorf("%w: spec: params.%s.retract: SUM on retracting input needs the retracting variant", engine.ErrInvalid, field)
	}
	if fn == "FIRST_VALUE" || fn == "LAST_VALUE" {
		if call.Retract && call.StateTTL {
			return nil, engine.Type{}, fmt.Errorf("%w: %s: idle-state TTL with %s with retraction: not native (Flink's order map has one entry per wall-clock millisecond, so which rows share an entry and its expiry depends on the clock)",
				engine.ErrUnsupported, field, fn)
		}
		acc := firstLastCall(fn, col, arg, call.Retract)
		out := arg
		out.Nullable = true
		return acc, out, nil
	}
	switch arg.ID {
	case engine.Decimal:
		acc, out := decimalCall(fn, col, arg, call.Retract)
		return acc, out, nil
	case engine.Varchar:
		acc, out := varcharCall(fn, col, call.JavaStrings, arg, call.Retract)
		return acc, out, nil
	}
	out := arg
	out.Nullable = fn != "SUM0"                                     // $SUM0 starts at 0 and is never NULL
	if acc, ok := orderedMoreCall(fn, col, call.Retract, arg); ok { // BOOLEAN, TIMESTAMP(p > 3)
		return acc, out, nil
	}
	if minMax, ok := orderedCalls(arg); ok {
		return minMax(fn, col, call.Retract, arg), out, nil
	}
	return numericCalls[arg.ID](fn, col, call.Retract, arg), out, nil
}

// orderedCalls returns the MIN/MAX kernel of the temporal types whose Arrow values are integers
// ordered as Flink orders them: DATE (int32 days since the epoch) and TIMESTAMP(p <= 3) (int64
// epoch milliseconds, TimestampData.compareTo with no nanoseconds). MIN and MAX keep the type.
func orderedCalls(arg engine.Type) (func(fn string, col int, retract bool, arg engine.Type) Accumulator, bool) {
	switch {
	case arg.ID == engine.Date:
		return numericCall[int32, int64], true
	case arg.ID == engine.Timestamp && arg.Compact():
		return numericCall[int64, int64], true
	}
	return nil, false
}

// firstLastCall builds FIRST_VALUE or LAST_VALUE, with retraction or without, over an argument
// Support accepts for them.
func firstLastCall(fn string, col int, arg engine.Type, retract bool) Accumulator {
	switch {
	case arg.ID == engine.Decimal && retract:
		return newFirstLastRetract[values.Dec128](fn, col, arg, &values.DecOps{})
	case arg.ID == engine.Decimal:
		acc := newFirstLast[values.Dec128](fn, col, arg, &values.DecOps{})
		return &acc
	case arg.ID == engine.Varchar && retract:
		return newFirstLastRetract[values.StrRef](fn, col, arg, values.NewStrOps(-1))
	case arg.ID == engine.Varchar:
		return &strFirstLastAcc{newFirstLast[values.StrRef](fn, col, arg, values.NewStrOps(-1))}
	case arg.ID == engine.Boolean:
		return firstLastWith[bool](fn, col, arg, retract, &values.BoolOps{})
	case arg.ID == engine.Timestamp && !arg.Compact():
		return firstLastWith[values.Timestamp](fn, col, arg, retract, &values.TimestampOps{})
	}
	return firstLastCalls[physicalID(arg)](fn, col, arg, retract)
}

// firstLastCalls holds FIRST_VALUE/LAST_VALUE per physical number type (physicalID).
var firstLastCalls = map[engine.TypeID]func(fn string, col int, arg engine.Type, retract bool) Accumulator{
	engine.TinyInt:  firstLastOf[int8],
	engine.SmallInt: firstLastOf[int16],
	engine.Int:      firstLastOf[int32],
	engine.BigInt:   firstLastOf[int64],
	engine.Float:    firstLastOf[float32],
	engine.Double:   firstLastOf[float64],
}

func firstLastOf[T values.Number](fn string, col int, arg engine.Type, retract bool) Accumulator {
	return firstLastWith[T](fn, col, arg, retract, &values.NumOps[T]{})
}

// firstLastWith builds FIRST_VALUE or LAST_VALUE over fixed-size values V read by ops.
func firstLastWith[V comparable, O values.Ops[V]](fn string, col int, arg engine.Type, retract bool, ops O) Accumulator {
	if retract {
		return newFirstLastRetract[V](fn, col, arg, ops)
	}
	acc := newFirstLast[V](fn, col, arg, ops)
	return &acc
}

// physicalID is the number type whose Arrow values a type's values are: DATE's int32 days,
// TIMESTAMP(p <= 3)'s int64 milliseconds, a number type itself.
func physicalID(arg engine.Type) engine.TypeID {
	switch arg.ID {
	case engine.Date:
		return engine.Int
	case engine.Timestamp:
		return engine.BigInt
	}
	return arg.ID
}

// listAggCall builds LISTAGG(x) or LISTAGG(x, delimiter), both VARCHAR, with retraction or without.
func listAggCall(field string, call Call, args []engine.Type) (Accumulator, engine.Type, error) {
	if len(call.Args) < 1 || len(call.Args) > 2 {
		return nil, engine.Type{}, fmt.Errorf("%w: spec: params.%s.args: LISTAGG takes 1 or 2 arguments, got %d", engine.ErrInvalid, field, len(call.Args))
	}
	for _, c := range call.Args {
		if err := Support("LISTAGG", args[c]); err != nil {
			return nil, engine.Type{}, fmt.Errorf("%s: %w", field, err)
		}
	}
	delim := -1
	if len(call.Args) == 2 {
		delim = call.Args[1]
	}
	out := engine.Type{ID: engine.Varchar, Nullable: true}
	if call.Retract {
		return newListAggRetract(call.Args[0], delim), out, nil
	}
	return newListAgg(call.Args[0], delim), out, nil
}

// orderedMoreCall builds MIN or MAX, with or without retraction, over BOOLEAN or
// TIMESTAMP(p > 3) with the generic kernels (minMaxAcc, minMaxRetractAcc; not specialized:
// neither type is on a hot path of the benchmarks); ok is false for any other type.
func orderedMoreCall(fn string, col int, retract bool, arg engine.Type) (acc Accumulator, ok bool) {
	arg.Nullable = true
	switch {
	case arg.ID == engine.Boolean:
		if retract {
			r := newMinMaxRetract[bool](fn, col, arg, &values.BoolOps{})
			return &r, true
		}
		acc := newMinMax[bool](fn, col, arg, &values.BoolOps{})
		return &acc, true
	case arg.ID == engine.Timestamp && !arg.Compact():
		if retract {
			r := newMinMaxRetract[values.Timestamp](fn, col, arg, &values.TimestampOps{})
			return &r, true
		}
		acc := newMinMax[values.Timestamp](fn, col, arg, &values.TimestampOps{})
		return &acc, true
	}
	return nil, false
}
