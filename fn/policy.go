package fn

import (
	"fmt"
	"strings"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/stack"
	"github.com/vllm-project/function-vllm-stack/stack/adaptersync"
)

// syncPolicyObjects are the cluster-scoped objects of
// composition/clusterrole.yaml that confine the adapter sync identity to its
// own pod's annotations: without them its Role lets a stolen token patch
// any pod of the namespace (image, labels, activeDeadlineSeconds). A
// namespaced XR cannot compose them, so the cluster admin applies them and
// the function requires them, by name, as it requires optional CRDs.
var syncPolicyObjects = []struct{ requirement, kind string }{
	{"adapter-sync-policy", "ValidatingAdmissionPolicy"},
	{"adapter-sync-policy-binding", "ValidatingAdmissionPolicyBinding"},
}

const admissionAPIVersion = "admissionregistration.k8s.io/v1"

// requireSyncPolicy asks Crossplane for the policy and its binding on every
// reconcile of a stack with runtime adapters: an observed one may since
// have been deleted.
func requireSyncPolicy(rsp *fnv1.RunFunctionResponse, s *stack.Stack) {
	if !s.RuntimeAdapters() {
		return
	}
	for _, o := range syncPolicyObjects {
		require(rsp, o.requirement, &fnv1.ResourceSelector{
			ApiVersion: admissionAPIVersion,
			Kind:       o.kind,
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: adaptersync.PolicyName},
		})
	}
}

// checkSyncPolicy refuses a stack with runtime adapters once Crossplane
// looked for the policy or its binding and did not find it; before it has
// looked (the first call of a reconcile, whose response Crossplane does not
// apply) nothing is missing. A preview has no cluster: it warns.
func checkSyncPolicy(req *fnv1.RunFunctionRequest, s *stack.Stack, preview bool) (warnings []string, err error) {
	if !s.RuntimeAdapters() {
		return nil, nil
	}
	var missing []string
	for _, o := range syncPolicyObjects {
		found, looked := req.GetRequiredResources()[o.requirement]
		if hasObject(found.GetItems(), o.kind, adaptersync.PolicyName, func(v string) bool { return v == admissionAPIVersion }) {
			continue
		}
		if preview || looked {
			missing = append(missing, o.kind)
		}
	}
	switch {
	case len(missing) == 0:
		return nil, nil
	case preview:
		return []string{fmt.Sprintf("preview: enableRuntimeAdapters is shown as if the cluster had the %s %s of composition/clusterrole.yaml; on a cluster without it the stack is refused until it is applied", strings.Join(missing, " and "), adaptersync.PolicyName)}, nil
	}
	return nil, fmt.Errorf("cannot compose the stack: enableRuntimeAdapters needs the %s %s, which the cluster does not have: it confines the adapter sync identity to its own pod's annotations, which its Role alone does not; apply composition/clusterrole.yaml (Kubernetes 1.30 or later), or turn enableRuntimeAdapters off",
		strings.Join(missing, " and "), adaptersync.PolicyName)
}
