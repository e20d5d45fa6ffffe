package stack

import (
	"slices"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/stack/transition"
	"github.com/vllm-project/function-vllm-stack/stack/validate"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Stack is a ProductionStack resolved for building, and what its last
// Compose found of the stack's change in progress.
type Stack struct {
	r *resolve.Stack
	// last is what the last Compose decided (transition.Result): the
	// facade keeps it for Parts, Moves, Notes and Withheld; the resolved
	// stack is never changed after New.
	last transition.Result
}

// New resolves a decoded spec for building: the stack's names, and every
// model's engine with the spec's and the Input's defaults applied. It
// refuses nothing: Validate says what is wrong.
func New(id Identity, spec *v1alpha1.ProductionStackSpec, in *v1beta1.Input) *Stack {
	return &Stack{r: resolve.New(id, spec, in)}
}

// Validate checks the stack: its decoded spec and resolved engines, and the
// XRD's rules on raw, the spec as written (DecodeSpec returns it). Errors
// name the field and the fix; a stack with errors must not be composed.
func (s *Stack) Validate(raw map[string]any) Findings {
	f := validate.Validate(s.r)
	f.AddSchemaViolations(raw)
	return f
}

// Models is how many models the stack serves.
func (s *Stack) Models() int { return len(s.r.Engines) }

// Compose builds every object of a valid stack, in a fixed order with keys
// (composition resource names) stable for the life of the stack, or explains
// objects that would clash. observed is what Crossplane observed of the
// composed objects: the router's RoleBinding waits for its Role, and a
// model whose topology changes keeps its old workload, as observed, until
// the new one is ready (Moves; package transition).
func (s *Stack) Compose(observed Observed) ([]Object, error) {
	r := s.r
	s.last = transition.Result{}
	var rootHolder, note string
	if resolve.ExtensionOn(r) {
		rootHolder, note = transition.ResolveRootHolder(r, observed)
	}
	groups := build.ComposeGroups(r, observed, rootHolder)
	if err := build.Clashes(r, groups); err != nil {
		return nil, err
	}
	groups, canaries := transition.Canaries(r, observed, groups, rootHolder)
	s.last = transition.Decide(r, observed, slices.Concat(groups...))
	s.last.Canaries = canaries
	var held []string
	s.last.Objects, s.last.Fills, held = transition.Prefetch(r, observed, s.last.Objects, groups)
	s.last.Withheld = append(s.last.Withheld, held...)
	s.last.RootHolder = rootHolder
	if note != "" {
		s.last.Notes = []string{note}
	}
	return s.last.Objects, nil
}

// Withheld are the keys the last Compose withheld until an observed object
// is gone (transition/keys.go).
func (s *Stack) Withheld() []string { return s.last.Withheld }

// Notes are warnings of the last Compose: what changes for clients that
// the spec alone does not say (a removed model that held the gateway's
// root path).
func (s *Stack) Notes() []string { return s.last.Notes }

// Moves are the models whose change of topology is in progress, as the last
// Compose saw them.
func (s *Stack) Moves() []Move { return s.last.Moves }

// Fills are the model cache claims filled by a Job (storage.prefetch), as
// the last Compose saw them.
func (s *Stack) Fills() []Fill { return s.last.Fills }

// Namespace is where the stack's objects live.
func (s *Stack) Namespace() string { return s.r.Namespace }

// PodLabels are the labels of the stack's pods of a component
// (ComponentEngine or ComponentRouter); an engine's pods also carry
// LabelName with their EnginePart's PodName.
func (s *Stack) PodLabels(component string) map[string]string {
	return map[string]string{names.LabelInstance: s.r.Name, names.LabelComponent: component}
}

// InferenceExtension reports whether the stack routes through the inference
// extension instead of the production-stack router.
func (s *Stack) InferenceExtension() bool { return resolve.ExtensionOn(s.r) }

// RuntimeAdapters reports whether some model of the stack runs the adapter
// sync container, whose identity the admission policy
// adaptersync.PolicyName confines: the function requires it on the cluster.
func (s *Stack) RuntimeAdapters() bool { return resolve.RuntimeAdaptersAny(s.r) }

// ScaledObjectFields are the fields that make the stack compose KEDA
// ScaledObjects, as a message names them: autoscaling.type keda and
// scaleToZero.
func (s *Stack) ScaledObjectFields() string { return validate.ScaledObjectFields(s.r) }
