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

// TestConfigurationPackage: README's install. From the Configuration pushed
// to the registry Crossplane installs the namespaced XRD and its
// Composition, owned by the active ConfigurationRevision, and resolves the
// dependency: the Function, named after its repository (FunctionName), from
// the same registry at the version the Configuration asks for, which the
// Composition's step runs. The Configuration is Installed and Healthy.
func TestConfigurationPackage(t *testing.T) {
	stable(t, 3*time.Second, 3*time.Minute, "Configuration "+ConfigurationName+" Installed and Healthy", func() (bool, string) {
		c := get(t, xp.ConfigurationGVR, "", ConfigurationName)
		if c == nil {
			return false, "no Configuration"
		}
		return xp.Condition(c, "Installed") == "True" && xp.Condition(c, "Healthy") == "True", xp.Conditions(c)
	})
	rev, err := xpc.ConfigurationRevision(context.Background(), ConfigurationName)
	if err != nil {
		t.Fatal(err)
	}
	if img, _, _ := unstructured.NestedString(rev.Object, "spec", "image"); img != configRef {
		t.Errorf("ConfigurationRevision %s: image %q, want %q", rev.GetName(), img, configRef)
	}
	owned := func(u *unstructured.Unstructured) bool {
		for _, o := range u.GetOwnerReferences() {
			if o.UID == rev.GetUID() && o.Controller != nil && *o.Controller {
				return true
			}
		}
		return false
	}
	const name = "productionstacks.serving.vllm.ai" // the XRD's and the Composition's
	if x := get(t, xrdGVR, "", name); x == nil || !owned(x) {
		t.Errorf("XRD %s (exists: %v) is not controlled by ConfigurationRevision %s", name, x != nil, rev.GetName())
	}
	comp := get(t, compositionGVR, "", name)
	if comp == nil || !owned(comp) {
		t.Fatalf("Composition %s (exists: %v) is not controlled by ConfigurationRevision %s", name, comp != nil, rev.GetName())
	}
	steps, _, _ := unstructured.NestedSlice(comp.Object, "spec", "pipeline")
	if len(steps) != 1 {
		t.Fatalf("Composition %s: %d steps, want 1", name, len(steps))
	}
	if ref, _, _ := unstructured.NestedString(steps[0].(map[string]any), "functionRef", "name"); ref != FunctionName {
		t.Errorf("Composition %s runs Function %q, want %q (the dependency's name)", name, ref, FunctionName)
	}
	// The Function Crossplane installed for the dependency: the package the
	// Configuration names, at its version.
	f := get(t, xp.FunctionGVR, "", FunctionName)
	if f == nil {
		t.Fatalf("no Function %s", FunctionName)
	}
	if want := xpkgRegistry + "/function-vllm-stack"; !strings.HasPrefix(fn.Package, want+":") && !strings.HasPrefix(fn.Package, want+"@") {
		t.Errorf("Function %s: package %q, want %s at a version", FunctionName, fn.Package, want)
	}
}

// TestFunctionPackage: Crossplane installs the Function package the
// Configuration depends on from the registry and runs it with its default
// (Deployment) runtime: a FunctionRevision whose endpoint is the headless
// Service it creates, and a Deployment of the package image that the
// scheduler puts on the node, which the kubelet stand-in makes Ready; the
// Function is then Installed and Healthy.
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

// TestStacks runs every scenario of the namespaced XRD
// (xrd/definition.yaml, composition/composition.yaml, from the
// Configuration), each stack in a
// namespace of its own: first those that can share the function, in
// parallel (Scenarios/...), then FunctionDown, which stops it. Every stack's
// deletion checks that what it composed goes away with it (testStack.delete).
func TestStacks(t *testing.T) {
	// The Configuration's XRD and Composition, as it installed them.
	waitXRD(t, "productionstacks.serving.vllm.ai", false)

	// FunctionDown's stack becomes Ready while the others run.
	down := functionDownStack(t)

	t.Run("Scenarios", func(t *testing.T) {
		t.Run("Examples", func(t *testing.T) { t.Parallel(); testExamples(t) })
		t.Run("PodReasons", func(t *testing.T) { t.Parallel(); testPodReasons(t, false) })
		t.Run("Refused", func(t *testing.T) { t.Parallel(); testRefused(t, false) })
		t.Run("MissingCRD", func(t *testing.T) { t.Parallel(); testMissingCRD(t) })
		t.Run("RBAC", func(t *testing.T) { t.Parallel(); testRBAC(t) })
		t.Run("HPA", func(t *testing.T) { t.Parallel(); testHPA(t) })
		t.Run("MultiNodeOn", func(t *testing.T) { t.Parallel(); testMultiNodeOn(t) })
		t.Run("CanaryPromote", func(t *testing.T) { t.Parallel(); testCanaryPromote(t) })
		t.Run("CanaryAbort", func(t *testing.T) { t.Parallel(); testCanaryAbort(t) })
		t.Run("NotAccepted", func(t *testing.T) { t.Parallel(); testNotAccepted(t) })
		t.Run("ScaleToZero", func(t *testing.T) { t.Parallel(); testScaleToZero(t) })
		t.Run("HPAHandOver", func(t *testing.T) { t.Parallel(); testHPAHandOver(t) })
		t.Run("ScaleToZeroHandOver", func(t *testing.T) { t.Parallel(); testScaleToZeroHandOver(t) })
	})
	t.Run("FunctionDown", func(t *testing.T) { testFunctionDown(t, down) })
}

