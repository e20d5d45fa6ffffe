package kubeapi

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Tolerations checks a pod's tolerations as ValidateTolerations does.
func Tolerations(ts []corev1.Toleration) []Problem {
	var ps problems
	for i, t := range ts {
		at := index("", i)
		if t.Key != "" {
			ps.labelKey(at+".key", t.Key)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			ps.add(at+".operator", "must be Exists when key is empty (an empty key with Exists tolerates every taint): set key, or operator: Exists")
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			ps.add(at+".effect", "%s must be NoExecute when tolerationSeconds is set (only NoExecute taints evict): set effect: NoExecute or remove tolerationSeconds", Quote(string(t.Effect)))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "": // "" means Equal
			ps.labelValue(at+".value", t.Value)
		case corev1.TolerationOpExists:
			if t.Value != "" {
				ps.add(at+".value", "must be empty when operator is Exists: remove value, or use operator: Equal")
			}
		case "Lt", "Gt":
			// PodValidationOptions.AllowTaintTolerationComparisonOperators:
			// the feature gate TaintTolerationComparisonOperators, alpha
			// and off by default.
			ps.add(at+".operator", "%q needs the alpha feature gate TaintTolerationComparisonOperators, off by default: use Equal or Exists", t.Operator)
		default:
			ps.add(at+".operator", "%s is not supported: use Equal or Exists", Quote(string(t.Operator)))
		}
		if t.Effect != "" { // validateTaintEffect, allowEmpty: "" matches every effect
			ps.oneOf(at+".effect", string(t.Effect), true, string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute))
		}
	}
	return ps.list
}

