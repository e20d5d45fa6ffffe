//go:build e2e_crossplane

package crossplane

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/e2e/xp"
)

var (
	xrdGVR         = schema.GroupVersionResource{Group: "apiextensions.crossplane.io", Version: "v2", Resource: "compositeresourcedefinitions"}
	compositionGVR = schema.GroupVersionResource{Group: "apiextensions.crossplane.io", Version: "v1", Resource: "compositions"}
	crdGVR         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	deploymentGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	podGVR         = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	pvcGVR         = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	serviceGVR     = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	clusterRoleGVR = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
)

// e2eTTL is the function's --ttl in the suite (the Compositions set no ttl
// in the Input, so the flag holds, as a DeploymentRuntimeConfig's args would
// set it): how often Crossplane calls the function again for a stack that
// has not changed (realtime compositions requeue after the response's TTL),
// so that pod-level reasons refresh quickly.
const e2eTTL = 5 * time.Second

// readObject reads a one-document YAML file.
func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &unstructured.Unstructured{Object: m}
}

// apply server-side applies objects as the admin.
func apply(t *testing.T, objs ...*unstructured.Unstructured) {
	t.Helper()
	if err := admin.Apply(context.Background(), objs...); err != nil {
		t.Fatal(err)
	}
}

// legacyComposition is composition/legacy/composition.yaml with its
// functionRef naming the Function Crossplane installed for the
// Configuration's dependency (FunctionName), and its adapterSync.image that
// Function's package (pkgRef), as the Configuration's Composition has it:
// docs/operations.md installs the legacy pair by hand next to that Function.
func legacyComposition(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	const path = "../../composition/legacy/composition.yaml"
	c := readObject(t, path)
	steps, _, _ := unstructured.NestedSlice(c.Object, "spec", "pipeline")
	found := 0
	for _, s := range steps {
		step, _ := s.(map[string]any)
		if ref, _, _ := unstructured.NestedString(step, "functionRef", "name"); ref == "function-vllm-stack" {
			if err := unstructured.SetNestedField(step, FunctionName, "functionRef", "name"); err != nil {
				t.Fatal(err)
			}
			if err := unstructured.SetNestedField(step, pkgRef, "input", "adapterSync", "image"); err != nil {
				t.Fatal(err)
			}
			found++
		}
	}
	if found != 1 {
		t.Fatalf("%s: %d pipeline steps run function-vllm-stack, want 1", path, found)
	}
	if err := unstructured.SetNestedSlice(c.Object, steps, "spec", "pipeline"); err != nil {
		t.Fatal(err)
	}
	return c
}

// namespace creates a namespace and waits for its default ServiceAccount.
func namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := context.Background()
	_, err := admin.Core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "namespace "+name+"'s default ServiceAccount", func() (bool, string) {
		_, err := admin.Core.ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return name
}

