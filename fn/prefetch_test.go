package fn

import (
	"slices"
	"strings"
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// fillKey is the key of the one fill Job a response composes, "" for none.
func fillKey(t *testing.T, rsp *fnv1.RunFunctionResponse) string {
	t.Helper()
	var found []string
	for _, k := range keys(rsp) {
		if strings.HasPrefix(k, "engine-m-fill-") {
			found = append(found, k)
		}
	}
	if len(found) > 1 {
		t.Fatalf("fill Jobs %v, want one", found)
	}
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

// observedAll is every object a response composes, as Crossplane observes
// it, with status set for the keys in status.
func observedAll(rsp *fnv1.RunFunctionResponse, status map[string]map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for k, r := range rsp.GetDesired().GetResources() {
		o := r.GetResource().AsMap()
		if st, ok := status[k]; ok {
			o["status"] = st
		}
		out[k] = o
	}
	return out
}

func jobStatus(typ, reason, message string) map[string]any {
	return map[string]any{"conditions": []any{map[string]any{"type": typ, "status": "True", "reason": reason, "message": message}}}
}

// TestPrefetchSequence (issue 43): with storage.prefetch a Job fills the
// model's claim before its engines exist (fill), the engines wait while it
// runs (wait), and are composed, reading the cache offline, once it is
// Complete (serve); a changed revision is a new Job, and the engines keep
// the observed spec until it is Complete; the former Job is no longer
// composed, so Crossplane deletes it.
func TestPrefetchSequence(t *testing.T) {
	xr := with("storage", map[string]any{"accessModes": []any{"ReadWriteMany"}, "prefetch": map[string]any{}},
		"vllmConfig", map[string]any{"hfTokenSecret": map[string]any{"name": "hf"}})

	// Fill: the claim and the Job, no engine Deployment.
	first := mustRun(t, req(t, xr, nil, nil))
	key := fillKey(t, first)
	t.Logf("first reconcile: %v", keys(first))
	if key == "" || slices.Contains(keys(first), "engine-m") || slices.Contains(keys(first), "engine-m-service") || !slices.Contains(keys(first), "engine-m-storage") {
		t.Fatalf("first reconcile composes %v: want the claim and a fill Job, no engine or engine Service", keys(first))
	}
	job := desired(t, first, key, &batchv1.Job{})
	c := job.Spec.Template.Spec.Containers[0]
	if want := []string{"python3", "-c"}; !slices.Equal(c.Command[:2], want) || !slices.Equal(c.Command[3:], []string{"org/m", ""}) {
		t.Errorf("fill command %q: want python3 -c <program> org/m \"\"", c.Command)
	}
	if envValue(c.Env, "HF_HOME") != "/data" || !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "HF_TOKEN" && e.ValueFrom != nil }) {
		t.Errorf("fill env %v: want HF_HOME=/data and HF_TOKEN from the Secret", c.Env)
	}
	if got := job.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim; got == nil || got.ClaimName != "s-m-storage-claim" {
		t.Errorf("fill volume %v: want the claim s-m-storage-claim", job.Spec.Template.Spec.Volumes)
	}

	// Wait: the Job runs; still no engine.
	running := mustRun(t, req(t, xr, nil, observedAll(first, map[string]map[string]any{key: {"active": 1}})))
	if slices.Contains(keys(running), "engine-m") || fillKey(t, running) != key {
		t.Fatalf("while the Job runs: %v, want the same Job and no engine", keys(running))
	}

	// Serve: the Job is Complete; the engines read the cache offline.
	filled := observedAll(running, map[string]map[string]any{key: jobStatus("Complete", "CompletionsReached", "Reached expected number of succeeded pods")})
	serving := mustRun(t, req(t, xr, nil, filled))
	d := desired(t, serving, "engine-m", &appsv1.Deployment{})
	if envValue(d.Spec.Template.Spec.Containers[0].Env, "HF_HUB_OFFLINE") != "1" {
		t.Errorf("engine env %v: want HF_HUB_OFFLINE=1", d.Spec.Template.Spec.Containers[0].Env)
	}

	// A new revision: a new Job; the engine Deployment stays as observed.
	xr2 := with("storage", map[string]any{"accessModes": []any{"ReadWriteMany"}, "prefetch": map[string]any{}},
		"vllmConfig", map[string]any{"hfTokenSecret": map[string]any{"name": "hf"}}, "model.revision", "v2")
	observed := observedAll(serving, map[string]map[string]any{key: jobStatus("Complete", "CompletionsReached", "")})
	refill := mustRun(t, req(t, xr2, nil, observed))
	key2 := fillKey(t, refill)
	if key2 == "" || key2 == key {
		t.Fatalf("revision v2: fill Job %q, want a new one beside %q", key2, key)
	}
	if slices.Contains(keys(refill), key) {
		t.Errorf("the former fill Job %s is still composed: %v", key, keys(refill))
	}
	if !slices.Contains(keys(refill), "engine-m-service") {
		t.Errorf("the engine Service is not kept while the v2 Job runs: %v", keys(refill))
	}
	kept := desired(t, refill, "engine-m", &appsv1.Deployment{})
	if slices.Contains(kept.Spec.Template.Spec.Containers[0].Args, "--revision=v2") {
		t.Errorf("the engines roll to v2 before its Job is Complete: %q", kept.Spec.Template.Spec.Containers[0].Args)
	}
	if job2 := desired(t, refill, key2, &batchv1.Job{}); !slices.Equal(job2.Spec.Template.Spec.Containers[0].Command[3:], []string{"org/m", "v2"}) {
		t.Errorf("fill command %q: want org/m v2", job2.Spec.Template.Spec.Containers[0].Command)
	}
	done := observedAll(refill, map[string]map[string]any{key2: jobStatus("Complete", "CompletionsReached", "")})
	rolled := mustRun(t, req(t, xr2, nil, done))
	if args := desired(t, rolled, "engine-m", &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--revision=v2") {
		t.Errorf("once the v2 Job is Complete the engines run %q, want --revision=v2", args)
	}
}

