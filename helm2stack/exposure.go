package helm2stack

import (
	"fmt"
	"sort"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of the Ingress and HTTPRoutes.

// checkOnly checks the type of a key another key's conversion reads.
func checkOnly[T any](check func(node) (T, error)) func(*converter, node) error {
	return func(_ *converter, n node) error {
		if n.v == nil {
			return nil
		}
		_, err := check(n)
		return err
	}
}

func (c *converter) ingress(n node) error {
	if n.v == nil {
		return nil
	}
	var v struct {
		Enabled     bool              `json:"enabled"`
		ClassName   string            `json:"className"`
		Annotations map[string]string `json:"annotations"`
		Hosts       []struct {
			Host  string `json:"host"`
			Paths []struct {
				Path     string `json:"path"`
				PathType string `json:"pathType"`
			} `json:"paths"`
		} `json:"hosts"`
		TLS []struct {
			SecretName string   `json:"secretName"`
			Hosts      []string `json:"hosts"`
		} `json:"tls"`
	}
	if err := n.object(&v); err != nil {
		return err
	}
	if !v.Enabled {
		return nil
	}
	in := &v1alpha1.Ingress{ClassName: v.ClassName, Annotations: v.Annotations}
	const one = "not supported: routerConfig.ingress has one host, one path (a Prefix) and one TLS Secret"
	for i, h := range v.Hosts {
		if i > 0 {
			c.res.drop(fmt.Sprintf("%s.hosts[%d]", n.path, i), one)
			continue
		}
		in.Host = h.Host
		for j, p := range h.Paths {
			if j > 0 || (p.PathType != "" && p.PathType != "Prefix") {
				c.res.drop(fmt.Sprintf("%s.hosts[%d].paths[%d]", n.path, i, j), one)
				continue
			}
			if p.Path != "/" {
				in.Path = p.Path
			}
		}
	}
	for i, t := range v.TLS {
		if i > 0 {
			c.res.drop(fmt.Sprintf("%s.tls[%d]", n.path, i), one)
			continue
		}
		in.TLSSecretName = t.SecretName
	}
	c.router().Ingress = in
	return nil
}

// routes: the first enabled route (by name) that is not an HTTPS redirect
// becomes routerConfig.httpRoute.
func (c *converter) routes(n node) error {
	fields, err := n.fields()
	if err != nil || n.v == nil {
		return err
	}
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	const one = "not supported: routerConfig.httpRoute is one HTTPRoute with parentRefs, hostnames and a path prefix"
	for _, name := range names {
		f := fields[name]
		var v struct {
			Enabled     bool              `json:"enabled"`
			APIVersion  string            `json:"apiVersion"`
			Kind        string            `json:"kind"`
			Annotations map[string]string `json:"annotations"`
			Labels      map[string]string `json:"labels"`
			Hostnames   []string          `json:"hostnames"`
			ParentRefs  []struct {
				Name        string `json:"name"`
				Namespace   string `json:"namespace"`
				SectionName string `json:"sectionName"`
				Group       string `json:"group"`
				Kind        string `json:"kind"`
				Port        *int32 `json:"port"`
			} `json:"parentRefs"`
			HTTPSRedirect bool `json:"httpsRedirect"`
			Matches       []struct {
				Path struct {
					Type  string `json:"type"`
					Value string `json:"value"`
				} `json:"path"`
			} `json:"matches"`
			Filters         []any `json:"filters"`
			AdditionalRules []any `json:"additionalRules"`
		}
		if err := f.object(&v); err != nil {
			return err
		}
		if !v.Enabled {
			continue
		}
		if c.router().HTTPRoute != nil || v.HTTPSRedirect || (v.Kind != "" && v.Kind != "HTTPRoute") ||
			len(v.Filters) > 0 || len(v.AdditionalRules) > 0 || len(v.Annotations) > 0 || len(v.Labels) > 0 {
			c.res.drop(f.path, one)
			continue
		}
		r := &v1alpha1.HTTPRoute{Hostnames: v.Hostnames}
		for _, p := range v.ParentRefs {
			r.ParentRefs = append(r.ParentRefs, v1alpha1.ParentRef{Name: p.Name, Namespace: p.Namespace, SectionName: p.SectionName})
		}
		for i, m := range v.Matches {
			if i > 0 || (m.Path.Type != "" && m.Path.Type != "PathPrefix") {
				c.res.drop(fmt.Sprintf("%s.matches[%d]", f.path, i), one)
				continue
			}
			if m.Path.Value != "/" {
				r.Path = m.Path.Value
			}
		}
		c.router().HTTPRoute = r
	}
	return nil
}
