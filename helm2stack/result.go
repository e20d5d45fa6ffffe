package helm2stack

import (
	"fmt"
	"sort"
	"strings"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Options name the stack the values become.
type Options struct {
	// Name of the ProductionStack; the chart's release name, so the stack
	// keeps the release's object names (S-M-deployment-vllm, ...).
	Name string
	// Namespace of the stack; empty leaves metadata.namespace unset.
	Namespace string
}

// Result is a converted stack and what the conversion could not carry over.
type Result struct {
	Stack *v1alpha1.ProductionStack
	// Dropped are keys set in the values that the stack does not support,
	// each with docs/helm.md's reason. A non-empty list means the stack does
	// less than the release did.
	Dropped []Finding
	// Notes say what to check: chart defaults the stack does not share,
	// fields folded into another, settings that moved.
	Notes []Finding
	// Secrets the stack references in place of literal values of the
	// values file; they must exist before the stack is applied.
	Secrets []Secret
}

// Finding is a message about one values key.
type Finding struct {
	Key     string
	Message string
}

func (f Finding) String() string { return f.Key + ": " + f.Message }

// Secret is a key of a Secret the stack reads a literal of the values file
// from; From is the values key that held the literal.
type Secret struct {
	Name, Key, From string
}

// SecretCommands are the kubectl commands that create the stack's Secrets,
// one per Secret, with a placeholder naming the values key for each value:
// the values themselves are never printed.
func (r *Result) SecretCommands() []string {
	byName := map[string][]Secret{}
	var names []string
	for _, s := range r.Secrets {
		if _, ok := byName[s.Name]; !ok {
			names = append(names, s.Name)
		}
		byName[s.Name] = append(byName[s.Name], s)
	}
	sort.Strings(names)
	ns := ""
	if r.Stack.Namespace != "" {
		ns = " --namespace " + r.Stack.Namespace
	}
	var out []string
	for _, name := range names {
		var b strings.Builder
		fmt.Fprintf(&b, "kubectl create secret generic %s%s", name, ns)
		for _, s := range byName[name] {
			fmt.Fprintf(&b, " --from-literal=%s='<the value of %s>'", s.Key, s.From)
		}
		out = append(out, b.String())
	}
	return out
}

func (r *Result) drop(key, reason string) { r.Dropped = append(r.Dropped, Finding{key, reason}) }
func (r *Result) note(key, msg string)    { r.Notes = append(r.Notes, Finding{key, msg}) }
