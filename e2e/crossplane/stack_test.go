//go:build e2e_crossplane

package crossplane

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	authnv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"

	"github.com/vllm-project/function-vllm-stack/e2e/kubelet"
	"github.com/vllm-project/function-vllm-stack/e2e/xp"
)

// The XRs' kinds (xrd/definition.yaml and xrd/legacy/definition.yaml).
var (
	stackGVR       = schema.GroupVersionResource{Group: "serving.vllm.ai", Version: "v1alpha1", Resource: "productionstacks"}
	legacyStackGVR = schema.GroupVersionResource{Group: "serving.vllm.ai", Version: "v1alpha1", Resource: "xproductionstacks"}
)

// TestCrossplaneIdentity: Crossplane runs as its own ServiceAccount, not as
// a member of system:masters, so every permission it uses comes from the
// chart's RBAC, the RBAC manager's and composition/clusterrole.yaml.
func TestCrossplaneIdentity(t *testing.T) {
	c, err := authnv1client.NewForConfig(xpc.SA)
	if err != nil {
		t.Fatal(err)
	}
	who, err := c.SelfSubjectReviews().Create(context.Background(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := who.Status.UserInfo.Username, "system:serviceaccount:crossplane-system:crossplane"; got != want {
		t.Errorf("Crossplane authenticates as %q, want %q", got, want)
	}
	if slices.Contains(who.Status.UserInfo.Groups, "system:masters") {
		t.Errorf("Crossplane is in system:masters: %v", who.Status.UserInfo.Groups)
	}
}

// TestFunctionPackage: Crossplane installs the package from the registry and
// runs it with its default (Deployment) runtime: a FunctionRevision whose
// endpoint is the headless Service it creates, and a Deployment of the
// package image that the scheduler puts on the node, which the kubelet
// stand-in makes Ready; the Function is then Installed and Healthy.
func TestFunctionPackage(t *testing.T) {
	stable(t, 3*time.Second, 3*time.Minute, "Function "+FunctionName+" Installed and Healthy", func() (bool, string) {
		f := get(t, xp.FunctionGVR, "", FunctionName)
		if f == nil {
			return false, "no Function"
		}
		return xp.Condition(f, "Installed") == "True" && xp.Condition(f, "Healthy") == "True", xp.Conditions(f)
	})
	if want := "dns:///" + FunctionName + ".crossplane-system:9443"; fn.Endpoint != want {
		t.Errorf("FunctionRevision %s: endpoint %q, want %q", fn.Revision, fn.Endpoint, want)
	}
	if fn.Address != "127.0.0.1:9443" {
		t.Errorf("the function process listens on %s, want 127.0.0.1:9443", fn.Address)
	}
	rev := get(t, xp.FunctionRevisionGVR, "", fn.Revision)
	if img, _, _ := unstructured.NestedString(rev.Object, "spec", "image"); img != pkgRef {
		t.Errorf("FunctionRevision %s: image %q, want %q", fn.Revision, img, pkgRef)
	}

	svc := get(t, serviceGVR, xp.Namespace, FunctionName)
	if svc == nil {
		t.Fatalf("no Service %s/%s", xp.Namespace, FunctionName)
	}
	if ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP"); ip != "None" {
		t.Errorf("Service %s: clusterIP %q, want None (headless)", FunctionName, ip)
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if !slices.ContainsFunc(ports, func(p any) bool { m, _ := p.(map[string]any); return fmt.Sprint(m["port"]) == "9443" }) {
		t.Errorf("Service %s: ports %v, want 9443", FunctionName, ports)
	}

	// The runtime Deployment: owned by the revision, running the package
	// image, its pod scheduled onto the node and Ready.
	var deps []unstructured.Unstructured
	for _, d := range list(t, deploymentGVR, xp.Namespace, "") {
		for _, o := range d.GetOwnerReferences() {
			if o.UID == rev.GetUID() {
				deps = append(deps, d)
			}
		}
	}
	if len(deps) != 1 {
		t.Fatalf("%d Deployments in %s owned by FunctionRevision %s, want 1", len(deps), xp.Namespace, fn.Revision)
	}
	d := deps[0]
	cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(cs) == 0 || cs[0].(map[string]any)["image"] != pkgRef {
		t.Errorf("Deployment %s: containers %v, want the image %s", d.GetName(), cs, pkgRef)
	}
	if deploymentCondition(&d, "Available") != "True" {
		t.Errorf("Deployment %s is not Available: %v", d.GetName(), d.Object["status"])
	}
	sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
	pods := list(t, podGVR, xp.Namespace, labelsString(sel))
	if len(pods) == 0 {
		t.Fatalf("no pod of Deployment %s", d.GetName())
	}
	for _, p := range pods {
		if ok, why := podReady(&p); !ok {
			t.Errorf("pod %s: %s", p.GetName(), why)
		}
	}
}

// TestSeedStack is the smoke test: the seed manifest, example/xr.yaml,
// applied in a namespace with the Secret it references, is composed by
// Crossplane calling the function: its engine pods are scheduled onto the
// GPU node and made Ready by the kubelet stand-in, its model cache claim
// binds to a PersistentVolume, and the ProductionStack becomes Ready with the
// status the function reports, and stays so while Crossplane keeps calling
// the function every TTL.
func TestSeedStack(t *testing.T) {
	x := installXRD(t, "../../xrd/definition.yaml")
	t.Cleanup(func() { uninstallXRD(t, x, "productionstacks.serving.vllm.ai") })
	apply(t, e2eComposition(t, "../../composition/composition.yaml"))

	ns := namespace(t, "llm")
	hfSecret(t, ns)
	if _, err := node.CreatePersistentVolumes(context.Background(), 1, "50Gi"); err != nil {
		t.Fatal(err)
	}
	xr := readObject(t, "../../example/xr.yaml")
	xr.SetNamespace(ns)
	apply(t, xr)
	t.Cleanup(func() { deleteAndWait(t, xr, 2*time.Minute) })

	checkStack(t, stackGVR, ns, xr.GetName(), ns, "test-stack")
}

// TestClaim: the seed manifest as a claim (example/claim.yaml) of the legacy
// XRD: Crossplane creates a cluster-scoped XProductionStack for it, the
// function composes the stack in the claim's namespace, and the claim
// becomes Ready. (The two XRDs define the same kind ProductionStack, so
// TestSeedStack removes its XRD first.)
func TestClaim(t *testing.T) {
	// Crossplane keeps the informer and field indexes of a kind for the
	// life of its process: after TestSeedStack's XRD (kind ProductionStack
	// as an XR) is gone, the legacy XRD's claim CRD of the same kind finds
	// them ("indexer conflict", then "Index with name
	// field:compositeResourcesRefs does not exist" on every composed
	// resource change, so the claim's XR would be refreshed only every TTL).
	// A cluster has one of the two XRDs; start core afresh, as a new pod.
	if err := xpc.RestartCore(context.Background()); err != nil {
		t.Fatal(err)
	}
	x := installXRD(t, "../../xrd/legacy/definition.yaml")
	t.Cleanup(func() {
		uninstallXRD(t, x, "xproductionstacks.serving.vllm.ai", "productionstacks.serving.vllm.ai")
	})
	apply(t, e2eComposition(t, "../../composition/legacy/composition.yaml"))

	claim := readObject(t, "../../example/claim.yaml")
	ns := namespace(t, claim.GetNamespace())
	hfSecret(t, ns)
	if _, err := node.CreatePersistentVolumes(context.Background(), 1, "50Gi"); err != nil {
		t.Fatal(err)
	}
	apply(t, claim)
	t.Cleanup(func() { deleteAndWait(t, claim, 2*time.Minute) })

	// The claim's XR.
	var xrName string
	eventually(t, time.Minute, "claim bound to an XR", func() (bool, string) {
		c := get(t, stackGVR, ns, claim.GetName())
		xrName, _, _ = unstructured.NestedString(c.Object, "spec", "resourceRef", "name")
		return xrName != "", xp.Conditions(c)
	})
	checkStack(t, legacyStackGVR, "", xrName, ns, claim.GetName())
	stable(t, 2*e2eTTL, 2*time.Minute, "claim Ready", func() (bool, string) {
		c := get(t, stackGVR, ns, claim.GetName())
		return xp.Condition(c, "Ready") == "True" && xp.Condition(c, "Synced") == "True", xp.Conditions(c)
	})
}

// checkStack waits until the XR (ns/name of gvr) is Ready and Synced with
// the function's status, its composed objects exist in stackNS for stack
// name stack, the engine's and router's pods are Ready on the node and the
// claim is Bound, all at once for two TTLs, while the function keeps
// answering Crossplane's calls.
func checkStack(t *testing.T, gvr schema.GroupVersionResource, ns, name, stackNS, stack string) {
	t.Helper()
	engine := stack + "-llama-3-2-1b-instruct-deployment-vllm"
	router := stack + "-deployment-router"
	pvc := stack + "-llama-3-2-1b-instruct-storage-claim"
	wantRefs := []string{
		"Deployment/" + engine,
		"Service/" + stack + "-llama-3-2-1b-instruct-engine-service",
		"PersistentVolumeClaim/" + pvc,
		"ServiceAccount/" + stack + "-router-service-account",
		"Role/" + stack + "-reader",
		"RoleBinding/" + stack + "-deployment-access-binding",
		"Deployment/" + router,
		"Service/" + stack + "-router-service",
	}
	wantEndpoint := fmt.Sprintf("http://%s-router-service.%s.svc.cluster.local/v1", stack, stackNS)

	state := func() (bool, string) {
		xr := get(t, gvr, ns, name)
		if xr == nil {
			return false, "no XR"
		}
		var bad []string
		for _, c := range []string{"Ready", "Synced", "EnginesReady", "RouterReady", "StorageReady"} {
			if xp.Condition(xr, c) != "True" {
				bad = append(bad, "XR not "+c+" "+xp.Conditions(xr))
				break
			}
		}
		// Fields only the function writes.
		if v, _, _ := unstructured.NestedString(xr.Object, "status", "readyModels"); v != "1/1" {
			bad = append(bad, fmt.Sprintf("status.readyModels %q", v))
		}
		if v, _, _ := unstructured.NestedString(xr.Object, "status", "endpoint"); v != wantEndpoint {
			bad = append(bad, fmt.Sprintf("status.endpoint %q, want %q", v, wantEndpoint))
		}
		// A v2 XR keeps Crossplane's fields under spec.crossplane, a legacy
		// (v1 XRD) XR at the top of spec.
		refsPath := []string{"spec", "crossplane", "resourceRefs"}
		if gvr == legacyStackGVR {
			refsPath = []string{"spec", "resourceRefs"}
		}
		refs, _, _ := unstructured.NestedSlice(xr.Object, refsPath...)
		var have []string
		for _, r := range refs {
			m, _ := r.(map[string]any)
			have = append(have, fmt.Sprintf("%v/%v", m["kind"], m["name"]))
		}
		for _, w := range wantRefs {
			if !slices.Contains(have, w) {
				bad = append(bad, "no resourceRef "+w)
			}
		}
		for _, dn := range []string{engine, router} {
			d := get(t, deploymentGVR, stackNS, dn)
			if d == nil {
				bad = append(bad, "no Deployment "+dn)
				continue
			}
			if deploymentCondition(d, "Available") != "True" {
				bad = append(bad, "Deployment "+dn+" not Available")
			}
			sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
			pods := list(t, podGVR, stackNS, labelsString(sel))
			if len(pods) != 1 {
				bad = append(bad, fmt.Sprintf("%d pods of %s", len(pods), dn))
			}
			for _, p := range pods {
				if ok, why := podReady(&p); !ok {
					bad = append(bad, "pod "+p.GetName()+": "+why)
				}
			}
		}
		if c := get(t, pvcGVR, stackNS, pvc); c == nil {
			bad = append(bad, "no claim "+pvc)
		} else if phase, _, _ := unstructured.NestedString(c.Object, "status", "phase"); phase != "Bound" {
			bad = append(bad, "claim "+pvc+" "+phase)
		}
		return len(bad) == 0, strings.Join(bad, "; ")
	}
	stable(t, 2*e2eTTL, 5*time.Minute, fmt.Sprintf("%s %s Ready with its stack", gvr.Resource, name), state)

	// Crossplane keeps calling the function through the FunctionRevision's
	// endpoint (every TTL, as the stack is realtime-composed): the function
	// process counts the RPCs it answered, core the ones it sent to that
	// target.
	ctx := context.Background()
	handled := func() float64 {
		m, err := fn.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return metric(m, "grpc_server_handled_total", map[string]string{"grpc_method": "RunFunction", "grpc_code": "OK"})
	}
	sent := func() float64 {
		m, err := xpc.Metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return metric(m, "function_run_function_response_total", map[string]string{
			"function_name": FunctionName, "grpc_target": fn.Endpoint, "grpc_code": "OK",
		})
	}
	h0, s0 := handled(), sent()
	if h0 == 0 || s0 == 0 {
		t.Fatalf("the function answered %v RunFunction calls, core counts %v sent to %s", h0, s0, fn.Endpoint)
	}
	eventually(t, 4*e2eTTL, "Crossplane calling the function again", func() (bool, string) {
		h, s := handled(), sent()
		return h > h0 && s > s0, fmt.Sprintf("function answered %v (was %v), core sent %v (was %v)", h, h0, s, s0)
	})
	if ok, seen := state(); !ok {
		t.Errorf("the stack did not stay Ready: %s", seen)
	}
}

func deploymentCondition(d *unstructured.Unstructured, t string) string {
	cs, _, _ := unstructured.NestedSlice(d.Object, "status", "conditions")
	for _, c := range cs {
		if m, _ := c.(map[string]any); m["type"] == t {
			return fmt.Sprint(m["status"])
		}
	}
	return ""
}

// podReady reports whether a pod is bound to the kubelet stand-in's node,
// Running and Ready.
func podReady(p *unstructured.Unstructured) (bool, string) {
	nodeName, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName")
	phase, _, _ := unstructured.NestedString(p.Object, "status", "phase")
	if nodeName != kubelet.DefaultNodeName {
		return false, fmt.Sprintf("on node %q", nodeName)
	}
	if phase != "Running" || deploymentCondition(p, "Ready") != "True" {
		return false, fmt.Sprintf("phase %s, Ready %s", phase, deploymentCondition(p, "Ready"))
	}
	return true, ""
}

func labelsString(m map[string]string) string {
	var s []string
	for k, v := range m {
		s = append(s, k+"="+v)
	}
	slices.Sort(s)
	return strings.Join(s, ",")
}
