package kubeapi

import (
	"fmt"
	"math"
	"strconv"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// The rules of LeaderWorkerSet v0.7.0's admission webhooks
// (sigs.k8s.io/lws pkg/webhooks/leaderworkerset_webhook.go), which the
// pinned module carries but whose package needs controller-runtime: a port,
// with the upstream functions' names and messages, so the field errors are
// the webhook's word for word. tools/kubediff compares it with the real
// webhook (TestLeaderWorkerSetWebhookPort). The API server runs the CRD's
// defaults (replicas 1, size 1), then the mutating webhook (Default), then
// the validating one; nil replicas and size here are the CRD's 1, where the
// webhook, which never sees them nil, would dereference them.

// LeaderWorkerSetCreate is what the webhooks refuse in a LeaderWorkerSet
// created as l (Default, then ValidateCreate).
func LeaderWorkerSetCreate(l *lwsv1.LeaderWorkerSet) field.ErrorList {
	return lwsGeneralValidate(lwsDefault(l))
}

// LeaderWorkerSetUpdate is what the webhooks refuse in an update of old (as
// stored: created through them) to l (ValidateUpdate). Only the subgroup
// size is immutable: a change of size, replicas or the templates is an
// update the LWS controller rolls out group by group.
func LeaderWorkerSetUpdate(old, l *lwsv1.LeaderWorkerSet) field.ErrorList {
	oldLws, newLws := lwsDefault(old), lwsDefault(l)
	allErrs := lwsGeneralValidate(newLws)
	path := field.NewPath("spec", "leaderWorkerTemplate", "SubGroupPolicy", "subGroupSize")
	newP, oldP := newLws.Spec.LeaderWorkerTemplate.SubGroupPolicy, oldLws.Spec.LeaderWorkerTemplate.SubGroupPolicy
	switch {
	case newP != nil && oldP != nil:
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(ptr.Deref(newP.SubGroupSize, 0), ptr.Deref(oldP.SubGroupSize, 0), path)...)
	case newP != nil:
		allErrs = append(allErrs, field.Invalid(path, newP.SubGroupSize, "cannot enable subGroupSize after the lws is already created"))
	case oldP != nil:
		allErrs = append(allErrs, field.Invalid(path, oldP.SubGroupSize, "cannot remove subGroupSize after enabled"))
	}
	// ValidateUpdate's "cannot set subdomainPolicy as null" cannot happen
	// after Default, which sets it.
	return allErrs
}

// lwsDefault: LeaderWorkerSetWebhook.Default, and the CRD's defaults of
// replicas and size, on a copy.
func lwsDefault(in *lwsv1.LeaderWorkerSet) *lwsv1.LeaderWorkerSet {
	l := in.DeepCopy()
	if l.Spec.Replicas == nil {
		l.Spec.Replicas = ptr.To[int32](1)
	}
	t := &l.Spec.LeaderWorkerTemplate
	if t.Size == nil {
		t.Size = ptr.To[int32](1)
	}
	if t.RestartPolicy == "" {
		t.RestartPolicy = lwsv1.RecreateGroupOnPodRestart
	}
	if t.RestartPolicy == lwsv1.DeprecatedDefaultRestartPolicy {
		t.RestartPolicy = lwsv1.NoneRestartPolicy
	}
	r := &l.Spec.RolloutStrategy
	if r.Type == "" {
		r.Type = lwsv1.RollingUpdateStrategyType
	}
	if r.Type == lwsv1.RollingUpdateStrategyType && r.RollingUpdateConfiguration == nil {
		r.RollingUpdateConfiguration = &lwsv1.RollingUpdateConfiguration{MaxUnavailable: intstr.FromInt32(1), MaxSurge: intstr.FromInt32(0), Partition: ptr.To[int32](0)}
	}
	if l.Spec.NetworkConfig == nil {
		l.Spec.NetworkConfig = &lwsv1.NetworkConfig{}
	}
	if l.Spec.NetworkConfig.SubdomainPolicy == nil {
		l.Spec.NetworkConfig.SubdomainPolicy = ptr.To(lwsv1.SubdomainShared)
	}
	return l
}

