package render_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-project/function-vllm-stack/test/internal/kubecheck"
)

// TestTypedObjects decodes every composed object of every golden file into its
// Kubernetes type, strictly, and checks names, labels, ports, selectors and the
// references between the objects (test/internal/kubecheck).
func TestTypedObjects(t *testing.T) {
	for _, s := range stacks {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(goldenPath(s.name))
			if err != nil {
				t.Fatalf("%v (the golden files are written by TestGolden with -update)", err)
			}
			checkStack(t, kubecheck.SplitDocs(t, b), s)
		})
	}
}

// checkStack checks a rendered stream: the XR first, then the composed
// objects and the function's results.
func checkStack(t kubecheck.TB, docs []kubecheck.Doc, s stack) {
	t.Helper()
	xr := docs[0]
	if xr.APIVersion() != "serving.vllm.ai/v1alpha1" || !strings.HasSuffix(xr.Kind(), "ProductionStack") {
		t.Fatalf("the first rendered object is %s %s, want the XR", xr.APIVersion(), xr.Kind())
	}
	// The namespace and instance name the function derives from the XR
	// (legacy XRs are cluster scoped and named after their claim). The
	// rendered XR has no labels: read the input.
	in, err := os.ReadFile(filepath.Join(root, s.xr))
	if err != nil {
		t.Fatalf("%v", err)
	}
	input := kubecheck.SplitDocs(t, in)[0]
	xrLabels, _ := input.Obj["metadata"].(map[string]any)["labels"].(map[string]any)
	ks := kubecheck.Stack{XR: xr, Instance: input.Meta("name"), Namespace: input.Meta("namespace"), Composite: xr.Meta("name"), External: s.external}
	if claim, ok := xrLabels["crossplane.io/claim-name"].(string); ok {
		ks.Instance = claim
		ks.Namespace, _ = xrLabels["crossplane.io/claim-namespace"].(string)
	}
	if ks.Namespace == "" {
		ks.Namespace = "default"
	}
	var objects []kubecheck.Doc
	for _, d := range docs[1:] {
		if d.APIVersion()+"/"+d.Kind() == "render.crossplane.io/v1beta1/Result" {
			if sev := d.Obj["severity"]; sev != "SEVERITY_WARNING" && sev != "SEVERITY_NORMAL" {
				t.Errorf("result %v: severity %v in a successful render", d.Obj["message"], sev)
			}
			continue
		}
		objects = append(objects, d)
	}
	kubecheck.Check(t, ks, objects)
}

// checkRendered runs the checks on a rendered stream and returns what they
// reported.
func checkRendered(rendered []byte, s stack) []string {
	r := &kubecheck.Recorder{}
	return r.Run(func() { checkStack(r, kubecheck.SplitDocs(r, rendered), s) })
}