// modelCacheOf is status.models[0].modelCache of a response.
func modelCacheOf(rsp *fnv1.RunFunctionResponse) any {
	models, _ := xrStatus(rsp)["models"].([]any)
	if len(models) == 0 {
		return nil
	}
	return models[0].(map[string]any)["modelCache"]
}

// TestPrefetchStatus: the status says per model whether its cache is
// cached, downloading or failed (with the Job's reason), in
// status.models[].modelCache and the ModelCacheReady condition; EnginesReady
// says the engines wait for it. A stack without prefetch has no
// ModelCacheReady condition.
func TestPrefetchStatus(t *testing.T) {
	xr := with("storage", map[string]any{"accessModes": []any{"ReadWriteMany"}, "prefetch": map[string]any{}})
	first := mustRun(t, req(t, xr, nil, nil))
	key := fillKey(t, first)
	retry := "; once that is fixed, delete Job " + desired(t, first, key, &batchv1.Job{}).Name + " to try again"
	for name, tc := range map[string]struct {
		job            map[string]any // the Job's observed status, nil: not observed
		cache          map[string]any
		cacheCond      cond
		enginesReason  string
		enginesMessage string
	}{
		"Downloading": {job: map[string]any{"active": 1}, cache: map[string]any{"state": "Downloading"},
			cacheCond:     cond{condFalse, "Downloading", "0/1 model caches filled. m: downloading"},
			enginesReason: "Downloading", enginesMessage: "waits for its model cache: a Job downloads the model once, then the engines start"},
		"NotObservedYet": {cache: map[string]any{"state": "Downloading"},
			cacheCond:     cond{condFalse, "Downloading", "0/1 model caches filled. m: downloading"},
			enginesReason: "Downloading", enginesMessage: "waits for its model cache: a Job downloads the model once, then the engines start"},
		"Failed": {job: jobStatus("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
			cache:         map[string]any{"state": "Failed", "reason": "BackoffLimitExceeded: Job has reached the specified backoff limit" + retry},
			cacheCond:     cond{condFalse, "FillFailed", "0/1 model caches filled. m: the fill Job failed: BackoffLimitExceeded: Job has reached the specified backoff limit" + retry},
			enginesReason: "FillFailed", enginesMessage: "the Job that fills its model cache failed (BackoffLimitExceeded: Job has reached the specified backoff limit" + retry + "); the engines start once it succeeds"},
		// The fill program's exit code for a gated model, as the Job
		// controller words a podFailurePolicy failure.
		"Gated": {job: jobStatus("Failed", "PodFailurePolicy", "Container fill for pod llm/s-m-fill-x-abcde failed with exit code 11 matching FailJob rule at index 0"),
			cache:         map[string]any{"state": "Failed", "reason": "the model is gated: its terms are not accepted for the token of vllmConfig.hfTokenSecret (or there is none)" + retry},
			cacheCond:     cond{condFalse, "FillFailed", "0/1 model caches filled. m: the fill Job failed: the model is gated: its terms are not accepted for the token of vllmConfig.hfTokenSecret (or there is none)" + retry},
			enginesReason: "FillFailed", enginesMessage: "the Job that fills its model cache failed (the model is gated"},
		"NoSpace": {job: jobStatus("Failed", "PodFailurePolicy", "Container fill for pod llm/s-m-fill-x-abcde failed with exit code 13 matching FailJob rule at index 0"),
			cache:     map[string]any{"state": "Failed", "reason": "no space left on the claim: raise storage.size" + retry},
			cacheCond: cond{condFalse, "FillFailed", "0/1 model caches filled. m: the fill Job failed: no space left on the claim: raise storage.size" + retry}},
		"Cached": {job: jobStatus("Complete", "CompletionsReached", ""), cache: map[string]any{"state": "Cached"},
			cacheCond: cond{condTrue, "Cached", "1/1 model caches filled"}},
	} {
		t.Run(name, func(t *testing.T) {
			observed := observedAll(first, nil)
			if tc.job == nil {
				delete(observed, key)
			} else {
				observed[key]["status"] = tc.job
			}
			rsp := mustRun(t, req(t, xr, nil, observed))
			if diff := cmp.Diff(any(tc.cache), modelCacheOf(rsp)); diff != "" {
				t.Errorf("status.models[0].modelCache (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.cacheCond, conditionOfType(t, rsp, "ModelCacheReady")); diff != "" {
				t.Errorf("ModelCacheReady (-want +got):\n%s", diff)
			}
			if tc.enginesReason != "" {
				if c := conditionOfType(t, rsp, "EnginesReady"); c.Reason != tc.enginesReason || !strings.Contains(c.Message, tc.enginesMessage) {
					t.Errorf("EnginesReady %+v: want reason %s and %q", c, tc.enginesReason, tc.enginesMessage)
				}
			}
		})
	}
	for _, c := range mustRun(t, req(t, minimalXR(), nil, nil)).GetConditions() {
		if c.GetType() == "ModelCacheReady" {
			t.Errorf("a stack without prefetch has condition ModelCacheReady: %v", c)
		}
	}
}

// TestWeightsWithoutPrefetch: without a fill Job the status still says per
// model what happens to its weights: nothing is downloaded (a path on the
// pod's volumes, a URL vLLM loads itself), or each engine pod downloads
// them when it starts, into the volume HF_HOME is on. None of these makes a
// ModelCacheReady condition nor holds the engines back.
func TestWeightsWithoutPrefetch(t *testing.T) {
	const perPod = "each engine pod downloads "
	for name, tc := range map[string]struct {
		xr    map[string]any
		state string
		want  string
	}{
		"Path":          {with("model.path", "/models/m"), "NotNeeded", "the model is read from /models/m on the pod's volumes; nothing is downloaded"},
		"AbsoluteURL":   {with("model.modelURL", "/models/m"), "NotNeeded", "the model is read from /models/m on the pod's volumes; nothing is downloaded"},
		"ObjectStore":   {with("model.modelURL", "s3://bucket/m"), "NotNeeded", "vLLM loads s3://bucket/m itself at every start; nothing is downloaded into a cache"},
		"StackClaim":    {minimalXR(), "OnEngineStart", perPod + "the model into claim s-m-storage-claim when it starts, skipping files already there; storage.prefetch downloads it once, before the engines start"},
		"PrefetchOff":   {with("storage.prefetch", map[string]any{"enabled": false}), "OnEngineStart", perPod + "the model into claim s-m-storage-claim when it starts, skipping files already there; storage.prefetch downloads it once, before the engines start"},
		"ExistingClaim": {with("storage.existingClaimName", "models"), "OnEngineStart", perPod + "what claim models (storage.existingClaimName, used as it is) lacks of the model when it starts"},
		"EmptyDir":      {with("storage.emptyDir", map[string]any{}), "OnEngineStart", perPod + "the model into its own emptyDir when it starts; a claim with storage.prefetch downloads it once"},
		"NoStorage":     {with("storage.enabled", false), "OnEngineStart", perPod + "the model into its container's filesystem when it starts (storage is disabled)"},
	} {
		t.Run(name, func(t *testing.T) {
			first := mustRun(t, req(t, tc.xr, nil, nil))
			rsp := mustRun(t, req(t, tc.xr, nil, observedAll(first, nil)))
			want := map[string]any{"state": tc.state, "reason": tc.want}
			if diff := cmp.Diff(any(want), modelCacheOf(rsp)); diff != "" {
				t.Errorf("status.models[0].modelCache (-want +got):\n%s", diff)
			}
			for _, c := range rsp.GetConditions() {
				if c.GetType() == "ModelCacheReady" {
					t.Errorf("condition ModelCacheReady without a fill Job: %v", c)
				}
			}
			if c := conditionOfType(t, rsp, "EnginesReady"); c.Reason == "Downloading" || c.Reason == "FillFailed" {
				t.Errorf("EnginesReady waits for a cache no Job fills: %+v", c)
			}
		})
	}
}

// TestPrefetchMultiNode: a multi-node model's pods all mount its one
// ReadWriteMany claim (multiNode refuses any other), so one Job fills it
// for the leaders and the workers alike; the LeaderWorkerSet is composed
// once the Job is Complete, every pod of a group reading the cache offline.
func TestPrefetchMultiNode(t *testing.T) {
	xr := with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "multiNode", map[string]any{"podsPerReplica": 2},
		"vllmConfig.tensorParallelSize", 2, "vllmConfig.pipelineParallelSize", 2, "resources.gpu", "2",
		"storage", map[string]any{"accessModes": []any{"ReadWriteMany"}, "prefetch": map[string]any{}})
	first := mustRun(t, req(t, xr, nil, nil))
	key := fillKey(t, first)
	if key == "" || slices.Contains(keys(first), "engine-m-leaderworkerset") || !slices.Contains(keys(first), "engine-m-storage") {
		t.Fatalf("first reconcile composes %v: want the claim and a fill Job, no LeaderWorkerSet", keys(first))
	}
	if got := desired(t, first, key, &batchv1.Job{}).Spec.Template.Spec.Volumes[0].PersistentVolumeClaim; got == nil || got.ClaimName != "s-m-storage-claim" {
		t.Errorf("fill volume %v: want the claim s-m-storage-claim", got)
	}
	filled := observedAll(first, map[string]map[string]any{key: jobStatus("Complete", "CompletionsReached", "")})
	serving := mustRun(t, req(t, xr, nil, filled))
	lws := desired(t, serving, "engine-m-leaderworkerset", &lwsv1.LeaderWorkerSet{})
	tpl := lws.Spec.LeaderWorkerTemplate
	for who, pod := range map[string]corev1.PodSpec{"leader": tpl.LeaderTemplate.Spec, "worker": tpl.WorkerTemplate.Spec} {
		if envValue(pod.Containers[0].Env, "HF_HUB_OFFLINE") != "1" {
			t.Errorf("the %s's env %v: want HF_HUB_OFFLINE=1", who, pod.Containers[0].Env)
		}
		if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
			return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "s-m-storage-claim"
		}) {
			t.Errorf("the %s does not mount the filled claim: %v", who, pod.Volumes)
		}
	}
}
