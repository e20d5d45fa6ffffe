// Package xp runs real Crossplane core and its RBAC manager as processes
// against a test control plane (e2e/cluster), under their own
// ServiceAccounts with the Helm chart's RBAC, serves Crossplane packages
// from an in-process OCI registry on 127.0.0.1, installs a Configuration,
// and runs the binary of the Function Crossplane installs for its dependency
// at the endpoint Crossplane dials.
//
// Crossplane's metrics and health servers and the RBAC manager's metrics
// server listen on every interface, so Start refuses to run unless the
// process is in private network and mount namespaces whose only interface is
// loopback (hack/e2e-crossplane.sh runs the suite under `unshare --net
// --mount --fork`). The Function's Service name is made to resolve to
// 127.0.0.1 by bind-mounting a hosts file over /etc/hosts in that mount
// namespace (Crossplane is a CGO-free Go binary: its resolver reads
// /etc/hosts).
//
// Every process gets its own process group and SIGKILL if the test binary
// dies (Pdeathsig); Stop ends them all and removes the temporary directory.
package xp

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/vllm-project/function-vllm-stack/e2e/proc"
)

// Names of a default Helm install of Crossplane (release crossplane in
// crossplane-system; cluster/charts/crossplane of crossplane/crossplane/v2).
const (
	Namespace             = "crossplane-system"
	ServiceAccount        = "crossplane"
	RBACManagerSA         = "rbac-manager"
	RootCASecret          = "crossplane-root-ca"
	TLSServerSecret       = "crossplane-tls-server"
	TLSClientSecret       = "crossplane-tls-client"
	ProviderClusterRole   = "crossplane:allowed-provider-permissions"
	CrossplaneClusterRole = "crossplane"
)

// The chart's RBAC, as plain YAML (see the files for their sources).
var (
	//go:embed manifests/crossplane.yaml
	crossplaneManifests []byte
	//go:embed manifests/rbac-manager.yaml
	rbacManagerManifests []byte
)

// Options configure Start.
type Options struct {
	// Binary is the crossplane binary (cmd/crossplane of
	// github.com/crossplane/crossplane/v2, `make tools-v2`).
	Binary string
	// CRDs is the directory of Crossplane's core CRDs: cluster/crds of the
	// same module version (the image has them at /crds).
	CRDs string
	// Admin is a client config with every permission, used to install the
	// RBAC, request the ServiceAccounts' tokens and read Secrets.
	Admin *rest.Config
	// TempDir is where the temporary directory is made (default os.TempDir()).
	TempDir string
	// Logf reports progress; nil is silent.
	Logf func(format string, args ...any)
	// StartTimeout bounds each step of the start. Default 2 minutes.
	StartTimeout time.Duration
	// Debug runs Crossplane with --debug.
	Debug bool
	// LogDir, if set, receives a copy of every process's log on Stop.
	LogDir string
}

// Crossplane is a running Crossplane core and RBAC manager.
type Crossplane struct {
	o     Options
	dir   string
	admin *Kube
	procs procs
	ports []int

	// SA is Crossplane's own identity (crossplane-system/crossplane), e.g.
	// to check what it may do.
	SA *rest.Config

	metricsPort int
	readyz      string
	coreArgs    []string
	coreEnv     []string
	hostsFile   string
	hosts       []string
	unmount     func() error
}

