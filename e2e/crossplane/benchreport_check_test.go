package crossplane

import (
	"strings"
	"testing"
	"time"
)

// TestBenchReport: the steady-state row of the report says how many
// RunFunction calls a reconcile makes, the function's CPU per call and its
// share of the control plane's CPU (core, function, API server, etcd).
func TestBenchReport(t *testing.T) {
	cpu := func(core, fn, api, etcd time.Duration) map[string]time.Duration {
		return map[string]time.Duration{"crossplane": core, "function": fn, "kube-apiserver": api, "etcd": etcd}
	}
	round := benchRound{
		stacks: 10, readyAtTheEnd: 10,
		ramp: benchPhase{took: 8 * time.Second, cpu: cpu(time.Second, 400*time.Millisecond, 5*time.Second, 800*time.Millisecond),
			calls: 114, reconciles: 48, requests: map[string]float64{"GET": 1000, "APPLY": 300}},
		// 100 reconciles in 50 s, 240 calls; core 2 s, function 0.8 s, API
		// server 6.4 s, etcd 0.8 s: the function is 8% of 10 s.
		steady: benchPhase{took: 50 * time.Second, cpu: cpu(2*time.Second, 800*time.Millisecond, 6400*time.Millisecond, 800*time.Millisecond),
			calls: 240, reconciles: 100, requests: map[string]float64{"APPLY": 100, "GET": 900}},
	}
	got := benchReport([]benchRound{round}, "test machine", "v2.3.4", 5*time.Second, 10*time.Second, 60*time.Second)
	for _, want := range []string{
		"| stacks | Ready at the end | XR reconciles/s (N/ttl) | errors | function calls/reconcile | core CPU | function CPU | function CPU/call | function share of control-plane CPU | kube-apiserver CPU | etcd CPU |",
		"| 10 | 10/10 | 2.00 (2.00) | 0 | 2.40 | 20.0 ms | 8.0 ms | 3.3 ms | 8% | 64.0 ms | 8.0 ms | 10.0 (1.0, 0.0, 0.0, 9.0, 0.0) | 4% / 2% / 13% / 2% |",
		"| 10 | 0.0 s | 0.0 s | 0.0 s | 48 | 114 | 1.0 s | 0.4 s | 5.0 s | 0.8 s | 1300 | 0.0 s |",
		"test machine. Crossplane core v2.3.4",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the report lacks\n%s\nreport:\n%s", want, got)
		}
	}
}
