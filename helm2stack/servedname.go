package helm2stack

import (
	"fmt"
	"strings"
)

// liftServedName takes --served-model-name out of a model's extraArgs into
// model.servedModelName, where the stack sets it (the function refuses the
// option in extraArgs: the router, the status and the autoscaler use the
// served name, so it has one source). vLLM takes one or more names
// (nargs="+"): the first is the name responses and metrics report, the rest
// are aliases, which a stack cannot serve; a note names what is left out.
// Forms read: "--served-model-name a b", "--served-model-name=a", with
// dashes or underscores; the last occurrence wins, as in argparse. An option with no name is kept, for the function
// to refuse with its own message.
func (c *converter) liftServedName(path string, args []string) []string {
	var kept, names []string
	for i := 0; i < len(args); i++ {
		flag, value, inline := strings.Cut(args[i], "=")
		if strings.ReplaceAll(flag, "_", "-") != "--served-model-name" {
			kept = append(kept, args[i])
			continue
		}
		names = nil // argparse keeps the last occurrence
		if inline {
			names = append(names, value)
			continue
		}
		j := i + 1
		for ; j < len(args) && !strings.HasPrefix(args[j], "-"); j++ {
			names = append(names, args[j])
		}
		if j == i+1 {
			kept = append(kept, args[i])
			continue
		}
		i = j - 1
	}
	if len(names) == 0 {
		return args
	}
	c.model().ServedModelName = names[0]
	note := fmt.Sprintf("--served-model-name %s: model.servedModelName %s", strings.Join(names, " "), names[0])
	if len(names) > 1 {
		note += fmt.Sprintf("; the aliases %s are left out (a stack serves one name per model: clients must send %s)", strings.Join(names[1:], ", "), names[0])
	}
	c.res.note(path+".vllmConfig.extraArgs", note)
	return kept
}