// Start installs the chart's RBAC, runs `crossplane core init` (once more if
// it fails for a kind it installed itself), `crossplane rbac init`, then
// `crossplane rbac start` and `crossplane core start`, and waits until core
// reports ready. On error everything started is stopped.
func Start(ctx context.Context, o Options) (_ *Crossplane, err error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
	}
	if err := CheckIsolated(); err != nil {
		return nil, err
	}
	for _, p := range []string{o.Binary, filepath.Join(o.CRDs, "apiextensions.crossplane.io_compositions.yaml")} {
		if _, err := os.Stat(p); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp(o.TempDir, "crossplane-")
	if err != nil {
		return nil, err
	}
	c := &Crossplane{o: o, dir: dir}
	c.procs.logf = o.Logf
	defer func() {
		if err != nil {
			c.WriteLogs(os.Stderr, 60)
			_ = c.Stop()
		}
	}()

	// /etc/hosts and /etc/resolv.conf of this mount namespace.
	c.hostsFile = filepath.Join(dir, "hosts")
	if c.unmount, err = bindMounts(dir, nil); err != nil {
		return nil, err
	}

	if c.admin, err = NewKube(o.Admin); err != nil {
		return nil, err
	}
	if err := c.admin.ApplyYAML(ctx, crossplaneManifests); err != nil {
		return nil, err
	}
	if err := c.admin.ApplyYAML(ctx, rbacManagerManifests); err != nil {
		return nil, err
	}
	o.Logf("applied the chart's ServiceAccounts, ClusterRoles and Secrets")

	// Identities: tokens of the two ServiceAccounts, as their pods would mount.
	xpCfg, err := c.saConfig(ctx, ServiceAccount)
	if err != nil {
		return nil, err
	}
	c.SA = xpCfg
	rbacCfg, err := c.saConfig(ctx, RBACManagerSA)
	if err != nil {
		return nil, err
	}
	xpKubeconfig := filepath.Join(dir, "crossplane.kubeconfig")
	rbacKubeconfig := filepath.Join(dir, "rbac-manager.kubeconfig")
	if err := os.WriteFile(xpKubeconfig, kubeconfig(xpCfg), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(rbacKubeconfig, kubeconfig(rbacCfg), 0o600); err != nil {
		return nil, err
	}

	// The Crossplane ClusterRole is aggregated by kube-controller-manager:
	// wait for its rules, or init would fail with Forbidden.
	if err := c.waitAggregated(ctx, CrossplaneClusterRole); err != nil {
		return nil, err
	}

	base := []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
	// The env of the chart's init container (templates/deployment.yaml), with
	// webhooks disabled: WEBHOOK_ENABLED, the name v2.0 reads and later
	// releases still read besides ENABLE_WEBHOOKS.
	initEnv := slices.Concat(base, []string{
		"KUBECONFIG=" + xpKubeconfig,
		"POD_NAMESPACE=" + Namespace,
		"POD_SERVICE_ACCOUNT=" + ServiceAccount,
		"WEBHOOK_ENABLED=false",
		"TLS_CA_SECRET_NAME=" + RootCASecret,
		"TLS_SERVER_SECRET_NAME=" + TLSServerSecret,
		"TLS_CLIENT_SECRET_NAME=" + TLSClientSecret,
		"CRDS_PATH=" + o.CRDs,
	})
	if err := c.coreInit(initEnv); err != nil {
		return nil, err
	}

	// The client certificate core presents to functions, which a pod
	// mounts from the Secret init filled.
	clientCerts := filepath.Join(dir, "tls", "client")
	serverCerts := filepath.Join(dir, "tls", "server") // webhooks only; stays empty
	if err := os.MkdirAll(serverCerts, 0o700); err != nil {
		return nil, err
	}
	if err := c.writeSecret(ctx, TLSClientSecret, clientCerts, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, "ca.crt"); err != nil {
		return nil, err
	}

	// The RBAC manager (templates/rbac-manager-deployment.yaml). Its
	// controller-runtime metrics server binds :8080, which the private
	// network namespace confines to lo.
	rbacEnv := slices.Concat(base, []string{"KUBECONFIG=" + rbacKubeconfig, "LEADER_ELECTION=false"})
	if out, err := c.procs.run(dir, "crossplane-rbac-init", o.Binary, []string{"rbac", "init"}, rbacEnv, o.StartTimeout); err != nil {
		return nil, fmt.Errorf("%w; last lines of its log:\n%s", err, out)
	}
	rbacArgs := []string{"rbac", "start", "--provider-clusterrole=" + ProviderClusterRole}
	if o.Debug {
		rbacArgs = append(rbacArgs, "--debug")
	}
	rbacMgr, err := c.procs.start(dir, "crossplane-rbac-manager", o.Binary, rbacArgs, rbacEnv)
	if err != nil {
		return nil, err
	}
	c.ports = append(c.ports, 8080)

	// Core (templates/deployment.yaml's container), with its ports moved off
	// the RBAC manager's 8080.
	ports, err := proc.FreePorts(2)
	if err != nil {
		return nil, err
	}
	c.metricsPort = ports[0]
	healthPort := ports[1]
	c.ports = append(c.ports, ports...)
	coreEnv := slices.Concat(base, []string{
		"KUBECONFIG=" + xpKubeconfig,
		"POD_NAMESPACE=" + Namespace,
		"POD_SERVICE_ACCOUNT=" + ServiceAccount,
		"LEADER_ELECTION=false",
		"WEBHOOK_ENABLED=false",
		"TLS_SERVER_SECRET_NAME=" + TLSServerSecret,
		"TLS_SERVER_CERTS_DIR=" + serverCerts,
		"TLS_CLIENT_SECRET_NAME=" + TLSClientSecret,
		"TLS_CLIENT_CERTS_DIR=" + clientCerts,
		"XPKG_CACHE_DIR=" + filepath.Join(dir, "cache", "xpkg"),
		"XFN_CACHE_DIR=" + filepath.Join(dir, "cache", "xfn"),
	})
	for _, d := range []string{"xpkg", "xfn"} {
		if err := os.MkdirAll(filepath.Join(dir, "cache", d), 0o700); err != nil {
			return nil, err
		}
	}
	coreArgs := []string{"core", "start",
		"--webhook-enabled=false",
		"--leader-election=false",
		"--metrics-port=" + strconv.Itoa(c.metricsPort),
		"--health-probe-port=" + strconv.Itoa(healthPort),
	}
	if o.Debug {
		coreArgs = append(coreArgs, "--debug")
	}
	c.coreArgs, c.coreEnv = coreArgs, coreEnv
	c.readyz = fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort)
	if err := c.startCore(ctx, rbacMgr); err != nil {
		return nil, err
	}
	o.Logf("crossplane core is ready (metrics on :%d, health on :%d)", c.metricsPort, healthPort)
	return c, nil
}

