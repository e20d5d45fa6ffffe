package stack

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/internal/argvcheck"
	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// upVersion is a release of vLLM or of the router as the tables write it.
type upVersion [4]int

// routerHead is production-stack HEAD (a6c01db, 2026-08-05), newer than
// every router release the tables name.
var routerHead = upVersion{0, 1, 13}

var upVersionRE = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?$`)

func parseUpVersion(s string) (upVersion, error) {
	if s == "HEAD" {
		return routerHead, nil
	}
	m := upVersionRE.FindStringSubmatch(s)
	if m == nil {
		return upVersion{}, fmt.Errorf("%q is not a release number", s)
	}
	var v upVersion
	for i, p := range m[1:] {
		v[i], _ = strconv.Atoi(p) // "" (no fourth part) is 0
	}
	return v, nil
}

func (v upVersion) String() string {
	if v == routerHead {
		return "HEAD"
	}
	s := fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
	if v[3] != 0 {
		s += "." + strconv.Itoa(v[3])
	}
	return s
}

func (v upVersion) in(first, last upVersion) bool {
	return slices.Compare(first[:], v[:]) <= 0 && slices.Compare(v[:], last[:]) <= 0
}

// upRow is one row of a flag table: a name and what it is from release
// first to release last.
type upRow struct {
	name        string
	first, last upVersion
	kind        string
	choices     []string
}

type upTable []upRow

// at is the row of name at release v.
func (t upTable) at(name string, v upVersion) (upRow, bool) {
	for _, r := range t {
		if r.name == name && v.in(r.first, r.last) {
			return r, true
		}
	}
	return upRow{}, false
}

// atAny is any row of name, for a flag that does not exist at the release
// checked.
func (t upTable) atAny(name string) (upRow, bool) {
	for _, r := range t {
		if r.name == name {
			return r, true
		}
	}
	return upRow{}, false
}

// releases says in which releases a name exists, for messages: "only in
// 0.8.5–0.27.1", or "in no release".
func (t upTable) releases(name string) string {
	var spans []string
	for _, r := range t {
		if r.name == name {
			spans = append(spans, r.first.String()+"–"+r.last.String())
		}
	}
	if len(spans) == 0 {
		return "in no release"
	}
	return "only in " + strings.Join(spans, ", ")
}

// lmcacheEnvRow is what current LMCache and mid-2025 LMCache do with one
// LMCACHE_* variable.
type lmcacheEnvRow struct {
	newest   string // read, outside or ignored
	mid2025  string // read, outside, ignored or unknown
	required bool   // with LMCACHE_ENABLE_CONTROLLER true (current LMCache)
}

// contractFacts is the contract: the three tables of testdata/upstream.
type contractFacts struct {
	vllm, router upTable
	lmcache      map[string]lmcacheEnvRow
	kvoffload    upTable // kvoffload.tsv
}

func loadUpstream(t *testing.T) contractFacts {
	t.Helper()
	u := contractFacts{lmcache: map[string]lmcacheEnvRow{}}
	var err error
	if u.vllm, err = loadFlagTable("vllm-flags.tsv"); err != nil {
		t.Fatal(err)
	}
	if u.router, err = loadFlagTable("router-flags.tsv"); err != nil {
		t.Fatal(err)
	}
	if u.kvoffload, err = loadFlagTable("kvoffload.tsv"); err != nil {
		t.Fatal(err)
	}
	rows, err := stacktest.ReadTSV(filepath.Join(stacktest.UpstreamDir, "lmcache-env.tsv"), 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		u.lmcache[r[0]] = lmcacheEnvRow{newest: r[1], mid2025: r[2], required: r[3] == "required"}
	}
	return u
}

// loadFlagTable reads a table with columns name, first, last, kind, choices
// (comma-separated) and source.
func loadFlagTable(name string) (upTable, error) {
	rows, err := stacktest.ReadTSV(filepath.Join(stacktest.UpstreamDir, name), 6)
	if err != nil {
		return nil, err
	}
	t := make(upTable, 0, len(rows))
	for _, r := range rows {
		first, err1 := parseUpVersion(r[1])
		last, err2 := parseUpVersion(r[2])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%s: row %s: bad release: %v %v", name, r[0], err1, err2)
		}
		row := upRow{name: r[0], first: first, last: last, kind: r[3]}
		if r[4] != "" {
			row.choices = strings.Split(r[4], ",")
		}
		t = append(t, row)
	}
	return t, nil
}

// parsedArgs are the options of a command line by name (without "=value"),
// each with its values in order.
type parsedArgs map[string][]string

// parseArgs reads a command line the way argparse does, against a flag
// table at release v, and reports every token the program would reject.
func parseArgs(t upTable, prog string, v upVersion, args []string) (parsedArgs, []string) {
	opts := parsedArgs{}
	var problems []string
	for i := 0; i < len(args); i++ {
		tok := args[i]
		if !strings.HasPrefix(tok, "--") {
			problems = append(problems, fmt.Sprintf("argument %q is a value no option takes", tok))
			continue
		}
		name, inline, hasInline := strings.Cut(tok, "=")
		row, problem := option(t, prog, v, name)
		if problem != "" {
			problems = append(problems, problem)
			// Skip its values the way releases that know it would.
			row, _ = t.atAny(name)
		}
		values := []string{inline}
		if !hasInline {
			values, i = optionValues(row.kind, args, i)
		}
		opts[name] = values
		if problem == "" {
			problems = append(problems, checkValues(row, prog, v, tok, values)...)
		}
	}
	return opts, problems
}

// optionValues takes the values that follow option args[i] of a kind, as
// argparse does; it returns them and the index of the last token taken.
func optionValues(kind string, args []string, i int) ([]string, int) {
	follows := func(prefix string) bool { return i+1 < len(args) && !strings.HasPrefix(args[i+1], prefix) }
	switch kind {
	case "storebool": // nargs='?': the next token unless it looks like an option
		if follows("-") {
			return args[i+1 : i+2], i + 1
		}
	case "value", "json":
		if follows("--") {
			return args[i+1 : i+2], i + 1
		}
	case "values", "": // nargs='+'; an unknown option's values are no problems of their own
		j := i
		for j+1 < len(args) && !strings.HasPrefix(args[j+1], "--") {
			j++
		}
		return args[i+1 : j+1], j
	}
	return nil, i
}

// option finds the row of an option at release v. --no-X exists where X is
// a BooleanOptionalAction: argparse generates it, so no row names it.
func option(t upTable, prog string, v upVersion, name string) (upRow, string) {
	if r, ok := t.at(name, v); ok {
		return r, ""
	}
	if _, known := t.atAny(name); known {
		return upRow{}, fmt.Sprintf("%s does not exist in %s %s (%s)", name, prog, v, t.releases(name))
	}
	if base, ok := strings.CutPrefix(name, "--no-"); ok {
		if r, ok := t.at("--"+base, v); ok && r.kind == "boolopt" {
			return upRow{name: name, kind: "store_true"}, ""
		}
		if _, known := t.atAny("--" + base); known {
			return upRow{}, fmt.Sprintf("%s does not exist in %s %s: --%s is not a BooleanOptionalAction there", name, prog, v, base)
		}
	}
	return upRow{}, fmt.Sprintf("%s is unknown to the contract table: add its row (from the upstream facts) before rendering it", name)
}

// checkValues checks the values given to a known option.
func checkValues(r upRow, prog string, v upVersion, tok string, values []string) []string {
	switch r.kind {
	case "store_true", "boolopt":
		if len(values) > 0 {
			return []string{fmt.Sprintf("%s: %s takes no value in %s %s (%s)", tok, r.name, prog, v, r.kind)}
		}
	case "storebool":
		if len(values) > 0 && !strings.EqualFold(values[0], "true") && !strings.EqualFold(values[0], "false") {
			return []string{fmt.Sprintf("%s: %s takes true or false in %s %s", tok, r.name, prog, v)}
		}
	case "value", "values", "json":
		if len(values) == 0 {
			return []string{fmt.Sprintf("%s needs a value", r.name)}
		}
	}
	var problems []string
	for _, val := range values {
		if len(r.choices) > 0 && !slices.Contains(r.choices, val) {
			problems = append(problems, fmt.Sprintf("%s %s: %s %s accepts only %s", r.name, val, prog, v, strings.Join(r.choices, ", ")))
		}
	}
	return problems
}

// trimExtra removes the user's extra arguments, which the function appends
// verbatim at the end and which are the user's to get right.
func trimExtra(args, extra []string) ([]string, []string) {
	n := len(args) - len(extra)
	if n < 0 || !slices.Equal(args[n:], extra) {
		return args, []string{fmt.Sprintf("the stack's extraArgs %q are not the last arguments", extra)}
	}
	return args[:n], nil
}

// checkEngine checks the vllm container of an engine Deployment against vLLM
// release ver: `vllm serve <model> [options]` and its environment.
func (u contractFacts) checkEngine(ver string, c corev1.Container, extra []string) []string {
	v, err := parseUpVersion(ver)
	if err != nil {
		return []string{err.Error()}
	}
	switch rayRole(c) {
	case "worker":
		return checkRayWorker(v, c)
	case "leader":
		// `sh -c <script> vllm serve <args>`: the script runs "$0" "$@".
		if len(c.Args) < 2 || path.Base(c.Args[0]) != "vllm" || c.Args[1] != "serve" {
			return []string{fmt.Sprintf("the Ray leader's arguments %q do not start with vllm serve", c.Args)}
		}
		c.Args = c.Args[2:]
	}
	args, problems := trimExtra(c.Args, extra)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return append(problems, fmt.Sprintf("the first argument of vllm serve must be the model, got %q", args))
	}
	if _, ok := u.vllm.at("model_tag", v); !ok {
		problems = append(problems, fmt.Sprintf("vLLM %s takes no positional model", v))
	}
	opts, p := parseArgs(u.vllm, "vLLM", v, args[1:])
	problems = append(problems, p...)
	// vLLM raises TypeError at start-up without a parser (FACTS §2.1).
	if _, ok := opts["--enable-auto-tool-choice"]; ok {
		if _, ok := opts["--tool-call-parser"]; !ok {
			problems = append(problems, "--enable-auto-tool-choice needs --tool-call-parser")
		}
	}
	for _, cfg := range opts["--kv-transfer-config"] {
		problems = append(problems, u.checkKVTransfer(v, cfg, c.Env)...)
		if strings.Contains(cfg, `"NixlConnector"`) {
			problems = append(problems, checkNIXLPorts(v, c, opts)...)
		}
	}
	problems = append(problems, u.checkKVOffload(v, c, opts)...)
	// Each GPU of a pod runs one rank of one of its data-parallel ranks.
	if _, ok := opts["--data-parallel-size"]; ok {
		local := argInt(args, "--data-parallel-size")
		if _, ok := opts["--data-parallel-size-local"]; ok {
			local = argInt(args, "--data-parallel-size-local")
		}
		ranks := local * argInt(args, "--tensor-parallel-size") * argInt(args, "--pipeline-parallel-size")
		if g := c.Resources.Limits.Name("nvidia.com/gpu", "0").Value(); g != ranks {
			problems = append(problems, fmt.Sprintf("the pod runs %d data-parallel ranks of tensor × pipeline GPUs = %d GPUs, and has %d", local, ranks, g))
		}
	}
	problems = append(problems, u.checkVLLMEnv(v, c.Env)...)
	return append(problems, u.checkLMCacheEnv(c.Image, c.Env)...)
}

// kvRoles are the values of kv_role; it is required whenever kv_connector is
// set (FACTS §2.3).
var kvRoles = []string{"kv_producer", "kv_consumer", "kv_both"}

// checkKVTransfer checks the JSON of --kv-transfer-config: a connector vLLM v
// registers, a kv_role, and the V0 engine for the V0 LMCache connector.
func (u contractFacts) checkKVTransfer(v upVersion, cfg string, env []corev1.EnvVar) []string {
	var kv struct {
		Connector string `json:"kv_connector"`
		Role      string `json:"kv_role"`
	}
	if err := json.Unmarshal([]byte(cfg), &kv); err != nil {
		return []string{fmt.Sprintf("--kv-transfer-config %s is not a JSON object: %v", cfg, err)}
	}
	if kv.Connector == "" {
		return nil
	}
	var problems []string
	if r, ok := u.vllm.at(kv.Connector, v); !ok || r.kind != "kv_connector" {
		problems = append(problems, fmt.Sprintf("--kv-transfer-config kv_connector %s is not registered in vLLM %s (%s)", kv.Connector, v, u.vllm.releases(kv.Connector)))
	}
	if !slices.Contains(kvRoles, kv.Role) {
		problems = append(problems, fmt.Sprintf("--kv-transfer-config kv_role %q must be one of %s with kv_connector set", kv.Role, strings.Join(kvRoles, ", ")))
	}
	if kv.Connector == "NixlConnector" {
		problems = append(problems, checkNIXL(v, cfg, kv.Role, env)...)
	}
	// LMCacheConnector is the V0 engine's; the chart pairs it with
	// VLLM_USE_V1=0 (FACTS §2.3, §2.4).
	if kv.Connector == "LMCacheConnector" && envValue(env, "VLLM_USE_V1") != "0" {
		problems = append(problems, "--kv-transfer-config kv_connector LMCacheConnector needs the V0 engine: env VLLM_USE_V1=0")
	}
	return problems
}

// The NIXL path (disagg.tsv): the vllm/vllm-openai image has NIXL from
// 0.10.2; the side channel binds VLLM_NIXL_SIDE_CHANNEL_HOST, which must be
// the pod's IP (its default, localhost, is unreachable from the decode pod),
// on an explicit port (its default moved at 0.11.0); vLLM makes engine_id,
// and kv_ip/kv_port are other connectors'.
var nixlImageSince, nixlOneListener = mustUpVersion("0.10.2"), mustUpVersion("0.11.1")

func mustUpVersion(s string) upVersion {
	v, err := parseUpVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

func checkNIXL(v upVersion, cfg, role string, env []corev1.EnvVar) []string {
	var problems []string
	if slices.Compare(v[:], nixlImageSince[:]) < 0 {
		problems = append(problems, fmt.Sprintf("NixlConnector needs vLLM %s or later: the vllm/vllm-openai image of %s has no NIXL", nixlImageSince, v))
	}
	if role != "kv_producer" && role != "kv_consumer" {
		problems = append(problems, fmt.Sprintf("NixlConnector kv_role %q: a prefill engine is kv_producer and a decode engine kv_consumer (kv_both is deprecated from 0.23.0)", role))
	}
	var fields map[string]any
	_ = json.Unmarshal([]byte(cfg), &fields)
	for _, k := range []string{"engine_id", "kv_ip", "kv_port"} {
		if _, ok := fields[k]; ok {
			problems = append(problems, "NixlConnector: --kv-transfer-config sets "+k+", which vLLM makes or the NIXL path does not read")
		}
	}
	i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == "VLLM_NIXL_SIDE_CHANNEL_HOST" })
	if i < 0 || env[i].ValueFrom == nil || env[i].ValueFrom.FieldRef == nil || env[i].ValueFrom.FieldRef.FieldPath != "status.podIP" {
		problems = append(problems, "NixlConnector: VLLM_NIXL_SIDE_CHANNEL_HOST must be the pod's IP (fieldRef status.podIP): the listener binds it and the decode engine dials it")
	}
	if envValue(env, "VLLM_NIXL_SIDE_CHANNEL_PORT") == "" {
		problems = append(problems, "NixlConnector: VLLM_NIXL_SIDE_CHANNEL_PORT must be set: its default moved from 5557 to 5600 at 0.11.0")
	}
	return problems
}

// pdTransfers are the transfers whose engines a router must route as
// disaggregated, by how the engine says so: the connector names NIXL, or
// LMCache's NIXL backend is on (LMCACHE_ENABLE_NIXL, mid-2025 LMCache). Each
// has its routing logic (disagg.tsv router rows).
var pdTransfers = []struct {
	name, logic string
	uses        func(cfg string, env []corev1.EnvVar) bool
}{
	{"NixlConnector", "disaggregated_prefill_orchestrated", func(cfg string, _ []corev1.EnvVar) bool { return strings.Contains(cfg, `"NixlConnector"`) }},
	{"LMCache's NIXL backend", "disaggregated_prefill", func(cfg string, env []corev1.EnvVar) bool {
		return strings.Contains(cfg, `"LMCacheConnectorV1"`) && lmcacheTrue(envValue(env, "LMCACHE_ENABLE_NIXL"))
	}},
}

// checkDisaggregatedRouting: a router sends a request to an engine whose pod
// label "model" is one of --prefill-model-labels, then to one of
// --decode-model-labels: with disaggregated_prefill_orchestrated it gives
// the decode engine the prefill endpoint's host to pull the KV cache from,
// which must be the pod (pod-ip discovery), not a Service; with
// disaggregated_prefill it finds the groups by the label of the pods it
// discovers, which service-name discovery reads from a Service's selector
// instead (disagg.tsv router rows). Every producer must be a prefill engine
// and every consumer a decode engine, and each group must have one.
func checkDisaggregatedRouting(router corev1.Container, engines []appsv1.Deployment) []string {
	roles := map[string]string{} // model label -> kv_role
	transfer := -1
	for _, d := range engines {
		c, _ := containerNamed(d, build.EngineContainer)
		cfg, _ := stacktest.ArgValue(c.Args, "--kv-transfer-config")
		for i, t := range pdTransfers {
			if t.uses(cfg, c.Env) {
				var kv struct {
					Role string `json:"kv_role"`
				}
				_ = json.Unmarshal([]byte(cfg), &kv)
				roles[d.Spec.Template.Labels[names.LabelModel]] = kv.Role
				transfer = i
			}
		}
	}
	logic, _ := stacktest.ArgValue(router.Args, "--routing-logic")
	if transfer < 0 {
		return nil
	}
	t := pdTransfers[transfer]
	if logic != t.logic {
		return []string{fmt.Sprintf("engines use %s but --routing-logic is %s: it needs %s", t.name, logic, t.logic)}
	}
	var problems []string
	if d, ok := stacktest.ArgValue(router.Args, "--k8s-service-discovery-type"); ok && d != "pod-ip" {
		problems = append(problems, logic+" needs pod-ip discovery: the router tells the groups apart by their pods' label model and names the prefill pod to the decode engine, got "+d)
	}
	for flag, role := range map[string]string{"--prefill-model-labels": "kv_producer", "--decode-model-labels": "kv_consumer"} {
		v, _ := stacktest.ArgValue(router.Args, flag)
		labels := strings.Split(v, ",")
		if v == "" {
			problems = append(problems, logic+" needs "+flag)
		}
		for _, l := range labels {
			if l != "" && roles[l] != role {
				problems = append(problems, fmt.Sprintf("%s names %s, which is not the model label of a %s %s engine", flag, l, t.name, role))
			}
		}
		for l, r := range roles {
			if r == role && !slices.Contains(labels, l) {
				problems = append(problems, fmt.Sprintf("the %s engines labelled %s are not in %s: the router never sends them a request", r, l, flag))
			}
		}
	}
	return problems
}

// lmcacheNIXLRoles: LMCache's NIXL backend role of each kv_role.
var lmcacheNIXLRoles = map[string]string{"kv_producer": "sender", "kv_consumer": "receiver"}

// checkLMCacheTransfer: with LMCache's NIXL backend of mid-2025 (disagg.tsv
// "LMCache P/D" and chart rows), enable_nixl needs nixl_role, sender with
// kv_producer and receiver with kv_consumer; the buffer size and device
// have no default. The receiver binds LMCACHE_NIXL_RECEIVER_HOST:PORT, so
// it binds every interface on a container port; the sender connects to its
// LMCACHE_NIXL_RECEIVER_HOST:PORT, which must be a Service that forwards the
// port to the receiver pods, and only one of them: the router decodes on
// one decode engine, and the KV cache must land there.
func checkLMCacheTransfer(engines []appsv1.Deployment, services []corev1.Service) []string {
	var problems []string
	receivers := map[string]appsv1.Deployment{}
	type sender struct{ object, host, port string }
	var senders []sender
	for _, d := range engines {
		c, _ := containerNamed(d, build.EngineContainer)
		cfg, _ := stacktest.ArgValue(c.Args, "--kv-transfer-config")
		if !pdTransfers[1].uses(cfg, c.Env) {
			continue
		}
		object := "Deployment " + d.Name + ": "
		var kv struct {
			Role  string `json:"kv_role"`
			Extra struct {
				DiscardPartialChunks *bool `json:"discard_partial_chunks"`
			} `json:"kv_connector_extra_config"`
		}
		_ = json.Unmarshal([]byte(cfg), &kv)
		role, want := envValue(c.Env, "LMCACHE_NIXL_ROLE"), lmcacheNIXLRoles[kv.Role]
		if want == "" || role != want {
			problems = append(problems, fmt.Sprintf("%skv_role %q with LMCACHE_NIXL_ROLE %q: a prefill engine is kv_producer and sender, a decode engine kv_consumer and receiver", object, kv.Role, role))
		}
		if d := kv.Extra.DiscardPartialChunks; d == nil || *d {
			problems = append(problems, object+"kv_connector_extra_config.discard_partial_chunks must be false: the decode engine needs the prompt's last partial chunk too")
		}
		for _, name := range []string{"LMCACHE_NIXL_BUFFER_SIZE", "LMCACHE_NIXL_BUFFER_DEVICE"} {
			if envValue(c.Env, name) == "" {
				problems = append(problems, object+"env "+name+" must be set: LMCache's NIXL backend has no default")
			}
		}
		host, port := envValue(c.Env, "LMCACHE_NIXL_RECEIVER_HOST"), envValue(c.Env, "LMCACHE_NIXL_RECEIVER_PORT")
		switch role {
		case "receiver":
			if host != "0.0.0.0" {
				problems = append(problems, object+"env LMCACHE_NIXL_RECEIVER_HOST="+host+": the receiver binds it, so it must be 0.0.0.0 for the senders to reach it")
			}
			if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return strconv.Itoa(int(p.ContainerPort)) == port }) {
				problems = append(problems, object+"env LMCACHE_NIXL_RECEIVER_PORT="+port+": the receiver listens there, and it is not a container port")
			}
			if n := d.Spec.Replicas; n != nil && *n > 1 {
				problems = append(problems, fmt.Sprintf("%s%d receivers behind one Service: the sender's KV cache lands on any of them, the router decodes on one", object, *n))
			}
			receivers[d.Name] = d
		case "sender":
			senders = append(senders, sender{object, host, port})
		}
	}
	for _, s := range senders {
		i := slices.IndexFunc(services, func(svc corev1.Service) bool { return svc.Name == s.host })
		if i < 0 {
			problems = append(problems, s.object+"env LMCACHE_NIXL_RECEIVER_HOST="+s.host+" is not a Service of the stack")
			continue
		}
		svc := services[i]
		pi := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == s.port })
		if pi < 0 {
			problems = append(problems, fmt.Sprintf("%senv LMCACHE_NIXL_RECEIVER_PORT=%s: Service %s has no such port", s.object, s.port, svc.Name))
			continue
		}
		reached := false
		for _, r := range receivers {
			c, _ := containerNamed(r, build.EngineContainer)
			if k8slabels.SelectorFromSet(svc.Spec.Selector).Matches(k8slabels.Set(r.Spec.Template.Labels)) && targetsPort(svc.Spec.Ports[pi].TargetPort, c.Ports, s.port) {
				reached = true
			}
		}
		if !reached {
			problems = append(problems, fmt.Sprintf("%sService %s port %s reaches no receiver's listening port", s.object, svc.Name, s.port))
		}
	}
	return problems
}

// targetsPort reports whether a Service port's target is the container
// port numbered port.
func targetsPort(target intstr.IntOrString, ports []corev1.ContainerPort, port string) bool {
	for _, p := range ports {
		if strconv.Itoa(int(p.ContainerPort)) == port && (target.String() == port || (target.Type == intstr.String && target.StrVal == p.Name)) {
			return true
		}
	}
	return false
}

// checkNIXLPorts: the side channel listens on VLLM_NIXL_SIDE_CHANNEL_PORT,
// plus one port per further tensor parallel rank up to 0.11.0 (one listener
// per data parallel rank from 0.11.1); each must be a container port.
func checkNIXLPorts(v upVersion, c corev1.Container, opts parsedArgs) []string {
	base, err := strconv.Atoi(envValue(c.Env, "VLLM_NIXL_SIDE_CHANNEL_PORT"))
	if err != nil {
		return nil // checkNIXL says so
	}
	listeners := 1
	if tp := opts["--tensor-parallel-size"]; len(tp) > 0 && slices.Compare(v[:], nixlOneListener[:]) < 0 {
		listeners, _ = strconv.Atoi(tp[len(tp)-1])
	}
	var problems []string
	for p := base; p < base+listeners; p++ {
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return int(cp.ContainerPort) == p }) {
			problems = append(problems, fmt.Sprintf("NixlConnector: vLLM %s listens on side channel port %d, not a container port", v, p))
		}
	}
	return problems
}

// checkVLLMEnv: a variable the vLLM table has env rows for must have a row
// for its value at release v, e.g. VLLM_USE_V1=0 only up to 0.10.2.
func (u contractFacts) checkVLLMEnv(v upVersion, env []corev1.EnvVar) []string {
	var problems []string
	for _, e := range env {
		if e.ValueFrom != nil || !u.vllmReadsEnv(e.Name) {
			continue
		}
		key := e.Name + "=" + e.Value
		if r, ok := u.vllm.at(key, v); !ok || r.kind != "env" {
			problems = append(problems, fmt.Sprintf("env %s is wrong for vLLM %s (read with that value %s)", key, v, u.vllm.releases(key)))
		}
	}
	return problems
}

func (u contractFacts) vllmReadsEnv(name string) bool {
	return slices.ContainsFunc(u.vllm, func(r upRow) bool { return r.kind == "env" && strings.HasPrefix(r.name, name+"=") })
}

// checkLMCacheEnv: every LMCACHE_* variable is one the image's LMCache
// reads, and with the controller on, every variable current LMCache then
// requires is set.
func (u contractFacts) checkLMCacheEnv(image string, env []corev1.EnvVar) []string {
	var problems []string
	mid := lmcacheMid2025(image)
	for _, e := range env {
		if !strings.HasPrefix(e.Name, "LMCACHE_") {
			continue
		}
		r, ok := u.lmcache[e.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("env %s is unknown to the contract table lmcache-env.tsv", e.Name))
		case mid && r.mid2025 == "ignored":
			problems = append(problems, fmt.Sprintf("env %s is not read by mid-2025 LMCache (image %s)", e.Name, image))
		case mid && r.mid2025 == "unknown":
			problems = append(problems, fmt.Sprintf("env %s is not known to be read by mid-2025 LMCache (image %s)", e.Name, image))
		case !mid && r.newest == "ignored":
			problems = append(problems, fmt.Sprintf("env %s is not read by current LMCache", e.Name))
		}
	}
	if mid || !lmcacheTrue(envValue(env, "LMCACHE_ENABLE_CONTROLLER")) {
		return problems
	}
	for _, name := range u.lmcacheRequired() {
		if i := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == name }); i < 0 || (env[i].Value == "" && env[i].ValueFrom == nil) {
			problems = append(problems, fmt.Sprintf("env %s must be set with LMCACHE_ENABLE_CONTROLLER true", name))
		}
	}
	return problems
}

// lmcacheMid2025 reports whether an image runs mid-2025 LMCache: an
// lmcache/vllm-openai image built before LMCache#1579 replaced the NIXL
// backend's names (merged 2025-09-12, disagg.tsv) and after the chart's
// tutorial image, the oldest known with them. Any other image is judged by
// current LMCache.
func lmcacheMid2025(image string) bool {
	m := lmcacheDatedImage.FindStringSubmatch(image)
	return m != nil && "2025-05-27" <= m[2] && m[2] < "2025-09-12"
}

var lmcacheDatedImage = regexp.MustCompile(`(^|/)lmcache/vllm-openai:(\d{4}-\d{2}-\d{2})`)

func (u contractFacts) lmcacheRequired() []string {
	var names []string
	for name, r := range u.lmcache {
		if r.required {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// lmcacheTrue reads a boolean as LMCache does: "true" or "1", any case.
func lmcacheTrue(s string) bool { return strings.EqualFold(s, "true") || s == "1" }

func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// sessionRoutings need --session-key: the router exits at start-up without
// it for session (parser.py validate_args, FACTS §4.1); kvaware falls back
// to it for prefixes no engine holds.
var sessionRoutings = []string{"session", "kvaware"}

// checkRouter checks the router container against router release ver.
func (u contractFacts) checkRouter(ver string, c corev1.Container, extra []string) []string {
	v, err := parseUpVersion(ver)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	if len(c.Command) > 0 {
		// The image's entrypoint is vllm-router; a command replaces it.
		problems = append(problems, fmt.Sprintf("command %q replaces the image's entrypoint vllm-router", c.Command))
	}
	args, p := trimExtra(c.Args, extra)
	problems = append(problems, p...)
	opts, p := parseArgs(u.router, "router", v, args)
	problems = append(problems, p...)
	// Required by argparse up to 0.1.2, by validate_args from 0.1.3.
	for _, name := range []string{"--service-discovery", "--routing-logic"} {
		if _, ok := opts[name]; !ok {
			problems = append(problems, name+" is required")
		}
	}
	if logic, _ := stacktest.ArgValue(args, "--routing-logic"); slices.Contains(sessionRoutings, logic) {
		if _, ok := opts["--session-key"]; !ok {
			problems = append(problems, "--routing-logic "+logic+" needs --session-key")
		}
	}
	return problems
}

// defaultK8sPort is the port the router dials engines on without --k8s-port.
const defaultK8sPort = "8000"

// checkDiscovery checks that the router, with Kubernetes service discovery,
// may read what it watches (rules: what its ServiceAccount is granted),
// selects every engine, and dials the port engines listen on: with pod-ip
// the vLLM port of the pods, with service-name the engine Services' port.
//
// Its Role grants exactly what router release v calls in that mode
// (checkRouterGrants), and the router sees sleep mode where engines have
// it (checkSleepDetection).
func checkDiscovery(v upVersion, router corev1.Container, rules []rbacv1.PolicyRule, engineServices []corev1.Service, engines []appsv1.Deployment) []string {
	if sd, _ := stacktest.ArgValue(router.Args, "--service-discovery"); sd != "k8s" {
		return nil
	}
	mode, _ := stacktest.ArgValue(router.Args, "--k8s-service-discovery-type")
	mode = cmp.Or(mode, "pod-ip")
	problems := checkRouterGrants(v, mode, rules, engines)
	problems = append(problems, checkSleepDetection(v, mode, engines)...)
	raw, _ := stacktest.ArgValue(router.Args, "--k8s-label-selector")
	sel, err := k8slabels.Parse(raw)
	if err != nil {
		return append(problems, fmt.Sprintf("--k8s-label-selector %q: %v", raw, err))
	}
	port, given := stacktest.ArgValue(router.Args, "--k8s-port")
	port = cmp.Or(port, defaultK8sPort)
	what := "--k8s-port " + port
	if !given {
		what = "no --k8s-port (so " + defaultK8sPort + ")"
	}
	if mode == "service-name" {
		for _, s := range engineServices {
			if !sel.Matches(k8slabels.Set(s.Labels)) {
				problems = append(problems, fmt.Sprintf("--k8s-label-selector %q does not select engine Service %s", raw, s.Name))
			}
			if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == port }) {
				problems = append(problems, fmt.Sprintf("%s: engine Service %s has no port %s", what, s.Name, port))
			}
		}
		return problems
	}
	for _, d := range engines {
		if !sel.Matches(k8slabels.Set(d.Spec.Template.Labels)) {
			problems = append(problems, fmt.Sprintf("--k8s-label-selector %q does not select the pods of engine Deployment %s", raw, d.Name))
		}
		if c, ok := containerNamed(d, build.EngineContainer); ok {
			if p, _ := stacktest.ArgValue(c.Args, "--port"); cmp.Or(p, defaultK8sPort) != port {
				problems = append(problems, fmt.Sprintf("%s: the pods of engine Deployment %s listen on %s", what, d.Name, cmp.Or(p, defaultK8sPort)))
			}
		}
	}
	return problems
}

func anyOf(list []string, s string) bool {
	return slices.Contains(list, s) || slices.Contains(list, "*")
}

// controllerURLs are the engine's LMCache controller addresses and the router
// flag that makes the router listen on each (FACTS §4.3).
var controllerURLs = []struct{ env, flag string }{
	{"LMCACHE_CONTROLLER_PULL_URL", "--lmcache-controller-port"},
	{"LMCACHE_CONTROLLER_REPLY_URL", "--lmcache-controller-reply-port"},
}

// checkController checks that an engine with the LMCache controller on
// reaches it: each controller URL is host:port of the router Service, that
// port leads to a port of the router container, and the router listens
// there.
func checkController(engine corev1.Container, routerService *corev1.Service, router corev1.Container) []string {
	if !lmcacheTrue(envValue(engine.Env, "LMCACHE_ENABLE_CONTROLLER")) {
		return nil
	}
	var problems []string
	for _, u := range controllerURLs {
		url := envValue(engine.Env, u.env)
		if url == "" {
			continue // checkLMCacheEnv reports it
		}
		target, problem := serviceTarget(url, routerService, router)
		if problem != "" {
			problems = append(problems, fmt.Sprintf("env %s=%s: %s", u.env, url, problem))
			continue
		}
		if got, ok := stacktest.ArgValue(router.Args, u.flag); !ok || got != strconv.Itoa(int(target)) {
			problems = append(problems, fmt.Sprintf("env %s=%s leads to router port %d, and the router has no %s %d", u.env, url, target, u.flag, target))
		}
	}
	return problems
}

// serviceTarget resolves host:port, the address of a Service, to the port of
// container c it leads to.
func serviceTarget(url string, svc *corev1.Service, c corev1.Container) (int32, string) {
	host, p, ok := strings.Cut(url, ":")
	port, err := strconv.Atoi(p)
	if !ok || err != nil {
		return 0, "not host:port"
	}
	if svc == nil || (host != svc.Name && !strings.HasPrefix(host, svc.Name+".")) {
		return 0, "the host is not the router Service"
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool { return int(sp.Port) == port })
	if i < 0 {
		return 0, fmt.Sprintf("Service %s has no port %d", svc.Name, port)
	}
	t := svc.Spec.Ports[i].TargetPort
	for _, cp := range c.Ports {
		if (t.Type == intstr.String && t.StrVal == cp.Name) ||
			(t.Type == intstr.Int && (t.IntVal == cp.ContainerPort || (t.IntVal == 0 && int32(port) == cp.ContainerPort))) {
			return cp.ContainerPort, ""
		}
	}
	return 0, fmt.Sprintf("Service %s port %d targets %s, no port of container %s", svc.Name, port, t.String(), c.Name)
}

// goneServers are cache server entry points current LMCache no longer ships
// (its scripts: lmcache, lmcache_server, lmcache_controller; FACTS §5.3).
var goneServers = []string{"lmcache_v0_server", "lmcache_experimental_server"}

// checkCacheServer checks the LMCache cache server: `lmcache_server <host>
// <port>`, listening on its container port.
func checkCacheServer(c corev1.Container) []string {
	cmd := append(slices.Clone(c.Command), c.Args...)
	if len(cmd) == 0 {
		return []string{"no command: want lmcache_server <host> <port>"}
	}
	switch bin := path.Base(cmd[0]); {
	case slices.Contains(goneServers, bin):
		return []string{fmt.Sprintf("%s is gone from current LMCache: run lmcache_server", cmd[0])}
	case bin != "lmcache_server":
		return []string{fmt.Sprintf("%s is not lmcache_server", cmd[0])}
	}
	if len(cmd) != 3 {
		return []string{fmt.Sprintf("command %q: want lmcache_server <host> <port>", cmd)}
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return strconv.Itoa(int(p.ContainerPort)) == cmd[2] }) {
		return []string{fmt.Sprintf("lmcache_server listens on %s, not a container port", cmd[2])}
	}
	return nil
}

