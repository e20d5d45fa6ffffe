package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The engine and router containers of a rendering (the function's or the
// chart's) in a form both can be compared in: per container its arguments
// (a flag with its values is one entry), environment (NAME=value, or
// NAME=<secretKeyRef s/k> for a reference), ports (name number) and probes
// (kind GET path port and every timing, Kubernetes' defaults filled in).

// lists are what the comparison reads of one container.
type lists[T any] struct {
	Args   []T `json:"args"`
	Env    []T `json:"env"`
	Ports  []T `json:"ports"`
	Probes []T `json:"probes"`
}

// listNames name the lists of fields, in its order.
var listNames = []string{"args", "env", "ports", "probes"}

func (l *lists[T]) fields() []*[]T { return []*[]T{&l.Args, &l.Env, &l.Ports, &l.Probes} }

// rendering is the containers of one rendering: engines by model name,
// the router.
type rendering[T any] struct {
	Engines map[string]lists[T] `json:"engines"`
	Router  lists[T]            `json:"router"`
}

// view is a rendering as it is (the function's or the chart's).
type view = rendering[string]

// mapLists applies f to every list of r; who is "engine" or "router".
func mapLists[T, U any](r rendering[T], f func(who, list string, l []T) []U) rendering[U] {
	conv := func(who string, c lists[T]) lists[U] {
		var out lists[U]
		in, o := c.fields(), out.fields()
		for i := range in {
			*o[i] = f(who, listNames[i], *in[i])
		}
		return out
	}
	out := rendering[U]{Engines: map[string]lists[U]{}, Router: conv("router", r.Router)}
	for m, c := range r.Engines {
		out.Engines[m] = conv("engine", c)
	}
	return out
}

// viewOf reads the engine Deployments (by their model label) and the
// router Deployment (its first container) of a rendering.
func viewOf(t *testing.T, deployments []appsv1.Deployment) view {
	t.Helper()
	v := view{Engines: map[string]lists[string]{}}
	for _, d := range deployments {
		labels := d.Spec.Template.Labels
		switch {
		case labels["model"] != "":
			v.Engines[labels["model"]] = containerOf(t, d, "vllm")
		case labels["app.kubernetes.io/component"] == "router":
			v.Router = containerOf(t, d, "")
		}
	}
	return v
}

func containerOf(t *testing.T, d appsv1.Deployment, name string) lists[string] {
	t.Helper()
	cs := d.Spec.Template.Spec.Containers
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return name == "" || c.Name == name })
	if i < 0 {
		t.Fatalf("Deployment %s has no container %q", d.Name, name)
	}
	c := cs[i]
	cv := lists[string]{Args: argGroups(append(slices.Clone(c.Command), c.Args...))}
	for _, e := range c.Env {
		cv.Env = append(cv.Env, envString(e))
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
		s := fmt.Sprintf("%s %d", p.Name, p.ContainerPort)
		if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
			s += "/" + string(p.Protocol)
		}
		cv.Ports = append(cv.Ports, s)
	}
	for _, p := range []struct {
		kind  string
		probe *corev1.Probe
	}{{"startup", c.StartupProbe}, {"readiness", c.ReadinessProbe}, {"liveness", c.LivenessProbe}} {
		if p.probe != nil {
			cv.Probes = append(cv.Probes, probeString(p.kind, p.probe, ports))
		}
	}
	return cv
}

// argGroups joins a command line into entries: the leading words (the
// program, serve, the model) are one, then each flag with the words that
// follow it up to the next flag. A word --flag=value is compared as
// "--flag value": the function writes every value from the spec that way
// (stack/build/engine_args.go) and the chart writes "--flag value"; argparse reads both as
// the one value of --flag for every option that takes a value, which are
// the only options either writes with '=' (argv-forms.tsv in
// stack/testdata/upstream; a value starting with '-' is where they differ, and
// the chart's form is then the one that breaks).
func argGroups(words []string) []string {
	var out []string
	for _, w := range words {
		if flag, value, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "--") {
			out = append(out, flag+" "+value)
			continue
		}
		if len(out) == 0 || strings.HasPrefix(w, "--") {
			out = append(out, w)
			continue
		}
		out[len(out)-1] += " " + w
	}
	return out
}

