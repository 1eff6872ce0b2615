// Package values holds the SQL values the aggregate kernels keep, one family per physical type,
// and what the kernels need to know about them (Ops): where an argument's values come from,
// Flink's order, equality and equaliser on them, hashing within a group, ownership of VARCHAR
// bytes in an arena, snapshot encoding and output. NumOps serves the numbers, DATE and
// TIMESTAMP(p <= 3); DecOps DECIMAL, with the 128-bit arithmetic Flink computes DECIMAL
// aggregates with (Dec128); StrOps VARCHAR, with Java's String order for values that hold
// their Java String; BoolOps BOOLEAN; TimestampOps TIMESTAMP(p > 3).
//
// It also holds the helpers of the per-group snapshot payload (PutVarint, GetVarint, ...),
// the hashes of entries within a group (HashBytes) and Java's identity of floating-point values
// (JavaBits). It imports engine only.
package values
