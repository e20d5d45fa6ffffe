// Package xcrd derives CustomResourceDefinitions from Crossplane
// CompositeResourceDefinitions the way Crossplane v2.2.1 does (its
// internal/xcrd package: ForCompositeResource, ForCompositeResourceClaim,
// BaseProps, CompositeResourceSpecProps, CompositeResourceStatusProps and the
// printer columns), so tests can install the XR's CRD without running
// Crossplane. Crossplane's package is internal; this is a port of the part
// needed, with the XRD read from YAML instead of Crossplane's Go types. The
// owner reference to the XRD object is left out: there is no XRD object in a
// cluster without Crossplane.
package xcrd

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Scopes of a composite resource.
const (
	ScopeNamespaced    = "Namespaced"
	ScopeCluster       = "Cluster"
	ScopeLegacyCluster = "LegacyCluster"
)

// XRD is the part of a CompositeResourceDefinition (apiextensions.crossplane.io
// v1 or v2) that CRD generation reads.
type XRD struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Group                          string                               `json:"group"`
		Names                          extv1.CustomResourceDefinitionNames  `json:"names"`
		ClaimNames                     *extv1.CustomResourceDefinitionNames `json:"claimNames,omitempty"`
		Scope                          *string                              `json:"scope,omitempty"`
		Conversion                     *extv1.CustomResourceConversion      `json:"conversion,omitempty"`
		DefaultCompositionUpdatePolicy *string                              `json:"defaultCompositionUpdatePolicy,omitempty"`
		DefaultCompositeDeletePolicy   *string                              `json:"defaultCompositeDeletePolicy,omitempty"`
		Metadata                       *struct {
			Labels      map[string]string `json:"labels,omitempty"`
			Annotations map[string]string `json:"annotations,omitempty"`
		} `json:"metadata,omitempty"`
		Versions []struct {
			Name                     string                                 `json:"name"`
			Referenceable            bool                                   `json:"referenceable"`
			Served                   bool                                   `json:"served"`
			Deprecated               *bool                                  `json:"deprecated,omitempty"`
			DeprecationWarning       *string                                `json:"deprecationWarning,omitempty"`
			AdditionalPrinterColumns []extv1.CustomResourceColumnDefinition `json:"additionalPrinterColumns,omitempty"`
			Schema                   *struct {
				OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema,omitempty"`
			} `json:"schema,omitempty"`
		} `json:"versions"`
	} `json:"spec"`
}

// Parse reads an XRD from YAML (or JSON).
func Parse(b []byte) (*XRD, error) {
	x := &XRD{}
	if err := yaml.Unmarshal(b, x); err != nil {
		return nil, fmt.Errorf("cannot parse the CompositeResourceDefinition: %w", err)
	}
	if x.Kind != "CompositeResourceDefinition" {
		return nil, fmt.Errorf("not a CompositeResourceDefinition: kind %q", x.Kind)
	}
	return x, nil
}

// Scope is the scope of the XR: an apiextensions.crossplane.io/v2 XRD defaults
// to Namespaced, a v1 XRD to LegacyCluster (Crossplane's API defaults).
func (x *XRD) Scope() string {
	if x.Spec.Scope != nil && *x.Spec.Scope != "" {
		return *x.Spec.Scope
	}
	if x.APIVersion == "apiextensions.crossplane.io/v2" {
		return ScopeNamespaced
	}
	return ScopeLegacyCluster
}

// ForCompositeResource derives the CRD of the XR.
func ForCompositeResource(x *XRD) (*extv1.CustomResourceDefinition, error) {
	crd := &extv1.CustomResourceDefinition{
		Spec: extv1.CustomResourceDefinitionSpec{
			Group:      x.Spec.Group,
			Names:      x.Spec.Names,
			Versions:   make([]extv1.CustomResourceDefinitionVersion, len(x.Spec.Versions)),
			Conversion: x.Spec.Conversion,
		},
	}
	crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	crd.SetName(x.Metadata.Name)
	setCrdMetadata(crd, x)

	scope := x.Scope()
	switch scope {
	case ScopeNamespaced:
		crd.Spec.Scope = extv1.NamespaceScoped
	case ScopeCluster, ScopeLegacyCluster:
		crd.Spec.Scope = extv1.ClusterScoped
	default:
		return nil, fmt.Errorf("unknown scope %q", scope)
	}
	crd.Spec.Names.Categories = append(append([]string(nil), crd.Spec.Names.Categories...), "composite")

	// The composite name is used as a label value.
	const maxCompositeNameLength = 63
	for i := range x.Spec.Versions {
		crdv, err := genCrdVersion(x, i, maxCompositeNameLength)
		if err != nil {
			return nil, fmt.Errorf("cannot generate CRD for Composite Resource %q: %w", x.Metadata.Name, err)
		}
		crdv.AdditionalPrinterColumns = append(crdv.AdditionalPrinterColumns, compositeResourcePrinterColumns(scope)...)
		maps.Copy(crdv.Schema.OpenAPIV3Schema.Properties["spec"].Properties, compositeResourceSpecProps(scope, x.Spec.DefaultCompositionUpdatePolicy))
		maps.Copy(crdv.Schema.OpenAPIV3Schema.Properties["status"].Properties, compositeResourceStatusProps(scope))
		crd.Spec.Versions[i] = *crdv
	}
	return crd, nil
}

