// Package lwswebhook holds internal/kubeapi's port of LeaderWorkerSet
// v0.7.0's admission webhooks (LeaderWorkerSetCreate, LeaderWorkerSetUpdate,
// which test/internal/kubecheck and tools/kubediff run on every composed
// LeaderWorkerSet) to the real ones: the pinned sigs.k8s.io/lws module's
// pkg/webhooks, called without a manager. That package calls
// controller-runtime's NewWebhookManagedBy as it was before v0.23 made it
// generic, so this module builds with controller-runtime v0.22.5 (a replace)
// and the function's Kubernetes 1.35 modules, its own module so that the
// function does not depend on controller-runtime; tools/kubediff cannot
// take it, as no controller-runtime release builds both with its
// Kubernetes 1.37 client-go and with that package. It builds the function's
// library (stack), not fn: the function SDK's crossplane-runtime needs
// controller-runtime v0.23.
//
// `cd tools/lwswebhook && go test ./...`; `go test -fuzz FuzzPort`.
package lwswebhook

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/lws/pkg/webhooks"
	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/internal/kubeapi"
	"github.com/vllm-project/function-vllm-stack/stack"
)

var webhook = &webhooks.LeaderWorkerSetWebhook{}

// real is what the webhooks say to a create of l (old nil) or an update of
// old, as stored (created through them), to l: "" when they admit it.
func real(t testing.TB, old, l *lwsv1.LeaderWorkerSet) string {
	ctx := context.Background()
	l = l.DeepCopy()
	if err := webhook.Default(ctx, l); err != nil {
		t.Fatal(err)
	}
	var err error
	if old == nil {
		_, err = webhook.ValidateCreate(ctx, l)
	} else {
		old = old.DeepCopy()
		if err := webhook.Default(ctx, old); err != nil {
			t.Fatal(err)
		}
		_, err = webhook.ValidateUpdate(ctx, old, l)
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// port is what internal/kubeapi says to the same.
func port(old, l *lwsv1.LeaderWorkerSet) string {
	errs := kubeapi.LeaderWorkerSetCreate(l)
	if old != nil {
		errs = kubeapi.LeaderWorkerSetUpdate(old, l)
	}
	if err := errs.ToAggregate(); err != nil {
		return err.Error()
	}
	return ""
}

// baseLWS is a LeaderWorkerSet such as the function composes, as stored.
func baseLWS() *lwsv1.LeaderWorkerSet {
	pod := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai:v0.12.0"}}}}
	return &lwsv1.LeaderWorkerSet{
		ObjectMeta: metav1.ObjectMeta{Name: "s-m-lws", Namespace: "llm", Labels: map[string]string{"app.kubernetes.io/instance": "s"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "serving.vllm.ai/v1alpha1", Kind: "ProductionStack", Name: "s", UID: "6c4ea2a5-2b2e-4c1b-9d7e-000000000001", Controller: ptr.To(true)}}},
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas: ptr.To[int32](3),
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
				LeaderTemplate: pod.DeepCopy(), WorkerTemplate: pod, Size: ptr.To[int32](2), RestartPolicy: lwsv1.RecreateGroupOnPodRestart,
			},
			RolloutStrategy: lwsv1.RolloutStrategy{Type: lwsv1.RollingUpdateStrategyType},
			StartupPolicy:   lwsv1.LeaderCreatedStartupPolicy,
		},
	}
}

func lwsWith(f func(l *lwsv1.LeaderWorkerSet)) *lwsv1.LeaderWorkerSet {
	l := baseLWS()
	f(l)
	return l
}

func rollout(replicas int32, maxUnavailable, maxSurge intstr.IntOrString) *lwsv1.LeaderWorkerSet {
	return lwsWith(func(l *lwsv1.LeaderWorkerSet) {
		l.Spec.Replicas = ptr.To(replicas)
		l.Spec.RolloutStrategy.RollingUpdateConfiguration = &lwsv1.RollingUpdateConfiguration{MaxUnavailable: maxUnavailable, MaxSurge: maxSurge}
	})
}

func subGroup(size, subGroupSize int32, leaderExcluded bool) *lwsv1.LeaderWorkerSet {
	return lwsWith(func(l *lwsv1.LeaderWorkerSet) {
		l.Spec.LeaderWorkerTemplate.Size = ptr.To(size)
		p := &lwsv1.SubGroupPolicy{SubGroupSize: ptr.To(subGroupSize)}
		if leaderExcluded {
			p.Type = ptr.To(lwsv1.SubGroupPolicyTypeLeaderExcluded)
		}
		l.Spec.LeaderWorkerTemplate.SubGroupPolicy = p
	})
}

