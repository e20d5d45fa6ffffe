package stack

import (
	"strconv"
	"strings"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/stack/transition"
)

// Parts are what a stack's status reports on, named as the stack composes
// them: each model's engine Deployment and model cache claim, and the
// router's Deployment and Service. Keys are composition resource names.
type Parts struct {
	Endpoint string // the router's OpenAI-compatible URL inside the cluster
	Engines  []EnginePart
	Router   RouterPart
	// Moves are the models changing topology whose old workload still
	// serves (Compose's).
	Moves []transition.Move
	// Pools are the models' InferencePools and pickers when the stack
	// routes through the inference extension; then Router is zero.
	Pools []PoolPart
	// RoutingMove says that the stack switches routing layers and the old
	// one serves until the new one is ready; "" when it does not.
	RoutingMove string
}

// A PoolPart is one model's InferencePool and its endpoint picker.
type PoolPart struct {
	Model          string
	Key, Pool      string // the InferencePool's
	PickerKey      string // the picker's Deployment
	Picker         string
	PickerReplicas int32
}

// An EnginePart is one model's engine, or one group of a disaggregated
// model's.
type EnginePart struct {
	Model, ServedModelName string
	Role                   string // "prefill" or "decode" for a group, else ""
	Replicas               int32  // as the spec asks; the autoscaler's when Autoscaled
	Autoscaled             bool
	Key, Deployment        string
	// LeaderWorkerSet names a multi-node model's LeaderWorkerSet (then
	// Deployment is ""), whose groups of PodsPerReplica pods count as one
	// replica each.
	LeaderWorkerSet string
	PodsPerReplica  int32
	PodName         string // the LabelName of its pods (a group's leader and workers)
	// ClaimKey and Claim are the model cache claim the stack composes for
	// the model; "" when it composes none.
	ClaimKey, Claim string
	// ScaleToZero: the model goes to zero replicas when idle, by design.
	ScaleToZero bool
	// Adapters are the model's runtime adapters (model.adapters), whose
	// state its pods report.
	Adapters []string
	// Objectives are the model's inferenceObjectives, each with the
	// header that selects it.
	Objectives []ObjectivePart
}

// An ObjectivePart is one of a model's inferenceObjectives.
type ObjectivePart struct{ Name, Header string }

// The RouterPart is the router's Deployment and Service.
type RouterPart struct {
	RouterType      string
	Replicas        int32
	Autoscaled      bool
	Key, Deployment string
	ServiceKey      string
	Service         string
}

// Parts lists what the stack composes that has a state to observe.
func (s *Stack) Parts() Parts { return parts(s.r, s.last) }

// endpoint is the router's OpenAI-compatible URL inside the cluster; with
// the inference extension, the Gateway and the path of each model's API,
// since the Gateway's address is its own.
func endpoint(s *resolve.Stack, rootHolder string) string {
	if resolve.ExtensionOn(s) {
		x := s.Extension.Spec
		gw := ""
		if len(x.ParentRefs) > 0 {
			gw = resolve.Or(x.ParentRefs[0].Namespace, s.Namespace) + "/" + x.ParentRefs[0].Name
		}
		models := resolve.PoolModels(s)
		paths := make([]string, 0, len(models)+1)
		if rootHolder != "" {
			paths = append(paths, "/v1 ("+rootHolder+")")
		}
		for _, e := range models {
			paths = append(paths, resolve.ModelPath(e)+"/v1")
		}
		return "gateway " + gw + " " + strings.Join(paths, ", ")
	}
	host := s.Names.RouterService() + "." + s.Namespace + ".svc.cluster.local"
	if s.Router.ServicePort != names.ServicePort {
		host += ":" + strconv.Itoa(int(s.Router.ServicePort))
	}
	return "http://" + host + "/v1"
}
