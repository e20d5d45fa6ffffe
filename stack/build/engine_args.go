package build

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// A spec value reaches a command line only as the value of the option it is
// for, written --name=value in one argv element, so nothing it holds can be
// read as an option (contract 3 of DEVELOPERS.md). Both programs accept that
// form for every option that takes a value, at every release the function
// renders for (test data: stack/testdata/upstream/argv-forms.tsv):
//
//   - vLLM's FlexibleArgumentParser splits an element that starts with "--"
//     at its first '=' and rewrites only the name (underscores to dashes;
//     from 0.9.2 only up to a '.'); the value is passed to argparse as
//     written. Its dotted JSON arguments (--a.b=v, from 0.9.2) are keyed on
//     a '.' in the name, never in the value.
//   - vllm-router's parser is a plain argparse.ArgumentParser.
//
// argparse takes exactly one value after '=', even for nargs='+'; the one
// list of several values the function renders, --lora-modules, is written as
// separate elements, each of which starts with a letter, a digit, '_' or
// '{' (loraModule), never with '-'. Positionals cannot be made safe this
// way: a model that would read as an option is refused (validateModelShapes).

// opt is the argv element that gives option name (with its leading "--")
// the value v.
func opt(name, v string) string { return name + "=" + v }

// EngineArgs are the arguments of `vllm serve`, in a fixed order so the
// Deployment does not roll when nothing changed. The model is the positional
// (validated not to read as an option); every other value from the spec is
// --name=value (see opt); constants stay --name value; extraArgs are the
// user's own options, verbatim at the end.
func EngineArgs(e resolve.Engine) []string {
	m, v := e.Model, e.Cfg.VLLMConfig
	args := make([]string, 0, 32)
	if m.Path != "" {
		args = append(args, m.Path, opt("--served-model-name", e.Served))
	} else {
		args = append(args, m.ModelURL)
		if m.ServedModelName != "" {
			args = append(args, opt("--served-model-name", m.ServedModelName))
		}
	}
	if m.Revision != "" {
		args = append(args, opt("--revision", m.Revision))
	}
	args = append(args, "--host", "0.0.0.0", "--port", strconv.Itoa(int(e.VLLMPort)))
	if e.Drain.Flag {
		// On SIGTERM vLLM refuses new requests and lets those in flight
		// finish for this long (upstream.VLLMShutdownTimeoutSince).
		args = append(args, opt("--shutdown-timeout", itoa(e.Drain.Seconds)))
	}
	if m.EnableLoRA {
		args = append(args, "--enable-lora")
	}
	if m.EnableTool {
		args = append(args, "--enable-auto-tool-choice")
	}
	if m.ToolCallParser != "" {
		args = append(args, opt("--tool-call-parser", m.ToolCallParser))
	}
	if m.ChatTemplate != "" {
		args = append(args, "--chat-template", templatesPath+"/"+ChatTemplateKey)
	}
	if m.TrustRemoteCode {
		args = append(args, "--trust-remote-code")
	}
	if m.DType != "" {
		args = append(args, opt("--dtype", m.DType))
	}
	if m.MaxNumSeqs != nil {
		args = append(args, opt("--max-num-seqs", itoa(*m.MaxNumSeqs)))
	}
	if m.MaxModelLen != nil {
		args = append(args, opt("--max-model-len", itoa(*m.MaxModelLen)))
	}
	args = append(args, chunkedPrefillArg(e)...)
	args = appendSwitch(args, "enable-prefix-caching", v.EnablePrefixCaching)
	if v.TensorParallelSize != nil {
		args = append(args, opt("--tensor-parallel-size", itoa(*v.TensorParallelSize)))
	}
	if v.PipelineParallelSize != nil {
		args = append(args, opt("--pipeline-parallel-size", itoa(*v.PipelineParallelSize)))
	}
	if v.GPUMemoryUtilization != "" {
		args = append(args, opt("--gpu-memory-utilization", v.GPUMemoryUtilization))
	}
	if v.MaxLoras != nil && *v.MaxLoras > 0 {
		args = append(args, opt("--max-loras", itoa(*v.MaxLoras)))
	}
	args = append(args, loraLimitArgs(e)...)
	args = append(args, loraArgs(e)...)
	args = append(args, lmcacheArgs(e)...)
	args = append(args, kvOffloadArgs(e)...)
	args = append(args, precisePrefixArgs(e)...)
	args = append(args, transferArgs(e)...)
	args = append(args, multiNodeArgs(e)...)
	args = append(args, dataParallelArgs(e)...)
	return append(args, v.ExtraArgs...)
}