// Affinity checks a pod's affinity as validateAffinity does.
func Affinity(a *corev1.Affinity) []Problem {
	var ps problems
	if a == nil {
		return nil
	}
	if na := a.NodeAffinity; na != nil { // validateNodeAffinity
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil { // ValidateNodeSelector
			at := ".nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
			if len(req.NodeSelectorTerms) == 0 {
				ps.add(at, "is required: give at least one node selector term")
			}
			for i, term := range req.NodeSelectorTerms {
				ps.nodeSelectorTerm(index(at, i), term, true)
			}
		}
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution { // ValidatePreferredSchedulingTerms
			at := index(".nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution", i)
			ps.weight(at+".weight", term.Weight)
			// Preferred terms take any label value: they can match when the
			// cluster has one node.
			ps.nodeSelectorTerm(at+".preference", term.Preference, false)
		}
	}
	if pa := a.PodAffinity; pa != nil { // validatePodAffinity
		ps.podAffinityTerms(".podAffinity", pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil { // validatePodAntiAffinity
		ps.podAffinityTerms(".podAntiAffinity", pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return ps.list
}

// weight: a preferred term's weight, 1 to 100.
func (ps *problems) weight(fld string, w int32) {
	if w <= 0 || w > 100 {
		ps.add(fld, "%d is invalid: must be from 1 to 100", w)
	}
}

// nodeSelectorTerm: ValidateNodeSelectorTerm; labelValues is false where
// the API server allows an invalid label value (preferred terms).
func (ps *problems) nodeSelectorTerm(at string, term corev1.NodeSelectorTerm, labelValues bool) {
	for j, rq := range term.MatchExpressions { // ValidateNodeSelectorRequirement
		rp := index(at+".matchExpressions", j)
		switch rq.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(rq.Values) == 0 {
				ps.add(rp+".values", "is required when operator is %s: give at least one value, or use Exists", rq.Operator)
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(rq.Values) > 0 {
				ps.add(rp+".values", "must be empty when operator is %s: remove values, or use In", rq.Operator)
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(rq.Values) != 1 {
				ps.add(rp+".values", "must hold exactly one value when operator is %s, an integer to compare the label with", rq.Operator)
			}
		default:
			ps.add(rp+".operator", "%s is not supported: use In, NotIn, Exists, DoesNotExist, Gt or Lt", Quote(string(rq.Operator)))
		}
		ps.labelKey(rp+".key", rq.Key)
		if labelValues {
			for k, v := range rq.Values {
				ps.labelValue(index(rp+".values", k), v)
			}
		}
	}
	for j, rq := range term.MatchFields { // ValidateNodeFieldSelectorRequirement
		rp := index(at+".matchFields", j)
		switch rq.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(rq.Values) != 1 {
				ps.add(rp+".values", "must hold exactly one node name when operator is %s", rq.Operator)
			}
		default:
			ps.add(rp+".operator", "%s is not supported for a node field: use In or NotIn", Quote(string(rq.Operator)))
		}
		if rq.Key != metav1.ObjectNameField {
			ps.add(rp+".key", "%s is not a node field selector key: use metadata.name", Quote(rq.Key))
			continue
		}
		for k, v := range rq.Values { // ValidateNodeName
			ps.dnsSubdomain(index(rp+".values", k), v, "a node name")
		}
	}
}

// podAffinityTerms: validatePodAffinityTerms and
// validateWeightedPodAffinityTerms.
func (ps *problems) podAffinityTerms(at string, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) {
	for i, term := range required {
		ps.podAffinityTerm(index(at+".requiredDuringSchedulingIgnoredDuringExecution", i), term)
	}
	for i, wt := range preferred {
		wp := index(at+".preferredDuringSchedulingIgnoredDuringExecution", i)
		ps.weight(wp+".weight", wt.Weight)
		ps.podAffinityTerm(wp+".podAffinityTerm", wt.PodAffinityTerm)
	}
}

// podAffinityTerm: validatePodAffinityTerm.
func (ps *problems) podAffinityTerm(at string, term corev1.PodAffinityTerm) {
	// ValidatePodAffinityTermSelector, without invalid label values.
	opts := metavalidation.LabelSelectorValidationOptions{}
	ps.fieldErrors(at+".labelSelector", metavalidation.ValidateLabelSelector(term.LabelSelector, opts, field.NewPath("x")))
	ps.fieldErrors(at+".namespaceSelector", metavalidation.ValidateLabelSelector(term.NamespaceSelector, opts, field.NewPath("x")))
	for i, ns := range term.Namespaces { // ValidateNamespaceName
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			ps.add(index(at+".namespaces", i), "%s is not a namespace name: %s", Quote(ns), msgs[0])
		}
	}
	ps.labelKeys(at, term)
	if term.TopologyKey == "" {
		ps.add(at+".topologyKey", "is required: name the node label that groups nodes, e.g. kubernetes.io/hostname or topology.kubernetes.io/zone")
	} else {
		ps.labelKey(at+".topologyKey", term.TopologyKey)
	}
}

// labelKeys: ValidateMatchLabelKeysAndMismatchLabelKeys. A key of
// matchLabelKeys may not be in the labelSelector as well: the API server
// merges it into the selector of each pod it creates and then refuses the
// pod (the Deployment itself it refuses only when the key is in the
// selector twice).
func (ps *problems) labelKeys(at string, term corev1.PodAffinityTerm) {
	for _, lk := range []struct {
		name string
		keys []string
	}{{"matchLabelKeys", term.MatchLabelKeys}, {"mismatchLabelKeys", term.MismatchLabelKeys}} {
		if len(lk.keys) > 0 && term.LabelSelector == nil { // validateLabelKeys
			ps.add(at+"."+lk.name, "must not be set without labelSelector: set labelSelector, or remove %s", lk.name)
			continue
		}
		for i, k := range lk.keys {
			ps.labelKey(index(at+"."+lk.name, i), k)
		}
	}
	if sel := term.LabelSelector; sel != nil {
		for i, k := range term.MatchLabelKeys {
			_, inLabels := sel.MatchLabels[k]
			inExpressions := slices.ContainsFunc(sel.MatchExpressions, func(r metav1.LabelSelectorRequirement) bool { return r.Key == k })
			if inLabels || inExpressions {
				ps.add(index(at+".matchLabelKeys", i), "%s is also a key of labelSelector: remove it from one of them", Quote(k))
			}
		}
	}
	for i, k := range term.MatchLabelKeys {
		if slices.Contains(term.MismatchLabelKeys, k) {
			ps.add(index(at+".matchLabelKeys", i), "%s is also in mismatchLabelKeys: remove it from one of them", Quote(k))
		}
	}
}

// dnsSubdomain: a name the API server checks with IsDNS1123Subdomain.
func (ps *problems) dnsSubdomain(fld, v, what string) {
	if msgs := validation.IsDNS1123Subdomain(v); len(msgs) > 0 {
		ps.add(fld, "%s is not %s: %s", Quote(v), what, msgs[0])
	}
}
