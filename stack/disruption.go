package stack

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// wantsPDB: a podDisruptionBudget block asks for one unless it says
// enabled: false.
func wantsPDB(p *v1alpha1.PodDisruptionBudget) bool {
	return p != nil && (p.Enabled == nil || *p.Enabled)
}

// podDisruptionBudget keeps enough pods of one component serving while
// nodes are drained. Without bounds it allows one pod down at a time.
func podDisruptionBudget(s *resolvedStack, name string, labels, sel map[string]string, p *v1alpha1.PodDisruptionBudget) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: s.meta(name, labels),
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: sel},
			MinAvailable:   p.MinAvailable,
			MaxUnavailable: p.MaxUnavailable,
		},
	}
	if p.MinAvailable == nil && p.MaxUnavailable == nil {
		pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	}
	return pdb
}

func enginePDB(s *resolvedStack, e engine) *policyv1.PodDisruptionBudget {
	return podDisruptionBudget(s, s.names.enginePDB(e.id), engineLabels(s.name, e), engineSelector(s.name, e), e.cfg.PodDisruptionBudget)
}

func routerPDB(s *resolvedStack) *policyv1.PodDisruptionBudget {
	return podDisruptionBudget(s, s.names.routerPDB(), routerLabels(s), selector(s.name, ComponentRouter, ComponentRouter), s.router.pdb)
}
