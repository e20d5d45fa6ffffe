//go:build !unix

package fn

import "time"

// processCPU is not measured here: benchmarks report no cpu-ns/op.
func processCPU() (time.Duration, bool) { return 0, false }