// startCore starts `crossplane core start` and waits until it is ready.
func (c *Crossplane) startCore(ctx context.Context, others ...*proc.Process) error {
	core, err := c.procs.start(c.dir, "crossplane", c.o.Binary, c.coreArgs, c.coreEnv)
	if err != nil {
		return err
	}
	return poll(ctx, 250*time.Millisecond, c.o.StartTimeout, "crossplane core ready", func(ctx context.Context) (bool, string, error) {
		for _, p := range append(others, core) {
			if gone, msg := p.Exited(); gone {
				return false, "", errors.New(msg)
			}
		}
		err := httpGet(ctx, c.readyz, nil)
		return err == nil, fmt.Sprint(err), nil
	})
}

// RestartCore stops Crossplane core (SIGTERM, as when its pod is deleted)
// and starts it again, with empty caches; its log continues.
func (c *Crossplane) RestartCore(ctx context.Context) error {
	p := c.procs.find("crossplane")
	if p == nil {
		return errors.New("crossplane core is not running")
	}
	if err := p.Stop(30 * time.Second); err != nil {
		return err
	}
	c.procs.remove(p)
	if err := c.startCore(ctx); err != nil {
		return err
	}
	c.o.Logf("crossplane core restarted")
	return nil
}

// coreInit runs `crossplane core init`. On a fresh cluster its first run
// fails: its client's REST mapper is read before it installs the Lock CRD,
// so applying the Lock finds "no matches for kind Lock". Once more is enough.
func (c *Crossplane) coreInit(env []string) error {
	for attempt := 1; ; attempt++ {
		out, err := c.procs.run(c.dir, fmt.Sprintf("crossplane-init-%d", attempt), c.o.Binary, []string{"core", "init"}, env, c.o.StartTimeout)
		if err == nil {
			c.o.Logf("crossplane core init done (attempt %d)", attempt)
			return nil
		}
		if attempt == 1 && strings.Contains(out, `no matches for kind "Lock"`) {
			c.o.Logf("crossplane core init failed for the Lock kind it installs itself, as expected on a fresh cluster; running it once more")
			continue
		}
		return fmt.Errorf("%w; last lines of its log:\n%s", err, out)
	}
}

// saConfig returns a client config that authenticates as the named
// ServiceAccount of crossplane-system with a TokenRequest token.
func (c *Crossplane) saConfig(ctx context.Context, sa string) (*rest.Config, error) {
	tok, err := serviceAccountToken(ctx, c.admin.Core, Namespace, sa, 12*time.Hour)
	if err != nil {
		return nil, err
	}
	cfg := rest.AnonymousClientConfig(c.o.Admin)
	cfg.BearerToken = tok
	cfg.UserAgent = sa
	return cfg, nil
}