// rendered holds the objects of a stack the contract concerns.
type rendered struct {
	deployments []appsv1.Deployment
	services    []corev1.Service
	roles       []rbacv1.Role
	bindings    []rbacv1.RoleBinding
	// A LeaderWorkerSet's pods are checked as those of two Deployments,
	// its leaders' and its workers' (lwsDeployments).
	leaderWorkerSets []lwsv1.LeaderWorkerSet
	configMaps       []corev1.ConfigMap
	crs              []unstructured.Unstructured // objects of optional kinds: InferencePools, routes
}

// lwsDeployments are a LeaderWorkerSet's leader and worker pods, as the
// Deployments that would run them.
func lwsDeployments(l lwsv1.LeaderWorkerSet) []appsv1.Deployment {
	size := ptr.Deref(l.Spec.LeaderWorkerTemplate.Size, 1)
	groups := ptr.Deref(l.Spec.Replicas, 1)
	leader := l.Spec.LeaderWorkerTemplate.WorkerTemplate
	if t := l.Spec.LeaderWorkerTemplate.LeaderTemplate; t != nil {
		leader = *t
	}
	return []appsv1.Deployment{
		{ObjectMeta: metav1.ObjectMeta{Name: l.Name + " leaderTemplate"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(groups), Template: leader}},
		{ObjectMeta: metav1.ObjectMeta{Name: l.Name + " workerTemplate"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(groups * (size - 1)), Template: l.Spec.LeaderWorkerTemplate.WorkerTemplate}},
	}
}

