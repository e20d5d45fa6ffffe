package stack

// Label keys and values shared by every object of a stack. The router finds
// engine pods by instance and component, and reads the model label; the LoRA
// controller reads the model label too.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"
	labelPartOf    = "app.kubernetes.io/part-of"
	labelManagedBy = "app.kubernetes.io/managed-by"
	labelModel     = "model"

	ComponentEngine = "serving-engine"
	ComponentRouter = "router"
	partOf          = "vllm-stack"
	managedBy       = "crossplane"
)

// selector returns the labels that identify a component's pods. They never
// change for the life of a stack: a Deployment's selector is immutable.
func selector(stack, name, component string) map[string]string {
	return map[string]string{
		LabelName:      name,
		LabelInstance:  stack,
		LabelComponent: component,
	}
}

// labels returns every label of a component's objects and pods.
func labels(stack, name, component string) map[string]string {
	l := selector(stack, name, component)
	l[labelPartOf] = partOf
	l[labelManagedBy] = managedBy
	return l
}

// engineLabels are the labels of a model's objects; its pods carry them too.
func engineLabels(stack string, e engine) map[string]string {
	l := labels(stack, shorten(e.id, maxLabelLength), ComponentEngine)
	l[labelModel] = e.label
	return l
}

func engineSelector(stack string, e engine) map[string]string {
	return selector(stack, shorten(e.id, maxLabelLength), ComponentEngine)
}

// engineDiscoverySelector is the label selector the router uses to find the
// stack's engine pods. It names the stack, so two stacks in one namespace
// never route to each other's engines (the Helm chart's default selector is
// shared by every release in a namespace).
func engineDiscoverySelector(stack string) string {
	return LabelInstance + "=" + stack + "," + LabelComponent + "=" + ComponentEngine
}