// TestClaims runs the scenarios of claims (the legacy XRD,
// xrd/legacy/definition.yaml): the seed claim (example/claim.yaml), pod-level
// reasons and a refused claim, in parallel; each claim's deletion checks that
// its XR and everything composed go away.
//
// Crossplane keeps the informer and field indexes of a kind for the life of
// its process: after TestStacks' XRD (kind ProductionStack as an XR) is gone,
// the legacy XRD's claim CRD of the same kind finds them ("indexer
// conflict", then "Index with name field:compositeResourcesRefs does not
// exist" on every composed resource change, so the claim's XR would be
// refreshed only every TTL). A cluster has one of the two XRDs: the
// Configuration goes first (its XRD and Composition with it; the Function it
// depends on stays, and the legacy Composition runs it), and core starts
// afresh, as a new pod.
func TestClaims(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	if err := xpc.UninstallConfiguration(ctx, ConfigurationName); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the Configuration's XRD, Composition and CRD deleted", func() (bool, string) {
		const name = "productionstacks.serving.vllm.ai"
		left := []string{}
		for _, r := range []schema.GroupVersionResource{xrdGVR, compositionGVR, crdGVR} {
			if get(t, r, "", name) != nil {
				left = append(left, r.Resource)
			}
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
	logf("Configuration %s uninstalled in %s", ConfigurationName, time.Since(start).Round(100*time.Millisecond))
	if err := xpc.RestartCore(ctx); err != nil {
		t.Fatal(err)
	}
	x := installXRD(t, "../../xrd/legacy/definition.yaml")
	t.Cleanup(func() {
		uninstallXRD(t, x, "xproductionstacks.serving.vllm.ai", "productionstacks.serving.vllm.ai")
	})
	apply(t, legacyComposition(t))

	t.Run("Scenarios", func(t *testing.T) {
		t.Run("Seed", func(t *testing.T) { t.Parallel(); testSeedClaim(t) })
		t.Run("PodReasons", func(t *testing.T) { t.Parallel(); testPodReasons(t, true) })
		t.Run("Refused", func(t *testing.T) { t.Parallel(); testRefused(t, true) })
	})
}

// testSeedClaim: the seed manifest as a claim (example/claim.yaml):
// Crossplane creates a cluster-scoped XProductionStack for it, the function
// composes the stack in the claim's namespace, named after the claim, and
// the claim becomes Ready with the XR.
func testSeedClaim(t *testing.T) {
	claim := readObject(t, "../../example/claim.yaml")
	namespace(t, claim.GetNamespace())
	provide(t, claim)
	s := applyStack(t, claim, true)
	s.waitReady(t, s.expect(), 5*time.Minute)
	checkSeedRefs(t, s)
	checkCalledAgain(t, s)
}

// checkSeedRefs: the seed's XR composed the eight objects of README's table
// (no chat template, storage on), the RoleBinding among them.
func checkSeedRefs(t *testing.T, s *testStack) {
	t.Helper()
	stack := s.name()
	want := []string{
		"Deployment/" + stack + "-llama-3-2-1b-instruct-deployment-vllm",
		"Service/" + stack + "-llama-3-2-1b-instruct-engine-service",
		"PersistentVolumeClaim/" + stack + "-llama-3-2-1b-instruct-storage-claim",
		"ServiceAccount/" + stack + "-router-service-account",
		"Role/" + stack + "-reader",
		"RoleBinding/" + stack + "-deployment-access-binding",
		"Deployment/" + stack + "-deployment-router",
		"Service/" + stack + "-router-service",
	}
	var have []string
	for _, r := range s.refs(s.xr(t)) {
		have = append(have, r.Kind+"/"+r.Name)
	}
	slices.Sort(have)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Errorf("%s composed %v, want %v", s, have, want)
	}
}

// checkCalledAgain: Crossplane keeps calling the function through the
// FunctionRevision's endpoint (every TTL, as the stack is realtime-composed):
// the function process counts the RPCs it answered, core the ones it sent to
// that target; and the stack stays Ready meanwhile.
func checkCalledAgain(t *testing.T, s *testStack) {
	t.Helper()
	h0, s0 := functionCalls(t), coreCalls(t)
	if h0 == 0 || s0 == 0 {
		t.Fatalf("the function answered %v RunFunction calls, core counts %v sent to %s", h0, s0, fn.Endpoint)
	}
	eventually(t, 4*e2eTTL, "Crossplane calling the function again", func() (bool, string) {
		h, c := functionCalls(t), coreCalls(t)
		return h > h0 && c > s0, fmt.Sprintf("function answered %v (was %v), core sent %v (was %v)", h, h0, c, s0)
	})
	if ok, seen := s.readyState(t, s.expect()); !ok {
		t.Errorf("%s did not stay Ready: %s", s, seen)
	}
}

// functionCalls is the number of RunFunction calls the function process
// answered OK since it (last) started.
func functionCalls(t *testing.T) float64 {
	t.Helper()
	m, err := fn.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return metric(m, "grpc_server_handled_total", map[string]string{"grpc_method": "RunFunction", "grpc_code": "OK"})
}

// coreCalls is the number of RunFunction calls core counts answered OK by
// the function's endpoint since core (last) started.
func coreCalls(t *testing.T) float64 {
	t.Helper()
	m, err := xpc.Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return metric(m, "function_run_function_response_total", map[string]string{
		"function_name": FunctionName, "grpc_target": fn.Endpoint, "grpc_code": "OK",
	})
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
