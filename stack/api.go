package stack

import (
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/stack/transition"
	"github.com/vllm-project/function-vllm-stack/stack/validate"
)

// The names callers of the library use, from the layer that defines them.
type (
	// Identity names a stack: its XR's name, namespace and UID.
	Identity = resolve.Identity
	// An Object is one desired composed resource and its composition
	// resource name.
	Object = build.Object
	// Observed is what Crossplane observed of a stack's composed objects.
	Observed = build.Observed
	// Keys is an Observed that knows only which objects exist.
	Keys = build.Keys
	// Findings are what validation found: errors and warnings.
	Findings = validate.Findings
	// A Move is a model's change of topology in progress.
	Move = transition.Move
	// A Fill is a model cache claim's fill Job (storage.prefetch), as observed.
	Fill = transition.Fill
	// A WeightsSource is where an engine's weights come from.
	WeightsSource = resolve.WeightsSource
)

// The sources of an engine's weights: the Hugging Face Hub, the pod's
// volumes, or a URL vLLM loads itself.
const (
	WeightsHub   = resolve.WeightsHub
	WeightsLocal = resolve.WeightsLocal
	WeightsURL   = resolve.WeightsURL
)

// FillExitReasons say why a fill Job failed at once, by its container's
// exit code (storage.prefetch).
var FillExitReasons = build.FillExitReasons

// The labels of the stack's pods, as the production-stack chart sets them.
const (
	LabelName             = names.LabelName
	LabelInstance         = names.LabelInstance
	LabelComponent        = names.LabelComponent
	ComponentEngine       = names.ComponentEngine
	ComponentEngineWorker = names.ComponentEngineWorker
	ComponentRouter       = names.ComponentRouter
	ComponentPicker       = names.ComponentPicker
	ComponentMonitoring   = names.ComponentMonitoring
	ComponentCacheServer  = names.ComponentCacheServer
)

var (
	// DefaultPickerImage is the endpoint picker the stack runs when the
	// spec names none.
	DefaultPickerImage = resolve.DefaultPickerImage
	// DecodeSpec decodes an XR's spec strictly: errors name the field.
	DecodeSpec = resolve.DecodeSpec
	// DecodeInput decodes the function's Input.
	DecodeInput = resolve.DecodeInput
	// ValidateInput checks the function's Input.
	ValidateInput = validate.ValidateInput
	// LMCacheTransferImage says whether an image runs LMCache's P/D transfer.
	LMCacheTransferImage = resolve.LMCacheTransferImage
)