// lwsCases are LeaderWorkerSets at the edges of every rule of the webhook:
// each at most a few errors, the valid ones first.
var lwsCases = []struct {
	name string
	lws  *lwsv1.LeaderWorkerSet
	ok   bool
}{
	{"Composed", baseLWS(), true},
	{"NoReplicasNoRollout", lwsWith(func(l *lwsv1.LeaderWorkerSet) { l.Spec.Replicas = ptr.To[int32](0) }), true},
	{"Unavailable34Percent", rollout(3, intstr.FromString("34%"), intstr.FromInt32(0)), true},
	{"Surge1Percent", rollout(3, intstr.FromString("10%"), intstr.FromString("1%")), true},
	{"BothZeroNoReplicas", rollout(0, intstr.FromInt32(0), intstr.FromInt32(0)), true},
	{"Unavailable100Percent", rollout(3, intstr.FromString("100%"), intstr.FromString("100%")), true},
	{"MostPods", lwsWith(func(l *lwsv1.LeaderWorkerSet) { l.Spec.Replicas = ptr.To[int32](1<<30 - 1) }), true},
	{"SubGroup", subGroup(4, 2, false), true},
	{"SubGroupSizeMinusOne", subGroup(5, 2, false), true},
	{"SubGroupLeaderExcluded", subGroup(5, 4, true), true},
	{"BothZero", rollout(3, intstr.FromInt32(0), intstr.FromInt32(0)), false},
	{"UnavailableRoundsDown", rollout(3, intstr.FromString("10%"), intstr.FromInt32(0)), false},
	{"BothZeroPercent", rollout(1, intstr.FromString("0%"), intstr.FromString("0%")), false},
	{"Unavailable33PercentOfThree", rollout(3, intstr.FromString("33%"), intstr.FromString("0%")), false},
	{"UnavailableOver100Percent", rollout(3, intstr.FromString("101%"), intstr.FromInt32(0)), false},
	{"SurgeOver100Percent", rollout(3, intstr.FromInt32(1), intstr.FromString("150%")), false},
	{"SignedPercent", rollout(3, intstr.FromString("+5%"), intstr.FromInt32(1)), false},
	{"NotAPercent", rollout(3, intstr.FromInt32(1), intstr.FromString("abc")), false},
	{"NegativeUnavailable", rollout(3, intstr.FromInt32(-1), intstr.FromInt32(1)), false},
	{"NegativeSurge", rollout(3, intstr.FromInt32(1), intstr.FromInt32(-2)), false},
	{"NegativeReplicas", lwsWith(func(l *lwsv1.LeaderWorkerSet) { l.Spec.Replicas = ptr.To[int32](-1) }), false},
	{"SizeZero", lwsWith(func(l *lwsv1.LeaderWorkerSet) { l.Spec.LeaderWorkerTemplate.Size = ptr.To[int32](0) }), false},
	{"TooManyPods", lwsWith(func(l *lwsv1.LeaderWorkerSet) { l.Spec.Replicas = ptr.To[int32](1 << 30) }), false},
	{"TooManyPodsOdd", lwsWith(func(l *lwsv1.LeaderWorkerSet) {
		l.Spec.Replicas, l.Spec.LeaderWorkerTemplate.Size = ptr.To[int32](715827883), ptr.To[int32](3)
	}), false},
	{"NameNotDNS1035", lwsWith(func(l *lwsv1.LeaderWorkerSet) { l.Name = "1-m-lws" }), false},
	{"NameWithDot", lwsWith(func(l *lwsv1.LeaderWorkerSet) { l.Name = "s.m-lws" }), false},
	{"ExclusiveTopologyWithoutSubGroup", lwsWith(func(l *lwsv1.LeaderWorkerSet) {
		l.Annotations = map[string]string{lwsv1.SubGroupExclusiveKeyAnnotationKey: "topology.kubernetes.io/zone"}
	}), false},
	{"SubGroupNegative", subGroup(4, -1, false), false},
	{"SubGroupNotDividing", subGroup(6, 4, false), false},
	{"SubGroupLargerThanSize", subGroup(2, 3, false), false},
	{"SubGroupLeaderExcludedNotDividing", subGroup(4, 2, true), false},
}

// TestPort: the port refuses exactly what the webhooks refuse, with the
// same errors, on create and on update.
func TestPort(t *testing.T) {
	for _, c := range lwsCases {
		t.Run(c.name, func(t *testing.T) {
			want := real(t, nil, c.lws)
			if (want == "") != c.ok {
				t.Errorf("the webhook says %q, want ok %v", want, c.ok)
			}
			if got := port(nil, c.lws); got != want {
				t.Errorf("create: the port says\n%q\nthe webhook\n%q", got, want)
			}
			// The same as an update of the composed one, and of the
			// composed one to it.
			for _, u := range [][2]*lwsv1.LeaderWorkerSet{{baseLWS(), c.lws}, {c.lws, baseLWS()}} {
				if got, want := port(u[0], u[1]), real(t, u[0], u[1]); got != want {
					t.Errorf("update: the port says\n%q\nthe webhook\n%q", got, want)
				}
			}
		})
	}
}