// add decodes one object; other kinds are ignored.
func (r *rendered) add(m map[string]any) error {
	var into runtime.Object
	switch m["kind"] {
	case "Deployment":
		r.deployments = append(r.deployments, appsv1.Deployment{})
		into = &r.deployments[len(r.deployments)-1]
	case "Service":
		r.services = append(r.services, corev1.Service{})
		into = &r.services[len(r.services)-1]
	case "Role":
		r.roles = append(r.roles, rbacv1.Role{})
		into = &r.roles[len(r.roles)-1]
	case "RoleBinding":
		r.bindings = append(r.bindings, rbacv1.RoleBinding{})
		into = &r.bindings[len(r.bindings)-1]
	case "LeaderWorkerSet":
		var l lwsv1.LeaderWorkerSet
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &l); err != nil {
			return err
		}
		r.addObject(&l)
		return nil
	default:
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, into)
}

// addObject adds one typed object; other kinds are ignored.
// renderedOf is the objects of a response.
func renderedOf(rsp response) rendered {
	var r rendered
	for _, k := range rsp.keys {
		r.addObject(rsp.objects[k])
	}
	return r
}

func (r *rendered) addObject(o runtime.Object) {
	switch o := o.(type) {
	case *appsv1.Deployment:
		r.deployments = append(r.deployments, *o)
	case *corev1.Service:
		r.services = append(r.services, *o)
	case *rbacv1.Role:
		r.roles = append(r.roles, *o)
	case *rbacv1.RoleBinding:
		r.bindings = append(r.bindings, *o)
	case *lwsv1.LeaderWorkerSet:
		r.leaderWorkerSets = append(r.leaderWorkerSets, *o)
		r.deployments = append(r.deployments, lwsDeployments(*o)...)
	case *corev1.ConfigMap:
		r.configMaps = append(r.configMaps, *o)
	case *unstructured.Unstructured:
		r.crs = append(r.crs, *o)
	}
}

