package stack

import (
	"cmp"
	"strconv"
	"strings"
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
	Moves []Move
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

// parts are the Parts of a resolved stack, as the transition t of its last
// Compose left it.
func parts(s *resolvedStack, t transitionResult) Parts {
	p := Parts{Endpoint: endpoint(s, t.rootHolder), Engines: make([]EnginePart, 0, len(s.engines)), Moves: t.moves, RoutingMove: t.layerMove}
	for _, e := range s.engines {
		ep := EnginePart{
			Model: e.model.Name, ServedModelName: e.served, Role: e.role,
			Replicas: *e.cfg.Replicas, Autoscaled: autoscaled(e), ScaleToZero: scaleToZero(e) != nil,
			Key: engineKey(e.id), Deployment: s.names.engineDeployment(e.id),
			PodName: shorten(e.id, maxLabelLength),
		}
		if n, ok := multiNode(e); ok {
			ep.Key, ep.Deployment = engineLWSKey(e.id), ""
			ep.LeaderWorkerSet, ep.PodsPerReplica = s.names.engineLeaderWorkerSet(e.id), n
		}
		if ownsClaimKey(e) {
			id := claimEngine(e).id
			ep.ClaimKey, ep.Claim = engineStorageKey(id), s.names.storageClaim(id)
		}
		if runtimeAdaptersOn(e) {
			for _, a := range e.model.Adapters {
				ep.Adapters = append(ep.Adapters, a.Name)
			}
		}
		for _, o := range objectives(s, e) {
			ep.Objectives = append(ep.Objectives, ObjectivePart{Name: o.spec.Name, Header: o.header})
		}
		p.Engines = append(p.Engines, ep)
	}
	if extensionOn(s) {
		for _, e := range poolModels(s) {
			p.Pools = append(p.Pools, PoolPart{
				Model: e.model.Name, Key: engineKey(e.id) + "-inferencepool", Pool: s.names.inferencePool(e.id),
				PickerKey: pickerKey(e.id), Picker: s.names.picker(e.id), PickerReplicas: s.extension.replicas,
			})
		}
		return p
	}
	p.Router = RouterPart{
		RouterType: cmp.Or(t.keptRouterType, s.router.routerType), Replicas: s.router.replicas, Autoscaled: routerAutoscaled(s),
		Key: routerKey, Deployment: s.names.routerDeployment(),
		ServiceKey: routerServiceKey, Service: s.names.routerService(),
	}
	return p
}

// endpoint is the router's OpenAI-compatible URL inside the cluster; with
// the inference extension, the Gateway and the path of each model's API,
// since the Gateway's address is its own.
func endpoint(s *resolvedStack, rootHolder string) string {
	if extensionOn(s) {
		x := s.extension.spec
		gw := ""
		if len(x.ParentRefs) > 0 {
			gw = or(x.ParentRefs[0].Namespace, s.namespace) + "/" + x.ParentRefs[0].Name
		}
		models := poolModels(s)
		paths := make([]string, 0, len(models)+1)
		if rootHolder != "" {
			paths = append(paths, "/v1 ("+rootHolder+")")
		}
		for _, e := range models {
			paths = append(paths, modelPath(e)+"/v1")
		}
		return "gateway " + gw + " " + strings.Join(paths, ", ")
	}
	host := s.names.routerService() + "." + s.namespace + ".svc.cluster.local"
	if s.router.servicePort != servicePort {
		host += ":" + strconv.Itoa(int(s.router.servicePort))
	}
	return "http://" + host + "/v1"
}

// PodLabels are the labels of the stack's pods of a component
// (ComponentEngine or ComponentRouter); an engine's pods also carry
// LabelName with their EnginePart's PodName.
func (s *Stack) PodLabels(component string) map[string]string {
	return map[string]string{LabelInstance: s.r.name, LabelComponent: component}
}

// Namespace is where the stack's objects live.
func (s *Stack) Namespace() string { return s.r.namespace }
