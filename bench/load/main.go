// Command load is a gRPC load benchmark of function-vllm-stack: it starts the
// built function binary on 127.0.0.1 (--insecure, metrics on, as it serves in
// a cluster apart from mTLS), sends it the seed stack's request from 1, 16 and
// 200 concurrent callers over one connection, as Crossplane does, and prints
// calls/s, p50/p99 latency, the server's CPU time per call and its peak RSS
// per level. The client runs on the same machine: calls/s and latency
// include its cost, the CPU time per call is the server's alone.
//
//	go build -o /tmp/function . && go run ./bench/load -binary /tmp/function
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/bench/stacks"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		binary   = flag.String("binary", "_output/bin/function", "The function binary to start.")
		xrPath   = flag.String("xr", "example/xr.yaml", "The stack to send.")
		calls    = flag.Int("calls", 4000, "Calls per concurrency level, after a warm-up of calls/10.")
		levels   = flag.String("concurrency", "1,16,200", "Comma-separated numbers of concurrent callers.")
		observed = flag.Bool("observed", false, "Send the stack as it serves (observed objects and pods) rather than the first call's request.")
	)
	flag.Parse()
	var conc []int
	for _, s := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("bad -concurrency %q", *levels)
		}
		conc = append(conc, n)
	}

	xr, err := stacks.SeedXR(*xrPath)
	if err != nil {
		return err
	}
	req, err := stacks.Request(xr, stacks.Input())
	if err != nil {
		return err
	}

	addr, err := freeAddress()
	if err != nil {
		return err
	}
	metrics, err := freeAddress()
	if err != nil {
		return err
	}
	srv := exec.Command(*binary, "--insecure", "--address", addr, "--metrics-address", metrics)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return fmt.Errorf("cannot start %s: %w", *binary, err)
	}
	defer func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		_ = srv.Wait()
	}()
	idleRSS := ""

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := fnv1.NewFunctionRunnerServiceClient(conn)

	rsp, err := waitReady(client, req)
	if err != nil {
		return err
	}
	idleRSS = procStatus(srv.Process.Pid, "VmRSS")
	if *observed {
		run := func(r *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
			return client.RunFunction(context.Background(), r)
		}
		if req, rsp, err = stacks.Serving(req, run); err != nil {
			return err
		}
	}
	reqSize, rspSize := proto.Size(req), proto.Size(rsp)

	fmt.Printf("gRPC load: %s, request %d B, response %d B, %d calls per level, server idle RSS %s\n\n",
		*xrPath, reqSize, rspSize, *calls, idleRSS)
	fmt.Printf("| %-8s | %9s | %9s | %9s | %15s | %13s |\n", "callers", "calls/s", "p50", "p99", "server CPU/call", "peak RSS")
	fmt.Printf("|%s:|%s:|%s:|%s:|%s:|%s:|\n", strings.Repeat("-", 9), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 10), strings.Repeat("-", 16), strings.Repeat("-", 14))
	for _, c := range conc {
		// Reset the server's peak RSS, so each level reports its own.
		_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", srv.Process.Pid), []byte("5"), 0)
		if _, err := load(client, req, c, max(*calls/10, c)); err != nil {
			return err
		}
		cpu := procCPU(srv.Process.Pid)
		lat, elapsed, err := timed(client, req, c, *calls)
		if err != nil {
			return err
		}
		perCall := "n/a"
		if cpu >= 0 {
			perCall = ((procCPU(srv.Process.Pid) - cpu) / time.Duration(len(lat))).Round(time.Microsecond).String()
		}
		fmt.Printf("| %-8d | %9.0f | %9s | %9s | %15s | %13s |\n", c, float64(len(lat))/elapsed.Seconds(),
			quantile(lat, 0.50), quantile(lat, 0.99), perCall, procStatus(srv.Process.Pid, "VmHWM"))
	}
	return nil
}

func timed(client fnv1.FunctionRunnerServiceClient, req *fnv1.RunFunctionRequest, callers, calls int) ([]time.Duration, time.Duration, error) {
	start := time.Now()
	lat, err := load(client, req, callers, calls)
	return lat, time.Since(start), err
}

// load makes calls calls from callers goroutines and returns each call's
// latency.
func load(client fnv1.FunctionRunnerServiceClient, req *fnv1.RunFunctionRequest, callers, calls int) ([]time.Duration, error) {
	lat := make([]time.Duration, calls)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for g := range callers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= calls {
					return
				}
				t := time.Now()
				rsp, err := client.RunFunction(context.Background(), req)
				lat[i] = time.Since(t)
				if err == nil && len(rsp.GetDesired().GetResources()) == 0 {
					err = errors.New("response has no desired resources")
				}
				if err != nil {
					errs[g] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return lat, errors.Join(errs...)
}

// waitReady calls the server until it answers.
func waitReady(client fnv1.FunctionRunnerServiceClient, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		rsp, err := client.RunFunction(ctx, req, grpc.WaitForReady(true))
		cancel()
		if err == nil {
			return rsp, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the function did not answer: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func quantile(lat []time.Duration, q float64) string {
	s := slices.Clone(lat)
	slices.Sort(s)
	d := s[min(len(s)-1, int(q*float64(len(s))))]
	return d.Round(time.Microsecond).String()
}

// procCPU is the CPU time a process has used (user and system), from
// /proc/<pid>/stat; -1 when it cannot be read.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// Fields after the command name, which is in parentheses: state is
	// field 3, utime and stime are fields 14 and 15, in clock ticks.
	i := strings.LastIndex(string(b), ") ")
	f := strings.Fields(string(b)[i+1:])
	if i < 0 || len(f) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	const ticks = 100 // USER_HZ: the unit of /proc times on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}

// procStatus reads a field of /proc/<pid>/status, e.g. VmHWM (peak RSS).
func procStatus(pid int, field string) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "n/a"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				return strings.TrimSpace(v)
			}
			return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
		}
	}
	return "n/a"
}
