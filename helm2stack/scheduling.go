package helm2stack

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of tolerations and node affinity.

// modelTolerations: a model's list replaces the top level's, so "append"
// (the chart's default) repeats the shared tolerations in it.
func (c *converter) modelTolerations(n node) error {
	var own []corev1.Toleration
	if n.empty() {
		return nil
	}
	if err := n.object(&own); err != nil {
		return err
	}
	list := own
	if p, _ := c.cur.fields["tolerationsPolicy"].v.(string); p != "override" {
		var shared []corev1.Toleration
		if g := c.lookup("servingEngineSpec.tolerations"); !g.empty() {
			if err := g.object(&shared); err != nil {
				return err
			}
		}
		list = append(shared, own...)
	}
	ensure(&c.engine().Scheduling).Tolerations = list
	return nil
}

func (c *converter) tolerationsPolicy(n node) error {
	s, err := n.str()
	if err == nil && s != "" && s != "append" && s != "override" {
		return fmt.Errorf("%s must be append or override, got %q", n.path, s)
	}
	return err
}

// nodeSelectorTerms go under a required node affinity, unless affinity
// (or for engines nodeName) is set, which the chart lets win.
func nodeSelectorTerms(n node, affinity node, sched **v1alpha1.Scheduling) error {
	if n.empty() {
		return nil
	}
	var terms []corev1.NodeSelectorTerm
	if err := n.object(&terms); err != nil {
		return err
	}
	if !affinity.empty() {
		return nil
	}
	ensure(sched).Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	return nil
}

func (c *converter) engineNodeSelectorTerms(n node) error {
	if !c.cur.fields["nodeName"].empty() {
		return nil
	}
	return nodeSelectorTerms(n, c.cur.fields["affinity"], &c.engine().Scheduling)
}

func (c *converter) routerNodeSelectorTerms(n node) error {
	return nodeSelectorTerms(n, c.lookup("routerSpec.affinity"), &c.router().Scheduling)
}