// ForCompositeResourceClaim derives the CRD of the claim of a legacy XRD.
func ForCompositeResourceClaim(x *XRD) (*extv1.CustomResourceDefinition, error) {
	if x.Spec.ClaimNames == nil {
		return nil, errors.New("invalid resource claim names: missing names")
	}
	if x.Spec.ClaimNames.Kind == x.Spec.Names.Kind || x.Spec.ClaimNames.Plural == x.Spec.Names.Plural {
		return nil, errors.New("invalid resource claim names: claim names conflict with composite resource names")
	}
	crd := &extv1.CustomResourceDefinition{
		Spec: extv1.CustomResourceDefinitionSpec{
			Scope:      extv1.NamespaceScoped,
			Group:      x.Spec.Group,
			Names:      *x.Spec.ClaimNames,
			Versions:   make([]extv1.CustomResourceDefinitionVersion, len(x.Spec.Versions)),
			Conversion: x.Spec.Conversion,
		},
	}
	crd.APIVersion, crd.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	crd.SetName(x.Spec.ClaimNames.Plural + "." + x.Spec.Group)
	setCrdMetadata(crd, x)
	crd.Spec.Names.Categories = append(append([]string(nil), crd.Spec.Names.Categories...), "claim")

	const maxClaimNameLength = 63
	for i := range x.Spec.Versions {
		crdv, err := genCrdVersion(x, i, maxClaimNameLength)
		if err != nil {
			return nil, fmt.Errorf("cannot generate CRD for Composite Resource Claim %q: %w", x.Metadata.Name, err)
		}
		crdv.AdditionalPrinterColumns = append(crdv.AdditionalPrinterColumns, compositeResourceClaimPrinterColumns()...)
		maps.Copy(crdv.Schema.OpenAPIV3Schema.Properties["spec"].Properties, compositeResourceClaimSpecProps(x.Spec.DefaultCompositeDeletePolicy))
		maps.Copy(crdv.Schema.OpenAPIV3Schema.Properties["status"].Properties, compositeResourceStatusProps(ScopeLegacyCluster))
		crd.Spec.Versions[i] = *crdv
	}
	return crd, nil
}

func genCrdVersion(x *XRD, i int, maxNameLength int64) (*extv1.CustomResourceDefinitionVersion, error) {
	vr := x.Spec.Versions[i]
	crdv := extv1.CustomResourceDefinitionVersion{
		Name:                     vr.Name,
		Served:                   vr.Served,
		Storage:                  vr.Referenceable,
		Deprecated:               ptr.Deref(vr.Deprecated, false),
		DeprecationWarning:       vr.DeprecationWarning,
		AdditionalPrinterColumns: append([]extv1.CustomResourceColumnDefinition(nil), vr.AdditionalPrinterColumns...),
		Schema:                   &extv1.CustomResourceValidation{OpenAPIV3Schema: baseProps()},
		Subresources:             &extv1.CustomResourceSubresources{Status: &extv1.CustomResourceSubresourceStatus{}},
	}
	if vr.Schema == nil || len(vr.Schema.OpenAPIV3Schema) == 0 {
		return nil, errors.New("custom resource validation cannot be nil")
	}
	s := &extv1.JSONSchemaProps{}
	if err := json.Unmarshal(vr.Schema.OpenAPIV3Schema, s); err != nil {
		return nil, fmt.Errorf("cannot parse validation schema: %w", err)
	}

	crdv.Schema.OpenAPIV3Schema.Description = s.Description
	crdv.Schema.OpenAPIV3Schema.XValidations = s.XValidations

	maxLength := maxNameLength
	if old := s.Properties["metadata"].Properties["name"].MaxLength; old != nil && *old < maxLength {
		maxLength = *old
	}
	xName := crdv.Schema.OpenAPIV3Schema.Properties["metadata"].Properties["name"]
	xName.MaxLength = ptr.To(maxLength)
	xName.Type = "string"
	xMetaData := crdv.Schema.OpenAPIV3Schema.Properties["metadata"]
	xMetaData.Properties = map[string]extv1.JSONSchemaProps{"name": xName}
	crdv.Schema.OpenAPIV3Schema.Properties["metadata"] = xMetaData

	xSpec := s.Properties["spec"]
	cSpec := crdv.Schema.OpenAPIV3Schema.Properties["spec"]
	cSpec.Required = append(cSpec.Required, xSpec.Required...)
	cSpec.XPreserveUnknownFields = xSpec.XPreserveUnknownFields
	cSpec.XValidations = append(cSpec.XValidations, xSpec.XValidations...)
	cSpec.OneOf = append(cSpec.OneOf, xSpec.OneOf...)
	cSpec.Description = xSpec.Description
	maps.Copy(cSpec.Properties, xSpec.Properties)
	crdv.Schema.OpenAPIV3Schema.Properties["spec"] = cSpec

	xStatus := s.Properties["status"]
	cStatus := crdv.Schema.OpenAPIV3Schema.Properties["status"]
	cStatus.Required = xStatus.Required
	cStatus.XValidations = xStatus.XValidations
	cStatus.Description = xStatus.Description
	cStatus.OneOf = xStatus.OneOf
	maps.Copy(cStatus.Properties, xStatus.Properties)
	crdv.Schema.OpenAPIV3Schema.Properties["status"] = cStatus

	return &crdv, nil
}

