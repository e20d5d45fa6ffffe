package validate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// extraArgs are the user's own options of `vllm serve`, appended last, and
// vLLM's argparse keeps the last occurrence of an option: an extraArgs item
// that names an option the stack renders would silently undo it (the LMCache
// or NIXL connector, a group's place in a multi-node replica, the name the
// router and the status use). So one rule: for each engine, the options the
// stack renders itself (EngineArgs without extraArgs, for the leader and the
// workers of a multi-node model, for each group of a disaggregated one) are
// wired, and an extraArgs item that vLLM's parser reads as a wired option is
// refused, naming the item where the user wrote it and the field that sets
// the option. Options that make sense on one kind of pod only (--headless,
// --api-server-count) have their own rules below.
//
// How vLLM's parser reads an option (FlexibleArgumentParser over argparse,
// every release the function renders for; facts in
// testdata/upstream/vllm-flags.tsv and multinode.tsv):
//
//   - --name=value and --name value are one option; in a "--" element the
//     name's underscores become dashes (the whole name up to 0.9.1, the part
//     before the first '.' from 0.9.2: V@v0.8.3:vllm/utils.py:1260-1267,
//     V@017e9f4448:vllm/utils/argparse_utils.py:300-319), and from 0.9.2 a
//     dotted --name.key=value is merged into a JSON value of --name, which
//     is appended after every other argument (:370-428);
//   - a BooleanOptionalAction's --no-name is the same option as --name;
//   - short aliases: -tp and -pp (every release), -asc (--api-server-count,
//     from 0.9.1), -n and -r (--nnodes, --node-rank, from 0.11.1)
//     (vllm/engine/arg_utils.py, vllm/entrypoints/openai/cli_args.py);
//   - no parser of vLLM sets allow_abbrev (git grep at every release read,
//     0.8.3 to main 017e9f4448), so argparse takes an unambiguous prefix of
//     a long option for the option (--kv-transfer for --kv-transfer-config)
//     and a prefix of a short one for it (-t for -tp), and a one-letter short
//     option may carry its value (-n2). No option of any release read is a
//     proper prefix of an option the stack renders, so such a prefix is an
//     abbreviation, or ambiguous, which vLLM refuses at start anyway.

// extraArgAt is the field and index, as the user wrote them, of item i of
// an engine's extraArgs: the model's vllmConfig.extraArgs, then its group's
// (groupConfig), each from the last layer that sets the list, which
// replaces the lists before it (MergeConfig).
func extraArgAt(e resolve.Engine, i int) (string, int) {
	var group []string
	if e.Role != "" {
		group = resolve.GroupOf(e.Cfg.Disaggregation, e.Role).ExtraArgs
	}
	k := len(e.Cfg.VLLMConfig.ExtraArgs) - len(group)
	inGroup := i >= k
	for j := len(e.Layers) - 1; j >= 0; j-- {
		if l := e.Layers[j]; l.IsGroup() == inGroup && l.Sets("vllmConfig.extraArgs") {
			if inGroup {
				return l.At("vllmConfig.extraArgs"), i - k
			}
			return l.At("vllmConfig.extraArgs"), i
		}
	}
	return e.Block + ".vllmConfig.extraArgs", i // not reached: the items come from a layer
}

// Releases of the options with a rule of their own.
var (
	headlessSince       = upstream.V(0, 9, 0)  // --headless (V@v0.9.0:vllm/entrypoints/cli/serve.py:61-65)
	apiServerCountSince = upstream.V(0, 9, 1)  // --api-server-count, -asc (V@v0.9.1:vllm/entrypoints/cli/serve.py:84-89)
	nodeAliasesSince    = upstream.V(0, 11, 1) // -n, -r (V@5bb1da519:vllm/engine/arg_utils.py:759-760)
	// From PR #32525 (main 2026-01-22; in 0.16.0 for certain, 0.15.0 was
	// cut a week later) vLLM refuses any --api-server-count with
	// --headless; before, only one above 1.
	apiServerCountHeadlessAny = upstream.V(0, 16, 0)
)

