// Package fn is function-vllm-stack's composition function: it decodes a
// ProductionStack, validates it, builds the vLLM engines and router as typed
// Kubernetes objects, and reports readiness and status.
package fn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/vllm-project/function-vllm-stack/internal/wire"
	"github.com/vllm-project/function-vllm-stack/stack"
	"github.com/vllm-project/function-vllm-stack/status"
)

// DefaultTTL is how long Crossplane may cache a response by default. With
// realtime compositions it is also how often a stack's status is refreshed
// when nothing it watches changes.
const DefaultTTL = time.Minute

// Function renders ProductionStacks.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
	ttl time.Duration
}

// An Option configures a Function.
type Option func(*Function)

// WithTTL sets the TTL of responses; an Input's ttl overrides it.
func WithTTL(ttl time.Duration) Option { return func(f *Function) { f.ttl = ttl } }

// New returns a Function that logs to log.
func New(log logging.Logger, opts ...Option) *Function {
	f := &Function{log: log, ttl: DefaultTTL}
	for _, o := range opts {
		o(f)
	}
	return f
}

// RunFunction composes one ProductionStack. Bad input gives a Fatal result and
// no desired state of its own, so Crossplane applies nothing and the running
// stack stays as it is. So does a panic, a bug of the function (see
// recovered): neither the SDK nor gRPC recovers one, and the process, with
// every other stack's call in flight, would exit.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (rsp *fnv1.RunFunctionResponse, err error) {
	defer func() {
		if v := recover(); v != nil {
			rsp, err = f.recovered(req, v)
		}
	}()
	return f.compose(req)
}

// testHook runs in compose once the response holds the stack's status and
// requirements, just before it takes the composed objects; tests make it
// panic, to test RunFunction's recover whatever panics today.
var testHook = func() {}

// compose is RunFunction without the recover.
func (f *Function) compose(req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, f.ttl)
	// response.To hands the request's desired state itself to the
	// response; the call writes to a copy, so the request still holds what
	// earlier steps desired when recovered builds its response from it.
	if d := req.GetDesired(); d != nil {
		rsp.Desired = &fnv1.State{Composite: d.GetComposite(), Resources: maps.Clone(d.GetResources())}
	}

	in, err := decodeInput(req.GetInput())
	if err != nil {
		return refuse(rsp, err)
	}
	if err := stack.ValidateInput(in); err != nil {
		return refuse(rsp, err)
	}
	if in.TTL != nil {
		if in.TTL.Duration <= 0 {
			return refuse(rsp, fmt.Errorf("the function's Input ttl %q is invalid: must be a positive duration such as 30s", in.TTL.Duration))
		}
		rsp.Meta.Ttl = durationpb.New(in.TTL.Duration)
	}

	oxr := observedComposite(req)
	log := f.log.WithValues("xr-kind", oxr.Resource.GetKind(), "xr-name", oxr.Resource.GetName(), "xr-namespace", oxr.Resource.GetNamespace())

	id, err := identify(oxr.Resource)
	if err != nil {
		return refuse(rsp, err)
	}
	spec, raw, err := stack.DecodeSpec(oxr.Resource.Object["spec"])
	if err != nil {
		return refuse(rsp, err)
	}
	s := stack.New(id, spec, in)
	found := s.Validate(raw)
	if err := found.Err(); err != nil {
		log.Info("Invalid ProductionStack", "errors", found.Errors)
		return refuse(rsp, err)
	}

	observed := observedComposed(req)
	objs, err := s.Compose(observedState{req: req, composed: observed})
	if err != nil {
		return refuse(rsp, err)
	}
	found.Warnings = append(found.Warnings, s.Notes()...)
	optional := optionalKindsOf(objs)
	isPreview := preview(oxr.Resource)
	assumed, err := checkCRDs(req, optional, isPreview, s)
	if err != nil {
		return refuse(rsp, err)
	}
	found.Warnings = append(found.Warnings, assumed...)
	unconfined, err := checkSyncPolicy(req, s, isPreview)
	if err != nil {
		return refuse(rsp, err)
	}
	found.Warnings = append(found.Warnings, unconfined...)

	composed := map[string]*fnv1.Resource{}
	for _, o := range objs {
		r, err := wire.Encode(o.Obj)
		if err != nil {
			return refuse(rsp, fmt.Errorf("cannot convert %s %q to a composed resource: %w", o.Obj.GetObjectKind().GroupVersionKind().Kind, o.Key, err))
		}
		composed[o.Key] = &fnv1.Resource{Resource: r, Ready: readyOf(observed[resource.Name(o.Key)])}
	}

	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		return refuse(rsp, fmt.Errorf("cannot get the desired ProductionStack: %w", err))
	}
	// Crossplane calls again, within the same reconcile, while the response
	// requires what the request did not carry. A stack that serves requires
	// nothing, and its reconcile is one call (issue 34): its status comes
	// from the workloads, and its optional kinds' objects exist.
	parts := s.Parts()
	st := status.Observe(parts, observedObjects(observed), requiredPods(req))
	if status.NeedsPods(parts, st) {
		// Crossplane sends them on the next call of this reconcile, and
		// the status says why a workload is not ready.
		requirePods(rsp, s, parts)
	}
	requireCRDs(rsp, unprovenKinds(objs, observed, isPreview))
	requireSyncPolicy(rsp, s)
	if err := writeStatus(dxr.Resource, st.Fields()); err != nil {
		return refuse(rsp, fmt.Errorf("cannot write the ProductionStack's status: %w", err))
	}
	if err := response.SetDesiredCompositeResource(rsp, dxr); err != nil {
		return refuse(rsp, fmt.Errorf("cannot set the desired ProductionStack: %w", err))
	}
	testHook()
	// Last, once nothing can refuse the stack: a Fatal response composes
	// nothing of its own.
	setDesiredResources(rsp, composed)
	setConditions(rsp, st.Conditions())
	for _, w := range found.Warnings {
		response.Warning(rsp, errors.New(w)).TargetCompositeAndClaim()
	}
	log.Debug("Composed ProductionStack", "models", s.Models(), "resources", len(rsp.GetDesired().GetResources()))
	return rsp, nil
}

