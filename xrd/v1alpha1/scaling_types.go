package v1alpha1

// ScalingBehavior is how fast the autoscaler moves the replicas: the
// HorizontalPodAutoscaler's behavior (autoscaling/v2), which KEDA passes to
// the HorizontalPodAutoscaler it makes (ScaledObject
// advanced.horizontalPodAutoscalerConfig.behavior).
type ScalingBehavior struct {
	// Scaling up. Kubernetes' default: no stabilization window, the larger
	// of 4 pods or 100% every 15 seconds.
	// +optional
	ScaleUp *ScalingRules `json:"scaleUp,omitempty"`

	// Scaling down. Kubernetes' default: a 300-second stabilization window,
	// up to 100% every 15 seconds.
	// +optional
	ScaleDown *ScalingRules `json:"scaleDown,omitempty"`
}

// ScalingRules are the rules of one direction.
type ScalingRules struct {
	// Seconds of past recommendations the autoscaler considers, taking the
	// highest (down) or lowest (up), so replicas do not flap.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	StabilizationWindowSeconds *int32 `json:"stabilizationWindowSeconds,omitempty"`

	// Which policy applies when several allow a change: Max (the largest
	// change, Kubernetes' default), Min, or Disabled (never scale in this
	// direction).
	// +optional
	// +kubebuilder:validation:Enum=Max;Min;Disabled
	SelectPolicy string `json:"selectPolicy,omitempty"`

	// The changes allowed per period. Default: Kubernetes' policies of the
	// direction (the API server fills them in when none is given).
	// +optional
	// +kubebuilder:validation:MaxItems=8
	Policies []ScalingPolicy `json:"policies,omitempty"`
}

// ScalingPolicy allows a change of at most value pods (or percent of the
// current replicas) in periodSeconds.
type ScalingPolicy struct {
	// Pods or Percent.
	// +kubebuilder:validation:Enum=Pods;Percent
	Type string `json:"type"`

	// How many pods, or what percent of the current replicas.
	// +kubebuilder:validation:Minimum=1
	Value int32 `json:"value"`

	// The period the change is counted over, in seconds.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1800
	PeriodSeconds int32 `json:"periodSeconds"`
}