func setCrdMetadata(crd *extv1.CustomResourceDefinition, x *XRD) {
	crd.SetLabels(maps.Clone(x.Metadata.Labels))
	if x.Spec.Metadata != nil {
		if x.Spec.Metadata.Labels != nil {
			l := crd.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			maps.Copy(l, x.Spec.Metadata.Labels)
			crd.SetLabels(l)
		}
		if x.Spec.Metadata.Annotations != nil {
			crd.SetAnnotations(x.Spec.Metadata.Annotations)
		}
	}
}

func baseProps() *extv1.JSONSchemaProps {
	return &extv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"spec"},
		Properties: map[string]extv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   {Type: "object"},
			"spec":       {Type: "object", Properties: map[string]extv1.JSONSchemaProps{}},
			"status":     {Type: "object", Properties: map[string]extv1.JSONSchemaProps{}},
		},
	}
}

func matchLabelsSelector() extv1.JSONSchemaProps {
	return extv1.JSONSchemaProps{
		Type:     "object",
		Required: []string{"matchLabels"},
		Properties: map[string]extv1.JSONSchemaProps{
			"matchLabels": {
				Type:                 "object",
				AdditionalProperties: &extv1.JSONSchemaPropsOrBool{Allows: true, Schema: &extv1.JSONSchemaProps{Type: "string"}},
			},
		},
	}
}

func nameRef() extv1.JSONSchemaProps {
	return extv1.JSONSchemaProps{
		Type:       "object",
		Required:   []string{"name"},
		Properties: map[string]extv1.JSONSchemaProps{"name": {Type: "string"}},
	}
}

func enum(vs ...string) []extv1.JSON {
	out := make([]extv1.JSON, 0, len(vs))
	for _, v := range vs {
		out = append(out, extv1.JSON{Raw: fmt.Appendf(nil, "%q", v)})
	}
	return out
}

func stringDefault(v *string) *extv1.JSON {
	if v == nil {
		return nil
	}
	return &extv1.JSON{Raw: fmt.Appendf(nil, "%q", *v)}
}

func compositeResourceSpecProps(scope string, defaultPol *string) map[string]extv1.JSONSchemaProps {
	refProps := map[string]extv1.JSONSchemaProps{
		"apiVersion": {Type: "string"},
		"name":       {Type: "string"},
		"namespace":  {Type: "string"},
		"kind":       {Type: "string"},
	}
	if scope == ScopeNamespaced {
		// Namespaced XRs don't get to reference composed resources in other
		// namespaces.
		delete(refProps, "namespace")
	}
	props := map[string]extv1.JSONSchemaProps{
		"compositionRef":              nameRef(),
		"compositionSelector":         matchLabelsSelector(),
		"compositionRevisionRef":      nameRef(),
		"compositionRevisionSelector": matchLabelsSelector(),
		"compositionUpdatePolicy": {
			Type:    "string",
			Enum:    enum("Automatic", "Manual"),
			Default: stringDefault(defaultPol),
		},
		"resourceRefs": {
			Type: "array",
			Items: &extv1.JSONSchemaPropsOrArray{Schema: &extv1.JSONSchemaProps{
				Type:       "object",
				Properties: refProps,
				Required:   []string{"apiVersion", "kind"},
			}},
			XListType: ptr.To("atomic"),
		},
	}

	// Legacy XRs have their Crossplane machinery fields directly under spec.
	if scope == ScopeLegacyCluster {
		props["claimRef"] = extv1.JSONSchemaProps{
			Type:     "object",
			Required: []string{"apiVersion", "kind", "namespace", "name"},
			Properties: map[string]extv1.JSONSchemaProps{
				"apiVersion": {Type: "string"},
				"kind":       {Type: "string"},
				"namespace":  {Type: "string"},
				"name":       {Type: "string"},
			},
		}
		props["writeConnectionSecretToRef"] = extv1.JSONSchemaProps{
			Type:     "object",
			Required: []string{"name", "namespace"},
			Properties: map[string]extv1.JSONSchemaProps{
				"name":      {Type: "string"},
				"namespace": {Type: "string"},
			},
		}
		return props
	}

	// Modern XRs nest them under spec.crossplane.
	return map[string]extv1.JSONSchemaProps{
		"crossplane": {
			Type:        "object",
			Description: "Configures how Crossplane will reconcile this composite resource",
			Properties:  props,
		},
	}
}