// setDesiredResources adds the composed resources to the response's desired
// state, which holds those of earlier steps of the pipeline.
//
// The SDK's GetDesiredComposedResources and SetDesiredComposedResources would
// convert each earlier resource to a map and back, unchanged; they are kept
// as they are, in the same form (only their resource and readiness).
func setDesiredResources(rsp *fnv1.RunFunctionResponse, composed map[string]*fnv1.Resource) {
	if rsp.GetDesired() == nil {
		rsp.Desired = &fnv1.State{}
	}
	if rsp.GetDesired().GetResources() == nil {
		rsp.Desired.Resources = make(map[string]*fnv1.Resource, len(composed))
	}
	for name, r := range rsp.GetDesired().GetResources() {
		s := r.GetResource()
		if s == nil {
			s = &structpb.Struct{Fields: map[string]*structpb.Value{}}
		}
		ready := fnv1.Ready_READY_UNSPECIFIED
		if r.GetReady() == fnv1.Ready_READY_TRUE || r.GetReady() == fnv1.Ready_READY_FALSE {
			ready = r.GetReady()
		}
		rsp.Desired.Resources[name] = &fnv1.Resource{Resource: s, Ready: ready}
	}
	maps.Copy(rsp.Desired.Resources, composed)
}

// readyOf is an observed composed object's readiness as the protocol says
// it: Crossplane marks the XR Ready only when every composed object is.
func readyOf(o resource.ObservedComposed) fnv1.Ready {
	if o.Resource == nil || !status.Ready(&o.Resource.Unstructured) {
		return fnv1.Ready_READY_FALSE
	}
	return fnv1.Ready_READY_TRUE
}

// observedState is the stack's observed composed resources as the library
// reads them: which exist, which are ready (as the status judges them, the
// readiness the function reports), and, for the few a change of topology
// keeps as they are, the whole object as Crossplane sent it.
type observedState struct {
	req      *fnv1.RunFunctionRequest
	composed map[resource.Name]resource.ObservedComposed
}

func (o observedState) Has(key string) bool {
	_, ok := o.composed[resource.Name(key)]
	return ok
}

func (o observedState) Ready(key string) bool {
	return readyOf(o.composed[resource.Name(key)]) == fnv1.Ready_READY_TRUE
}

func (o observedState) Object(key string) map[string]any {
	r, ok := o.req.GetObserved().GetResources()[key]
	if !ok || r.GetResource() == nil {
		return nil
	}
	return r.GetResource().AsMap()
}
