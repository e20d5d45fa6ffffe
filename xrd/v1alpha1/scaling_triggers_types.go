package v1alpha1

// ScalingTrigger is one of several signals a KEDA ScaledObject scales on
// (autoscaling.triggers): KEDA gives each its own metric of the
// HorizontalPodAutoscaler it makes, which scales to the most replicas any
// of them asks for.
type ScalingTrigger struct {
	// The trigger's name, unique among the model's triggers: KEDA's trigger
	// name, which its status and fallback health report.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// What the trigger scales on, rendered for the release that exports
	// it, as autoscaling.signal: engineWaiting, pickerRunning or
	// poolSaturation. Exactly one of signal and query.
	// +optional
	// +kubebuilder:validation:Enum=engineWaiting;pickerRunning;poolSaturation
	Signal string `json:"signal,omitempty"`

	// A PromQL query of your own whose value is compared with threshold
	// (per replica: KEDA's AverageValue). Exactly one of signal and query.
	// +optional
	// +kubebuilder:validation:MaxLength=4096
	Query string `json:"query,omitempty"`

	// The value the trigger's query is compared with, a plain number such
	// as 5 or 0.7. Default: the signal's (engineWaiting 5, pickerRunning
	// 16, poolSaturation 0.7); required with query.
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)([.][0-9]+)?([eE][+-]?[0-9]+)?$`
	Threshold string `json:"threshold,omitempty"`
}
