package status

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/internal/text"
	"github.com/vllm-project/function-vllm-stack/stack"
)

// The inference extension's routing layer in the status: the RouterReady
// condition says whether every model's endpoint picker runs and every
// InferencePool is accepted by a Gateway that resolved its references. A
// Gateway writes that in the pool's status.parents[].conditions; a pool no
// Gateway accepted routes nothing, so the stack is not Ready.

// RouterTypeInferenceExtension is status.router.routerType of a stack on the
// inference extension.
const RouterTypeInferenceExtension = "inference-extension"

// reasonNotAccepted: no Gateway accepted a pool, or one could not resolve
// its references.
const reasonNotAccepted = "NotAccepted"

// maxPoolsListed bounds the pools a condition names.
const maxPoolsListed = 4

// poolAccepted reports whether an observed InferencePool is accepted by a
// parent Gateway that resolved its references, and if not, why.
func poolAccepted(o *unstructured.Unstructured, name string) (bool, string) {
	if o == nil {
		return false, fmt.Sprintf("InferencePool %s is not created yet", name)
	}
	parents, _, _ := unstructured.NestedSlice(o.Object, "status", "parents")
	if len(parents) == 0 {
		return false, fmt.Sprintf("no Gateway has accepted InferencePool %s yet (its status names no parent): check that inferenceExtension.parentRefs names a Gateway whose implementation supports the inference extension, and that its HTTPRoute is attached", name)
	}
	var why []string
	for i, p := range parents {
		if i >= maxPoolsListed {
			break
		}
		m, _ := p.(map[string]any)
		conds, _, _ := unstructured.NestedSlice(m, "conditions")
		accepted, resolved := conditionIn(conds, "Accepted"), conditionIn(conds, "ResolvedRefs")
		if accepted.status == "True" && resolved.status == "True" {
			return true, ""
		}
		gw, _, _ := unstructured.NestedString(m, "parentRef", "name")
		for _, c := range []struct {
			typ string
			c   poolCond
		}{{"Accepted", accepted}, {"ResolvedRefs", resolved}} {
			if c.c.status != "True" {
				why = append(why, fmt.Sprintf("Gateway %s: %s %s", clean(gw), c.typ, clean(join(or(c.c.status, "unknown"), join(c.c.reason, c.c.message)))))
			}
		}
	}
	return false, fmt.Sprintf("InferencePool %s is not accepted: %s", name, strings.Join(why, "; "))
}

type poolCond struct{ status, reason, message string }

// conditionIn is the first condition of a type in a list of conditions.
func conditionIn(conds []any, typ string) poolCond {
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return poolCond{s, r, msg}
		}
	}
	return poolCond{}
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// routingProgress is the routing layer of a stack on the inference
// extension: its pickers, as Deployments, and its pools' acceptance.
func routingProgress(pools []stack.PoolPart, observed Observed) Router {
	var reasons, problems []string
	var replicas, ready int32
	for _, p := range pools {
		replicas += p.PickerReplicas
		ds, pr := deploymentProgress(observed[p.PickerKey], p.Picker, nil)
		ready += ds.ReadyReplicas
		if !pr.Ready {
			reasons = append(reasons, pr.Reason)
			problems = append(problems, fmt.Sprintf("endpoint picker of %s: %s", p.Model, pr.Message))
		}
		if ok, why := poolAccepted(observed[p.Key], p.Pool); !ok {
			reason := reasonNotAccepted
			if observed[p.Key] == nil {
				reason = reasonCreating
			}
			reasons = append(reasons, reason)
			problems = append(problems, why)
		}
	}
	r := Router{RouterStatus: routerStatus(RouterTypeInferenceExtension, replicas, ready)}
	if len(problems) == 0 {
		r.Progress = Progress{Ready: true, Reason: reasonAvailable}
		return r
	}
	if more := len(problems) - maxPoolsListed; more > 0 {
		problems = append(problems[:maxPoolsListed], fmt.Sprintf("%d more", more))
	}
	r.Progress = Progress{Reason: worst(reasons...), Message: text.Clip(strings.Join(problems, "; "), maxMessageLength)}
	return r
}
