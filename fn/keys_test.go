package fn

// What the tests look a stack's objects up by, written out rather than taken
// from package stack: composition resource names, labels and condition types
// must not change for a stack that exists (Crossplane would delete and
// recreate its objects, the router would lose its engines), and a test that
// shares the code's constant would follow a change instead of catching it.

func engineScaledObjectKey(model string) string { return "engine-" + model + "-scaledobject" }

const (
	routerKey              = "router"
	routerServiceKey       = "router-service"
	routerRoleKey          = "router-role"
	routerRoleBindingKey   = "router-rolebinding"
	engineMonitorKey       = "engine-servicemonitor"
	engineNetworkPolicyKey = "engines-networkpolicy"
	cacheServerKey         = "cache-server"

	labelName      = "app.kubernetes.io/name"
	labelInstance  = "app.kubernetes.io/instance"
	labelComponent = "app.kubernetes.io/component"
	labelPartOf    = "app.kubernetes.io/part-of"
	labelManagedBy = "app.kubernetes.io/managed-by"
	labelModel     = "model"

	conditionEnginesReady = "EnginesReady"
	conditionRouterReady  = "RouterReady"
	conditionStorageReady = "StorageReady"
)

// Bounds of what the status repeats of observed objects, as the messages
// the tests expect cut them.
const (
	maxDetailLength  = 320 // one pod issue
	maxPodNameLength = 253 // a pod's name
	maxPhaseLength   = 32  // a claim's phase
)