func containerNamed(d appsv1.Deployment, name string) (corev1.Container, bool) {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.Container{}, false
}

// withContainer lists the Deployments that run a container named name.
func (r rendered) withComponent(component string) []appsv1.Deployment {
	var out []appsv1.Deployment
	for _, d := range r.deployments {
		if d.Spec.Template.Labels[names.LabelComponent] == component && len(d.Spec.Template.Spec.Containers) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func (r rendered) withContainer(name string) []appsv1.Deployment {
	var out []appsv1.Deployment
	for _, d := range r.deployments {
		if _, ok := containerNamed(d, name); ok {
			out = append(out, d)
		}
	}
	return out
}

func (r rendered) routerService() *corev1.Service {
	for i, s := range r.services {
		if strings.HasSuffix(s.Name, "-router-service") {
			return &r.services[i]
		}
	}
	return nil
}

func (r rendered) engineServices() []corev1.Service {
	var out []corev1.Service
	for _, s := range r.services {
		if s.Labels[names.LabelComponent] == names.ComponentEngine {
			out = append(out, s)
		}
	}
	return out
}

// rulesOf are the rules of every Role bound to a ServiceAccount.
func (r rendered) rulesOf(serviceAccount string) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	for _, b := range r.bindings {
		if b.RoleRef.Kind != "Role" || !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == serviceAccount
		}) {
			continue
		}
		for _, role := range r.roles {
			if role.Name == b.RoleRef.Name {
				rules = append(rules, role.Rules...)
			}
		}
	}
	return rules
}

