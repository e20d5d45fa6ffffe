//go:build e2e_crossplane

package crossplane

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vllm-project/function-vllm-stack/e2e/proc"
	"github.com/vllm-project/function-vllm-stack/e2e/xp"
)

// The scale benchmark runs only when E2E_BENCH lists the numbers of stacks
// to apply at once (`make bench-crossplane`, default 1,10,50); it then
// runs alone (-test.run '^TestBench$'), with Crossplane and the function
// logging as they do by default (no --debug; E2E_BENCH_DEBUG=1 keeps it).
// E2E_BENCH_OUT names a file
// for the report, E2E_BENCH_TTL the function's --ttl (default 5s, the
// suite's), E2E_BENCH_SETTLE how long after all are Ready the steady-state
// window starts (default 2 TTLs: requeues of the rollout settle) and
// E2E_BENCH_STEADY its length (default 12 TTLs).
func benchmarking() bool { return os.Getenv("E2E_BENCH") != "" }

// quiet: Crossplane and the function without --debug, as they run by
// default; the benchmark's unless E2E_BENCH_DEBUG is set (to see in their
// logs what Crossplane does, at the cost of its CPU time).
func quiet() bool { return benchmarking() && os.Getenv("E2E_BENCH_DEBUG") == "" }

// functionTTL is the function's --ttl: e2eTTL, or E2E_BENCH_TTL in the
// benchmark.
func functionTTL() (time.Duration, error) {
	v := os.Getenv("E2E_BENCH_TTL")
	if !benchmarking() || v == "" {
		return e2eTTL, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("E2E_BENCH_TTL=%q: not a positive duration", v)
	}
	return d, nil
}

// TestBench: for each number N of E2E_BENCH, N copies of the seed stack
// (example/xr.yaml, names s-0..s-N-1, in namespace bench-N) are applied at
// once; it measures the time until all are Ready, and, from apply to all
// Ready (ramp) and over a steady window once all are Ready, the CPU time
// (utime+stime of /proc/<pid>/stat) of Crossplane core, the function, the
// API server and etcd, the RunFunction calls the function answered and the
// reconciles of the XR controller (Crossplane's
// controller_runtime_reconcile_total); then deletes them and waits until
// everything is gone. It prints a markdown table (and writes it to
// E2E_BENCH_OUT). Nothing fails on a time.
func TestBench(t *testing.T) {
	if !benchmarking() {
		t.Skip("the scale benchmark runs with make bench-crossplane (E2E_BENCH=1,10,50)")
	}
	var sizes []int
	for _, f := range strings.Split(os.Getenv("E2E_BENCH"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			t.Fatalf("E2E_BENCH=%q: %q is not a number of stacks", os.Getenv("E2E_BENCH"), f)
		}
		sizes = append(sizes, n)
	}
	ttl, err := functionTTL()
	if err != nil {
		t.Fatal(err)
	}
	duration := func(name string, def time.Duration) time.Duration {
		v := os.Getenv(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			t.Fatalf("%s=%q: not a duration", name, v)
		}
		return d
	}
	settle, steady := duration("E2E_BENCH_SETTLE", 2*ttl), duration("E2E_BENCH_STEADY", 12*ttl)

	// The Configuration's XRD and Composition (setup installed them); the
	// function runs with --ttl=ttl.
	waitXRD(t, "productionstacks.serving.vllm.ai", false)

	var rounds []benchRound
	for _, n := range sizes {
		r := benchRun(t, n, settle, steady)
		logf("bench: %d stacks: all Ready after %s, deleted in %s", n, r.allReady.Round(100*time.Millisecond), r.deleted.Round(100*time.Millisecond))
		rounds = append(rounds, r)
	}
	report := benchReport(rounds, machine(), crossplaneVersion(), ttl, settle, steady)
	fmt.Print(report)
	if out := os.Getenv("E2E_BENCH_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(report), 0o644); err != nil {
			t.Fatal(err)
		}
		logf("bench: report written to %s", out)
	}
}

