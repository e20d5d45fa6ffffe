package transition

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// A canary's promotion, make before break (model.canary.promote): the
// model's workload rolls to the canary's settings (resolve/canary.go)
// while the canary's objects are composed as before, so it keeps its share
// of the requests; the model's workload carries AnnotationPromoted, the
// digest of the canary it was rolled to. Once the observed workload
// carries that digest and is ready (every replica updated and available),
// the canary's objects go, and the model's route sends it every request.
// They do not come back while the workload carries the digest and the
// canary's workload is gone, even if a model pod fails later. Abort is the
// canary block removed: its objects go, the model's are unchanged.

// AnnotationPromoted, on a model's workload while its canary is promoted,
// is the digest of the canary block it runs (canaryDigest).
const AnnotationPromoted = "serving.vllm.ai/canary-promoted"

// Canary states, as the status says them.
const (
	CanaryServing   = "Serving"
	CanaryPromoting = "Promoting"
	CanaryPromoted  = "Promoted"
)

// A Canary is a model's canary as the last Compose saw it.
type Canary struct {
	Model string // the model's name
	State string // CanaryServing, CanaryPromoting or CanaryPromoted
}

// Canaries decides each canary's objects over what Crossplane observed:
// groups are build.ComposeGroups' (one per engine), returned with a
// promoted canary's group emptied and its model's route to the model's
// pool alone; the model's workload is marked with AnnotationPromoted while
// its canary is promoted.
func Canaries(s *resolve.Stack, o build.Observed, groups [][]build.Object, rootHolder string) ([][]build.Object, []Canary) {
	var out []Canary
	for i, e := range s.Engines {
		if e.Version != "" || !resolve.CanaryOn(e) || i+1 >= len(groups) {
			continue
		}
		c := Canary{Model: e.Model.Name, State: CanaryServing}
		if resolve.CanaryPromoting(e) {
			c.State = CanaryPromoting
			digest := canaryDigest(e)
			key := workloadKey(e)
			for _, ob := range groups[i] {
				if ob.Key == key {
					markPromoted(ob, digest)
				}
			}
			ready := observedDigest(o, key) == digest && (o.Ready(key) || !o.Has(workloadKey(s.Engines[i+1])))
			if ready {
				c.State = CanaryPromoted
				groups[i+1] = nil
				if resolve.ExtensionOn(s) {
					for j, ob := range groups[i] {
						if ob.Key == names.ModelRouteKey(e.ID) {
							groups[i][j].Obj = build.ModelRoute(s, e, rootHolder, false)
						}
					}
				}
			}
		}
		out = append(out, c)
	}
	return groups, out
}

// workloadKey is the key of an engine's Deployment or LeaderWorkerSet.
func workloadKey(e resolve.Engine) string {
	if e.MultiNode {
		return names.EngineLWSKey(e.ID)
	}
	return names.EngineKey(e.ID)
}

// canaryDigest identifies the canary block a model is promoted to: a
// changed block is a new promotion.
func canaryDigest(e resolve.Engine) string {
	b, _ := json.Marshal(e.Model.Canary) //nolint:errchkjson // a plain struct
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// markPromoted sets AnnotationPromoted on a workload's metadata (not its
// pods': the mark rolls nothing).
func markPromoted(ob build.Object, digest string) {
	m, err := meta.Accessor(ob.Obj)
	if err != nil {
		return
	}
	a := map[string]string{}
	for k, v := range m.GetAnnotations() {
		a[k] = v
	}
	a[AnnotationPromoted] = digest
	m.SetAnnotations(a)
}

// observedDigest is the AnnotationPromoted of the observed object of key.
func observedDigest(o build.Observed, key string) string {
	v, _, _ := unstructured.NestedString(o.Object(key), "metadata", "annotations", AnnotationPromoted)
	return v
}
