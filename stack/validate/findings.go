package validate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vllm-project/function-vllm-stack/internal/text"
)

// Findings collects what validation found: errors make the function return a
// Fatal result (so nothing is applied and the running stack stays as it is),
// warnings become events on the XR. Each names the field and the fix.
type Findings struct {
	Errors   []string
	Warnings []string
}

// errorf and warnf add a finding once: the groups of a disaggregated model
// are checked alike, and share most of their settings.
func (f *Findings) errorf(format string, a ...any) {
	f.Errors = appendOnce(f.Errors, fmt.Sprintf(format, a...))
}

func (f *Findings) warnf(format string, a ...any) {
	f.Warnings = appendOnce(f.Warnings, fmt.Sprintf(format, a...))
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// Err is the refusal of a stack with errors, nil for one without.
func (f Findings) Err() error {
	if len(f.Errors) == 0 {
		return nil
	}
	return errors.New("invalid ProductionStack: " + joinErrors(f.Errors))
}

// Bounds of a refusal's message, which goes into events and the XR's
// conditions: each error, which may quote what the user wrote, and all of
// them.
const (
	MaxErrorLength   = 1 << 10
	MaxRefusalLength = 8 << 10
)

// joinErrors joins validation errors, each clipped, as many as fit in
// MaxRefusalLength, and says how many more there are.
func joinErrors(errs []string) string {
	var b strings.Builder
	for i, e := range errs {
		e = text.Clip(e, MaxErrorLength)
		if i > 0 && b.Len()+len(e) > MaxRefusalLength {
			fmt.Fprintf(&b, "; and %d more errors", len(errs)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e)
	}
	return b.String()
}
