// Package kernels holds the accumulators of the group aggregates: one per aggregate call,
// folding a whole batch per call.
package kernels

//go:generate go run ./internal/gen