// TestTypedChecks breaks the golden output of the serving seed stack (every
// object composed, the RoleBinding included) in one place at a time and
// expects the checks of TestTypedObjects to say so.
func TestTypedChecks(t *testing.T) {
	b, err := os.ReadFile(goldenPath("observed-ready"))
	if err != nil {
		t.Fatal(err)
	}
	seed := string(b)
	for _, c := range []struct {
		name, old, new, want string
	}{
		{name: "UnknownField", old: "  strategy:\n    type: Recreate\n", new: "  strategy:\n    type: Recreate\n  minReadySecond: 5\n",
			want: `Deployment/test-stack-llama-3-2-1b-instruct-deployment-vllm: strict decode into *v1.Deployment: unknown field "spec.minReadySecond"`},
		{name: "WrongType", old: "  replicas: 1\n  selector:\n    matchLabels:\n      app.kubernetes.io/component: serving-engine", new: "  replicas: \"1\"\n  selector:\n    matchLabels:\n      app.kubernetes.io/component: serving-engine",
			want: "Deployment/test-stack-llama-3-2-1b-instruct-deployment-vllm: decode into *v1.Deployment"},
		{name: "PortNameTooLong", old: "name: container-port\n", new: "name: container-port-x\n",
			want: "ports.name: must be no more than 15 characters"},
		{name: "ServiceSelectsNothing", old: "  selector:\n    app.kubernetes.io/component: serving-engine\n    app.kubernetes.io/instance: test-stack\n", new: "  selector:\n    app.kubernetes.io/component: serving-engine\n    app.kubernetes.io/instance: other\n",
			want: "Service/test-stack-llama-3-2-1b-instruct-engine-service: spec.selector map[app.kubernetes.io/component:serving-engine app.kubernetes.io/instance:other app.kubernetes.io/name:llama-3-2-1b-instruct] selects the pods of 0 Deployments, want 1"},
		{name: "DuplicateEnv", old: "- name: CUDA_VISIBLE_DEVICES\n", new: "- name: VLLM_LOG_LEVEL\n",
			want: "env: VLLM_LOG_LEVEL is set twice"},
		{name: "BadLabelValue", old: "    model: Llama-3.2-1B-Instruct\n  name: test-stack-llama-3-2-1b-instruct-deployment-vllm", new: "    model: Llama 3.2\n  name: test-stack-llama-3-2-1b-instruct-deployment-vllm",
			want: `metadata.labels: Invalid value: "Llama 3.2"`},
		{name: "ServiceNameNotDNS1035", old: "  name: test-stack-router-service\n", new: "  name: 1-router-service\n",
			want: `Service/1-router-service: metadata.name: Invalid value: "1-router-service"`},
		{name: "GPUWithoutLimit", old: "          limits:\n            nvidia.com/gpu: \"1\"\n", new: "",
			want: "extended resource nvidia.com/gpu needs a limit equal to its request 1"},
		{name: "MissingRole", old: "  kind: Role\n  name: test-stack-reader\n", new: "  kind: Role\n  name: test-stack-writer\n",
			want: `roleRef.name refers to Role "test-stack-writer", which is not rendered`},
		{name: "MissingClaim", old: "          claimName: test-stack-llama-3-2-1b-instruct-storage-claim\n", new: "          claimName: elsewhere\n",
			want: `refers to PersistentVolumeClaim "elsewhere", which is not rendered`},
		{name: "NegativeProgressDeadline", old: "  progressDeadlineSeconds: 1200\n", new: "  progressDeadlineSeconds: -294966696\n",
			want: "spec.progressDeadlineSeconds -294966696 must be greater than minReadySeconds 0"},
		{name: "ImageWithSpace", old: "        image: lmcache/lmstack-router:v0.1.12\n", new: "        image: 'lmcache/lmstack-router:v0.1.12 '\n",
			want: `image "lmcache/lmstack-router:v0.1.12 " has leading or trailing whitespace`},
		{name: "NegativeEmptyDir", old: "      - emptyDir: {}\n", new: "      - emptyDir: {sizeLimit: -1Gi}\n",
			want: "emptyDir.sizeLimit -1Gi is invalid: must be 0 or more"},
		// The rules of internal/kubeapi, which the function checks the spec with.
		{name: "VolumeItemPath", old: "      - emptyDir: {}\n", new: "      - secret: {secretName: s, items: [{key: a, path: ../a}]}\n",
			want: `spec.template.spec.volumes[0].secret.items[0].path "../a" is invalid: must not contain '..'`},
		{name: "SeccompLocalhost", old: "        seccompProfile:\n          type: RuntimeDefault\n", new: "        seccompProfile:\n          type: Localhost\n",
			want: "spec.template.spec.securityContext.seccompProfile.localhostProfile is required when type is Localhost"},
		{name: "ContainerRunAsUser", old: "          allowPrivilegeEscalation: false\n", new: "          allowPrivilegeEscalation: false\n          runAsUser: -1\n",
			want: "securityContext.runAsUser -1 is invalid: must be a user ID from 0 to 2147483647"},
		{name: "TolerationOperator", old: "      - emptyDir: {}\n        name: home\n", new: "      - emptyDir: {}\n        name: home\n      tolerations:\n      - {key: gpu, operator: Foo}\n",
			want: `spec.template.spec.tolerations[0].operator "Foo" is not supported: use Equal or Exists`},
		{name: "AffinityWeight", old: "      - emptyDir: {}\n        name: home\n", new: "      - emptyDir: {}\n        name: home\n      affinity:\n        nodeAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:\n          - {weight: 101, preference: {}}\n",
			want: "spec.template.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight 101 is invalid: must be from 1 to 100"},
		{name: "UnknownKind", old: "apiVersion: v1\nkind: ServiceAccount\n", new: "apiVersion: v1\nkind: ServiceAccountz\n",
			want: "kind v1/ServiceAccountz is neither typed nor in the untyped allowlist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(seed, c.old) {
				t.Fatalf("the seed golden has no %q", c.old)
			}
			broken := strings.Replace(seed, c.old, c.new, 1)
			errs := checkRendered([]byte(broken), stacks[0])
			for _, e := range errs {
				if strings.Contains(e, c.want) {
					return
				}
			}
			t.Errorf("no error contains %q; got:\n%s", c.want, strings.Join(errs, "\n"))
		})
	}
	// And the unbroken seed passes.
	if errs := checkRendered(b, stacks[0]); len(errs) != 0 {
		t.Errorf("the seed golden fails the checks:\n%s", strings.Join(errs, "\n"))
	}
}

