// Package kubeapi holds the rules the Kubernetes API server (v1.37,
// k8s.io/kubernetes pkg/apis/core/validation) applies to the core types a
// ProductionStack carries as they are: tolerations, affinity, pod and
// container security contexts and volume sources. The XRD accepts whatever
// their OpenAPI schema allows; the API server refuses more, and a value it
// refuses would fail the Deployment after Crossplane applied the stack's
// other objects.
//
// The function (fn) refuses such values before it composes anything, naming
// the field where the user wrote it; test/internal/kubecheck runs the same
// rules on every composed pod template, so the render tests and the fuzz
// targets hold the function to them. Each rule names the upstream function
// it follows; the package imports apimachinery's validation helpers, never
// k8s.io/kubernetes.
//
// A value is checked as the API server sees it after defaulting (a secret
// volume's defaultMode, a projected token's expirationSeconds, an Azure
// disk's kind), and as a pod of the stack: no hostNetwork or hostUsers:
// false, no spec.os, and Kubernetes' default feature gates; a pod in the
// host's IPC namespace (a disaggregated model's with hostPIDAndIPC) adds
// HostIPCSysctls.
package kubeapi

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Problem is one value the API server refuses.
type Problem struct {
	// Field is the path of the value below what was checked, starting with
	// "." or "[" (empty for the value itself).
	Field string
	// Msg says what is wrong and what the API server takes instead.
	Msg string
}

// At is the problem as a message about the value checked at base.
func (p Problem) At(base string) string {
	return base + p.Field + " " + p.Msg
}

// problems collects Problems below a field path.
type problems struct {
	list []Problem
}

func (ps *problems) add(fld, format string, a ...any) {
	ps.list = append(ps.list, Problem{Field: fld, Msg: fmt.Sprintf(format, a...)})
}

// fieldErrors adds apimachinery's field errors, found below fld (their paths
// start at fld's last step, so they are rebased on fld).
func (ps *problems) fieldErrors(fld string, errs field.ErrorList) {
	for _, e := range errs {
		ps.add(fld+strings.TrimPrefix(e.Field, "x"), "%s", e.ErrorBody())
	}
}

// maxQuoted is the most characters of a value a message repeats.
const maxQuoted = 64

// Quote quotes a value for a message, cut to maxQuoted characters.
func Quote(v string) string {
	if utf8.RuneCountInString(v) <= maxQuoted {
		return strconv.Quote(v)
	}
	r := []rune(v)
	return strconv.Quote(string(r[:maxQuoted])) + fmt.Sprintf(" (%d characters in all)", len(r))
}

// labelKey: unversionedvalidation.ValidateLabelName, a qualified name.
func (ps *problems) labelKey(fld, key string) {
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		ps.add(fld, "%s is not a valid label key: %s", Quote(key), strings.Join(msgs, "; "))
	}
}

// labelValue: validation.IsValidLabelValue.
func (ps *problems) labelValue(fld, v string) {
	if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
		ps.add(fld, "%s is not a valid label value: %s", Quote(v), strings.Join(msgs, "; "))
	}
}

// required: a string the API server requires (field.Required on len 0).
func (ps *problems) required(fld, v, what string) bool {
	if v == "" {
		ps.add(fld, "is required: set %s", what)
		return false
	}
	return true
}

// oneOf: field.NotSupported on a value outside an enum; empty allowed when
// allowEmpty.
func (ps *problems) oneOf(fld, v string, allowEmpty bool, allowed ...string) {
	if v == "" && allowEmpty {
		return
	}
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	ps.add(fld, "%s is not supported: use %s", Quote(v), orList(allowed))
}

// orList writes "a, b or c".
func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func index(fld string, i int) string { return fmt.Sprintf("%s[%d]", fld, i) }

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