// shortAliases are the short options of the long options the stack renders
// or rules on, with the first release that has each.
var shortAliases = map[string]struct {
	long  string
	since upstream.Version
}{
	"-tp":  {"--tensor-parallel-size", upstream.VLLMOldest},
	"-pp":  {"--pipeline-parallel-size", upstream.VLLMOldest},
	"-asc": {"--api-server-count", apiServerCountSince},
	"-n":   {"--nnodes", nodeAliasesSince},
	"-r":   {"--node-rank", nodeAliasesSince},
	// Data and expert parallelism (vllm-flags.tsv): -dp from 0.8.3, -dpl,
	// -dpa, -dpp (V@v0.9.0:vllm/engine/arg_utils.py:607-617) and -dpr
	// (V@v0.9.0:vllm/entrypoints/cli/serve.py:67) from 0.9.0, -ep from
	// a68e703c32 (main 2026-01-05, in 0.14.0 at the latest).
	"-dp":  {"--data-parallel-size", upstream.VLLMOldest},
	"-dpl": {"--data-parallel-size-local", upstream.VLLMDataParallelLocalFirst},
	"-dpa": {"--data-parallel-address", upstream.VLLMDataParallelLocalFirst},
	"-dpp": {"--data-parallel-rpc-port", upstream.VLLMDataParallelLocalFirst},
	"-dpr": {"--data-parallel-start-rank", upstream.VLLMDataParallelLocalFirst},
	"-ep":  {"--enable-expert-parallel", upstream.V(0, 14, 0)},
}

// parallelOptions are the options of data and expert parallelism, which the
// stack owns on every engine (vllmConfig.dataParallelSize and
// expertParallel, dataparallel.go): written in extraArgs they would run
// ranks the GPU arithmetic, the pods' ranks and the API-server count never
// counted, so they are refused whether or not the stack renders them.
var parallelOptions = []string{
	"--data-parallel-size", "--data-parallel-size-local", "--data-parallel-address", "--data-parallel-rpc-port",
	"--data-parallel-start-rank", "--data-parallel-rank", "--data-parallel-backend", "--data-parallel-hybrid-lb",
	"--data-parallel-external-lb", "--data-parallel-multi-port-external-lb",
	"--enable-expert-parallel", "--enable-eplb", "--eplb-config", "--num-redundant-experts", "--eplb-window-size",
	"--eplb-step-interval", "--eplb-log-balancedness", "--all2all-backend",
}

// multiNodeOptions place a pod in its group: with multiNode the stack's,
// in the Ray form too (where Ray takes the group from the LeaderWorkerSet),
// but for --headless there, as the Ray workers run no vllm serve.
var multiNodeOptions = []string{"--distributed-executor-backend", "--nnodes", "--node-rank", "--master-addr", "--headless"}

// wiredOption is an option the stack renders for an engine.
type wiredOption struct {
	key  string // the option, as optionKey reads it
	Name string // as the stack writes it (--no-enable-prefix-caching)
}

// WiredOptions are the options of `vllm serve` the stack renders for an
// engine, on every pod: the positional model counts as --model, which it
// overrides; --served-model-name always, since the status and the KEDA
// query use the name the stack serves; with multiNode every option that
// places a pod in its group.
func WiredOptions(e resolve.Engine) []wiredOption {
	var out []wiredOption
	seen := map[string]bool{}
	add := func(name string) {
		if k := optionKey(name); !seen[k] {
			seen[k] = true
			out = append(out, wiredOption{k, name})
		}
	}
	add("--model")
	add("--served-model-name")
	pods := []resolve.Engine{e}
	if ok := e.MultiNode; ok {
		w := e
		w.LWSWorker = true
		pods = append(pods, w)
	}
	for _, p := range pods {
		args := build.EngineArgs(p)
		for _, a := range args[1 : len(args)-len(p.Cfg.VLLMConfig.ExtraArgs)] {
			if strings.HasPrefix(a, "--") {
				name, _, _ := strings.Cut(a, "=")
				add(name)
			}
		}
	}
	for _, name := range parallelOptions {
		add(name)
	}
	if ok := e.MultiNode; ok {
		for _, name := range multiNodeOptions {
			if name != "--headless" || !e.Ray { // Ray's workers run no vllm serve
				add(name)
			}
		}
	}
	return out
}