// stackExtraArgs are the arguments a stack adds verbatim at the end of the
// engines' and the router's command lines.
type stackExtraArgs struct {
	engines map[string][]string // by model name (the engine pods' label "model"); "" is the top level
	router  []string
}

func (x stackExtraArgs) engine(d appsv1.Deployment) []string {
	if a, ok := x.engines[d.Spec.Template.Labels[names.LabelModel]]; ok {
		return a
	}
	return x.engines[""]
}

// check runs every check on a stack's objects, rendered for vLLM release
// vllm and router release router. Each problem names its object.
func (u contractFacts) check(r rendered, vllm, router string, extra stackExtraArgs) []string {
	var problems []string
	report := func(object string, ps []string) {
		for _, p := range ps {
			problems = append(problems, object+": "+p)
		}
	}
	// The router Deployment by its component label, and its one container
	// whatever its name: the old renders in testdata/upstream/old name it
	// "router", before it took the chart's name.
	routers := r.withComponent(names.ComponentRouter)
	if pickers := r.withComponent(names.ComponentPicker); len(pickers) > 0 && len(routers) == 0 {
		// The inference extension's layer: the pickers and pools instead of
		// the router (contract_picker_test.go).
		for _, d := range pickers {
			report("Deployment "+d.Name, checkPicker(d, r, vllm))
		}
		for _, d := range r.withContainer(build.EngineContainer) {
			c, _ := containerNamed(d, build.EngineContainer)
			report("Deployment "+d.Name+" container vllm", u.checkEngine(vllm, c, extra.engine(d)))
		}
		return problems
	}
	if len(routers) != 1 {
		return []string{fmt.Sprintf("%d router Deployments, want 1", len(routers))}
	}
	rd := routers[0]
	rc := rd.Spec.Template.Spec.Containers[0]
	report("Deployment "+rd.Name+" container router", u.checkRouter(router, rc, extra.router))
	engines := r.withContainer(build.EngineContainer)
	served := slices.DeleteFunc(slices.Clone(engines), headless)
	rv, _ := parseUpVersion(router)
	report("Deployment "+rd.Name+" container router", checkDiscovery(rv, rc, r.rulesOf(rd.Spec.Template.Spec.ServiceAccountName), r.engineServices(), served))
	report("Deployment "+rd.Name+" container router", checkHeadlessUndiscovered(rc, slices.DeleteFunc(slices.Clone(engines), func(d appsv1.Deployment) bool { return !headless(d) })))
	for _, l := range r.leaderWorkerSets {
		report("LeaderWorkerSet "+l.Name, checkMultiNode(l))
	}
	for _, d := range engines {
		c, _ := containerNamed(d, build.EngineContainer)
		object := "Deployment " + d.Name + " container vllm"
		report(object, u.checkEngine(vllm, c, extra.engine(d)))
		report(object, checkController(c, r.routerService(), rc))
	}
	report("Deployment "+rd.Name+" container router", checkDisaggregatedRouting(rc, engines))
	problems = append(problems, checkLMCacheTransfer(engines, r.engineServices())...)
	for _, d := range r.withContainer(build.CacheServerContainer) {
		c, _ := containerNamed(d, build.CacheServerContainer)
		report("Deployment "+d.Name+" container "+build.CacheServerContainer, checkCacheServer(c))
	}
	return problems
}

