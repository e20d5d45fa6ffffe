package fn

import (
	"google.golang.org/protobuf/types/known/structpb"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/resource/composite"

	"github.com/vllm-project/function-vllm-stack/internal/wire"
)

// observedComposite returns the observed XR, as
// request.GetObservedCompositeResource does, with only wire.CompositeFields.
func observedComposite(req *fnv1.RunFunctionRequest) *resource.Composite {
	xr := composite.New()
	xr.SetUnstructuredContent(wire.DecodeFields(req.GetObserved().GetComposite().GetResource(), wire.CompositeFields))
	cds := req.GetObserved().GetComposite().GetConnectionDetails()
	if cds == nil {
		cds = resource.ConnectionDetails{}
	}
	return &resource.Composite{Resource: xr, ConnectionDetails: cds}
}

// observedComposed returns the observed composed resources of req, as
// request.GetObservedComposedResources does, with only wire.ObservedFields.
func observedComposed(req *fnv1.RunFunctionRequest) map[resource.Name]resource.ObservedComposed {
	ocds := make(map[resource.Name]resource.ObservedComposed, len(req.GetObserved().GetResources()))
	for name, r := range req.GetObserved().GetResources() {
		cd := composed.New()
		cd.SetUnstructuredContent(wire.DecodeFields(r.GetResource(), wire.ObservedFields))
		cds := r.GetConnectionDetails()
		if cds == nil {
			cds = resource.ConnectionDetails{}
		}
		ocds[resource.Name(name)] = resource.ObservedComposed{Resource: cd, ConnectionDetails: cds}
	}
	return ocds
}

// requiredResources returns the resources Crossplane sent for requirement,
// as they are.
func requiredResources(req *fnv1.RunFunctionRequest, requirement string) []*structpb.Struct {
	items := req.GetRequiredResources()[requirement].GetItems()
	rs := make([]*structpb.Struct, 0, len(items))
	for _, r := range items {
		rs = append(rs, r.GetResource())
	}
	return rs
}