// TestUpdates: the subgroup size is immutable; a LeaderWorkerSet's size (a
// stack's multiNode.podsPerReplica), replicas and templates are not.
func TestUpdates(t *testing.T) {
	sub := subGroup(4, 2, false)
	for _, u := range []struct {
		name     string
		old, new *lwsv1.LeaderWorkerSet
		ok       bool
	}{
		{"Size", baseLWS(), lwsWith(func(l *lwsv1.LeaderWorkerSet) { l.Spec.LeaderWorkerTemplate.Size = ptr.To[int32](4) }), true},
		{"SizeAndTemplate", baseLWS(), lwsWith(func(l *lwsv1.LeaderWorkerSet) {
			l.Spec.LeaderWorkerTemplate.Size = ptr.To[int32](8)
			l.Spec.Replicas = ptr.To[int32](1)
			l.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0].Args = []string{"--nnodes=8"}
		}), true},
		{"SubGroupSize", sub, subGroup(4, 4, false), false},
		{"SubGroupEnabled", baseLWS(), sub, false},
		{"SubGroupRemoved", sub, baseLWS(), false},
	} {
		want := real(t, u.old, u.new)
		if (want == "") != u.ok {
			t.Errorf("update %s: the webhook says %q, want ok %v", u.name, want, u.ok)
		}
		if got := port(u.old, u.new); got != want {
			t.Errorf("update %s: the port says\n%q\nthe webhook\n%q", u.name, got, want)
		}
	}
}

// FuzzPort: the port and the webhooks agree on any replicas, size, rollout
// and subgroup size (0 excepted: the webhook divides by it).
func FuzzPort(f *testing.F) {
	for _, c := range lwsCases {
		r := c.lws.Spec.RolloutStrategy.RollingUpdateConfiguration
		if r == nil {
			r = &lwsv1.RollingUpdateConfiguration{MaxUnavailable: intstr.FromInt32(1)}
		}
		sub := int32(-2)
		if p := c.lws.Spec.LeaderWorkerTemplate.SubGroupPolicy; p != nil {
			sub = *p.SubGroupSize
		}
		f.Add(*c.lws.Spec.Replicas, *c.lws.Spec.LeaderWorkerTemplate.Size, r.MaxUnavailable.String(), r.MaxSurge.String(), sub, c.name)
	}
	f.Fuzz(func(t *testing.T, replicas, size int32, maxUnavailable, maxSurge string, subGroupSize int32, name string) {
		if subGroupSize == 0 {
			return
		}
		l := lwsWith(func(l *lwsv1.LeaderWorkerSet) {
			l.Name = name
			l.Spec.Replicas, l.Spec.LeaderWorkerTemplate.Size = ptr.To(replicas), ptr.To(size)
			l.Spec.RolloutStrategy.RollingUpdateConfiguration = &lwsv1.RollingUpdateConfiguration{MaxUnavailable: intstr.Parse(maxUnavailable), MaxSurge: intstr.Parse(maxSurge)}
			if subGroupSize > 0 {
				p := &lwsv1.SubGroupPolicy{SubGroupSize: ptr.To(subGroupSize)}
				if subGroupSize%2 == 1 {
					p.Type = ptr.To(lwsv1.SubGroupPolicyTypeLeaderExcluded)
				}
				l.Spec.LeaderWorkerTemplate.SubGroupPolicy = p
			}
		})
		if got, want := port(nil, l), real(t, nil, l); got != want {
			t.Errorf("%+v: the port says\n%q\nthe webhook\n%q", l.Spec, got, want)
		}
		if got, want := port(baseLWS(), l), real(t, baseLWS(), l); got != want {
			t.Errorf("update to %+v: the port says\n%q\nthe webhook\n%q", l.Spec, got, want)
		}
	})
}

// TestComposed: the LeaderWorkerSets the function's library composes for the
// example and test stacks, on the first reconcile and as an update on the
// next, pass the real webhooks. (Through the library, not fn: the function
// SDK's crossplane-runtime needs a newer controller-runtime.)
func TestComposed(t *testing.T) {
	seen := 0
	for _, g := range []string{"example/stacks/*.yaml", "test/render/testdata/*.yaml"} {
		files, err := filepath.Glob(filepath.Join("../..", g))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var xr struct {
				Kind     string
				Metadata struct{ Name, Namespace string }
				Spec     any
			}
			if err := yaml.Unmarshal(b, &xr); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			spec, raw, err := stack.DecodeSpec(xr.Spec)
			if err != nil {
				continue
			}
			s := stack.New(stack.Identity{Name: xr.Metadata.Name, Namespace: xr.Metadata.Namespace, Legacy: xr.Kind == "XProductionStack"}, spec, nil)
			if s.Validate(raw).Err() != nil {
				continue
			}
			prev := map[string]*lwsv1.LeaderWorkerSet{}
			for pass := range 2 {
				objs, err := s.Compose(stack.Keys(func(key string) bool { return pass == 1 }))
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				for _, o := range objs {
					l, ok := o.Obj.(*lwsv1.LeaderWorkerSet)
					if !ok {
						continue
					}
					seen++
					var old *lwsv1.LeaderWorkerSet
					if pass == 1 {
						old = prev[o.Key]
					}
					if msg := real(t, old, l); msg != "" {
						t.Errorf("%s: %s (reconcile %d): the webhook refuses it: %s", file, o.Key, pass+1, msg)
					}
					prev[o.Key] = l
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no stack composes a LeaderWorkerSet")
	}
}
