package helm2stack

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Conversions of the router's settings and flags.

func (c *converter) routerPullSecrets(n node) error {
	var l []corev1.LocalObjectReference
	if n.empty() {
		return nil
	}
	if err := n.object(&l); err != nil {
		return err
	}
	c.router().ImagePullSecretName = l[0].Name
	for i := 1; i < len(l); i++ {
		c.res.drop(fmt.Sprintf("%s[%d]", n.path, i), "not supported: routerConfig.imagePullSecretName names one Secret")
	}
	return nil
}

func (c *converter) routerServiceType(n node) error {
	s, err := n.str()
	switch {
	case err != nil || s == "" || s == "ClusterIP":
	case s == "NodePort" || s == "LoadBalancer":
		ensure(&c.router().Service).Type = s
	default:
		c.res.drop(n.path, "not supported: the router Service is ClusterIP, NodePort or LoadBalancer")
	}
	return err
}

func (c *converter) routingLogicKey(n node) error {
	s, err := n.str()
	switch {
	case err != nil || s == "" || s == "roundrobin":
	case s == "session" || s == "prefixaware" || s == "kvaware":
		c.router().RouterType = s
	case s == "disaggregated_prefill":
		// Converted with the models of the recipe, or dropped (pd.go).
	default:
		// The router exits at start-up on a logic it does not know.
		return fmt.Errorf("%s must be one of roundrobin, session, prefixaware, kvaware, disaggregated_prefill, got %q", n.path, s)
	}
	return err
}

func (c *converter) prefixMinMatchLength(n node) error {
	if n.v == nil || n.v == "" {
		return nil
	}
	v, err := n.int32()
	if err != nil || v == 0 {
		return err
	}
	if c.routingLogic() != "prefixaware" {
		c.res.drop(n.path, "applies to routerType prefixaware only")
		return nil
	}
	c.router().PrefixMinMatchLength = &v
	return nil
}

// routerFlag appends flag and the key's value to routerConfig.extraArgs.
func routerFlag(flag string) func(*converter, node) error {
	return routerFlagUnless(flag, "")
}

// routerFlagUnless is routerFlag, except for the value the stack passes
// anyway.
func routerFlagUnless(flag, same string) func(*converter, node) error {
	return scalar(func(c *converter, s string) {
		if s != same && s != "0" {
			c.router().ExtraArgs = append(c.router().ExtraArgs, flag, s)
		}
	})
}
