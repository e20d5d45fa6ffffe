package fn

import (
	"fmt"
	"regexp"
	"runtime/debug"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/vllm-project/function-vllm-stack/internal/kubeapi"
)

// issues is where users report the function's bugs.
const issues = "https://github.com/vllm-project/function-vllm-stack/issues"

// panicLog is the message of the log entry a recovered panic writes.
const panicLog = "RunFunction panicked: a bug in the function"

// recovered turns a panic of RunFunction into a Fatal result for this one
// stack, through the refusal path: Crossplane applies nothing, what runs
// stays as it was, and the XR and its claim say why. The response starts
// over from the request, so nothing the call wrote before it panicked goes
// out. The panic's value and stack trace go to the log only: the response
// stays the same on every call (Crossplane would see a change otherwise)
// and bounded, and repeats nothing of the spec.
func (f *Function) recovered(req *fnv1.RunFunctionRequest, v any) (*fnv1.RunFunctionResponse, error) {
	kind, name, namespace := xrRef(req)
	f.log.Info(panicLog, "xr-kind", kind, "xr-name", name, "xr-namespace", namespace,
		"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	return refuse(response.To(req, f.ttl), fmt.Errorf("internal error: function-vllm-stack panicked composing %s; "+
		"this is a bug in the function, not a mistake in the stack: report it at %s with this message and the function's log entry %q "+
		"for this stack, which holds the details", describeXR(kind, name, namespace), issues, panicLog))
}

// xrRef is the observed XR's kind, name and namespace, read without
// decoding it: whatever panicked may have been in the decoding.
func xrRef(req *fnv1.RunFunctionRequest) (kind, name, namespace string) {
	xr := req.GetObserved().GetComposite().GetResource().GetFields()
	md := xr["metadata"].GetStructValue().GetFields()
	return xr["kind"].GetStringValue(), md["name"].GetStringValue(), md["namespace"].GetStringValue()
}

var plainKind = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]{0,62}$`)

// describeXR names an XR in a message, within bounds whatever its kind and
// name.
func describeXR(kind, name, namespace string) string {
	if !plainKind.MatchString(kind) {
		kind = "XR"
	}
	s := kind + " " + kubeapi.Quote(name)
	if namespace != "" {
		s += " in namespace " + kubeapi.Quote(namespace)
	}
	return s
}
