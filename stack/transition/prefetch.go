package transition

import (
	"strings"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// Fill is the state of a claim's fill Job (storage.prefetch) as observed.
type Fill struct {
	Model string // the model's name
	Claim string // the claim engine's ID (a P/D group's, or the model's)
	Key   string // the Job's key
	// Complete: the Job succeeded, its engines are composed; Failed: it
	// ran out of retries (Message says why, from its condition).
	Complete, Failed bool
	Message          string
}

// Prefetch holds a model's engines until the Job that fills their claim,
// for the spec as it is now, is Complete. Every object of the model's
// engines (groups[i] are engine i's, as build.ComposeGroups made them) but
// the claims and the fill Jobs is held: an object observed is composed
// again as it is (a changed revision rolls the engines only once the cache
// holds it), one not yet created is withheld, so nothing selects or scales
// a workload that does not exist. Fill Jobs of former specs are not
// composed again, so Crossplane deletes them.
func Prefetch(s *resolve.Stack, o build.Observed, objs []build.Object, groups [][]build.Object) (out []build.Object, fills []Fill, held []string) {
	jobs := map[string]string{} // claim engine ID -> its fill Job's key
	for _, ob := range objs {
		for _, e := range s.Engines {
			c := resolve.ClaimEngine(e).ID
			if _, job := ob.Obj.(*batchv1.Job); job && e.Prefetch && names.IsEngineFillKey(c, ob.Key) {
				jobs[c] = ob.Key
			}
		}
	}
	waiting := map[string]bool{} // model IDs whose engines wait
	seen := map[string]bool{}
	for _, e := range s.Engines {
		if !e.Prefetch {
			continue
		}
		c := resolve.ClaimEngine(e).ID
		key, ok := jobs[c]
		if !ok {
			continue
		}
		f := Fill{Model: e.Model.Name, Claim: c, Key: key}
		if m := o.Object(key); m != nil {
			f.Complete = jobCondition(m, "Complete")
			f.Failed = jobCondition(m, "Failed")
			f.Message = jobMessage(m, "Failed")
		}
		if !seen[c] {
			seen[c] = true
			fills = append(fills, f)
		}
		if !f.Complete {
			waiting[e.ModelID] = true
		}
	}
	hold := map[string]bool{}
	for i, e := range s.Engines {
		if !waiting[e.ModelID] || i >= len(groups) {
			continue
		}
		for _, ob := range groups[i] {
			if ob.Key != names.EngineStorageKey(resolve.ClaimEngine(e).ID) && !names.IsEngineFillKey(resolve.ClaimEngine(e).ID, ob.Key) {
				hold[ob.Key] = true
			}
		}
	}
	out = make([]build.Object, 0, len(objs))
	for _, ob := range objs {
		if !hold[ob.Key] {
			out = append(out, ob)
			continue
		}
		gvk := ob.Obj.GetObjectKind().GroupVersionKind()
		if kept, ok := keptObject(o, keyed{ob.Key, gvk.GroupVersion().String(), gvk.Kind}, nil); ok {
			out = append(out, build.Object{Key: ob.Key, Obj: kept})
			continue
		}
		held = append(held, ob.Key)
	}
	return out, fills, held
}

func jobCondition(m map[string]any, typ string) bool {
	c := conditionOf(m, typ)
	return c != nil && c["status"] == "True"
}

func jobMessage(m map[string]any, typ string) string {
	if c := conditionOf(m, typ); c != nil && c["status"] == "True" {
		reason, _ := c["reason"].(string)
		msg, _ := c["message"].(string)
		return strings.TrimSpace(reason + ": " + msg)
	}
	return ""
}

func conditionOf(m map[string]any, typ string) map[string]any {
	st, _ := m["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if c, ok := c.(map[string]any); ok && c["type"] == typ {
			return c
		}
	}
	return nil
}
