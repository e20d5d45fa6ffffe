package kubediff

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// The CRDs of the optional kinds, as the e2e suite installs them: read from
// the modules e2e/crds/go.mod pins (KEDA, Gateway API, LeaderWorkerSet, the
// Gateway API Inference Extension), or generated from
// the pinned Prometheus Operator types with the pinned controller-gen
// (e2e/upstream_test.go says why). Only the Go module proxy is needed.
const crdsModule = "../../e2e/crds"

var upstreamCRDs = []struct{ name, module, file string }{
	{"httproutes.gateway.networking.k8s.io", "sigs.k8s.io/gateway-api", "config/crd/standard/gateway.networking.k8s.io_httproutes.yaml"},
	{"scaledobjects.keda.sh", "github.com/kedacore/keda/v2", "config/crd/bases/keda.sh_scaledobjects.yaml"},
	{"leaderworkersets.leaderworkerset.x-k8s.io", "sigs.k8s.io/lws", "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml"},
	{"inferencepools.inference.networking.k8s.io", "sigs.k8s.io/gateway-api-inference-extension", "config/crd/bases/inference.networking.k8s.io_inferencepools.yaml"},
	{"inferenceobjectives.inference.networking.x-k8s.io", "sigs.k8s.io/gateway-api-inference-extension", "config/crd/bases/inference.networking.x-k8s.io_inferenceobjectives.yaml"},
	// llm-d-router v0.10.0's, whose module the proxy does not serve:
	// derived from GAIE's by e2e/llmdcrd_test.go, in the CRD module's
	// directory (module "").
	{"inferenceobjectives.llm-d.ai", "", "llm-d/llm-d.ai_inferenceobjectives.yaml"},
	{"servicemonitors.monitoring.coreos.com", "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring", ""},
	{"prometheusrules.monitoring.coreos.com", "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring", ""},
}

var controllerGenArgs = []string{
	"run", "sigs.k8s.io/controller-tools/cmd/controller-gen", "crd:crdVersions=v1",
	"paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1", "output:crd:stdout",
}

// A crdKind validates objects of one version of a CRD as the
// apiextensions-apiserver does on create: prune (an unknown field is an
// error, as with fieldValidation=Strict), default, then the custom resource
// strategy's Validate: metadata, OpenAPI schema, list types, CEL rules.
type crdKind struct {
	gvk        schema.GroupVersionKind
	structural *structuralschema.Structural
	strategy   interface {
		Validate(context.Context, runtime.Object) field.ErrorList
	}
}

// validate reports what the API server refuses in obj, a namespaced object
// of the kind.
func (k *crdKind) validate(obj map[string]any) field.ErrorList {
	u := &unstructured.Unstructured{Object: deepCopyJSON(obj)}
	var errs field.ErrorList
	opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}
	for _, p := range structuralpruning.PruneWithOptions(u.Object, k.structural, true, opts) {
		errs = append(errs, field.Invalid(field.NewPath(p), nil, "unknown field (fieldValidation=Strict refuses it; otherwise it is dropped)"))
	}
	structuraldefaulting.Default(u.Object, k.structural)
	ctx := genericapirequest.WithNamespace(context.Background(), u.GetNamespace())
	return append(errs, k.strategy.Validate(ctx, u)...)
}

// defaulted is obj as the API server has it after the CRD's pruning and
// defaults.
func (k *crdKind) defaulted(obj map[string]any) map[string]any {
	u := deepCopyJSON(obj)
	structuralpruning.PruneWithOptions(u, k.structural, true, structuralschema.UnknownFieldPathOptions{})
	structuraldefaulting.Default(u, k.structural)
	return u
}

// deepCopyJSON copies m as the API server decodes a request body: whole
// numbers become int64 (k8s.io/apimachinery/pkg/util/json), as the CEL rules
// of the CRDs expect of integer fields.
func deepCopyJSON(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	var out map[string]any
	if err := utiljson.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}

// loadCRDs reads every pinned CRD, by the GroupVersionKind of each version.
var loadCRDs = sync.OnceValues(func() (map[schema.GroupVersionKind]*crdKind, error) {
	var mods []string
	for _, u := range upstreamCRDs {
		if u.module != "" && !slices.Contains(mods, u.module) {
			mods = append(mods, u.module)
		}
	}
	out, err := goCommand(append([]string{"mod", "download", "-json"}, mods...)...)
	if err != nil {
		return nil, err
	}
	dirs := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var m struct{ Path, Dir, Error string }
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		if m.Error != "" {
			return nil, fmt.Errorf("go mod download %s: %s", m.Path, m.Error)
		}
		dirs[m.Path] = m.Dir
	}
	dirs[""] = crdsModule
	kinds := map[schema.GroupVersionKind]*crdKind{}
	for _, u := range upstreamCRDs {
		var b []byte
		if u.file != "" {
			b, err = os.ReadFile(filepath.Join(dirs[u.module], filepath.FromSlash(u.file)))
		} else {
			b, err = goCommand(controllerGenArgs...)
		}
		if err != nil {
			return nil, err
		}
		crd, err := findCRD(b, u.name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", u.module, err)
		}
		if err := addKinds(kinds, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", u.name, err)
		}
	}
	return kinds, nil
})

func findCRD(b []byte, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	r := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := r.Decode(&crd); errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("no CRD %s", name)
		} else if err != nil {
			return nil, err
		}
		if crd.Kind == "CustomResourceDefinition" && crd.Name == name {
			return &crd, nil
		}
	}
}

// addKinds builds, for each served version of a CRD, what
// k8s.io/apiextensions-apiserver's crdHandler builds (getOrCreateServingInfoFor
// in pkg/apiserver/customresource_handler.go): the structural schema with
// its defaults pruned, the schema validator and the strategy.
func addKinds(kinds map[schema.GroupVersionKind]*crdKind, crd *apiextensionsv1.CustomResourceDefinition) error {
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema == nil {
			continue
		}
		internal := &apiextensionsinternal.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
			return err
		}
		s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if err != nil {
			return err
		}
		s = s.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(s); err != nil {
			return err
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
		if err != nil {
			return err
		}
		gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
		var scale *apiextensionsinternal.CustomResourceSubresourceScale
		if v.Subresources != nil && v.Subresources.Scale != nil {
			scale = &apiextensionsinternal.CustomResourceSubresourceScale{}
			if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(v.Subresources.Scale, scale, nil); err != nil {
				return err
			}
		}
		st := customresource.NewStrategy(nil, crd.Spec.Scope == apiextensionsv1.NamespaceScoped, gvk, validator, nil, s, nil, scale, v.SelectableFields)
		kinds[gvk] = &crdKind{gvk: gvk, structural: s, strategy: st}
	}
	return nil
}

// goCommand runs the go command in e2e/crds, as e2e does: no go.work, and
// go.mod/go.sum are never updated.
func goCommand(args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = crdsModule
	flags := os.Getenv("GOFLAGS")
	if !strings.Contains(flags, "-mod=") {
		flags += " -mod=readonly"
	}
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(flags))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), crdsModule, err, stderr.Bytes())
	}
	return out, nil
}
