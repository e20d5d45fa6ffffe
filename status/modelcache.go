package status

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/internal/text"
	"github.com/vllm-project/function-vllm-stack/stack"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// A model's cache filled by a Job (storage.prefetch): its state, the
// ModelCacheReady condition, and what EnginesReady says of an engine that
// waits for it.
const (
	conditionModelCacheReady = "ModelCacheReady"
	cacheCached              = "Cached"
	cacheDownloading         = "Downloading"
	cacheFailed              = "Failed"
	reasonDownloading        = "Downloading"
	reasonFillFailed         = "FillFailed"
	// Where no Job fills the cache: the model is not downloaded at all
	// (a path, or a URL vLLM streams), or each engine pod downloads it.
	cacheNotNeeded     = "NotNeeded"
	cacheOnEngineStart = "OnEngineStart"
)

// modelCache is the state of the Job that fills e's claim, or, when none
// does, where e's weights come from.
func modelCache(e stack.EnginePart, observed Observed) *v1alpha1.ModelCacheStatus {
	if e.FillKey == "" {
		return unfilled(e.Weights)
	}
	job := observed[e.FillKey]
	switch {
	case job != nil && conditionTrue(job, "Complete"):
		return &v1alpha1.ModelCacheStatus{State: cacheCached}
	case job != nil && conditionTrue(job, "Failed"):
		reason := jobFailure(job)
		if m := exitCode.FindStringSubmatch(reason); m != nil {
			if code, err := strconv.ParseInt(m[1], 10, 32); err == nil && stack.FillExitReasons[int32(code)] != "" {
				reason = stack.FillExitReasons[int32(code)]
			}
		}
		// The Job's spec is unchanged by a fixed token or a larger claim:
		// deleting it has Crossplane create it again.
		reason += "; once that is fixed, delete Job " + job.GetName() + " to try again"
		return &v1alpha1.ModelCacheStatus{State: cacheFailed, Reason: text.Clip(reason, maxMessageLength)}
	}
	return &v1alpha1.ModelCacheStatus{State: cacheDownloading}
}

// unfilled says what happens to the weights of an engine whose cache no
// Job fills.
func unfilled(w stack.Weights) *v1alpha1.ModelCacheStatus {
	var reason string
	switch {
	case w.From == stack.WeightsLocal:
		return &v1alpha1.ModelCacheStatus{State: cacheNotNeeded, Reason: text.Clip("the model is read from "+w.Model+" on the pod's volumes; nothing is downloaded", maxMessageLength)}
	case w.From == stack.WeightsURL:
		return &v1alpha1.ModelCacheStatus{State: cacheNotNeeded, Reason: text.Clip("vLLM loads "+w.Model+" itself at every start; nothing is downloaded into a cache", maxMessageLength)}
	case w.StackClaim != "":
		// vLLM's download lock is in each pod's own /tmp (MODEL-LIFE.md).
		reason = "each engine pod downloads the model into claim " + w.StackClaim + " when it starts, skipping files already there; storage.prefetch downloads it once, before the engines start"
	case w.ExistingClaim != "":
		reason = "each engine pod downloads what claim " + w.ExistingClaim + " (storage.existingClaimName, used as it is) lacks of the model when it starts"
	case w.EmptyDir:
		reason = "each engine pod downloads the model into its own emptyDir when it starts; a claim with storage.prefetch downloads it once"
	default:
		reason = "each engine pod downloads the model into its container's filesystem when it starts (storage is disabled)"
	}
	return &v1alpha1.ModelCacheStatus{State: cacheOnEngineStart, Reason: text.Clip(reason, maxMessageLength)}
}

// filledByJob: the cache state is a fill Job's.
func filledByJob(c *v1alpha1.ModelCacheStatus) bool {
	return c != nil && c.State != cacheNotNeeded && c.State != cacheOnEngineStart
}

// exitCode reads the exit code in the message of a Job failed by its
// podFailurePolicy (k8s.io/kubernetes pkg/controller/job/
// pod_failure_policy.go:53@v1.37.2: "Container %s for pod %s/%s failed with
// exit code %v matching %v rule at index %d").
var exitCode = regexp.MustCompile(`^PodFailurePolicy: Container fill for pod \S+ failed with exit code (\d+) matching FailJob rule`)

// jobFailure is the reason and message of a Job's Failed condition.
func jobFailure(job *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(job.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Failed" {
			reason, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return strings.TrimSuffix(strings.TrimSpace(reason+": "+msg), ":")
		}
	}
	return ""
}

// waitingForCache is EnginesReady's progress of an engine composed only
// once its cache is filled.
func waitingForCache(c *v1alpha1.ModelCacheStatus) Progress {
	if c.State == cacheFailed {
		return Progress{Reason: reasonFillFailed, Message: "the Job that fills its model cache failed (" + c.Reason + "); the engines start once it succeeds"}
	}
	return Progress{Reason: reasonDownloading, Message: "waits for its model cache: a Job downloads the model once, then the engines start"}
}

// modelCacheCondition says whether every cache a Job fills holds its
// model; ok is false when no model's cache is filled by a Job.
func modelCacheCondition(models []Model) (Condition, bool) {
	var waiting []string
	total, reason := 0, reasonDownloading
	for _, m := range models {
		c := m.ModelCache
		if !filledByJob(c) {
			continue
		}
		total++
		switch c.State {
		case cacheFailed:
			reason = reasonFillFailed
			waiting = append(waiting, fmt.Sprintf("%s: the fill Job failed: %s", m.displayName(), c.Reason))
		case cacheDownloading:
			waiting = append(waiting, m.displayName()+": downloading")
		}
	}
	if total == 0 {
		return Condition{}, false
	}
	if len(waiting) == 0 {
		return Condition{conditionModelCacheReady, true, cacheCached, fmt.Sprintf("%d/%d model caches filled", total, total)}, true
	}
	msg := fmt.Sprintf("%d/%d model caches filled. %s", total-len(waiting), total, strings.Join(waiting, ". "))
	return Condition{conditionModelCacheReady, false, reason, text.Clip(msg, maxMessageLength)}, true
}