// headless reports whether a Deployment's engine runs no API server (a
// multi-node model's worker: --headless, or a Ray worker).
func headless(d appsv1.Deployment) bool {
	c, _ := containerNamed(d, build.EngineContainer)
	return slices.Contains(c.Args, "--headless") || rayRole(c) == "worker"
}

// checkHeadlessUndiscovered: the router must not discover a headless
// engine, which answers no request.
func checkHeadlessUndiscovered(router corev1.Container, workers []appsv1.Deployment) []string {
	raw, _ := stacktest.ArgValue(router.Args, "--k8s-label-selector")
	sel, err := k8slabels.Parse(raw)
	if err != nil {
		return nil // checkDiscovery says so
	}
	var problems []string
	for _, d := range workers {
		if sel.Matches(k8slabels.Set(d.Spec.Template.Labels)) {
			problems = append(problems, fmt.Sprintf("--k8s-label-selector %q selects the headless pods of %s, which serve no API", raw, d.Name))
		}
	}
	return problems
}

// checkMultiNode: with vLLM's multi-node (mp) backend every pod of a group
// runs the same `vllm serve` with --nnodes the group's size and the
// leader's address as --master-addr; the leader is node rank 0, a worker
// its LWS worker index and --headless (multinode.tsv). Each GPU of the group
// runs one rank: tensor × pipeline parallel size = GPUs per pod × size.
// Workers answer no HTTP, so they have no HTTP probes, and a group whose pod
// fails is recreated whole.
func checkMultiNode(l lwsv1.LeaderWorkerSet) []string {
	t := l.Spec.LeaderWorkerTemplate
	size := strconv.Itoa(int(ptr.Deref(t.Size, 1)))
	if t.LeaderTemplate == nil {
		return []string{"no leaderTemplate: the leader runs the API server, the workers do not"}
	}
	leader, _ := containerNamed(appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: *t.LeaderTemplate}}, build.EngineContainer)
	worker, _ := containerNamed(appsv1.Deployment{Spec: appsv1.DeploymentSpec{Template: t.WorkerTemplate}}, build.EngineContainer)
	var problems []string
	if rayRole(leader) == "leader" {
		problems = append(problems, checkRayGroup(leader, worker)...)
		problems = append(problems, checkGroupGPUs(l, leader)...)
		if t.RestartPolicy != lwsv1.RecreateGroupOnPodRestart {
			problems = append(problems, fmt.Sprintf("restartPolicy %q: a group whose pod restarts cannot rejoin its peers; want RecreateGroupOnPodRestart", t.RestartPolicy))
		}
		return problems
	}
	for _, c := range []struct {
		role     string
		args     []string
		rank     string
		headless bool
	}{{"leader", leader.Args, "0", false}, {"worker", worker.Args, "$(LWS_WORKER_INDEX)", true}} {
		for flag, want := range map[string]string{"--nnodes": size, "--node-rank": c.rank, "--master-addr": "$(LWS_LEADER_ADDRESS)"} {
			if got, _ := stacktest.ArgValue(c.args, flag); got != want {
				problems = append(problems, fmt.Sprintf("the %s's %s is %q, want %q", c.role, flag, got, want))
			}
		}
		if _, dp := stacktest.ArgValue(c.args, "--data-parallel-size"); dp && c.headless {
			if got, _ := stacktest.ArgValue(c.args, "--data-parallel-address"); got != "$(LWS_LEADER_ADDRESS)" {
				problems = append(problems, fmt.Sprintf("the %s's --data-parallel-address is %q, want the leader's $(LWS_LEADER_ADDRESS)", c.role, got))
			}
		}
		if slices.Contains(c.args, "--headless") != c.headless {
			problems = append(problems, fmt.Sprintf("the %s's --headless: %v, want %v", c.role, !c.headless, c.headless))
		}
	}
	strip := func(args []string) []string {
		var out []string
		for i := 0; i < len(args); i++ {
			switch {
			case args[i] == "--node-rank", args[i] == "--data-parallel-address":
				i++
			case args[i] == "--headless" || strings.HasPrefix(args[i], "--node-rank="):
			default:
				out = append(out, args[i])
			}
		}
		return out
	}
	if !slices.Equal(strip(leader.Args), strip(worker.Args)) {
		problems = append(problems, fmt.Sprintf("the leader's and the workers' arguments differ beyond their rank: %q and %q", leader.Args, worker.Args))
	}
	if worker.StartupProbe != nil || worker.ReadinessProbe != nil || worker.LivenessProbe != nil {
		problems = append(problems, "the workers have probes, and a headless engine answers none")
	}
	problems = append(problems, checkGroupGPUs(l, leader)...)
	if t.RestartPolicy != lwsv1.RecreateGroupOnPodRestart {
		problems = append(problems, fmt.Sprintf("restartPolicy %q: a group whose pod restarts cannot rejoin its peers; want RecreateGroupOnPodRestart", t.RestartPolicy))
	}
	return problems
}

