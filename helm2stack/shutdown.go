package helm2stack

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/utils/ptr"
)

// liftShutdownTimeout takes --shutdown-timeout out of a model's extraArgs
// into shutdown.drainSeconds: the function refuses the option in extraArgs,
// since the field also sizes the pod's preStop sleep and grace period (the
// chart sets neither: its engines get Kubernetes' 30 s). Forms read:
// "--shutdown-timeout N", "--shutdown-timeout=N", with dashes or
// underscores; the last occurrence wins, as in argparse. A value that is not
// a whole number of seconds within the field's bounds is kept, for the
// function to refuse with its own message.
func (c *converter) liftShutdownTimeout(path string, args []string) []string {
	var kept []string
	seconds := int64(-1)
	for i := 0; i < len(args); i++ {
		flag, value, inline := strings.Cut(args[i], "=")
		if strings.ReplaceAll(flag, "_", "-") != "--shutdown-timeout" {
			kept = append(kept, args[i])
			continue
		}
		if !inline && i+1 < len(args) {
			value = args[i+1]
		}
		n, err := strconv.ParseInt(value, 10, 32)
		if err != nil || n < 0 || n > 3600 || !inline && i+1 >= len(args) {
			kept = append(kept, args[i])
			continue
		}
		if !inline {
			i++
		}
		seconds = n
	}
	if seconds < 0 {
		return args
	}
	s := ensure(&c.engine().Shutdown)
	s.DrainSeconds = ptr.To(int32(seconds))
	c.res.note(path+".vllmConfig.extraArgs", fmt.Sprintf("--shutdown-timeout %d: shutdown.drainSeconds %d (the stack also gives the pod a preStop sleep and a grace period that cover it)", seconds, seconds))
	return kept
}
