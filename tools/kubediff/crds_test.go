package kubediff

import "github.com/vllm-project/function-vllm-stack/internal/crdschema"

// The CRDs of the optional kinds, as the e2e suite installs them, validated
// as the apiextensions-apiserver does on create: internal/crdschema, which
// the render and fuzz tests' oracle (test/internal/kubecheck) uses too, here
// at this module's k8s.io/apiextensions-apiserver v0.37.2.

type crdKind = crdschema.Kind

var (
	loadCRDs     = crdschema.Load
	deepCopyJSON = crdschema.APIServerJSON
)