// optionKey is the long option vLLM's parser reads a "--" name as:
// underscores as dashes, up to a '.', the same for --no-name and --name.
func optionKey(name string) string {
	name, _, _ = strings.Cut(name, "=")
	name, _, _ = strings.Cut(name, ".")
	name = strings.ReplaceAll(name, "_", "-")
	if rest, ok := strings.CutPrefix(name, "--no-"); ok && rest != "" {
		return "--" + rest
	}
	return name
}

// How an extraArgs item reads as an option.
const (
	noMatch  = iota
	asIs     // the option as the stack writes it
	spelled  // another spelling: underscores, --no-, a short alias, a dotted key
	abbrevOf // a prefix argparse takes for the option
)

// readsAs says whether vLLM e's parser reads extraArgs item a as option key
// (a long option), and how.
func readsAs(e resolve.Engine, a, key string) int {
	switch {
	case len(a) < 2 || a[0] != '-' || a == "--":
		return noMatch
	case strings.HasPrefix(a, "--"):
		name, _, _ := strings.Cut(a, "=")
		k := optionKey(name)
		switch {
		case k == key && name == key:
			return asIs
		case k == key:
			return spelled
		case len(k) > 2 && strings.HasPrefix(key, k):
			return abbrevOf
		}
		return noMatch
	}
	name, _, _ := strings.Cut(a, "=")
	for alias, s := range shortAliases {
		if s.long != key || (e.VLLMErr == nil && e.VLLM.Version.Less(s.since)) {
			continue
		}
		switch {
		case name == alias, len(alias) == 2 && strings.HasPrefix(name, alias):
			return spelled
		case strings.HasPrefix(alias, name):
			return abbrevOf
		}
	}
	return noMatch
}

// validateExtraArgs refuses extraArgs items that undo what the stack
// renders for engine e, or that one kind of its pods cannot take.
func validateExtraArgs(f *Findings, e resolve.Engine) {
	args := e.Cfg.VLLMConfig.ExtraArgs
	if len(args) == 0 {
		return
	}
	wired := WiredOptions(e)
	multi := e.MultiNode
	for i, a := range args {
		field, j := extraArgAt(e, i)
		refuse := func(how int, name, why string) {
			f.errorf("%s[%d] %q is refused: %s%s", field, j, a, readAs(how, name), why)
		}
		if how, w := firstWired(e, a, wired); how != noMatch {
			refuse(how, w.Name, WiredBy(e, w))
			continue
		}
		if how := readsAs(e, a, "--headless"); how != noMatch && !strings.HasPrefix(optionName(a), "--no-") && (e.VLLMErr != nil || e.VLLM.Version.AtLeast(headlessSince)) {
			why := "a headless engine starts no API server, so its probes never pass and the router cannot reach it; remove it"
			if !multi {
				why += " (with multiNode the stack runs the workers of a group headless itself)"
			}
			refuse(how, "--headless", why)
			continue
		}
		how := readsAs(e, a, "--api-server-count")
		if how == noMatch || (e.VLLMErr == nil && e.VLLM.Version.Less(apiServerCountSince)) {
			continue
		}
		switch n, ok := optionValue(args, i); {
		case multi && !e.Ray && e.VLLMErr == nil:
			// Keeping it off the workers would mean editing the user's
			// arguments per pod (an option and maybe its value in the next
			// item), and extraArgs are passed verbatim, last, to every pod:
			// refused, naming what the release does.
			refusal := fmt.Sprintf("refuses an --api-server-count above 1 there (\"api_server_count can't be set in headless mode\"; any count from %s)", apiServerCountHeadlessAny)
			if e.VLLM.Version.AtLeast(apiServerCountHeadlessAny) {
				refusal = `refuses any --api-server-count there ("--api-server-count=N cannot be used with --headless")`
			}
			refuse(how, "--api-server-count", fmt.Sprintf("with multiNode it reaches the worker pods too, which run vllm serve --headless, and vLLM %s %s; the stack cannot give an option to the leader alone: remove it", e.VLLM, refusal))
		case e.RuntimeAdapters && (!ok || n > 1):
			refuse(how, "--api-server-count", fmt.Sprintf("%s.enableRuntimeAdapters loads adapters through the engine's API server, and vLLM refuses runtime LoRA updating with more than one (\"VLLM_ALLOW_RUNTIME_LORA_UPDATING cannot be used with api_server_count > 1\"); remove it or turn runtime adapters off", e.Path))
		case ok && n < 1:
			refuse(how, "--api-server-count", "below 1 it starts no API server (vLLM runs the engine headless), so its probes never pass and the router cannot reach it; remove it")
		}
	}
}

