package kubeapi

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// PodAnnotations checks the annotations of a pod template that the API
// server reads as pod settings (ValidatePodSpecificAnnotations,
// validateSeccompAnnotationsAndFields,
// validateAppArmorAnnotationsAndFieldsMatchOnCreate), against the pod they
// go on: its containers and security contexts. Problems are at [key].
func PodAnnotations(annotations map[string]string, spec *corev1.PodSpec) []Problem {
	var ps problems
	for _, k := range sortedKeys(annotations) {
		v, at := annotations[k], "["+k+"]"
		switch {
		case k == corev1.MirrorPodAnnotationKey:
			ps.add(at, "marks a static pod a kubelet mirrors, which needs spec.nodeName: remove it")
		case k == corev1.TolerationsAnnotationKey && v != "": // ValidateTolerationsInPodAnnotations
			var ts []corev1.Toleration
			if err := json.Unmarshal([]byte(v), &ts); err != nil {
				ps.add(at, "is not a JSON list of tolerations: %s; use scheduling.tolerations instead", err)
				break
			}
			for _, p := range Tolerations(ts) {
				ps.add(at, "holds a toleration the API server refuses: %s; use scheduling.tolerations instead", strings.TrimPrefix(p.At("toleration"), "toleration"))
			}
		case k == corev1.PodDeletionCost: // helper.GetDeletionCostFromPodAnnotations
			if !deletionCost(v) {
				ps.add(at, "%s is invalid: must be a 32-bit integer without '+' or leading zeros, e.g. 100 or -5", Quote(v))
			}
		case k == corev1.SeccompPodAnnotationKey || strings.HasPrefix(k, corev1.SeccompContainerAnnotationKeyPrefix): // ValidateSeccompPodAnnotations
			ps.seccompAnnotation(at, v)
		case strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix): // ValidateAppArmorPodAnnotations
			c := strings.TrimPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix)
			if !slices.ContainsFunc(allContainers(spec), func(x corev1.Container) bool { return x.Name == c }) {
				ps.add(at, "names container %s, which the pod does not have (its containers: %s): name one of them", Quote(c), strings.Join(containerNames(spec), ", "))
			}
			if v != "" && v != corev1.DeprecatedAppArmorBetaProfileRuntimeDefault && v != corev1.DeprecatedAppArmorBetaProfileNameUnconfined &&
				!strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix) {
				ps.add(at, "%s is not an AppArmor profile: use runtime/default, unconfined or localhost/<profile>", Quote(v))
			}
		}
	}
	ps.annotationsMatchFields(annotations, spec)
	return ps.list
}

// deletionCost: an int32 in decimal, "-" or a digit first, no leading zero.
func deletionCost(v string) bool {
	if v == "" || !(v[0] == '-' || v == "0" || v[0] >= '1' && v[0] <= '9') {
		return false
	}
	_, err := strconv.ParseInt(v, 10, 32)
	return err == nil
}

// seccompAnnotation: ValidateSeccompProfile.
func (ps *problems) seccompAnnotation(at, v string) {
	switch {
	case v == corev1.SeccompProfileRuntimeDefault || v == corev1.DeprecatedSeccompProfileDockerDefault || v == corev1.SeccompProfileNameUnconfined:
	case strings.HasPrefix(v, corev1.SeccompLocalhostProfileNamePrefix):
		ps.localDescendingPath(at, strings.TrimPrefix(v, corev1.SeccompLocalhostProfileNamePrefix))
	default:
		ps.add(at, "%s is not a seccomp profile: use runtime/default, unconfined or localhost/<path>, or securityContext.seccompProfile", Quote(v))
	}
}

// annotationsMatchFields: a seccomp or AppArmor annotation must say what the
// field of the same pod or container says, when both are set.
func (ps *problems) annotationsMatchFields(annotations map[string]string, spec *corev1.PodSpec) {
	var podSeccomp *corev1.SeccompProfile
	var podAppArmor *corev1.AppArmorProfile
	if sc := spec.SecurityContext; sc != nil {
		podSeccomp, podAppArmor = sc.SeccompProfile, sc.AppArmorProfile
	}
	if v, ok := annotations[corev1.SeccompPodAnnotationKey]; ok && !seccompMatches(v, podSeccomp) {
		ps.add("["+corev1.SeccompPodAnnotationKey+"]", "%s says another profile than securityContext.seccompProfile: remove the annotation", Quote(v))
	}
	for _, c := range allContainers(spec) {
		var seccomp *corev1.SeccompProfile
		appArmor := podAppArmor
		if sc := c.SecurityContext; sc != nil {
			seccomp = sc.SeccompProfile
			if sc.AppArmorProfile != nil {
				appArmor = sc.AppArmorProfile
			}
		}
		k := corev1.SeccompContainerAnnotationKeyPrefix + c.Name
		if v, ok := annotations[k]; ok && !seccompMatches(v, seccomp) {
			ps.add("["+k+"]", "%s says another profile than the container's securityContext.seccompProfile: remove the annotation", Quote(v))
		}
		k = corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + c.Name
		if v, ok := annotations[k]; ok && !appArmorMatches(v, appArmor) {
			ps.add("["+k+"]", "%s says another profile than the container's appArmorProfile: remove the annotation", Quote(v))
		}
	}
}

// seccompMatches: validateSeccompAnnotationsAndFieldsMatch.
func seccompMatches(v string, f *corev1.SeccompProfile) bool {
	if f == nil {
		return true
	}
	switch f.Type {
	case corev1.SeccompProfileTypeUnconfined:
		return v == corev1.SeccompProfileNameUnconfined
	case corev1.SeccompProfileTypeRuntimeDefault:
		return v == corev1.SeccompProfileRuntimeDefault || v == corev1.DeprecatedSeccompProfileDockerDefault
	case corev1.SeccompProfileTypeLocalhost:
		p, ok := strings.CutPrefix(v, corev1.SeccompLocalhostProfileNamePrefix)
		return ok && f.LocalhostProfile != nil && p == *f.LocalhostProfile
	}
	return true
}

// appArmorMatches: validateAppArmorAnnotationsAndFieldsMatchOnCreate.
func appArmorMatches(v string, f *corev1.AppArmorProfile) bool {
	if f == nil {
		return true
	}
	switch f.Type {
	case corev1.AppArmorProfileTypeUnconfined:
		return v == corev1.DeprecatedAppArmorBetaProfileNameUnconfined
	case corev1.AppArmorProfileTypeRuntimeDefault:
		return v == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault
	case corev1.AppArmorProfileTypeLocalhost:
		p, ok := strings.CutPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix)
		return ok && f.LocalhostProfile != nil && p == *f.LocalhostProfile
	}
	return true
}

func allContainers(spec *corev1.PodSpec) []corev1.Container {
	return append(slices.Clone(spec.InitContainers), spec.Containers...)
}

func containerNames(spec *corev1.PodSpec) []string {
	var names []string
	for _, c := range allContainers(spec) {
		names = append(names, c.Name)
	}
	return names
}
