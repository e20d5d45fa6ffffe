package fn

import (
	"fmt"
	"maps"
	"slices"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composite"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/vllm-project/function-vllm-stack/status"
)

// observedObjects are the observed composed objects, by composition resource
// name, as package status reads them.
func observedObjects(observed map[resource.Name]resource.ObservedComposed) status.Observed {
	objs := make(status.Observed, len(observed))
	for name, o := range observed {
		if o.Resource != nil {
			objs[string(name)] = &o.Resource.Unstructured
		}
	}
	return objs
}

// writeStatus sets the XR's status fields.
func writeStatus(xr *composite.Unstructured, fields map[string]any) error {
	// Straight into the status object: SetValue would write each value as
	// JSON and read it back, a tenth of RunFunction's time for the same
	// Struct in the end. Anything but an object at status is left to
	// SetValue, which says what is wrong.
	st, isMap := xr.Object["status"].(map[string]any)
	if _, exists := xr.Object["status"]; exists && !isMap {
		for _, k := range slices.Sorted(maps.Keys(fields)) { // the same error every time
			if err := xr.SetValue("status."+k, fields[k]); err != nil {
				return fmt.Errorf("cannot set status.%s: %w", k, err)
			}
		}
		return nil
	}
	if st == nil {
		st = make(map[string]any, len(fields))
		if xr.Object == nil {
			xr.Object = map[string]any{}
		}
		xr.Object["status"] = st
	}
	maps.Copy(st, fields)
	return nil
}

// setConditions sets the XR's and its claim's conditions.
func setConditions(rsp *fnv1.RunFunctionResponse, conds []status.Condition) {
	for _, c := range conds {
		if c.True {
			response.ConditionTrue(rsp, c.Type, c.Reason).WithMessage(c.Message).TargetCompositeAndClaim()
		} else {
			response.ConditionFalse(rsp, c.Type, c.Reason).WithMessage(c.Message).TargetCompositeAndClaim()
		}
	}
}