// TestLeaderWorkerSetChecks breaks the LeaderWorkerSet of the multi-node
// golden as LWS v0.7.0's webhook would refuse it (what the function
// refuses in the spec: stack/build/multinode.go) and expects the checks to say so
// with the webhook's words.
func TestLeaderWorkerSetChecks(t *testing.T) {
	var s stack
	for _, x := range stacks {
		if x.name == "multi-node" {
			s = x
		}
	}
	b, err := os.ReadFile(goldenPath(s.name))
	if err != nil {
		t.Fatal(err)
	}
	golden := string(b)
	const replicas = "  replicas: 1\n  rolloutStrategy:\n    type: RollingUpdate\n"
	rollout := func(replicas int, config string) string {
		return fmt.Sprintf("  replicas: %d\n  rolloutStrategy:\n    rollingUpdateConfiguration: %s\n    type: RollingUpdate\n", replicas, config)
	}
	const lws = "LeaderWorkerSet/big-llama3-405b-lws: "
	for _, c := range []struct {
		name, new, want string
	}{
		{"MaxUnavailable0", rollout(1, "{maxUnavailable: 0, maxSurge: 0}"),
			lws + "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: Invalid value: 0: must not be 0 when `maxSurge` is 0"},
		{"PercentRoundsDown", rollout(3, "{maxUnavailable: 10%, maxSurge: 0}"),
			lws + "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: Invalid value: \"10%\": must not be 0 when `maxSurge` is 0"},
		{"MaxSurgeOver100Percent", rollout(3, "{maxUnavailable: 1, maxSurge: 101%}"),
			lws + "spec.rolloutStrategy.rollingUpdateConfiguration.maxSurge: Invalid value: \"101%\": must not be greater than 100%"},
		{"SignedPercent", rollout(3, "{maxUnavailable: +5%, maxSurge: 1}"),
			lws + "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: Invalid value: \"+5%\": a valid percent string must be"},
		{"Pods", "  replicas: 1073741824\n  rolloutStrategy:\n    type: RollingUpdate\n",
			lws + "spec.replicas: Invalid value: 1073741824: the product of replicas and worker replicas must not exceed 2147483647"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(golden, replicas) {
				t.Fatalf("the multi-node golden has no %q", replicas)
			}
			errs := checkRendered([]byte(strings.Replace(golden, replicas, c.new, 1)), s)
			if !slices.ContainsFunc(errs, func(e string) bool { return strings.HasPrefix(e, c.want) }) {
				t.Errorf("no error starts with %q; got:\n%s", c.want, strings.Join(errs, "\n"))
			}
		})
	}
	// What the webhook takes: a percentage that rounds up to a surge group,
	// 2^31−1 pods.
	for _, ok := range []string{rollout(3, "{maxUnavailable: 10%, maxSurge: 1%}"), "  replicas: 1073741823\n  rolloutStrategy:\n    type: RollingUpdate\n"} {
		if errs := checkRendered([]byte(strings.Replace(golden, replicas, ok, 1)), s); len(errs) != 0 {
			t.Errorf("with\n%s\nthe checks say:\n%s", ok, strings.Join(errs, "\n"))
		}
	}
}
