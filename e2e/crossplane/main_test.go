//go:build e2e_crossplane

package crossplane

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/vllm-project/function-vllm-stack/e2e/cluster"
	"github.com/vllm-project/function-vllm-stack/e2e/kubelet"
	"github.com/vllm-project/function-vllm-stack/e2e/proc"
	"github.com/vllm-project/function-vllm-stack/e2e/xp"
)

// ConfigurationName is the Configuration's name in README's install.
const ConfigurationName = "function-vllm-stack"

// The registry the packages are pushed to (XPKG_REGISTRY, which `make
// e2e-crossplane` built the Configuration's dependsOn with), and the name of
// the Function Crossplane installs for that dependency: the reference's path
// as a DNS label (docs/operations.md), e.g. vllm-project-function-vllm-stack.
// The Compositions reference it.
var (
	xpkgRegistry string
	FunctionName string
)

// nodeGPUs is the number of nvidia.com/gpu of the node: every example stack
// at once (73 GPUs, wide-ep.yaml's 2x8 among them) next to the other
// scenarios, or the benchmark's 50 seed stacks. Its CPU, memory and pod
// capacity are as large.
const nodeGPUs = 96

// nodeLabels are the labels the example stacks' node selectors ask for:
// kvaware.yaml's router (node-pool: cpu), production.yaml's engines (the GPU
// product). The one node is both pools.
var nodeLabels = map[string]string{
	"node-pool":              "cpu",
	"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
}

