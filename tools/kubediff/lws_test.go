package kubediff

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/internal/kubeapi"
)

// LeaderWorkerSets must pass the admission webhooks of LWS v0.7.0 too: the
// API server applies the CRD's defaults, then the mutating webhook
// (Default), then the validating one (ValidateCreate, or ValidateUpdate on
// the next reconcile). Their package (sigs.k8s.io/lws pkg/webhooks) needs a
// controller-runtime before v0.23 (which made NewWebhookManagedBy generic),
// and none of those builds with the Kubernetes 1.37 client-go this module
// pins (v0.23 lacks even the informers' HasSyncedChecker): this module runs
// internal/kubeapi's port of the webhooks, which tools/lwswebhook holds to
// the real ones word for word.

var lwsGVK = lwsv1.GroupVersion.WithKind("LeaderWorkerSet")

// lwsStored is obj as the API server passes it to the webhooks: pruned and
// defaulted by its CRD, decoded.
func lwsStored(k *crdKind, obj map[string]any) (*lwsv1.LeaderWorkerSet, error) {
	l := &lwsv1.LeaderWorkerSet{}
	return l, runtime.DefaultUnstructuredConverter.FromUnstructured(k.Defaulted(obj), l)
}

// lwsWebhook is what the webhooks refuse in a create of obj; old, when not
// nil, is the object as stored before, and the request an update.
func lwsWebhook(crds map[schema.GroupVersionKind]*crdKind, obj, old map[string]any) []string {
	k := crds[lwsGVK]
	l, err := lwsStored(k, obj)
	if err != nil {
		return []string{"LWS webhook: " + err.Error()}
	}
	errs := kubeapi.LeaderWorkerSetCreate(l)
	if old != nil {
		o, err := lwsStored(k, old)
		if err != nil {
			return []string{"LWS webhook: " + err.Error()}
		}
		errs = kubeapi.LeaderWorkerSetUpdate(o, l)
	}
	if err := errs.ToAggregate(); err != nil {
		return []string{"LWS webhook: " + err.Error()}
	}
	return nil
}

// TestLeaderWorkerSetWebhookRefuses: the oracle of the composed objects runs
// the webhooks, on create and on update: a composed LeaderWorkerSet broken
// as the function refuses to compose one (stack/build/multinode.go) is refused.
func TestLeaderWorkerSetWebhookRefuses(t *testing.T) {
	c := mustCorpus(t)
	crds, err := loadCRDs()
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	for _, s := range c.stacks {
		if s.name != "example/stacks/multi-node.yaml" {
			continue
		}
		xr := parse(string(s.json)).(map[string]any)
		objs, fatal := render(t, xr, nil)
		if fatal != "" {
			t.Fatal(fatal)
		}
		for key, o := range objs {
			if o["kind"] == "LeaderWorkerSet" {
				obj = applied(metaOf(xr), strings.SplitN(key, " ", 2)[0], o)
			}
		}
	}
	if obj == nil {
		t.Fatal("example/stacks/multi-node.yaml composes no LeaderWorkerSet")
	}
	if msgs := validateObject(crds, obj); len(msgs) > 0 {
		t.Fatalf("the composed LeaderWorkerSet is refused: %q", msgs)
	}
	for _, tc := range []struct{ path, value, want string }{
		{"spec.rolloutStrategy.rollingUpdateConfiguration", `{"maxUnavailable": 0}`, "spec.rolloutStrategy.rollingUpdateConfiguration.maxUnavailable: Invalid value: 0: must not be 0 when `maxSurge` is 0"},
		{"spec.rolloutStrategy.rollingUpdateConfiguration", `{"maxUnavailable": "10%", "maxSurge": 0}`, "must not be 0 when `maxSurge` is 0"},
		{"spec.replicas", "1073741824", "spec.replicas: Invalid value: 1073741824: the product of replicas and worker replicas must not exceed 2147483647"},
		{"metadata.annotations[" + lwsv1.SubGroupExclusiveKeyAnnotationKey + "]", `"zone"`, "cannot have subgroup-exclusive-topology without subGroupSize set"},
	} {
		bad := deepCopyJSON(obj)
		setPath(bad, "spec.replicas", int64(3))
		setPath(bad, tc.path, parse(tc.value))
		msgs := validateObject(crds, bad)
		if !containsSub(msgs, tc.want) {
			t.Errorf("%s=%s: the oracle says %q, want %q", tc.path, tc.value, msgs, tc.want)
		}
		// As an update of the composed object.
		if msgs := lwsWebhook(crds, bad, obj); !containsSub(msgs, tc.want) {
			t.Errorf("%s=%s as an update: the webhook says %q, want %q", tc.path, tc.value, msgs, tc.want)
		}
	}
}

func containsSub(msgs []string, sub string) bool {
	for _, m := range msgs {
		if strings.Contains(m, sub) {
			return true
		}
	}
	return false
}
