package xcrd

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/vllm-project/function-vllm-stack/xrd"
)

// The port was checked once against Crossplane v2.2.1's own
// internal/xcrd.ForCompositeResource and ForCompositeResourceClaim on
// xrd/definition.yaml and xrd/legacy/definition.yaml: the CRDs were identical
// but for the owner reference. These tests keep the parts that matter.

func parse(t *testing.T, b []byte) *XRD {
	t.Helper()
	x, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// xrdSchema is the openAPIV3Schema of the XRD's first version.
func xrdSchema(t *testing.T, x *XRD) *extv1.JSONSchemaProps {
	t.Helper()
	s := &extv1.JSONSchemaProps{}
	if err := json.Unmarshal(x.Spec.Versions[0].Schema.OpenAPIV3Schema, s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestForCompositeResource(t *testing.T) {
	cases := map[string]struct {
		def        []byte
		scope      string
		crdScope   extv1.ResourceScope
		machinery  []string // Crossplane's fields under spec
		statusKeys []string // Crossplane's fields under status
	}{
		"namespaced": {
			def: xrd.Definition, scope: ScopeNamespaced, crdScope: extv1.NamespaceScoped,
			machinery:  []string{"crossplane"},
			statusKeys: []string{"conditions"},
		},
		"legacy": {
			def: xrd.LegacyDefinition, scope: ScopeLegacyCluster, crdScope: extv1.ClusterScoped,
			machinery:  []string{"claimRef", "compositionRef", "compositionRevisionRef", "compositionRevisionSelector", "compositionSelector", "compositionUpdatePolicy", "resourceRefs", "writeConnectionSecretToRef"},
			statusKeys: []string{"claimConditionTypes", "conditions", "connectionDetails"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			x := parse(t, tc.def)
			if got := x.Scope(); got != tc.scope {
				t.Fatalf("scope %s, want %s", got, tc.scope)
			}
			crd, err := ForCompositeResource(x)
			if err != nil {
				t.Fatal(err)
			}
			if crd.Name != x.Metadata.Name || crd.Spec.Scope != tc.crdScope || crd.Spec.Names.Kind != x.Spec.Names.Kind {
				t.Errorf("CRD %s scope %s kind %s", crd.Name, crd.Spec.Scope, crd.Spec.Names.Kind)
			}
			if got := crd.Spec.Names.Categories; got[len(got)-1] != "composite" {
				t.Errorf("categories %v lack composite", got)
			}
			v := crd.Spec.Versions[0]
			if !v.Storage || v.Subresources == nil || v.Subresources.Status == nil {
				t.Errorf("version %s: storage %v, subresources %+v", v.Name, v.Storage, v.Subresources)
			}
			got, want := v.Schema.OpenAPIV3Schema, xrdSchema(t, x)
			if n := got.Properties["metadata"].Properties["name"].MaxLength; n == nil || *n != 63 {
				t.Errorf("metadata.name maxLength %v, want 63", n)
			}
			// The XRD's spec and status are kept as they are, Crossplane's
			// fields added next to them.
			spec, status := got.Properties["spec"], got.Properties["status"]
			for _, k := range tc.machinery {
				if _, ok := spec.Properties[k]; !ok {
					t.Errorf("spec.%s missing", k)
				}
				delete(spec.Properties, k)
			}
			for _, k := range tc.statusKeys {
				if _, ok := status.Properties[k]; !ok {
					t.Errorf("status.%s missing", k)
				}
				delete(status.Properties, k)
			}
			if diff := cmp.Diff(want.Properties["spec"], spec); diff != "" {
				t.Errorf("spec schema differs from the XRD's (-xrd +crd):\n%s", diff)
			}
			if diff := cmp.Diff(want.Properties["status"].Properties, status.Properties); diff != "" {
				t.Errorf("status schema differs from the XRD's (-xrd +crd):\n%s", diff)
			}
		})
	}
}

func TestForCompositeResourceClaim(t *testing.T) {
	x := parse(t, xrd.LegacyDefinition)
	crd, err := ForCompositeResourceClaim(x)
	if err != nil {
		t.Fatal(err)
	}
	if crd.Name != "productionstacks.serving.vllm.ai" || crd.Spec.Scope != extv1.NamespaceScoped || crd.Spec.Names.Kind != "ProductionStack" {
		t.Errorf("claim CRD %s scope %s kind %s", crd.Name, crd.Spec.Scope, crd.Spec.Names.Kind)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	for _, k := range []string{"compositeDeletePolicy", "resourceRef", "writeConnectionSecretToRef", "model", "models"} {
		if _, ok := spec.Properties[k]; !ok {
			t.Errorf("claim spec.%s missing", k)
		}
	}
	if !slices.Contains(crd.Spec.Names.Categories, "claim") {
		t.Errorf("categories %v lack claim", crd.Spec.Names.Categories)
	}
	if _, err := ForCompositeResourceClaim(parse(t, xrd.Definition)); err == nil {
		t.Error("a v2 XRD has no claim, want an error")
	}
}
