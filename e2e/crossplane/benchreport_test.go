package crossplane

// The report of TestBench (bench_test.go, build tag e2e_crossplane): plain
// arithmetic on samples, untagged so that go test ./... checks it.

import (
	"bytes"
	"fmt"
	"time"
)

// A benchSample is what the processes have used and counted so far.
type benchSample struct {
	at         time.Time
	cpu        map[string]time.Duration // by process: crossplane, function, kube-apiserver, etcd, ...
	calls      float64                  // RunFunction calls the function answered (any code)
	reconciles float64                  // reconciles of the XR controller (any result)
	errors     float64                  // those that ended in an error (requeued with back-off)
	requests   map[string]float64       // requests the API server answered, by verb (all clients)
}

// A benchPhase is the difference of two samples.
type benchPhase struct {
	took       time.Duration
	cpu        map[string]time.Duration
	calls      float64
	reconciles float64
	errors     float64
	requests   map[string]float64
}

func (b benchSample) to(a benchSample) benchPhase {
	p := benchPhase{took: a.at.Sub(b.at), cpu: map[string]time.Duration{}, calls: a.calls - b.calls, reconciles: a.reconciles - b.reconciles,
		errors: a.errors - b.errors, requests: map[string]float64{}}
	for k, v := range a.cpu {
		p.cpu[k] = v - b.cpu[k]
	}
	for k, v := range a.requests {
		p.requests[k] = v - b.requests[k]
	}
	return p
}

// requestsTotal is the number of API requests of a phase, all verbs.
func (p benchPhase) requestsTotal() float64 {
	var n float64
	for _, v := range p.requests {
		n += v
	}
	return n
}

type benchRound struct {
	stacks        int
	firstReady    time.Duration // the first stack Ready
	medianReady   time.Duration
	allReady      time.Duration // the last one
	ramp, steady  benchPhase
	deleted       time.Duration // delete all -> every XR, object and pod gone
	readyAtTheEnd int
}

// benchReport is the markdown report of TestBench's rounds, on the machine
// and Crossplane version named.
func benchReport(rounds []benchRound, machine, version string, ttl, settle, steady time.Duration) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n### Scale: N seed stacks applied at once through real Crossplane (`make bench-crossplane`)\n\n")
	fmt.Fprintf(&b, "%s. Crossplane core %s and the function (the package of `make xpkg`, mTLS) without --debug, the function's --ttl %s (the Composition sets none); "+
		"one fake node (the kubelet stand-in makes pods Ready at once; no containers run); kube-apiserver, etcd, kube-controller-manager and kube-scheduler on the same machine. "+
		"Each stack is example/xr.yaml (8 composed objects, one model cache claim). "+
		"CPU: utime+stime from /proc/<pid>/stat; reconciles: Crossplane's `controller_runtime_reconcile_total` of the XR controller; "+
		"calls: RunFunction calls the function answered; API requests: the API server's `apiserver_request_total`, every client.\n\n",
		machine, version, ttl)
	fmt.Fprintf(&b, "Apply → all Ready (then delete → everything gone):\n\n")
	fmt.Fprintf(&b, "| stacks | first Ready | median | all Ready | XR reconciles | function calls | core CPU | function CPU | kube-apiserver CPU | etcd CPU | API requests | delete → gone |\n")
	fmt.Fprintf(&b, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rounds {
		p := r.ramp
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %.0f | %.0f | %s | %s | %s | %s | %.0f | %s |\n",
			r.stacks, secs(r.firstReady), secs(r.medianReady), secs(r.allReady), p.reconciles, p.calls,
			secs(p.cpu["crossplane"]), secs(p.cpu["function"]), secs(p.cpu["kube-apiserver"]), secs(p.cpu["etcd"]),
			p.requestsTotal(), secs(r.deleted))
	}
	fmt.Fprintf(&b, "\nSteady state, every stack Ready, over %s starting %s after the last became Ready (Crossplane requeues each stack every ttl ±10%%, "+
		"and a reconcile calls the function once when the response requires nothing, as a serving stack's does; twice while the function asks for the stack's pods or a CRD, which Crossplane sends in a second call). "+
		"Per reconcile:\n\n", steady, settle)
	fmt.Fprintf(&b, "| stacks | Ready at the end | XR reconciles/s (N/ttl) | errors | function calls/reconcile | core CPU | function CPU | function CPU/call | function share of control-plane CPU | kube-apiserver CPU | etcd CPU | API requests (APPLY, PATCH, PUT, GET, LIST) | busy, share of one core: core / function / apiserver / etcd |\n")
	fmt.Fprintf(&b, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rounds {
		p := r.steady
		n := max(p.reconciles, 1)
		controlPlane := p.cpu["crossplane"] + p.cpu["function"] + p.cpu["kube-apiserver"] + p.cpu["etcd"]
		fmt.Fprintf(&b, "| %d | %d/%d | %.2f (%.2f) | %.0f | %.2f | %s | %s | %s | %s | %s | %s | %.1f (%.1f, %.1f, %.1f, %.1f, %.1f) | %s / %s / %s / %s |\n",
			r.stacks, r.readyAtTheEnd, r.stacks, p.reconciles/p.took.Seconds(), float64(r.stacks)/ttl.Seconds(), p.errors, p.calls/n,
			ms(per(p.cpu["crossplane"], n)), ms(per(p.cpu["function"], n)), ms(per(p.cpu["function"], p.calls)), pct(p.cpu["function"], controlPlane),
			ms(per(p.cpu["kube-apiserver"], n)), ms(per(p.cpu["etcd"], n)),
			p.requestsTotal()/n, p.requests["APPLY"]/n, p.requests["PATCH"]/n, p.requests["PUT"]/n, p.requests["GET"]/n, p.requests["LIST"]/n,
			pct(p.cpu["crossplane"], p.took), pct(p.cpu["function"], p.took), pct(p.cpu["kube-apiserver"], p.took), pct(p.cpu["etcd"], p.took))
	}
	fmt.Fprintf(&b, "\nCPU times count in steps of 10 ms (USER_HZ), and the API server's and etcd's include what every other client asks "+
		"(kube-controller-manager, the kubelet stand-in's heartbeats, the benchmark's polling): the 1-stack row is mostly that floor. "+
		"Control-plane CPU: Crossplane core, the function, the API server and etcd.\n")
	return b.String()
}

func per(d time.Duration, n float64) time.Duration {
	if n <= 0 {
		return 0
	}
	return time.Duration(float64(d) / n)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
func ms(d time.Duration) string   { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }
func pct(d, of time.Duration) string {
	if of <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*d.Seconds()/of.Seconds())
}
