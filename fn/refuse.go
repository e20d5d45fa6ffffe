package fn

import (
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/vllm-project/function-vllm-stack/status"
)

// refuse ends the pipeline with a Fatal result: Crossplane applies nothing,
// and the running stack stays as it was.
//
// Crossplane itself shows a Fatal's message only in the XR's Synced
// condition, which a claim does not get: a claim's user would see a stale
// Ready and nothing else. So the same message also goes out as a warning
// event to the XR and the claim (before the Fatal result: Crossplane stops
// reading results at the first Fatal), and the stack's conditions turn
// False with reason Refused (Crossplane applies a Fatal response's
// conditions, and copies them to the claim).
func refuse(rsp *fnv1.RunFunctionResponse, err error) (*fnv1.RunFunctionResponse, error) {
	response.Warning(rsp, err).TargetCompositeAndClaim()
	msg := "The function refused the stack, so nothing was applied and what runs is unchanged: " + err.Error()
	setConditions(rsp, status.Refused(msg))
	response.Fatal(rsp, err)
	return rsp, nil
}
