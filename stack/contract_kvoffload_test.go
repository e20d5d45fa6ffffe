package stack

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// checkKVOffload checks vLLM's native KV offloading against kvoffload.tsv
// and vllm-flags.tsv: the size flag alone picks the connector (it replaces
// any --kv-transfer-config's), up to 0.12.0 only with the backend beside it;
// an OffloadingConnector's spec and secondary tiers exist at the release, its
// CPU tier is sized, every fs tier's root_dir is a mounted volume, and
// PYTHONHASHSEED is fixed so block files are named alike on every pod.
func (u contractFacts) checkKVOffload(v upVersion, c corev1.Container, opts parsedArgs) []string {
	var problems []string
	if _, ok := opts["--kv-offloading-size"]; ok {
		if _, ok := opts["--kv-transfer-config"]; ok {
			problems = append(problems, "--kv-offloading-size replaces the kv_connector of --kv-transfer-config (offloading-size-replaces-connector)")
		}
		backend, ok := opts["--kv-offloading-backend"]
		if !ok {
			problems = append(problems, "--kv-offloading-size needs --kv-offloading-backend: up to 0.12.0 the size alone turns nothing on")
		}
		_, exists := u.vllm.at("--kv-offloading-size", v)
		if _, starts := u.kvoffload.at("native-size-starts-cpu-tier", v); exists && ok && slices.Contains(backend, "native") && !starts {
			problems = append(problems, fmt.Sprintf("--kv-offloading-backend native: vLLM %s hands the OffloadingConnector num_cpu_blocks 0, which it refuses at start (native-size-starts-cpu-tier %s)", v, u.kvoffload.releases("native-size-starts-cpu-tier")))
		}
	}
	for _, cfg := range opts["--kv-transfer-config"] {
		var kv struct {
			Connector string `json:"kv_connector"`
			Extra     struct {
				Spec  string  `json:"spec_name"`
				CPU   float64 `json:"cpu_bytes_to_use"`
				Tiers []struct {
					Type    string `json:"type"`
					RootDir string `json:"root_dir"`
				} `json:"secondary_tiers"`
			} `json:"kv_connector_extra_config"`
		}
		if json.Unmarshal([]byte(cfg), &kv) != nil || kv.Connector != "OffloadingConnector" {
			continue
		}
		problems = append(problems, u.kvOffloadRow("spec", kv.Extra.Spec, v)...)
		if _, ok := u.kvoffload.at("cpu_bytes_to_use", v); ok && kv.Extra.CPU < 1 {
			problems = append(problems, "OffloadingConnector: cpu_bytes_to_use must be set: the CPU tier is required")
		}
		for _, t := range kv.Extra.Tiers {
			problems = append(problems, u.kvOffloadRow("tier", t.Type, v)...)
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == t.RootDir && !m.ReadOnly }) {
				problems = append(problems, fmt.Sprintf("OffloadingConnector: tier %s root_dir %q is not a volume the container mounts writable", t.Type, t.RootDir))
			}
		}
		if len(kv.Extra.Tiers) > 0 && envValue(c.Env, "PYTHONHASHSEED") == "" {
			problems = append(problems, "OffloadingConnector: a filesystem tier needs PYTHONHASHSEED fixed, or each process names the same block differently")
		}
	}
	return problems
}

// kvOffloadRow: name is a row of kind at release v of kvoffload.tsv.
func (u contractFacts) kvOffloadRow(kind, name string, v upVersion) []string {
	if name == "" {
		return nil
	}
	if r, ok := u.kvoffload.at(name, v); !ok || r.kind != kind {
		return []string{fmt.Sprintf("OffloadingConnector %s %s is not in vLLM %s (%s)", kind, name, v, u.kvoffload.releases(name))}
	}
	return nil
}