func benchRun(t *testing.T, n int, settle, steady time.Duration) benchRound {
	ns := namespace(t, fmt.Sprintf("bench-%d", n))
	base := readObject(t, "../../example/xr.yaml")
	base.SetNamespace(ns)
	provide(t, base)
	var stacks []*unstructured.Unstructured
	for i := range n {
		s := base.DeepCopy()
		s.SetName(fmt.Sprintf("s-%d", i))
		stacks = append(stacks, s)
	}

	r := benchRound{stacks: n}
	s0 := benchSampleNow(t)
	// At once: one apply per stack, concurrently.
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for _, s := range stacks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- admin.Apply(context.Background(), s.DeepCopy())
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	readyAt := map[string]time.Duration{}
	deadline := time.Now().Add(20 * time.Minute)
	for len(readyAt) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d stacks: only %d Ready after 20 minutes", n, len(readyAt))
		}
		l, err := admin.Dynamic.Resource(stackGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			x := &l.Items[i]
			if _, seen := readyAt[x.GetName()]; !seen && xp.Condition(x, "Ready") == "True" {
				readyAt[x.GetName()] = time.Since(s0.at)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	s1 := benchSampleNow(t)
	var times []time.Duration
	for _, d := range readyAt {
		times = append(times, d)
	}
	sortDurations(times)
	r.firstReady, r.medianReady, r.allReady = times[0], times[len(times)/2], times[len(times)-1]
	r.ramp = s0.to(s1)

	time.Sleep(settle)
	s2 := benchSampleNow(t)
	time.Sleep(steady)
	s3 := benchSampleNow(t)
	r.steady = s2.to(s3)
	l, err := admin.Dynamic.Resource(stackGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		if xp.Condition(&l.Items[i], "Ready") == "True" {
			r.readyAtTheEnd++
		}
	}

	start := time.Now()
	if err := admin.Dynamic.Resource(stackGVR).Namespace(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Minute, fmt.Sprintf("%d stacks deleted with everything they composed", n), func() (bool, string) {
		left := 0
		for _, gvr := range []schema.GroupVersionResource{stackGVR, deploymentGVR, serviceGVR, pvcGVR, podGVR} {
			left += len(list(t, gvr, ns, ""))
		}
		return left == 0, fmt.Sprintf("%d objects left", left)
	})
	r.deleted = time.Since(start)
	return r
}

// benchSampleNow reads the CPU time of each process and the counters.
func benchSampleNow(t *testing.T) benchSample {
	t.Helper()
	s := benchSample{at: time.Now(), cpu: map[string]time.Duration{}}
	pids := map[string]int{"crossplane": xpc.Pid("crossplane"), "function": fn.Pid(), "e2e": os.Getpid()}
	for _, pid := range cp.Pids() {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
			pids[strings.TrimSpace(string(b))] = pid
		}
	}
	for name, pid := range pids {
		d, err := proc.CPUTime(pid)
		if err != nil {
			t.Fatalf("CPU time of %s (pid %d): %v", name, pid, err)
		}
		s.cpu[name] = d
	}
	fm, err := fn.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s.calls = metric(fm, "grpc_server_handled_total", map[string]string{"grpc_method": "RunFunction"})
	cm, err := xpc.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	xrController := "composite/" + stackGVR.Resource + "." + stackGVR.Group
	s.reconciles = metric(cm, "controller_runtime_reconcile_total", map[string]string{"controller": xrController})
	s.errors = metric(cm, "controller_runtime_reconcile_total", map[string]string{"controller": xrController, "result": "error"})
	am, err := admin.Core.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("the API server's metrics: %v", err)
	}
	s.requests = map[string]float64{}
	for _, verb := range []string{"GET", "LIST", "WATCH", "POST", "PUT", "PATCH", "DELETE", "APPLY"} {
		s.requests[verb] = metric(string(am), "apiserver_request_total", map[string]string{"verb": verb})
	}
	return s
}

func sortDurations(d []time.Duration) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}

// machine describes this machine: CPU model, CPUs, memory, kernel, Go.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s, %d CPUs%s%s, %s", model, runtime.NumCPU(), mem, kernel, runtime.Version())
}

// crossplaneVersion is what `crossplane --version` says.
func crossplaneVersion() string {
	if v := os.Getenv("CROSSPLANE_CORE_VERSION"); v != "" {
		return v
	}
	return "v2"
}
