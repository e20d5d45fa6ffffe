package helm2stack

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of environment variables, Secrets and ConfigMaps.

// envVar sets the engine variable name from a scalar key.
func envVar(name string) func(*converter, node) error {
	return scalar(func(c *converter, s string) { setEnv(&c.engine().Env, corev1.EnvVar{Name: name, Value: s}) })
}

// secretRef reads the chart's {secretName, secretKey}; ok is false when
// both are empty (the chart's default).
func secretRef(n node) (sel *v1alpha1.SecretKeySelector, err error) {
	var v struct {
		SecretName string `json:"secretName"`
		SecretKey  string `json:"secretKey"`
	}
	if err := n.object(&v); err != nil {
		return nil, err
	}
	switch {
	case v.SecretName == "" && v.SecretKey == "":
		return nil, nil
	case v.SecretName == "":
		return nil, fmt.Errorf("%s.secretName is required with secretKey", n.path)
	case v.SecretKey == "":
		return nil, fmt.Errorf("%s.secretKey is required with secretName", n.path)
	}
	return &v1alpha1.SecretKeySelector{Name: v.SecretName, Key: v.SecretKey}, nil
}

// secretOrLiteral is a Secret reference from {secretName, secretKey}, or
// for a literal the key of the stack's Secret S-secrets to put it in.
func (c *converter) secretOrLiteral(n node, key string) (*v1alpha1.SecretKeySelector, error) {
	switch n.v.(type) {
	case nil:
		return nil, nil
	case string:
		if n.v == "" {
			return nil, nil
		}
		return c.secret(key, n.path), nil
	case map[string]any:
		return secretRef(n)
	}
	return nil, n.wrongType("a string or {secretName, secretKey}")
}

// hfToken: HF_TOKEN from a Secret, never a literal.
func (c *converter) hfToken(n node) error {
	sel, err := c.secretOrLiteral(n, "hf_token_"+c.cur.name)
	if sel != nil {
		ensure(&c.engine().VLLMConfig).HFTokenSecret = sel
	}
	return err
}

// engineAPIKey: VLLM_API_KEY of the router and every engine.
func (c *converter) engineAPIKey(n node) error {
	sel, err := c.secretOrLiteral(n, "vllmApiKey")
	if sel == nil || err != nil {
		return err
	}
	if r := c.router().APIKeySecret; r != nil {
		if *r != *sel {
			c.res.note(n.path, fmt.Sprintf("the stack has one API key Secret, %s's (%s/%s), for the router and every engine", c.apiKeyFrom, r.Name, r.Key))
		}
		return nil
	}
	c.router().APIKeySecret, c.apiKeyFrom = sel, n.path
	return nil
}

// routerAPIKey wins for the router, as in the chart; the stack's engines
// share it.
func (c *converter) routerAPIKey(n node) error {
	if n.v == nil {
		return nil
	}
	if _, ok := n.v.(map[string]any); !ok {
		return n.wrongType("{secretName, secretKey} (the chart takes a literal key in servingEngineSpec.vllmApiKey only)")
	}
	sel, err := secretRef(n)
	if sel != nil {
		c.router().APIKeySecret, c.apiKeyFrom = sel, n.path
	}
	return err
}

// routerHFToken: the router's HF_TOKEN from the stack's Secret.
func (c *converter) routerHFToken(n node) error {
	s, err := n.str()
	if err != nil || s == "" {
		return err
	}
	sel := c.secret("router_hf_token", n.path)
	setEnv(&c.router().Env, corev1.EnvVar{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: sel.Name}, Key: sel.Key}}})
	return nil
}

func (c *converter) envFromSecret(n node) error {
	var v struct {
		Name string `json:"name"`
	}
	if n.empty() {
		return nil
	}
	if err := n.object(&v); err != nil {
		return err
	}
	if v.Name == "" {
		return fmt.Errorf("%s.name is required", n.path)
	}
	c.engine().EnvFrom = append(c.engine().EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: v.Name}}})
	return nil
}

// configs: the chart makes ConfigMap S-configs from them; the stack reads
// an existing one.
func (c *converter) configs(n node) error {
	if n.empty() {
		return nil
	}
	m, err := n.stringMap()
	if err != nil {
		return err
	}
	name := c.opts.Name + "-configs"
	c.spec.EnvFrom = append(c.spec.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cmd := "kubectl create configmap " + name
	if c.opts.Namespace != "" {
		cmd += " --namespace " + c.opts.Namespace
	}
	for _, k := range keys {
		cmd += fmt.Sprintf(" --from-literal=%s='<the value of %s.%s>'", k, n.path, k)
	}
	c.res.note(n.path, "the stack reads ConfigMap "+name+" (envFrom) but does not create it: "+cmd)
	return nil
}

func mergeInto(dst *map[string]string, m map[string]string) {
	if *dst == nil {
		*dst = map[string]string{}
	}
	for k, v := range m {
		(*dst)[k] = v
	}
}