// waitAggregated waits until kube-controller-manager has filled the
// aggregated ClusterRole's rules.
func (c *Crossplane) waitAggregated(ctx context.Context, name string) error {
	gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	return poll(ctx, 200*time.Millisecond, c.o.StartTimeout, "ClusterRole "+name+" aggregated", func(ctx context.Context) (bool, string, error) {
		u, err := c.admin.Dynamic.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		rules, _, _ := unstructured.NestedSlice(u.Object, "rules")
		return len(rules) > 0, fmt.Sprintf("%d rules", len(rules)), nil
	})
}

// writeSecret writes the keys of Secret crossplane-system/name into dir, as
// a pod's Secret volume would, once they are all filled.
func (c *Crossplane) writeSecret(ctx context.Context, name, dir string, keys ...string) error {
	var s *corev1.Secret
	if err := poll(ctx, 250*time.Millisecond, c.o.StartTimeout, "Secret "+Namespace+"/"+name+" filled", func(ctx context.Context) (bool, string, error) {
		var err error
		if s, err = c.admin.Core.Secrets(Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err.Error(), nil
		}
		for _, k := range keys {
			if len(s.Data[k]) == 0 {
				return false, "no " + k, nil
			}
		}
		return true, "", nil
	}); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, k := range keys {
		if err := os.WriteFile(filepath.Join(dir, k), s.Data[k], 0o600); err != nil {
			return err
		}
	}
	return nil
}

// addHosts makes names resolve to 127.0.0.1: the hosts file bind-mounted over
// /etc/hosts is rewritten in place (Go's resolver rereads it when it changes,
// within 5 seconds).
func (c *Crossplane) addHosts(names ...string) error {
	c.hosts = append(c.hosts, names...)
	f, err := os.OpenFile(c.hostsFile, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "127.0.0.1 localhost\n::1 localhost\n127.0.0.1 %s\n", strings.Join(c.hosts, " "))
	return errors.Join(err, f.Close())
}

// MetricsURL is the address of core's Prometheus metrics.
func (c *Crossplane) MetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", c.metricsPort)
}

// Pid returns the process id of the named process (crossplane,
// crossplane-rbac-manager, function-<name>), 0 if it is not running.
func (c *Crossplane) Pid(name string) int {
	if p := c.procs.find(name); p != nil {
		return p.Pid()
	}
	return 0
}

// Pids returns the process ids of every process still running.
func (c *Crossplane) Pids() []int { return c.procs.pids() }

// Ports returns the TCP ports the processes listen on.
func (c *Crossplane) Ports() []int { return append([]int(nil), c.ports...) }

// Log returns the whole log of the named process (crossplane,
// crossplane-rbac-manager, function-<name>) while it is tracked.
func (c *Crossplane) Log(name string) (string, error) {
	p := c.procs.find(name)
	if p == nil {
		return "", fmt.Errorf("no process %s", name)
	}
	b, err := os.ReadFile(p.LogPath())
	return string(b), err
}

// WriteLogs writes the last lines of each process's log to w.
func (c *Crossplane) WriteLogs(w io.Writer, lines int) { c.procs.writeLogs(w, lines) }

// Stop ends every process (SIGTERM, then SIGKILL after 10 seconds), undoes
// the bind mounts and removes the temporary directory. It is safe to call
// more than once.
func (c *Crossplane) Stop() error {
	errs := []error{c.procs.stopAll()}
	if c.unmount != nil {
		errs = append(errs, c.unmount())
		c.unmount = nil
	}
	if c.dir != "" && c.o.LogDir != "" {
		logs, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
		for _, l := range logs {
			b, err := os.ReadFile(l)
			if err == nil {
				err = os.WriteFile(filepath.Join(c.o.LogDir, filepath.Base(l)), b, 0o644)
			}
			errs = append(errs, err)
		}
	}
	if c.dir != "" {
		errs = append(errs, os.RemoveAll(c.dir))
		c.dir = ""
	}
	return errors.Join(errs...)
}

func httpGet(ctx context.Context, url string, body *[]byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	rsp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer rsp.Body.Close()
	b, err := io.ReadAll(rsp.Body)
	if err != nil {
		return err
	}
	if rsp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, rsp.Status)
	}
	if body != nil {
		*body = b
	}
	return nil
}
