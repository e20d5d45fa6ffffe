package stack

import (
	"slices"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// Sleep mode (vLLM's --enable-sleep-mode, in vllmConfig.extraArgs): the
// router sends no request to an engine it knows asleep, and it knows an
// engine can sleep only by the exact item --enable-sleep-mode in the
// command of the pod's container named vllm (router 0.1.6 on; before,
// never), never in its args (testdata/upstream/router-sleep-detection.tsv).

// sleepModeFlag is vLLM's flag, a store-true option: the only form.
const sleepModeFlag = "--enable-sleep-mode"

// sleepMode reports whether an engine can sleep: the user's extraArgs say so.
func sleepMode(e engine) bool {
	return slices.Contains(e.cfg.VLLMConfig.ExtraArgs, sleepModeFlag)
}

// stackSleepMode reports whether some engine of the stack can sleep, so
// the router labels sleeping engines (its Role's patch).
func stackSleepMode(s *resolvedStack) bool {
	return slices.ContainsFunc(s.engines, sleepMode)
}

// sleepModeCommand is an engine container's command and args: with sleep
// mode, the whole argv in the command, as the chart renders it, so the
// router reads the flag where it looks; Kubernetes runs command then args,
// so the engine runs the same argv, item for item. A Ray leader's command
// is sh -c with its script, which the router does not read
// (validateSleepMode warns).
func sleepModeCommand(e engine, command, args []string) ([]string, []string) {
	if !sleepMode(e) || rayBackend(e) {
		return command, args
	}
	return append(slices.Clone(command), args...), nil
}

// validateSleepMode warns where the router cannot learn that an engine
// sleeps, so it keeps sending it requests: a router before 0.1.6, or a
// multi-node engine on Ray, whose command is a shell script.
func validateSleepMode(f *Findings, s *resolvedStack) {
	if extensionOn(s) {
		return
	}
	for _, e := range s.engines {
		if !sleepMode(e) {
			continue
		}
		switch {
		case s.router.version.version.Less(upstream.RouterReadsSleepModeSince):
			f.warnf("%s.vllmConfig.extraArgs %s: router %s does not read sleep mode from the engine's pod (router %s and later do) and keeps sending requests to a sleeping engine: use a router image of %s or later",
				e.block, sleepModeFlag, s.router.version, upstream.RouterReadsSleepModeSince, upstream.RouterReadsSleepModeSince)
		case rayBackend(e):
			f.warnf("%s.vllmConfig.extraArgs %s: a multi-node engine on Ray runs vllm serve from a shell script, and the router reads sleep mode only from the command of the container named vllm, so it keeps sending requests to a sleeping engine",
				e.block, sleepModeFlag)
		}
	}
}
