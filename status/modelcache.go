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
)

// modelCache is the state of the Job that fills e's claim, nil when none
// does.
func modelCache(e stack.EnginePart, observed Observed) *v1alpha1.ModelCacheStatus {
	if e.FillKey == "" {
		return nil
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

// modelCacheCondition says whether every filled cache holds its model; ok
// is false when no model's cache is filled by a Job.
func modelCacheCondition(models []Model) (Condition, bool) {
	var waiting []string
	total, reason := 0, reasonDownloading
	for _, m := range models {
		c := m.ModelCache
		if c == nil {
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
