// Package cluster runs a throwaway Kubernetes control plane for tests: etcd,
// kube-apiserver, kube-controller-manager and, optionally, kube-scheduler (no
// nodes) on free 127.0.0.1 ports, with generated certificates, static bearer
// tokens and RBAC.
//
// Every process runs in its own process group and gets SIGKILL if the test
// binary dies (Pdeathsig); Stop ends them all, waits for them and removes the
// temporary directory, also after a failed start.
package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/vllm-project/function-vllm-stack/e2e/proc"
)

// Names of the binaries in Options.BinDir.
const (
	Etcd              = "etcd"
	APIServer         = "kube-apiserver"
	ControllerManager = "kube-controller-manager"
	Scheduler         = "kube-scheduler" // only with Options.Scheduler
)

// Users of the static token file. Admin is in system:masters; so is the
// controller manager, which runs every controller with its own credentials
// (--use-service-account-credentials=false). The scheduler is not: the
// bootstrap RBAC policy binds its user to the ClusterRoles system:kube-scheduler
// and system:volume-scheduler, as in a real cluster.
const (
	AdminUser             = "e2e-admin"
	ControllerManagerUser = "system:kube-controller-manager"
	SchedulerUser         = "system:kube-scheduler"
)

// ServiceAccountIssuer is the issuer (and audience) of service-account tokens.
const ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// Options configure a control plane.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager, and
	// kube-scheduler with Scheduler.
	BinDir string
	// Scheduler also starts kube-scheduler, so that pods get a node (the
	// cluster has none unless a test registers one, e.g. with e2e/kubelet).
	Scheduler bool
	// Logf reports progress; nil is silent.
	Logf func(format string, args ...any)
	// StartTimeout bounds the start of each process. Default 2 minutes.
	StartTimeout time.Duration
	// TempDir is where the control plane's temporary directory (certificates,
	// tokens, etcd's data, logs) is made; default os.TempDir(). Stop removes
	// that directory.
	TempDir string
}

// A Cluster is a running control plane.
type Cluster struct {
	// Host is kube-apiserver's URL, https://127.0.0.1:<port>.
	Host string

	o          Options
	dir        string
	pki        *pki
	adminToken string
	ports      []int

	mu    sync.Mutex
	procs []*proc.Process
}

// Start starts etcd, kube-apiserver, kube-controller-manager and, with
// o.Scheduler, kube-scheduler, and waits until the API server is ready, the
// controllers run and the scheduler is ready. A start that loses a race for a
// free port is retried with new ports.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
	}
	bins := []string{Etcd, APIServer, ControllerManager}
	if o.Scheduler {
		bins = append(bins, Scheduler)
	}
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			return nil, fmt.Errorf("%s not found in %q (build the control plane with tools/kube/build.sh, or run hack/e2e.sh): %w", b, o.BinDir, err)
		}
	}
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var c *Cluster
		c, err = start(ctx, o)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, errPortInUse) {
			return nil, err
		}
		o.Logf("a port was taken while starting (%v); retrying with new ports", err)
	}
	return nil, err
}

var errPortInUse = errors.New("address already in use")