// The environment every test shares, started by TestMain.
var (
	cp    *cluster.Cluster
	node  *kubelet.Kubelet
	prov  *xp.Provisioner
	gw    *xp.Gateway
	keda  *xp.KEDA
	reg   *xp.Registry
	xpc   *xp.Crossplane
	fn    *xp.Function
	admin *xp.Kube
	// pkgRef is the Function package's reference in the registry,
	// configRef the Configuration's.
	pkgRef, configRef string
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "e2e-crossplane: %s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// env returns the value of a variable hack/e2e-crossplane.sh sets.
func env(name string) (string, error) {
	v := os.Getenv(name)
	if v == "" {
		return "", fmt.Errorf("%s is not set: run the suite with hack/e2e-crossplane.sh (make e2e-crossplane)", name)
	}
	return v, nil
}

func runMain(m *testing.M) (code int) {
	if err := xp.CheckIsolated(); err != nil {
		logf("%v", err)
		return 1
	}
	vars := map[string]string{}
	for _, v := range []string{"KUBE_BIN_DIR", "CROSSPLANE_CORE", "CROSSPLANE_CRDS", "XPKG", "CONFIG_XPKG", "XPKG_REGISTRY", "VERSION", "LWS_MANAGER", "LWS_CRD", "HTTPROUTE_CRD", "INFERENCEPOOL_CRD", "OBJECTIVE_CRD", "LLMD_OBJECTIVE_CRD", "SCALEDOBJECT_CRD"} {
		val, err := env(v)
		if err != nil {
			logf("%v", err)
			return 1
		}
		vars[v] = val
	}
	tmp, err := os.MkdirTemp("", "xp-e2e-")
	if err != nil {
		logf("%v", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var pids, ports []int
	stop := func() error {
		var errs []error
		if xpc != nil {
			pids, ports = append(pids, xpc.Pids()...), append(ports, xpc.Ports()...)
			errs = append(errs, xpc.Stop())
		}
		if reg != nil {
			ports = append(ports, reg.Port())
			errs = append(errs, reg.Stop())
		}
		if prov != nil {
			prov.Stop()
		}
		if gw != nil {
			gw.Stop()
		}
		if keda != nil {
			keda.Stop()
		}
		if node != nil {
			node.Stop()
		}
		if cp != nil {
			pids, ports = append(pids, cp.Pids()...), append(ports, cp.Ports()...)
			errs = append(errs, cp.Stop())
		}
		errs = append(errs, os.RemoveAll(tmp))
		return errors.Join(errs...)
	}
	// Stop on Ctrl-C or SIGTERM too. (If the test binary dies otherwise, its
	// processes get SIGKILL through Pdeathsig.)
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigc
		logf("%v: stopping everything", s)
		cancel()
		if err := stop(); err != nil {
			logf("stopping: %v", err)
		}
		os.Exit(2)
	}()
	defer func() {
		if code != 0 {
			if xpc != nil {
				xpc.WriteLogs(os.Stderr, 60)
			}
			if cp != nil {
				cp.WriteLogs(os.Stderr, 20)
			}
		}
		if err := stop(); err != nil {
			logf("cannot stop everything: %v", err)
			code = 1
		}
		if err := proc.CheckGone(pids, ports); err != nil {
			logf("%v", err)
			code = 1
		} else {
			logf("stopped: processes %v gone, ports %v free", pids, ports)
		}
	}()

	if err := setup(ctx, tmp, vars); err != nil {
		logf("setup: %v", err)
		return 1
	}
	wctx, stopWatch := context.WithCancel(ctx)
	go watchProcesses(wctx)
	code = m.Run()
	stopWatch()
	if code != 0 {
		return code
	}
	return checkLogs()
}

// checkLogs fails the run if Crossplane or its RBAC manager was denied
// anything by the API server during it: every permission they need must come
// from the chart's RBAC, the RBAC manager's ClusterRoles and
// composition/clusterrole.yaml.
func checkLogs() int {
	code := 0
	for _, p := range []string{"crossplane", "crossplane-rbac-manager"} {
		l, err := xpc.Log(p)
		if err != nil {
			logf("%v", err)
			return 1
		}
		for _, line := range strings.Split(l, "\n") {
			if strings.Contains(strings.ToLower(line), "forbidden") {
				logf("FAIL: %s was denied: %s", p, line)
				code = 1
			}
		}
	}
	return code
}

// watchProcesses reports a process of the environment that ends while the
// tests run.
func watchProcesses(ctx context.Context) {
	seen := map[int]bool{}
	for ctx.Err() == nil {
		for _, pid := range append(cp.Pids(), xpc.Pids()...) {
			if !seen[pid] && proc.Gone(pid) {
				seen[pid] = true
				logf("process %d has ended", pid)
			}
		}
		time.Sleep(time.Second)
	}
}

func setup(ctx context.Context, tmp string, vars map[string]string) error {
	start := time.Now()
	var err error
	cp, err = cluster.Start(ctx, cluster.Options{BinDir: vars["KUBE_BIN_DIR"], Scheduler: true, Logf: logf, TempDir: tmp})
	if err != nil {
		return fmt.Errorf("cannot start the control plane: %w", err)
	}
	logf("control plane started in %s", time.Since(start).Round(100*time.Millisecond))
	if admin, err = xp.NewKube(cp.Config()); err != nil {
		return err
	}
	if node, err = kubelet.Start(ctx, cp.Config(), kubelet.Options{
		TempDir: tmp, Logf: logf,
		Capacity: corev1.ResourceList{
			kubelet.GPU:           *resource.NewQuantity(nodeGPUs, resource.DecimalSI),
			corev1.ResourceCPU:    resource.MustParse("1024"),
			corev1.ResourceMemory: resource.MustParse("16Ti"),
			corev1.ResourcePods:   resource.MustParse("1000"),
		},
		Labels: nodeLabels,
	}); err != nil {
		return fmt.Errorf("cannot start the kubelet stand-in: %w", err)
	}
	prov = xp.StartProvisioner(ctx, admin.Core, node.NodeName(), logf)

	// The packages, from a registry on 127.0.0.1 at the host the
	// Configuration's dependsOn names.
	xpkgRegistry = vars["XPKG_REGISTRY"]
	host, path, ok := strings.Cut(xpkgRegistry, "/")
	if !ok || !strings.HasPrefix(host, "127.0.0.1:") {
		return fmt.Errorf("XPKG_REGISTRY=%q: want 127.0.0.1:<port>/<path>, a registry the tests can serve", xpkgRegistry)
	}
	FunctionName = dnsLabel(path + "/function-vllm-stack")
	if reg, err = xp.StartRegistry(host, logf); err != nil {
		return err
	}
	for _, p := range []struct {
		file, repo string
		ref        *string
	}{
		{vars["XPKG"], "function-vllm-stack", &pkgRef},
		{vars["CONFIG_XPKG"], "function-vllm-stack-configuration", &configRef},
	} {
		ref, d, err := reg.Push(ctx, p.file, path+"/"+p.repo, vars["VERSION"])
		if err != nil {
			return err
		}
		*p.ref = ref
		logf("pushed %s as %s (%s)", p.file, ref, d)
	}
	// The function binary the package's runtime image carries.
	fnBin := filepath.Join(tmp, "function")
	if err := xp.ExtractFile(vars["XPKG"], "function", fnBin); err != nil {
		return err
	}
	ttl, err := functionTTL()
	if err != nil {
		return err
	}

	xpc, err = xp.Start(ctx, xp.Options{
		Binary:  vars["CROSSPLANE_CORE"],
		CRDs:    vars["CROSSPLANE_CRDS"],
		Admin:   cp.Config(),
		TempDir: tmp,
		Logf:    logf,
		// Its debug log tells what it was denied (checkLogs); the benchmark
		// measures Crossplane as it runs by default.
		Debug:  !quiet(),
		LogDir: os.Getenv("E2E_LOG_DIR"),
	})
	if err != nil {
		return fmt.Errorf("cannot start Crossplane: %w", err)
	}
	// Which release this run tests (make e2e-crossplane: the newest,
	// e2e-crossplane-oldest: the oldest the packages claim).
	if out, err := exec.Command(vars["CROSSPLANE_CORE"], "--version").Output(); err == nil {
		logf("Crossplane core %s", strings.TrimSpace(string(out)))
	}
	// README's install: the ClusterRole, the Configuration (Crossplane
	// installs its XRD and Composition, and the Function it depends on from
	// the same registry), then stacks.
	if err := applyFile(ctx, "../../composition/clusterrole.yaml"); err != nil {
		return err
	}
	if err := xpc.ApplyConfiguration(ctx, ConfigurationName, configRef); err != nil {
		return err
	}
	// LeaderWorkerSet, for multi-node stacks: its CRD, webhooks and manager.
	if err := xpc.StartLWS(ctx, vars["LWS_MANAGER"], vars["LWS_CRD"]); err != nil {
		return fmt.Errorf("cannot start LeaderWorkerSet: %w", err)
	}
	logf("LeaderWorkerSet's manager is ready")
	// The Gateway API Inference Extension, for stacks on it: the HTTPRoute
	// and InferencePool CRDs, and both groups' InferenceObjective CRDs (no
	// gateway controller: the Gateway stand-in plays its part in the
	// namespaces a test names).
	for _, v := range []string{"HTTPROUTE_CRD", "INFERENCEPOOL_CRD", "OBJECTIVE_CRD", "LLMD_OBJECTIVE_CRD"} {
		if err := admin.InstallCRD(ctx, vars[v]); err != nil {
			return fmt.Errorf("cannot install %s: %w", vars[v], err)
		}
	}
	gw = xp.StartGateway(ctx, admin, logf)
	// KEDA's ScaledObject CRD, for stacks with scaleToZero (no KEDA
	// operator: the KEDA stand-in scales their Deployments in the
	// namespaces a test names).
	if err := admin.InstallCRD(ctx, vars["SCALEDOBJECT_CRD"]); err != nil {
		return fmt.Errorf("cannot install %s: %w", vars["SCALEDOBJECT_CRD"], err)
	}
	keda = xp.StartKEDA(ctx, admin, logf)
	// The Function's runtime, as its Deployment would run it (with
	// --ttl, as a DeploymentRuntimeConfig's args would).
	fnArgs := []string{"--ttl=" + ttl.String()}
	if !quiet() {
		fnArgs = append(fnArgs, "--debug")
	}
	if fn, err = xpc.ServeFunction(ctx, FunctionName, fnBin, fnArgs...); err != nil {
		return fmt.Errorf("cannot run the function: %w", err)
	}
	if err := xpc.WaitHealthy(ctx, xp.FunctionGVR, FunctionName); err != nil {
		return err
	}
	if err := xpc.WaitHealthy(ctx, xp.ConfigurationGVR, ConfigurationName); err != nil {
		return err
	}
	logf("set up in %s", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// dnsLabel is crossplane-runtime's xpkg.ToDNSLabel (pkg/xpkg/name.go,
// v2.3), with which Crossplane names the package it installs for a
// dependency after the reference's repository: a-z and 0-9 kept, '.', '/',
// ':' and '-' kept as '-' except at the first, 63rd and last byte, the rest
// dropped, cut after the 63rd byte, '-' trimmed at both ends.
func dnsLabel(s string) string {
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
		}
		if (c == '.' || c == '/' || c == ':' || c == '-') && i != 0 && i != 62 && i != len(s)-1 {
			b.WriteByte('-')
		}
		if i == 62 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

func applyFile(ctx context.Context, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return admin.ApplyYAML(ctx, b)
}

// metric sums the samples of a Prometheus counter whose labels include
// every given label (text exposition format).
func metric(text, name string, labels map[string]string) float64 {
	var sum float64
	s := bufio.NewScanner(strings.NewReader(text))
	s.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for k, v := range labels {
			if !strings.Contains(line, fmt.Sprintf("%s=%q", k, v)) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			sum += v
		}
	}
	return sum
}
