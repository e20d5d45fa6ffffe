package xp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vllm-project/function-vllm-stack/e2e/proc"
)

// Crossplane's package API.
var (
	FunctionGVR         = schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: "functions"}
	FunctionRevisionGVR = schema.GroupVersionResource{Group: "pkg.crossplane.io", Version: "v1", Resource: "functionrevisions"}
)

// labelParentPackage labels a package's revisions with its name.
const labelParentPackage = "pkg.crossplane.io/package"

// A Function is an installed Function package whose runtime runs as a local
// process at the endpoint Crossplane dials.
type Function struct {
	// Name of the Function object.
	Name string
	// Package is its spec.package.
	Package string
	// Revision is the active FunctionRevision's name.
	Revision string
	// Endpoint is the revision's status.endpoint, e.g.
	// dns:///function-vllm-stack.crossplane-system:9443.
	Endpoint string
	// Address is where the function process listens: 127.0.0.1:<port of the
	// endpoint>.
	Address string
	// MetricsURL is the function process's Prometheus endpoint (gRPC server
	// metrics: which RPCs it handled).
	MetricsURL string

	c       *Crossplane
	bin     string
	args    []string
	env     []string
	process *proc.Process
}

// ServeFunction runs the runtime of Function name, installed by hand or by
// Crossplane for a Configuration's dependency: it waits for Crossplane to
// unpack the package into a FunctionRevision with an endpoint and a filled
// TLS server Secret, makes the endpoint's host resolve to 127.0.0.1, and runs
// binary there with that Secret's certificate (the mTLS server certificate a
// runtime pod mounts; its CA, crossplane-root-ca, signed the client
// certificate core presents).
func (c *Crossplane) ServeFunction(ctx context.Context, name, binary string, args ...string) (*Function, error) {
	fn := &Function{Name: name, c: c}

	// The active revision, with the endpoint and TLS Secret the runtime
	// hooks set (internal/controller/pkg/runtime/runtime_function.go).
	var secret string
	if err := poll(ctx, 250*time.Millisecond, c.o.StartTimeout, "an active FunctionRevision of "+name+" with an endpoint", func(ctx context.Context) (bool, string, error) {
		l, err := c.admin.Dynamic.Resource(FunctionRevisionGVR).List(ctx, metav1.ListOptions{LabelSelector: labelParentPackage + "=" + name})
		if err != nil {
			return false, err.Error(), nil
		}
		seen := []string{}
		for _, r := range l.Items {
			state, _, _ := unstructured.NestedString(r.Object, "spec", "desiredState")
			ep, _, _ := unstructured.NestedString(r.Object, "status", "endpoint")
			sec, _, _ := unstructured.NestedString(r.Object, "spec", "tlsServerSecretName")
			seen = append(seen, fmt.Sprintf("%s %s endpoint=%q secret=%q", r.GetName(), state, ep, sec))
			if state == "Active" && ep != "" && sec != "" {
				fn.Revision, fn.Endpoint, secret = r.GetName(), ep, sec
				return true, "", nil
			}
		}
		return false, strings.Join(seen, "; ") + " " + c.functionConditions(ctx, name), nil
	}); err != nil {
		return nil, err
	}
	f, err := c.admin.Dynamic.Resource(FunctionGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	fn.Package, _, _ = unstructured.NestedString(f.Object, "spec", "package")
	u, err := url.Parse(fn.Endpoint)
	if err != nil || u.Scheme != "dns" {
		return nil, fmt.Errorf("FunctionRevision %s: endpoint %q is not dns:///<host>:<port>", fn.Revision, fn.Endpoint)
	}
	host, port, err := net.SplitHostPort(strings.TrimPrefix(u.Path, "/"))
	if err != nil {
		return nil, fmt.Errorf("FunctionRevision %s: endpoint %q: %w", fn.Revision, fn.Endpoint, err)
	}
	if err := c.addHosts(host); err != nil {
		return nil, err
	}
	fn.Address = net.JoinHostPort("127.0.0.1", port)

	certs := filepath.Join(c.dir, "tls", "function-"+name)
	if err := c.writeSecret(ctx, secret, certs, "tls.crt", "tls.key", "ca.crt"); err != nil {
		return nil, err
	}
	mp, err := proc.FreePorts(1)
	if err != nil {
		return nil, err
	}
	c.ports = append(c.ports, mp[0])
	if p, err := strconv.Atoi(port); err == nil {
		c.ports = append(c.ports, p)
	}
	fn.MetricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", mp[0])
	fn.bin = binary
	fn.args = append([]string{
		"--address=" + fn.Address,
		"--tls-server-certs-dir=" + certs,
		"--metrics-address=" + net.JoinHostPort("127.0.0.1", strconv.Itoa(mp[0])),
	}, args...)
	fn.env = []string{"PATH=/usr/bin:/bin", "HOME=" + c.dir}
	if err := fn.Start(ctx); err != nil {
		return nil, err
	}
	// Crossplane resolves the endpoint's host through /etc/hosts.
	if err := poll(ctx, 250*time.Millisecond, c.o.StartTimeout, host+" resolving to 127.0.0.1", func(ctx context.Context) (bool, string, error) {
		addrs, err := net.DefaultResolver.LookupHost(ctx, host)
		if err != nil {
			return false, err.Error(), nil
		}
		return len(addrs) == 1 && addrs[0] == "127.0.0.1", strings.Join(addrs, ","), nil
	}); err != nil {
		return nil, err
	}
	c.o.Logf("function %s (revision %s, endpoint %s) runs at %s", name, fn.Revision, fn.Endpoint, fn.Address)
	return fn, nil
}

// Start runs the function process (again, after Stop) at the same address,
// with the same certificates and flags, and waits until it accepts
// connections. Its log continues; its metrics start from zero.
func (f *Function) Start(ctx context.Context) error {
	if f.process != nil {
		if gone, _ := f.process.Exited(); !gone {
			return fmt.Errorf("function %s is already running (pid %d)", f.Name, f.Pid())
		}
	}
	p, err := f.c.procs.start(f.c.dir, "function-"+f.Name, f.bin, f.args, f.env)
	if err != nil {
		return err
	}
	f.process = p
	return poll(ctx, 100*time.Millisecond, f.c.o.StartTimeout, "function "+f.Name+" listening on "+f.Address, func(ctx context.Context) (bool, string, error) {
		if gone, msg := p.Exited(); gone {
			return false, "", errors.New(msg)
		}
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", f.Address)
		if err != nil {
			return false, err.Error(), nil
		}
		conn.Close()
		return true, "", nil
	})
}

// Stop ends the function process (SIGTERM, then SIGKILL after 10 seconds),
// as when its pod goes away; Crossplane keeps the FunctionRevision's endpoint
// and dials it in vain until Start. Nothing else listens on its address.
func (f *Function) Stop() error {
	if f.process == nil {
		return nil
	}
	if err := f.process.Stop(10 * time.Second); err != nil {
		return err
	}
	f.c.procs.remove(f.process)
	return nil
}

// Pid is the function process's id.
func (f *Function) Pid() int { return f.process.Pid() }

// Log returns the last lines of the function process's log.
func (f *Function) Log(lines int) string { return f.process.Tail(lines) }

// Metrics returns the function process's Prometheus metrics.
func (f *Function) Metrics(ctx context.Context) (string, error) {
	var b []byte
	err := httpGet(ctx, f.MetricsURL, &b)
	return string(b), err
}

// Metrics returns core's Prometheus metrics.
func (c *Crossplane) Metrics(ctx context.Context) (string, error) {
	var b []byte
	err := httpGet(ctx, c.MetricsURL(), &b)
	return string(b), err
}

func (c *Crossplane) functionConditions(ctx context.Context, name string) string {
	u, err := c.admin.Dynamic.Resource(FunctionGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	return Conditions(u)
}

// Conditions formats an object's status conditions, e.g. for a message.
func Conditions(u *unstructured.Unstructured) string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []string
	for _, c := range cs {
		m, _ := c.(map[string]any)
		s := fmt.Sprintf("%v=%v", m["type"], m["status"])
		if r, _ := m["reason"].(string); r != "" {
			s += " " + r
		}
		if msg, _ := m["message"].(string); msg != "" {
			s += ": " + msg
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// Condition returns the status of the condition of type t ("" if absent).
func Condition(u *unstructured.Unstructured, t string) string {
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range cs {
		if m, _ := c.(map[string]any); m["type"] == t {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}