// TestContractKVOffload: the check fails each way the facts say vLLM would.
func TestContractKVOffload(t *testing.T) {
	u := loadUpstream(t)
	const tiers = `{"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":1073741824,"secondary_tiers":[{"type":"fs","root_dir":"/kv-offload"}]}}`
	mounted := []corev1.VolumeMount{{Name: "kv-offload", MountPath: "/kv-offload"}}
	seed := []corev1.EnvVar{{Name: "PYTHONHASHSEED", Value: "0"}}
	for name, tc := range map[string]struct {
		ver    string
		args   []string
		mounts []corev1.VolumeMount
		env    []corev1.EnvVar
		want   []string
	}{
		"SizeAndBackend":   {ver: "0.16.0", args: []string{"--kv-offloading-size=4", "--kv-offloading-backend=native"}},
		"NativeBefore0160": {ver: "0.12.0", args: []string{"--kv-offloading-size=4", "--kv-offloading-backend=native"}, want: []string{"--kv-offloading-backend native: vLLM 0.12.0 hands the OffloadingConnector num_cpu_blocks 0, which it refuses at start (native-size-starts-cpu-tier only in 0.16.0–0.27.1)"}},
		"SizeBefore0111":   {ver: "0.11.0", args: []string{"--kv-offloading-size=4", "--kv-offloading-backend=native"}, want: []string{"--kv-offloading-size does not exist in vLLM 0.11.0 (only in 0.11.1–0.27.1)", "--kv-offloading-backend does not exist in vLLM 0.11.0 (only in 0.11.1–0.27.1)"}},
		"SizeAlone":        {ver: "0.12.0", args: []string{"--kv-offloading-size=4"}, want: []string{"--kv-offloading-size needs --kv-offloading-backend: up to 0.12.0 the size alone turns nothing on"}},
		"BadBackend":       {ver: "0.22.0", args: []string{"--kv-offloading-size=4", "--kv-offloading-backend=disk"}, want: []string{"--kv-offloading-backend disk: vLLM 0.22.0 accepts only native, lmcache"}},
		"SizeReplacesLMC":  {ver: "0.22.0", args: []string{"--kv-offloading-size=4", "--kv-offloading-backend=native", "--kv-transfer-config=" + kvV1}, want: []string{"--kv-offloading-size replaces the kv_connector of --kv-transfer-config (offloading-size-replaces-connector)"}},
		"Tiers":            {ver: "0.23.0", args: []string{"--kv-transfer-config=" + tiers}, mounts: mounted, env: seed},
		"TiersIn0220":      {ver: "0.22.0", args: []string{"--kv-transfer-config=" + tiers}, mounts: mounted, env: seed, want: []string{"OffloadingConnector spec TieringOffloadingSpec is not in vLLM 0.22.0 (only in 0.23.0–0.27.1)", "OffloadingConnector tier fs is not in vLLM 0.22.0 (only in 0.23.0–0.27.1)"}},
		"FSPython":         {ver: "0.27.1", args: []string{"--kv-transfer-config=" + strings.Replace(tiers, `"fs"`, `"fs_python"`, 1)}, mounts: mounted, env: seed, want: []string{"OffloadingConnector tier fs_python is not in vLLM 0.27.1 (in no release)"}},
		"NotMounted":       {ver: "0.27.1", args: []string{"--kv-transfer-config=" + tiers}, env: seed, want: []string{`OffloadingConnector: tier fs root_dir "/kv-offload" is not a volume the container mounts writable`}},
		"NoHashSeed":       {ver: "0.27.1", args: []string{"--kv-transfer-config=" + tiers}, mounts: mounted, want: []string{"OffloadingConnector: a filesystem tier needs PYTHONHASHSEED fixed, or each process names the same block differently"}},
		"NoCPUBytes":       {ver: "0.27.1", args: []string{"--kv-transfer-config=" + strings.Replace(tiers, `"cpu_bytes_to_use":1073741824,`, "", 1)}, mounts: mounted, env: seed, want: []string{"OffloadingConnector: cpu_bytes_to_use must be set: the CPU tier is required"}},
		"ConnectorIn0100":  {ver: "0.10.2", args: []string{"--kv-transfer-config=" + `{"kv_connector":"OffloadingConnector","kv_role":"kv_both"}`}, want: []string{"--kv-transfer-config kv_connector OffloadingConnector is not registered in vLLM 0.10.2 (only in 0.11.0–0.27.1)"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := corev1.Container{Name: "vllm", Args: append([]string{"m"}, tc.args...), VolumeMounts: tc.mounts, Env: tc.env}
			got := u.checkEngine(tc.ver, c, nil)
			if !slices.Equal(got, tc.want) {
				t.Errorf("problems\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