// firstWired is the wired option item a reads as: as it is or spelled
// otherwise before an abbreviation.
func firstWired(e resolve.Engine, a string, wired []wiredOption) (int, wiredOption) {
	for _, w := range wired {
		if how := readsAs(e, a, w.key); how == asIs || how == spelled {
			return how, w
		}
	}
	for _, w := range wired {
		if readsAs(e, a, w.key) == abbrevOf {
			return abbrevOf, w
		}
	}
	return noMatch, wiredOption{}
}

// readAs is how the refusal says the item names option name.
func readAs(how int, name string) string {
	switch how {
	case spelled:
		return "vLLM's parser takes it for " + name + ", and "
	case abbrevOf:
		return "vLLM's parser takes it for " + name + " (argparse reads a prefix of an option as the option), and "
	}
	return ""
}

func optionName(a string) string { name, _, _ := strings.Cut(a, "="); return name }

// optionValue is the number an option item gives: after its '=', else the
// next item (argparse takes one that does not read as an option, or a
// negative number).
func optionValue(args []string, i int) (int, bool) {
	v, ok := "", false
	if _, after, has := strings.Cut(args[i], "="); has {
		v, ok = after, true
	} else if i+1 < len(args) {
		if next := args[i+1]; !strings.HasPrefix(next, "-") || isNumber(next) {
			v, ok = next, true
		}
	}
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil
}

func isNumber(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }

// WiredBy says what sets a wired option, and what to do instead.
func WiredBy(e resolve.Engine, w wiredOption) string {
	field := func(f string) string {
		return fmt.Sprintf("%s sets %s; set it there, not in extraArgs", f, w.Name)
	}
	feature := func(f, why string) string {
		return fmt.Sprintf("%s sets %s (%s); remove it", f, w.Name, why)
	}
	p, b := e.Path, e.Block
	switch w.key {
	case "--host", "--port":
		return fmt.Sprintf("the stack sets %s itself (the probes and the Service use port %d on every address); remove it", w.Name, names.EnginePort)
	case "--model":
		if e.Model.Path != "" {
			return fmt.Sprintf("%s.path sets the model (vllm serve's positional, which --model would replace); set it there, not in extraArgs", p)
		}
		return fmt.Sprintf("%s.modelURL sets the model (vllm serve's positional, which --model would replace); set it there, not in extraArgs", p)
	case "--served-model-name":
		return fmt.Sprintf("%s.servedModelName sets %s (else the stack serves the model as %s, the name the router, the status and the autoscaler use); set it there, not in extraArgs", p, w.Name, e.Served)
	case "--revision":
		return field(p + ".revision")
	case "--enable-lora":
		return field(p + ".enableLoRA")
	case "--enable-auto-tool-choice":
		return field(p + ".enableTool")
	case "--tool-call-parser":
		return field(p + ".toolCallParser")
	case "--chat-template":
		return field(p + ".chatTemplate")
	case "--trust-remote-code":
		return field(p + ".trustRemoteCode")
	case "--dtype":
		return field(p + ".dtype")
	case "--max-num-seqs":
		return field(p + ".maxNumSeqs")
	case "--shutdown-timeout":
		return field(e.Origin("shutdown.drainSeconds"))
	case "--max-model-len":
		return field(p + ".maxModelLen")
	case "--lora-modules":
		return field(p + ".loraAdapters")
	case "--enable-chunked-prefill":
		return field(b + ".vllmConfig.enableChunkedPrefill")
	case "--enable-prefix-caching":
		return field(b + ".vllmConfig.enablePrefixCaching")
	case "--tensor-parallel-size":
		if e.Role != "" && resolve.GroupOf(e.Cfg.Disaggregation, e.Role).TensorParallelSize != nil {
			return field(e.GroupPath() + ".tensorParallelSize")
		}
		return field(b + ".vllmConfig.tensorParallelSize")
	case "--pipeline-parallel-size":
		return field(b + ".vllmConfig.pipelineParallelSize")
	case "--gpu-memory-utilization":
		return field(b + ".vllmConfig.gpuMemoryUtilization")
	case "--max-loras":
		return field(b + ".vllmConfig.maxLoras")
	case "--max-lora-rank":
		return field(b + ".vllmConfig.maxLoraRank")
	case "--max-cpu-loras":
		return field(b + ".vllmConfig.maxCpuLoras")
	case "--kv-offloading-size", "--kv-offloading-backend":
		return field(b + ".kvOffloading.cpu")
	case "--kv-transfer-config":
		if e.KVOffload {
			return feature(b+".kvOffloading", "vLLM's OffloadingConnector and its tiers")
		}
		if e.Role != "" {
			return feature(b+".disaggregation", "each group's part in the KV cache transfer")
		}
		return feature(b+".lmcacheConfig.enabled", "the LMCache connector")
	case "--block-size", "--kv-events-config":
		return feature("spec.inferenceExtension.picker.prefixCache.mode Precise", "the engines' KV events and block size, which the picker's must equal")
	case "--headless":
		return feature(b+".multiNode", "on the worker pods: the leader serves the API")
	case "--data-parallel-size", "--data-parallel-size-local":
		return field(b + ".vllmConfig." + map[string]string{"--data-parallel-size": "dataParallelSize", "--data-parallel-size-local": "dataParallelSizeLocal"}[w.key])
	case "--data-parallel-address", "--data-parallel-rpc-port", "--data-parallel-start-rank", "--data-parallel-rank", "--data-parallel-backend",
		"--data-parallel-hybrid-lb", "--data-parallel-external-lb", "--data-parallel-multi-port-external-lb":
		return feature(b+".vllmConfig.dataParallelSize", "the stack places every rank itself, on one pod or on each pod of a multiNode group from its LeaderWorkerSet variables, with vLLM's internal load balancing behind the one endpoint the routing layer sees")
	case "--enable-expert-parallel":
		return field(b + ".vllmConfig.expertParallel")
	case "--enable-eplb", "--eplb-config", "--num-redundant-experts", "--eplb-window-size", "--eplb-step-interval", "--eplb-log-balancedness":
		return field(b + ".vllmConfig.expertParallel.eplb")
	case "--all2all-backend":
		return field(b + ".vllmConfig.expertParallel.all2allBackend")
	case "--api-server-count":
		return feature(b+".vllmConfig.dataParallelSize", "one API server: from vLLM 0.16.0 the engine would start one per rank, and runtime LoRA updating, on with model.enableLoRA, refuses more than one")
	case "--distributed-executor-backend", "--nnodes", "--node-rank", "--master-addr":
		return feature(b+".multiNode", "the stack places every pod of a group itself, from the LeaderWorkerSet")
	}
	return fmt.Sprintf("the stack sets %s itself; remove it", w.Name)
}