// The Ray form of a multi-node group (multinode.tsv "Ray multi-node"): the
// leader's container runs `sh -c '<multi-node-serving.sh> leader
// --ray_cluster_size=… && exec "$0" "$@"' vllm serve …`, a worker's
// `<multi-node-serving.sh> worker --ray_address=<leader>`. The script's path
// in vLLM's images up to 0.20.0, and the only multi-node form before the mp
// backend's flags (0.11.1).
const (
	contractRayScript = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"
	contractRayLeader = `bash ` + contractRayScript + ` leader --ray_cluster_size="$LWS_GROUP_SIZE" && exec "$0" "$@"`
)

var rayScriptLast = mustUpVersion("0.20.0")

// rayRole says whether a container is a Ray group's "leader" or "worker",
// else "" (argvcheck reads the same form).
func rayRole(c corev1.Container) string { return argvcheck.RayRole(c.Command) }

// checkRayWorker: a worker joins the leader's Ray head, with the script
// vLLM's image of release v carries.
func checkRayWorker(v upVersion, c corev1.Container) []string {
	want := []string{"bash", contractRayScript, "worker", "--ray_address=$(LWS_LEADER_ADDRESS)"}
	var problems []string
	if slices.Compare(v[:], rayScriptLast[:]) > 0 {
		problems = append(problems, fmt.Sprintf("vLLM %s's image has no %s (moved after %s)", v, contractRayScript, rayScriptLast))
	}
	if !slices.Equal(c.Command, want) || len(c.Args) > 0 {
		problems = append(problems, fmt.Sprintf("the Ray worker runs %q %q, want %q", c.Command, c.Args, want))
	}
	return problems
}

