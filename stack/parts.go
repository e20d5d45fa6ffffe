package stack

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/vllm-project/function-vllm-stack/stack/build"
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
	// OffloadClaimKey and OffloadClaim are the claim of its filesystem KV
	// offload tier the stack composes (kvOffloading); "" when none.
	OffloadClaimKey, OffloadClaim string
	// FillKey is the key of the Job that fills the claim the engine
	// mounts (storage.prefetch); "" when none does.
	FillKey string
	// Weights says where the engine's weights come from and where it keeps
	// what it downloads, for a status that says so when no Job fills its
	// cache.
	Weights Weights
	// ScaleToZero: the model goes to zero replicas when idle, by design.
	ScaleToZero bool
	// Adapters are the model's runtime adapters (model.adapters), whose
	// state its pods report.
	Adapters []string
	// Objectives are the model's inferenceObjectives, each with the
	// header that selects it.
	Objectives []ObjectivePart
	// Version is set for a model with a canary (model.canary): which
	// version this engine is, its share and the promotion's state.
	Version *VersionPart
}

// Weights: an engine's model (modelURL, or model.path), where vLLM takes it
// from, and the volume HF_HOME is on: a claim the stack makes
// (StackClaim), an existing one (ExistingClaim), the pod's emptyDir
// (EmptyDir), or none (storage disabled: the container's own filesystem).
type Weights struct {
	Model                     string
	From                      WeightsSource
	StackClaim, ExistingClaim string
	EmptyDir                  bool
}

// A VersionPart is one version of a model with a canary.
type VersionPart struct {
	Name  string // VersionStable or VersionCanary
	Share int32  // percent of the model's requests
	State string // transition.CanaryServing, CanaryPromoting or CanaryPromoted
}

// The versions of a model with a canary, as the status names them.
const (
	VersionStable = "Stable"
	VersionCanary = "Canary"
)

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

// parts are the Parts of a resolved stack, as the transition t of its last
// Compose left it.
func parts(s *resolve.Stack, t transition.Result) Parts {
	p := Parts{Endpoint: endpoint(s, t.RootHolder), Engines: make([]EnginePart, 0, len(s.Engines)), Moves: t.Moves, RoutingMove: t.LayerMove}
	for i, e := range s.Engines {
		version, skip := versionPart(s, t, i)
		if skip {
			continue // a promoted canary's objects are gone
		}
		ep := EnginePart{
			Version: version,
			Model:   e.Model.Name, ServedModelName: e.Served, Role: e.Role,
			Replicas: *e.Cfg.Replicas, Autoscaled: e.Autoscaled, ScaleToZero: e.ScaleToZero != nil,
			Key: names.EngineKey(e.ID), Deployment: s.Names.EngineDeployment(e.ID),
			PodName: names.Shorten(e.ID, names.MaxLabelLength),
		}
		if n, ok := e.PodsPerReplica, e.MultiNode; ok {
			ep.Key, ep.Deployment = names.EngineLWSKey(e.ID), ""
			ep.LeaderWorkerSet, ep.PodsPerReplica = s.Names.EngineLeaderWorkerSet(e.ID), n
		}
		if resolve.OwnsClaimKey(e) {
			id := resolve.ClaimEngine(e).ID
			ep.ClaimKey, ep.Claim = names.EngineStorageKey(id), s.Names.StorageClaim(id)
		}
		if e.KVOffloadFS == resolve.KVOffloadNewClaim {
			ep.OffloadClaimKey, ep.OffloadClaim = names.EngineKVOffloadKey(e.ID), s.Names.KVOffloadClaim(e.ID)
		}
		ep.Weights = weights(s, e)
		for _, f := range t.Fills {
			if e.Prefetch && f.Claim == resolve.ClaimEngine(e).ID {
				ep.FillKey = f.Key
			}
		}
		if e.RuntimeAdapters {
			for _, a := range e.Model.Adapters {
				ep.Adapters = append(ep.Adapters, a.Name)
			}
		}
		for _, o := range build.Objectives(s, e) {
			ep.Objectives = append(ep.Objectives, ObjectivePart{Name: o.Spec.Name, Header: o.Header})
		}
		p.Engines = append(p.Engines, ep)
	}
	if resolve.ExtensionOn(s) {
		for _, e := range resolve.PoolModels(s) {
			if e.Version != "" && canaryState(t, e.Model.Name) == transition.CanaryPromoted {
				continue
			}
			p.Pools = append(p.Pools, PoolPart{
				Model: e.Model.Name, Key: names.EngineKey(e.ID) + "-inferencepool", Pool: s.Names.InferencePool(e.ID),
				PickerKey: names.PickerKey(e.ID), Picker: s.Names.Picker(e.ID), PickerReplicas: s.Extension.Replicas,
			})
		}
		return p
	}
	p.Router = RouterPart{
		RouterType: cmp.Or(t.KeptRouterType, s.Router.RouterType), Replicas: s.Router.Replicas, Autoscaled: resolve.RouterAutoscaled(s),
		Key: names.RouterKey, Deployment: s.Names.RouterDeployment(),
		ServiceKey: names.RouterServiceKey, Service: s.Names.RouterService(),
	}
	return p
}

// weights says where e's weights come from and where HF_HOME keeps them.
func weights(s *resolve.Stack, e resolve.Engine) Weights {
	st := e.Cfg.Storage
	w := Weights{Model: resolve.Or(e.Model.Path, e.Model.ModelURL), From: resolve.WeightsFrom(e)}
	switch {
	case !resolve.Enabled(st.Enabled):
	case st.ExistingClaimName != "":
		w.ExistingClaim = st.ExistingClaimName
	case st.EmptyDir != nil:
		w.EmptyDir = true
	default:
		w.StackClaim = s.Names.StorageClaim(resolve.ClaimEngine(e).ID)
	}
	return w
}

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
			if e.Version == "" { // a canary serves at its model's path
				paths = append(paths, resolve.ModelPath(e)+"/v1")
			}
		}
		return "gateway " + gw + " " + strings.Join(paths, ", ")
	}
	host := s.Names.RouterService() + "." + s.Namespace + ".svc.cluster.local"
	if s.Router.ServicePort != names.ServicePort {
		host += ":" + strconv.Itoa(int(s.Router.ServicePort))
	}
	return "http://" + host + "/v1"
}

// versionPart is the version of engine i of a model with a canary, nil
// for another; skip: i is a canary whose promotion is done.
func versionPart(s *resolve.Stack, t transition.Result, i int) (v *VersionPart, skip bool) {
	e := s.Engines[i]
	if !resolve.CanaryOn(e) {
		return nil, false
	}
	state := canaryState(t, e.Model.Name)
	model, canary := i, i+1
	if e.Version != "" {
		if state == transition.CanaryPromoted {
			return nil, true
		}
		model, canary = i-1, i
	}
	ext := resolve.ExtensionOn(s)
	share := resolve.CanaryShare(e.Model.Canary, *s.Engines[model].Cfg.Replicas, *s.Engines[canary].Cfg.Replicas, ext)
	if state == transition.CanaryPromoted {
		share = 0
	}
	if e.Version != "" {
		return &VersionPart{Name: VersionCanary, Share: share, State: state}, false
	}
	return &VersionPart{Name: VersionStable, Share: 100 - share, State: state}, false
}

// canaryState is the state of model's canary in t.
func canaryState(t transition.Result, model string) string {
	for _, c := range t.Canaries {
		if c.Model == model {
			return c.State
		}
	}
	return transition.CanaryServing
}