// lwsGeneralValidate: generalValidate, on a defaulted LeaderWorkerSet. The
// webhook reads the rolling update configuration even when the rollout's
// type is not RollingUpdate, where Default leaves it nil (and the webhook
// would panic): such an object is refused here.
func lwsGeneralValidate(lws *lwsv1.LeaderWorkerSet) field.ErrorList {
	specPath := field.NewPath("spec")
	metadataPath := field.NewPath("metadata")
	allErrs := apivalidation.ValidateObjectMeta(&lws.ObjectMeta, true, apivalidation.NameIsDNS1035Label, metadataPath)
	if lws.Spec.Replicas != nil && *lws.Spec.Replicas < 0 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("replicas"), lws.Spec.Replicas, "replicas must be equal or greater than 0"))
	}
	if *lws.Spec.LeaderWorkerTemplate.Size < 1 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("leaderWorkerTemplate", "size"), lws.Spec.LeaderWorkerTemplate.Size, "size must be equal or greater than 1"))
	}
	if int64(*lws.Spec.Replicas)*int64(*lws.Spec.LeaderWorkerTemplate.Size) > math.MaxInt32 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("replicas"), lws.Spec.Replicas, fmt.Sprintf("the product of replicas and worker replicas must not exceed %d", math.MaxInt32)))
	}
	ru := lws.Spec.RolloutStrategy.RollingUpdateConfiguration
	if ru == nil {
		return append(allErrs, field.Required(specPath.Child("rolloutStrategy", "rollingUpdateConfiguration"), "the webhook reads it whatever the rollout's type"))
	}
	maxUnavailable, maxUnavailablePath := ru.MaxUnavailable, specPath.Child("rolloutStrategy", "rollingUpdateConfiguration", "maxUnavailable")
	allErrs = append(allErrs, lwsPositiveIntOrPercent(maxUnavailable, maxUnavailablePath)...)
	allErrs = append(allErrs, lwsNotMoreThan100Percent(maxUnavailable, maxUnavailablePath)...)
	maxSurge, maxSurgePath := ru.MaxSurge, specPath.Child("rolloutStrategy", "rollingUpdateConfiguration", "maxSurge")
	allErrs = append(allErrs, lwsPositiveIntOrPercent(maxSurge, maxSurgePath)...)
	allErrs = append(allErrs, lwsNotMoreThan100Percent(maxSurge, maxSurgePath)...)
	maxUnavailableValue, err := intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, int(*lws.Spec.Replicas), false)
	if err != nil {
		allErrs = append(allErrs, field.Invalid(maxUnavailablePath, maxUnavailable, "invalid value"))
	}
	maxSurgeValue, err := intstr.GetScaledValueFromIntOrPercent(&maxSurge, int(*lws.Spec.Replicas), true)
	if err != nil {
		allErrs = append(allErrs, field.Invalid(maxSurgePath, maxSurge, "invalid value"))
	}
	if maxUnavailableValue == 0 && maxSurgeValue == 0 && *lws.Spec.Replicas != 0 {
		allErrs = append(allErrs, field.Invalid(maxUnavailablePath, maxUnavailable, "must not be 0 when `maxSurge` is 0"))
	}
	if lws.Spec.LeaderWorkerTemplate.SubGroupPolicy != nil {
		allErrs = append(allErrs, lwsSubGroupPolicy(specPath, lws)...)
	} else if v, ok := lws.Annotations[lwsv1.SubGroupExclusiveKeyAnnotationKey]; ok {
		allErrs = append(allErrs, field.Invalid(metadataPath.Child("annotations", lwsv1.SubGroupExclusiveKeyAnnotationKey), v, "cannot have subgroup-exclusive-topology without subGroupSize set"))
	}
	return allErrs
}

// lwsPositiveIntOrPercent: validatePositiveIntOrPercent.
func lwsPositiveIntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch v.Type {
	case intstr.String:
		for _, msg := range utilvalidation.IsValidPercent(v.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, v, msg))
		}
	case intstr.Int:
		if n := int64(v.IntValue()); n < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath, n, "must be grater than or equal to 0")) // sic
		}
	default:
		allErrs = append(allErrs, field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%%')"))
	}
	return allErrs
}

// lwsNotMoreThan100Percent: isNotMoreThan100Percent (and getPercentValue).
func lwsNotMoreThan100Percent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	if v.Type != intstr.String || len(utilvalidation.IsValidPercent(v.StrVal)) != 0 {
		return nil
	}
	if n, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1]); n <= 100 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, v, "must not be greater than 100%")}
}

// lwsSubGroupPolicy: validateUpdateSubGroupPolicy (the CRD requires
// subGroupSize; a nil one here is 0).
func lwsSubGroupPolicy(specPath *field.Path, lws *lwsv1.LeaderWorkerSet) field.ErrorList {
	var allErrs field.ErrorList
	p := lws.Spec.LeaderWorkerTemplate.SubGroupPolicy
	path := specPath.Child("leaderWorkerTemplate", "SubGroupPolicy", "subGroupSize")
	size, subGroupSize := *lws.Spec.LeaderWorkerTemplate.Size, ptr.Deref(p.SubGroupSize, 0)
	if subGroupSize < 1 {
		allErrs = append(allErrs, field.Invalid(path, p.SubGroupSize, "subGroupSize must be equal or greater than 1"))
		return allErrs // the webhook goes on to divide by it and panics
	}
	if size%subGroupSize != 0 && (size-1)%subGroupSize != 0 {
		allErrs = append(allErrs, field.Invalid(path, p.SubGroupSize, "size or size - 1 must be divisible by subGroupSize"))
	}
	if size < subGroupSize {
		allErrs = append(allErrs, field.Invalid(path, p.SubGroupSize, "subGroupSize cannot be larger than size"))
	}
	if p.Type != nil && *p.Type == lwsv1.SubGroupPolicyTypeLeaderExcluded && (size-1)%subGroupSize != 0 {
		allErrs = append(allErrs, field.Invalid(path, p.SubGroupSize, "size-1 must be divisible by subGroupSize when using LeaderExcluded"))
	}
	return allErrs
}