// checkRayGroup: the leader starts the Ray head for the group's size and
// runs vllm serve with the Ray backend, and without the mp backend's flags;
// the workers join it.
func checkRayGroup(leader, worker corev1.Container) []string {
	var problems []string
	if want := []string{"sh", "-c", contractRayLeader}; !slices.Equal(leader.Command, want) {
		problems = append(problems, fmt.Sprintf("the Ray leader runs %q, want %q", leader.Command, want))
	}
	if b, _ := stacktest.ArgValue(leader.Args, "--distributed-executor-backend"); b != "ray" {
		problems = append(problems, fmt.Sprintf("the Ray leader's --distributed-executor-backend is %q, want ray", b))
	}
	for _, flag := range []string{"--nnodes", "--node-rank", "--master-addr", "--headless"} {
		if slices.ContainsFunc(leader.Args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") }) {
			problems = append(problems, "the Ray leader sets "+flag+", which the Ray backend refuses with more than one node")
		}
	}
	if rayRole(worker) != "worker" {
		problems = append(problems, fmt.Sprintf("the Ray group's workers run %q, not the Ray worker", worker.Command))
	}
	return problems
}

// checkGroupGPUs: each GPU of a group runs one rank: data × tensor ×
// pipeline parallel size = GPUs per pod × the group's size. With data
// parallelism each pod holds whole ranks, --data-parallel-size-local of
// them, which vLLM also infers from --nnodes (dataparallel.tsv), and every
// pod names the leader's address for the data-parallel handshake.
func checkGroupGPUs(l lwsv1.LeaderWorkerSet, leader corev1.Container) []string {
	size := int64(ptr.Deref(l.Spec.LeaderWorkerTemplate.Size, 1))
	var problems []string
	if dp, ok := stacktest.ArgValue(leader.Args, "--data-parallel-size"); ok {
		local, _ := stacktest.ArgValue(leader.Args, "--data-parallel-size-local")
		d, _ := strconv.ParseInt(dp, 10, 64)
		if n, _ := strconv.ParseInt(local, 10, 64); n*size != d {
			problems = append(problems, fmt.Sprintf("--data-parallel-size-local %q × %d pods is not --data-parallel-size %s", local, size, dp))
		}
		// Each pod's first rank is what vLLM infers from its node rank
		// (V@017e9f4448:vllm/engine/arg_utils.py:2081-2121): node_rank ×
		// (world / nnodes) / (TP × PP), which must be node_rank × local for
		// the pods to hold ranks 0 … DP-1, each once.
		tp, pp := argInt(leader.Args, "--tensor-parallel-size"), argInt(leader.Args, "--pipeline-parallel-size")
		if nn := argInt(leader.Args, "--nnodes"); nn == size && d*tp*pp%nn == 0 {
			l, _ := strconv.ParseInt(local, 10, 64)
			for rank := int64(0); rank < nn; rank++ {
				if got := rank * (d * tp * pp / nn) / (tp * pp); got != rank*l {
					problems = append(problems, fmt.Sprintf("the pod of node rank %d starts at data-parallel rank %d, want %d", rank, got, rank*l))
				}
			}
		} else {
			problems = append(problems, fmt.Sprintf("--nnodes %d with %d pods and %d ranks of %d GPUs: vLLM cannot infer each pod's ranks", nn, size, d, tp*pp))
		}
		// The leader binds its ZMQ sockets at the address, and libzmq binds
		// no DNS name: its own pod IP (dataparallel.tsv).
		if a, _ := stacktest.ArgValue(leader.Args, "--data-parallel-address"); a != "$(POD_IP)" {
			problems = append(problems, fmt.Sprintf("the leader's --data-parallel-address is %q, want its own $(POD_IP)", a))
		}
		if slices.ContainsFunc(leader.Args, func(a string) bool { return strings.HasPrefix(a, "--data-parallel-start-rank") }) {
			problems = append(problems, "the leader sets --data-parallel-start-rank, which switches it to hybrid load balancing (V@017e9f4448:vllm/engine/arg_utils.py:2164-2166)")
		}
	}
	return append(problems, checkGroupRanks(l, leader)...)
}

// checkGroupRanks: data × tensor × pipeline parallel size = GPUs per pod ×
// the group's size.
func checkGroupRanks(l lwsv1.LeaderWorkerSet, leader corev1.Container) []string {
	n := func(flag string) int64 {
		v, ok := stacktest.ArgValue(leader.Args, flag)
		if !ok {
			return 1
		}
		i, _ := strconv.ParseInt(v, 10, 64)
		return i
	}
	g := leader.Resources.Limits.Name("nvidia.com/gpu", "0").Value()
	if ranks, gpus := n("--data-parallel-size")*n("--tensor-parallel-size")*n("--pipeline-parallel-size"), g*int64(ptr.Deref(l.Spec.LeaderWorkerTemplate.Size, 1)); ranks != gpus {
		return []string{fmt.Sprintf("tensor × pipeline parallel size is %d, and a group has %d GPUs", ranks, gpus)}
	}
	return nil
}

// argInt is an option's integer value in a command line, 1 when absent.
func argInt(args []string, name string) int64 {
	v, ok := stacktest.ArgValue(args, name)
	if !ok {
		return 1
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}