// eventually polls check every 250 ms until it holds, and fails the test
// with what was last seen when timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, seen := check()
		if ok {
			return
		}
		last = seen
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s; last seen: %s", what, timeout, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// stable waits until check holds at every poll (each 500 ms) for a whole
// window, restarting the window whenever it does not, and fails the test
// if that has not happened by timeout.
func stable(t *testing.T, window, timeout time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var since time.Time
	last, logged := "", time.Now()
	for {
		ok, seen := check()
		if !ok && time.Since(logged) > 30*time.Second {
			t.Logf("%s: waiting; now: %s", what, seen)
			logged = time.Now()
		}
		switch {
		case !ok:
			since, last = time.Time{}, seen
		case since.IsZero():
			since = time.Now()
		case time.Since(since) >= window:
			return
		}
		if time.Now().After(deadline) {
			if !since.IsZero() {
				last = fmt.Sprintf("held for %s only", time.Since(since).Round(time.Millisecond))
			}
			t.Fatalf("%s: did not hold for %s within %s; last seen: %s", what, window, timeout, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// get reads an object; nil when it does not exist.
func get(t *testing.T, gvr schema.GroupVersionResource, ns, name string) *unstructured.Unstructured {
	t.Helper()
	ri := admin.Dynamic.Resource(gvr)
	var u *unstructured.Unstructured
	var err error
	if ns != "" {
		u, err = ri.Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	} else {
		u, err = ri.Get(context.Background(), name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("cannot get %s %s/%s: %v", gvr.Resource, ns, name, err)
	}
	return u
}

// list lists objects in ns by label selector.
func list(t *testing.T, gvr schema.GroupVersionResource, ns, selector string) []unstructured.Unstructured {
	t.Helper()
	l, err := admin.Dynamic.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("cannot list %s in %s: %v", gvr.Resource, ns, err)
	}
	return l.Items
}

// installXRD server-side applies an XRD (client-side apply's
// last-applied annotation would not fit: the XRDs are about 600 KB) and
// waits until it is Established (and Offered, with claims) and the RBAC
// manager has let Crossplane manage its XRs.
func installXRD(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	start := time.Now()
	x := readObject(t, path)
	apply(t, x)
	_, claims, _ := unstructured.NestedMap(x.Object, "spec", "claimNames") // claims: whether it offers claims
	waitXRD(t, x.GetName(), claims)
	logf("XRD %s established in %s", x.GetName(), time.Since(start).Round(100*time.Millisecond))
	return x
}

// waitXRD waits until XRD name is Established (and Offered, with claims)
// and the RBAC manager has let Crossplane manage its XRs.
func waitXRD(t *testing.T, name string, claims bool) {
	t.Helper()
	eventually(t, 2*time.Minute, "XRD "+name+" established", func() (bool, string) {
		u := get(t, xrdGVR, "", name)
		if u == nil {
			return false, "gone"
		}
		ok := xp.Condition(u, "Established") == "True"
		if claims {
			ok = ok && xp.Condition(u, "Offered") == "True"
		}
		return ok, xp.Conditions(u)
	})
	// The RBAC manager's ClusterRole for the XRD's kinds, aggregated to
	// Crossplane's (internal/controller/rbac/definition).
	role := "crossplane:composite:" + name + ":aggregate-to-crossplane"
	eventually(t, time.Minute, "ClusterRole "+role, func() (bool, string) {
		u := get(t, clusterRoleGVR, "", role)
		return u != nil && u.GetLabels()["rbac.crossplane.io/aggregate-to-crossplane"] == "true", fmt.Sprint(u != nil)
	})
}

// uninstallXRD deletes an XRD and waits until Crossplane has removed it and
// the CRDs it generated.
func uninstallXRD(t *testing.T, x *unstructured.Unstructured, crds ...string) {
	t.Helper()
	start := time.Now()
	defer func() { logf("XRD %s uninstalled in %s", x.GetName(), time.Since(start).Round(100*time.Millisecond)) }()
	ctx := context.Background()
	if err := admin.Dynamic.Resource(xrdGVR).Delete(ctx, x.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "XRD "+x.GetName()+" and its CRDs deleted", func() (bool, string) {
		var left []string
		if get(t, xrdGVR, "", x.GetName()) != nil {
			left = append(left, "XRD "+x.GetName())
		}
		for _, c := range crds {
			if get(t, crdGVR, "", c) != nil {
				left = append(left, "CRD "+c)
			}
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
}

// deleteAndWait deletes an object and waits until it is gone.
func deleteAndWait(t *testing.T, u *unstructured.Unstructured, timeout time.Duration) {
	t.Helper()
	ri, err := admin.Resource(u)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, timeout, fmt.Sprintf("%s %s deleted", u.GetKind(), u.GetName()), func() (bool, string) {
		got, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("finalizers %v %s", got.GetFinalizers(), xp.Conditions(got))
	})
}

// poll calls f every 100 ms until the returned stop is called, which waits
// for its last call: what f records is then safe to read without a lock.
// f's context ends with stop.
func poll(f func(ctx context.Context, now time.Time)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			f(ctx, time.Now())
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return func() { cancel(); <-done }
}