func compositeResourceClaimSpecProps(defaultPol *string) map[string]extv1.JSONSchemaProps {
	return map[string]extv1.JSONSchemaProps{
		"compositionRef":              nameRef(),
		"compositionSelector":         matchLabelsSelector(),
		"compositionRevisionRef":      nameRef(),
		"compositionRevisionSelector": matchLabelsSelector(),
		"compositionUpdatePolicy":     {Type: "string", Enum: enum("Automatic", "Manual")},
		"compositeDeletePolicy": {
			Type:    "string",
			Enum:    enum("Background", "Foreground"),
			Default: stringDefault(defaultPol),
		},
		"resourceRef": {
			Type:     "object",
			Required: []string{"apiVersion", "kind", "name"},
			Properties: map[string]extv1.JSONSchemaProps{
				"apiVersion": {Type: "string"},
				"kind":       {Type: "string"},
				"name":       {Type: "string"},
			},
		},
		"writeConnectionSecretToRef": nameRef(),
	}
}

func compositeResourceStatusProps(scope string) map[string]extv1.JSONSchemaProps {
	props := map[string]extv1.JSONSchemaProps{
		"conditions": {
			Description:  "Conditions of the resource.",
			Type:         "array",
			XListMapKeys: []string{"type"},
			XListType:    ptr.To("map"),
			Items: &extv1.JSONSchemaPropsOrArray{Schema: &extv1.JSONSchemaProps{
				Type:     "object",
				Required: []string{"lastTransitionTime", "reason", "status", "type"},
				Properties: map[string]extv1.JSONSchemaProps{
					"lastTransitionTime": {Type: "string", Format: "date-time"},
					"message":            {Type: "string"},
					"reason":             {Type: "string"},
					"status":             {Type: "string"},
					"type":               {Type: "string"},
					"observedGeneration": {Type: "integer", Format: "int64"},
				},
			}},
		},
	}
	if scope == ScopeLegacyCluster {
		props["connectionDetails"] = extv1.JSONSchemaProps{
			Type:       "object",
			Properties: map[string]extv1.JSONSchemaProps{"lastPublishedTime": {Type: "string", Format: "date-time"}},
		}
		props["claimConditionTypes"] = extv1.JSONSchemaProps{
			Type:      "array",
			XListType: ptr.To("set"),
			Items:     &extv1.JSONSchemaPropsOrArray{Schema: &extv1.JSONSchemaProps{Type: "string"}},
		}
	}
	return props
}

func compositeResourcePrinterColumns(scope string) []extv1.CustomResourceColumnDefinition {
	composition, revision := ".spec.crossplane.compositionRef.name", ".spec.crossplane.compositionRevisionRef.name"
	if scope == ScopeLegacyCluster {
		composition, revision = ".spec.compositionRef.name", ".spec.compositionRevisionRef.name"
	}
	return []extv1.CustomResourceColumnDefinition{
		{Name: "SYNCED", Type: "string", JSONPath: ".status.conditions[?(@.type=='Synced')].status"},
		{Name: "READY", Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].status"},
		{Name: "COMPOSITION", Type: "string", JSONPath: composition},
		{Name: "COMPOSITIONREVISION", Type: "string", JSONPath: revision, Priority: 1},
		{Name: "AGE", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
}

func compositeResourceClaimPrinterColumns() []extv1.CustomResourceColumnDefinition {
	return []extv1.CustomResourceColumnDefinition{
		{Name: "SYNCED", Type: "string", JSONPath: ".status.conditions[?(@.type=='Synced')].status"},
		{Name: "READY", Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].status"},
		{Name: "CONNECTION-SECRET", Type: "string", JSONPath: ".spec.writeConnectionSecretToRef.name"},
		{Name: "AGE", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
}