func start(ctx context.Context, o Options) (_ *Cluster, err error) {
	dir, err := os.MkdirTemp(o.TempDir, "vllm-stack-e2e-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{o: o, dir: dir, adminToken: token()}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()

	if c.pki, err = newPKI(dir); err != nil {
		return nil, err
	}
	n := 3
	if o.Scheduler {
		n++ // its secure port, which serves /readyz
	}
	ports, err := proc.FreePorts(n)
	if err != nil {
		return nil, err
	}
	c.ports = ports
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	c.Host = fmt.Sprintf("https://127.0.0.1:%d", apiPort)

	// etcd
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	etcd, err := c.run(Etcd,
		"--name=e2e",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=e2e="+peerURL,
		"--initial-cluster-state=new",
		"--unsafe-no-fsync", // a throwaway store: skip fsync for speed
		"--log-level=warn",
	)
	if err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, etcd, func(ctx context.Context) error {
		return httpOK(ctx, http.DefaultClient, etcdURL+"/health", "")
	}); err != nil {
		return nil, err
	}
	o.Logf("etcd is healthy on %s", etcdURL)

	// kube-apiserver
	kcmToken, schedToken := token(), token()
	users := fmt.Appendf(nil,
		"%s,%s,%s,\"system:masters\"\n%s,%s,%s,\"system:masters\"\n",
		c.adminToken, AdminUser, "e2e-admin-uid", kcmToken, ControllerManagerUser, "e2e-kcm-uid")
	if o.Scheduler {
		users = fmt.Appendf(users, "%s,%s,%s\n", schedToken, SchedulerUser, "e2e-scheduler-uid")
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, users, 0o600); err != nil {
		return nil, err
	}
	api, err := c.run(APIServer,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(apiPort),
		"--tls-cert-file="+c.pki.servingCert,
		"--tls-private-key-file="+c.pki.servingKey,
		"--client-ca-file="+c.pki.caCert,
		"--token-auth-file="+tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer="+ServiceAccountIssuer,
		"--service-account-key-file="+c.pki.saPub,
		"--service-account-signing-key-file="+c.pki.saKey,
		"--service-cluster-ip-range=10.96.0.0/16", // allocated in etcd only; nothing routes to it
		// The API server cannot publish 127.0.0.1 as the endpoint of the
		// kubernetes Service.
		"--endpoint-reconciler-type=none",
		"--allow-privileged=false",
		"--profiling=false",
		"--cert-dir="+filepath.Join(dir, "apiserver-certs"),
	)
	if err != nil {
		return nil, err
	}
	hc, err := c.httpClient()
	if err != nil {
		return nil, err
	}
	if err := c.waitFor(ctx, api, func(ctx context.Context) error {
		return httpOK(ctx, hc, c.Host+"/readyz", c.adminToken)
	}); err != nil {
		return nil, err
	}
	o.Logf("kube-apiserver is ready on %s", c.Host)

	// kube-controller-manager
	kubeconfig := filepath.Join(dir, "kube-controller-manager.kubeconfig")
	if err := os.WriteFile(kubeconfig, c.kubeconfig(kcmToken), 0o600); err != nil {
		return nil, err
	}
	kcm, err := c.run(ControllerManager,
		"--kubeconfig="+kubeconfig,
		"--controllers=*",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+c.pki.saKey,
		"--root-ca-file="+c.pki.caCert,
		"--cluster-signing-cert-file="+c.pki.caCert,
		"--cluster-signing-key-file="+c.pki.caKey,
		"--leader-elect=false",
		// The HPA controller first reconciles an HPA one sync period after
		// it appears (15s by default): tests wait for it to scale a
		// Deployment to minReplicas.
		"--horizontal-pod-autoscaler-sync-period=1s",
		"--secure-port=0", // no health endpoint needed: readiness is the default ServiceAccount below
		"--profiling=false",
	)
	if err != nil {
		return nil, err
	}
	core, err := corev1client.NewForConfig(c.Config())
	if err != nil {
		return nil, err
	}
	// The ServiceAccount controller creates "default" in every namespace.
	if err := c.waitFor(ctx, kcm, func(ctx context.Context) error {
		_, err := core.ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return nil, err
	}
	o.Logf("kube-controller-manager is running")

	if o.Scheduler {
		if err := c.startScheduler(ctx, hc, schedToken, ports[3]); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// startScheduler starts kube-scheduler and waits until its /readyz passes:
// its informers have synced, so it schedules the pods created from then on.
func (c *Cluster) startScheduler(ctx context.Context, hc *http.Client, tok string, port int) error {
	kubeconfig := filepath.Join(c.dir, "kube-scheduler.kubeconfig")
	if err := os.WriteFile(kubeconfig, c.kubeconfig(tok), 0o600); err != nil {
		return err
	}
	sched, err := c.run(Scheduler,
		"--kubeconfig="+kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		// The API server's certificate, for 127.0.0.1 and signed by the CA
		// hc trusts (by default the scheduler would make a self-signed one).
		"--tls-cert-file="+c.pki.servingCert,
		"--tls-private-key-file="+c.pki.servingKey,
		// Without --authentication-kubeconfig and --authorization-kubeconfig
		// it serves only /healthz, /readyz and /livez, to anyone: enough.
		"--profiling=false",
	)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", port)
	if err := c.waitFor(ctx, sched, func(ctx context.Context) error {
		return httpOK(ctx, hc, url, "")
	}); err != nil {
		return err
	}
	c.o.Logf("kube-scheduler is ready on 127.0.0.1:%d", port)
	return nil
}

// Config returns a client config for the admin user (system:masters).
func (c *Cluster) Config() *rest.Config { return c.ConfigForToken(c.adminToken) }

// ConfigForToken returns a client config that authenticates with a bearer
// token, e.g. a service account's from the TokenRequest API.
func (c *Cluster) ConfigForToken(tok string) *rest.Config {
	return &rest.Config{
		Host:            c.Host,
		BearerToken:     tok,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.caPEM},
		QPS:             100,
		Burst:           200,
		UserAgent:       "function-vllm-stack-e2e",
	}
}

// Ports returns the TCP ports the control plane listens on.
func (c *Cluster) Ports() []int { return append([]int(nil), c.ports...) }

// Pids returns the process ids of the control plane.
func (c *Cluster) Pids() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var pids []int
	for _, p := range c.procs {
		pids = append(pids, p.Pid())
	}
	return pids
}

// Stop ends every process (SIGTERM to its process group, SIGKILL after 10
// seconds), waits for them and removes the temporary directory. It is safe
// to call more than once.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- { // scheduler, controller manager, API server, etcd
		if err := procs[i].Stop(10 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WriteLogs writes the last lines of each process's log to w.
func (c *Cluster) WriteLogs(w io.Writer, lines int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.procs {
		fmt.Fprintf(w, "----- last %d lines of %s's log -----\n%s\n", lines, p.Name(), p.Tail(lines))
	}
}

// Kubeconfig is a kubeconfig file's content for the API server with bearer
// token tok, for a binary the tests run as that identity.
func (c *Cluster) Kubeconfig(tok string) []byte { return c.kubeconfig(tok) }

func (c *Cluster) kubeconfig(tok string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: user
  user:
    token: %s
contexts:
- name: e2e
  context: {cluster: e2e, user: user}
current-context: e2e
`, c.Host, c.pki.caCert, tok)
}

func (c *Cluster) httpClient() (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.pki.caPEM) {
		return nil, errors.New("cannot use the generated CA")
	}
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}, nil
}

// run starts one binary, logging to <dir>/<name>.log.
func (c *Cluster) run(name string, args ...string) (*proc.Process, error) {
	p, err := proc.Start(name, filepath.Join(c.o.BinDir, name), filepath.Join(c.dir, name+".log"), c.dir,
		args, []string{"PATH=/usr/bin:/bin", "HOME=" + c.dir})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	c.o.Logf("started %s (pid %d)", name, p.Pid())
	return p, nil
}

// waitFor polls check until it succeeds, p exits, or the start timeout ends.
func (c *Cluster) waitFor(ctx context.Context, p *proc.Process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.o.StartTimeout)
	defer cancel()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		select {
		case <-p.Done():
			tail := p.Tail(40)
			err := fmt.Errorf("%s exited during start (%v); last lines of its log:\n%s", p.Name(), p.Err(), tail)
			if strings.Contains(tail, "address already in use") {
				err = fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s (last check: %v); last lines of its log:\n%s", p.Name(), c.o.StartTimeout, last, p.Tail(40))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func httpOK(ctx context.Context, hc *http.Client, url, bearer string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	rsp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer rsp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(rsp.Body, 4096))
	if rsp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", url, rsp.Status, bytes.TrimSpace(body))
	}
	return nil
}