func envString(e corev1.EnvVar) string {
	s := e.ValueFrom
	switch {
	case s == nil:
		return e.Name + "=" + e.Value
	case s.SecretKeyRef != nil:
		return fmt.Sprintf("%s=<secretKeyRef %s/%s>", e.Name, s.SecretKeyRef.Name, s.SecretKeyRef.Key)
	case s.ConfigMapKeyRef != nil:
		return fmt.Sprintf("%s=<configMapKeyRef %s/%s>", e.Name, s.ConfigMapKeyRef.Name, s.ConfigMapKeyRef.Key)
	case s.FieldRef != nil:
		return fmt.Sprintf("%s=<fieldRef %s>", e.Name, s.FieldRef.FieldPath)
	case s.ResourceFieldRef != nil:
		return fmt.Sprintf("%s=<resourceFieldRef %s>", e.Name, s.ResourceFieldRef.Resource)
	}
	return e.Name + "=<valueFrom>"
}

// probeString spells a probe with Kubernetes' defaults filled in and a
// named port resolved, so 8000 and "router-port" compare equal.
func probeString(kind string, p *corev1.Probe, ports map[string]int32) string {
	check := "?"
	if h := p.HTTPGet; h != nil {
		port := h.Port.String()
		if n, ok := ports[port]; ok {
			port = strconv.Itoa(int(n))
		}
		check = fmt.Sprintf("GET %s %s", h.Path, port)
	} else if p.TCPSocket != nil {
		check = "TCP " + p.TCPSocket.Port.String()
	}
	def := func(v, d int32) int32 {
		if v == 0 {
			return d
		}
		return v
	}
	return fmt.Sprintf("%s %s initialDelaySeconds=%d periodSeconds=%d timeoutSeconds=%d failureThreshold=%d successThreshold=%d",
		kind, check, p.InitialDelaySeconds, def(p.PeriodSeconds, 10), def(p.TimeoutSeconds, 1), def(p.FailureThreshold, 3), def(p.SuccessThreshold, 1))
}

// An expect file (testdata/scenarios/<name>.expect.yaml) holds both views.
// Each list entry is a string when both renderings have it, or a map
// {stack: ...} or {chart: ...} for an entry only one has, with row: the
// first cell of the docs/helm.md row that says why
// they differ. The changes other branches bring to the function are in
// the stack's side already (see pending).

type expectFile = rendering[expectEntry]

// expectEntry is one entry of an expect file; see expectFile.
type expectEntry struct {
	Both  string `json:"-"`
	Stack string `json:"stack,omitempty"`
	Chart string `json:"chart,omitempty"`
	Row   string `json:"row,omitempty"`
}

func (e *expectEntry) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return yaml.Unmarshal(b, &e.Both)
	}
	type plain expectEntry
	var p plain
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		return err
	}
	*e = expectEntry(p)
	return nil
}

func (e expectEntry) MarshalJSON() ([]byte, error) {
	if e.Both != "" {
		return yaml.YAMLToJSON([]byte(strconv.Quote(e.Both)))
	}
	type plain expectEntry
	return yaml.YAMLToJSON(mustYAML(plain(e)))
}

func mustYAML(v any) []byte {
	b, err := yaml.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func readExpect(t *testing.T, name string) expectFile {
	t.Helper()
	b, err := os.ReadFile(expectPath(name))
	if err != nil {
		t.Fatalf("%v (go test ./cmd/helm2stack -update-expect writes it from both renderings)", err)
	}
	var f expectFile
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		t.Fatalf("%s: %v", expectPath(name), err)
	}
	return f
}

func expectPath(name string) string {
	return filepath.Join("testdata", "scenarios", name+".expect.yaml")
}

// side is the view of one rendering an expect file describes: "stack" or
// "chart".
func side(f expectFile, side string) view {
	return mapLists(f, func(_, _ string, es []expectEntry) []string {
		var out []string
		for _, e := range es {
			switch {
			case e.Both != "":
				out = append(out, e.Both)
			case side == "stack" && e.Stack != "":
				out = append(out, e.Stack)
			case side == "chart" && e.Chart != "":
				out = append(out, e.Chart)
			}
		}
		return out
	})
}

// sorted is the view with every list sorted: the chart's flags and
// variables come in another order than the stack's, which neither vLLM's
// nor the router's argument parser minds.
func sorted(v view) view {
	return mapLists(v, func(_, _ string, l []string) []string {
		l = slices.Clone(l)
		sort.Strings(l)
		return l
	})
}

func compareViews(t *testing.T, what string, want, got view) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s differs from the expect file (-want +got):\n%s", what, diff)
	}
}
