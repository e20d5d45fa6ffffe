package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	autoscalingv2client "k8s.io/client-go/kubernetes/typed/autoscaling/v2"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	policyv1client "k8s.io/client-go/kubernetes/typed/policy/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/vllm-project/function-vllm-stack/e2e/cluster"
	"github.com/vllm-project/function-vllm-stack/e2e/proc"
)

// The control plane every test shares, started by TestMain.
var (
	cp     *cluster.Cluster
	kube   kubeClients
	mapper *restmapper.DeferredDiscoveryRESTMapper
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) (code int) {
	binDir, err := kubeBinDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "e2e: "+format+"\n", args...)
	}

	ctx := context.Background()
	// Read the upstream CRDs while the control plane starts: on a fresh
	// clone this downloads the pinned modules and builds controller-gen.
	type loaded struct {
		crds []loadedCRD
		err  error
	}
	upstream := make(chan loaded, 1)
	loadCtx, cancelLoad := context.WithCancel(ctx)
	defer cancelLoad()
	go func() {
		start := time.Now()
		crds, err := loadUpstreamCRDs(loadCtx)
		if err == nil {
			logf("upstream CRDs read in %s", time.Since(start).Round(100*time.Millisecond))
		}
		upstream <- loaded{crds, err}
	}()

	start := time.Now()
	cp, err = cluster.Start(ctx, cluster.Options{BinDir: binDir, Logf: logf, Scheduler: os.Getenv(kedaInnerEnv) != ""})
	if err != nil {
		logf("cannot start the control plane: %v", err)
		return 1
	}
	logf("control plane from %s started in %s", binDir, time.Since(start).Round(100*time.Millisecond))
	ports, pids := cp.Ports(), cp.Pids()

	// Stop on Ctrl-C or SIGTERM too, not only when the tests end. (If the
	// test binary dies otherwise, e.g. on -timeout, the processes get SIGKILL
	// through Pdeathsig and hack/e2e.sh removes the temporary directory.)
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigc
		logf("%v: stopping the control plane", s)
		if err := cp.Stop(); err != nil {
			logf("stopping the control plane: %v", err)
		}
		os.Exit(2)
	}()

	defer func() {
		if code != 0 {
			cp.WriteLogs(os.Stderr, 40)
		}
		if err := cp.Stop(); err != nil {
			logf("cannot stop the control plane: %v", err)
			code = 1
		}
		if err := proc.CheckGone(pids, ports); err != nil {
			logf("%v", err)
			code = 1
		} else {
			logf("control plane stopped: processes %v gone, ports %v free", pids, ports)
		}
	}()

	if err := setup(ctx); err != nil {
		logf("setup: %v", err)
		return 1
	}
	u := <-upstream
	if u.err != nil {
		logf("cannot read the upstream CRDs: %v", u.err)
		return 1
	}
	for _, c := range u.crds {
		if err := createCRD(ctx, c.crd, "e2e-admin"); err != nil {
			logf("the API server rejects the upstream CRD %v: %v", c, err)
			return 1
		}
		logf("installed %v", c)
	}
	mapper.Reset()
	return m.Run()
}

// kubeBinDir is $KUBE_BIN_DIR, or the control plane tools/kube/build.sh builds
// for the version pinned in ../tools/kube/go.mod.
func kubeBinDir() (string, error) {
	if d := os.Getenv("KUBE_BIN_DIR"); d != "" {
		return d, nil
	}
	f, err := os.Open("../tools/kube/go.mod")
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fs := strings.Fields(s.Text()); len(fs) == 2 && fs[0] == "k8s.io/kubernetes" {
			return filepath.Abs(filepath.Join("..", ".tools", "kube", fs[1]))
		}
		if fs := strings.Fields(s.Text()); len(fs) == 3 && fs[0] == "require" && fs[1] == "k8s.io/kubernetes" {
			return filepath.Abs(filepath.Join("..", ".tools", "kube", fs[2]))
		}
	}
	return "", errors.New("cannot find k8s.io/kubernetes's version in ../tools/kube/go.mod")
}

// setup makes the clients and installs the XRs' CRDs. (runMain then installs
// the upstream CRDs of the composed kinds Kubernetes does not build in.)
func setup(ctx context.Context) error {
	var err error
	if kube, err = newKubeClients(cp.Config()); err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config())
	if err != nil {
		return err
	}
	mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	if err := installXRCRDs(ctx); err != nil {
		return fmt.Errorf("cannot install the XR CRDs: %w", err)
	}
	mapper.Reset()
	return nil
}

// client returns a dynamic client for cfg that records the API server's
// warnings (a clean object draws none).
func client(t *testing.T, cfg *rest.Config) (dynamic.Interface, *warnings) {
	t.Helper()
	w := &warnings{}
	c := rest.CopyConfig(cfg)
	c.WarningHandler = w
	d, err := dynamic.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	return d, w
}

// kubeClients are the typed clients the tests use, for the admin. (The typed
// clients of a few API groups compile much faster than the whole clientset.)
type kubeClients struct {
	core        corev1client.CoreV1Interface
	apps        appsv1client.AppsV1Interface
	rbac        rbacv1client.RbacV1Interface
	autoscaling autoscalingv2client.AutoscalingV2Interface
	policy      policyv1client.PolicyV1Interface
}

func newKubeClients(cfg *rest.Config) (kubeClients, error) {
	var k kubeClients
	var err error
	if k.core, err = corev1client.NewForConfig(cfg); err != nil {
		return k, err
	}
	if k.apps, err = appsv1client.NewForConfig(cfg); err != nil {
		return k, err
	}
	if k.autoscaling, err = autoscalingv2client.NewForConfig(cfg); err != nil {
		return k, err
	}
	if k.policy, err = policyv1client.NewForConfig(cfg); err != nil {
		return k, err
	}
	k.rbac, err = rbacv1client.NewForConfig(cfg)
	return k, err
}

func (k kubeClients) CoreV1() corev1client.CoreV1Interface { return k.core }
func (k kubeClients) AppsV1() appsv1client.AppsV1Interface { return k.apps }
func (k kubeClients) RbacV1() rbacv1client.RbacV1Interface { return k.rbac }
func (k kubeClients) AutoscalingV2() autoscalingv2client.AutoscalingV2Interface {
	return k.autoscaling
}
func (k kubeClients) PolicyV1() policyv1client.PolicyV1Interface { return k.policy }
