package v1alpha1

// Default is a default value of a top-level field of the ProductionStack API.
type Default struct {
	// Path of the field from the root of the object, with dots, e.g.
	// "spec.replicas". Every path is outside spec.models: an item's field
	// that is unset inherits the top-level field instead (see EngineConfig),
	// so a default inside an item would wrongly override the top level.
	Path string

	// Value as the field holds it in JSON: a string, an int, a bool or a
	// []string.
	Value any

	// FunctionOnly leaves the default out of the XRD schema: only the
	// function applies it. The comment on each such entry says why.
	FunctionOnly bool
}

// InSchema reports whether xrd/gen writes the default into the XRD schema,
// where the API server applies it (only when the field's parent object is
// present: spec.vllmConfig.image is not defaulted when spec.vllmConfig is
// absent). The function applies every default of TopLevelDefaults itself,
// whatever InSchema says: the API server does not apply the nested ones when
// their parent is missing, `crossplane render` applies none, and the items of
// spec.models inherit them.
func (d Default) InSchema() bool { return !d.FunctionOnly }

// TopLevelDefaults is every default of the ProductionStack API. xrd/gen injects
// the ones InSchema into the XRDs at exactly these paths, and xrd's tests check
// that the XRDs carry no other default.
var TopLevelDefaults = []Default{
	{Path: "spec.deploymentStrategy", Value: "RollingUpdate"},
	{Path: "spec.replicas", Value: 1},

	// The Composition's Input (engine.image, engine.imagePullRegistry) comes
	// before these defaults. A schema default would fill the field whenever
	// spec.vllmConfig is present, so the Input would be ignored for such
	// stacks and honoured for the others.
	{Path: "spec.vllmConfig.image", Value: "vllm/vllm-openai:latest", FunctionOnly: true},
	{Path: "spec.vllmConfig.imagePullRegistry", Value: "docker.io", FunctionOnly: true},

	{Path: "spec.vllmConfig.hfTokenSecret.key", Value: "token"},
	{Path: "spec.routerConfig.routerType", Value: "roundrobin"},
	{Path: "spec.routerConfig.sessionKey", Value: "x-user-id"},
	{Path: "spec.resources.gpuType", Value: "nvidia.com/gpu"},
	{Path: "spec.storage.enabled", Value: true},

	// Storage's rule forbids size and accessModes next to existingClaimName;
	// a schema default would make every stack that sets existingClaimName
	// fail it. The function applies them only without existingClaimName. The
	// Input's storage.size also comes before the size default.
	{Path: "spec.storage.size", Value: "50Gi", FunctionOnly: true},
	{Path: "spec.storage.accessModes", Value: []string{"ReadWriteOnce"}, FunctionOnly: true},
}