// transferArgs, transferEnv, transferPorts and transferServicePorts are
// what a group's engine needs for its transfer; nothing for an engine of a
// model that is not disaggregated.
func transferArgs(e resolve.Engine) []string {
	switch {
	case e.Role == "":
		return nil
	case e.Transfer == resolve.TransferLMCache:
		return lmcachePDArgs(e)
	}
	return nixlArgs(e)
}

// nixlArgs make a group's engine a NIXL producer (prefill) or consumer
// (decode). Up to vLLM 0.22.0 the connector reads no kv_role; from 0.23.0
// kv_both is deprecated in favour of these two. engine_id, kv_ip and kv_port
// are not rendered: vLLM makes the id, and the NIXL path uses neither.
func nixlArgs(e resolve.Engine) []string {
	kvRole := "kv_producer"
	if e.Role == resolve.RoleDecode {
		kvRole = "kv_consumer"
	}
	return []string{"--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"` + kvRole + `"}`}
}

const (
	// lmcacheNIXLBufferSize is the NIXL transfer buffer of each engine, in
	// bytes, on the GPU: the chart tutorial's 1 GiB.
	lmcacheNIXLBufferSize = "1073741824"
)

// lmcachePDArgs are the chart's: LMCacheConnectorV1 as producer or consumer,
// saving the last partial chunk too (discard_partial_chunks false) so the
// decode engine receives the whole prompt; lmcache_rpc_port names the
// engine's LMCache socket, the chart's value.
func lmcachePDArgs(e resolve.Engine) []string {
	nixlRole, kvRole := resolve.LMCachePDRole(e)
	return []string{"--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"` + kvRole +
		`","kv_connector_extra_config":{"discard_partial_chunks":false,"lmcache_rpc_port":"` + nixlRole + `"}}`}
}

// appendSwitch renders a tri-state flag: --name, --no-name, or nothing so
// vLLM keeps its own default.
func appendSwitch(args []string, name string, b *bool) []string {
	switch {
	case b == nil:
		return args
	case *b:
		return append(args, "--"+name)
	default:
		return append(args, "--no-"+name)
	}
}

func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// lmcacheArgs wires vLLM to LMCache. Nothing is rendered when LMCache is off.
func lmcacheArgs(e resolve.Engine) []string {
	if !e.LMCache {
		return nil
	}
	return []string{"--kv-transfer-config", kvTransferConfig(e)}
}

// loraArgs loads the model's static LoRA adapters at start-up.
func loraArgs(e resolve.Engine) []string {
	if len(e.Model.LoRAAdapters) == 0 {
		return nil
	}
	args := make([]string, 0, 1+len(e.Model.LoRAAdapters))
	args = append(args, "--lora-modules")
	for _, a := range e.Model.LoRAAdapters {
		args = append(args, loraModule(a))
	}
	return args
}

// loraModule is one item of --lora-modules. vLLM reads an item as name=path
// only when it has an '=' and no ','; anything else must be JSON, which
// every supported release also accepts. So name=path where that reads back
// as written, else {"name":…,"path":…}.
func loraModule(a v1alpha1.LoRAAdapter) string {
	if !strings.ContainsAny(a.Name+a.Path, "=,") {
		return a.Name + "=" + a.Path
	}
	b, _ := json.Marshal(struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}{a.Name, a.Path})
	return string(b)
}

// The LWS webhook's variables in the pods' containers.
const (
	lwsLeaderAddress = "$(" + lwsv1.LwsLeaderAddress + ")"
	lwsWorkerIndex   = "$(" + lwsv1.LwsWorkerIndex + ")"
)

// RayScript is vLLM's multi-node-serving.sh in its own images up to 0.20.0
// (Ray is used before 0.12.0 only).
const RayScript = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"

// rayLeaderScript starts the Ray head, waits for the group, then runs the
// engine: the arguments of `sh -c` after the script are `vllm serve …`,
// which it runs as they are ("$0" "$@"), so no value of the stack is ever
// read by the shell.
const rayLeaderScript = `bash ` + RayScript + ` leader --ray_cluster_size="$` + lwsv1.LwsGroupSize + `" && exec "$0" "$@"`

// multiNodeCommand is the command and arguments of an engine's container:
// serve and args as they are, but for a multi-node group on Ray, where the
// leader's wrap `vllm serve` (serve then args as the arguments of sh -c)
// and a worker's join the leader's Ray head.
func multiNodeCommand(e resolve.Engine, serve []string, args []string) (command, rest []string) {
	if !e.Ray {
		return serve, args
	}
	if e.LWSWorker {
		return []string{"bash", RayScript, "worker", "--ray_address=" + lwsLeaderAddress}, nil
	}
	return []string{"sh", "-c", rayLeaderScript}, append(slices.Clone(serve), args...)
}

// multiNodeArgs place an engine pod in its group: the leader is node rank
// 0, a worker its LWS worker index, headless (no API server).
func multiNodeArgs(e resolve.Engine) []string {
	n, ok := e.PodsPerReplica, e.MultiNode
	if !ok {
		return nil
	}
	if e.Ray {
		return []string{"--distributed-executor-backend", "ray"}
	}
	rank := "0"
	if e.LWSWorker {
		rank = lwsWorkerIndex
	}
	args := []string{opt("--nnodes", itoa(n)), "--node-rank", rank, "--master-addr", lwsLeaderAddress}
	if e.LWSWorker {
		args = append(args, "--headless")
	}
	return args
}

// loraLimitArgs renders the limits the engine's release takes.
func loraLimitArgs(e resolve.Engine) []string {
	v := e.Cfg.VLLMConfig
	var args []string
	if !e.Model.EnableLoRA {
		return nil
	}
	if v.MaxLoraRank != nil {
		args = append(args, opt("--max-lora-rank", itoa(*v.MaxLoraRank)))
	}
	if v.MaxCPULoras != nil {
		args = append(args, opt("--max-cpu-loras", itoa(*v.MaxCPULoras)))
	}
	return args
}

// sleepModeCommand is an engine container's command and args: with sleep
// mode, the whole argv in the command, as the chart renders it, so the
// router reads the flag where it looks; Kubernetes runs command then args,
// so the engine runs the same argv, item for item. A Ray leader's command
// is sh -c with its script, which the router does not read
// (validateSleepMode warns).
func sleepModeCommand(e resolve.Engine, command, args []string) ([]string, []string) {
	if !e.SleepMode || e.Ray {
		return command, args
	}
	return append(slices.Clone(command), args...), nil
}

// chunkedPrefillArg spells chunked prefill on or off the way the engine's
// vLLM parses it; nil leaves vLLM's default.
func chunkedPrefillArg(e resolve.Engine) []string {
	b := e.Cfg.VLLMConfig.EnableChunkedPrefill
	switch {
	case b == nil:
		return nil
	case *b:
		return []string{"--enable-chunked-prefill"}
	case e.VLLM.Version.Less(upstream.VLLMNoChunkedPrefill):
		return []string{"--enable-chunked-prefill=false"}
	}
	return []string{"--no-enable-chunked-prefill"}
}

// kvTransferConfig is the LMCache connector of the engine's engine (V0 or V1).
func kvTransferConfig(e resolve.Engine) string {
	if e.V0Engine {
		return upstream.KVTransferV0
	}
	return upstream.KVTransferV1
}
