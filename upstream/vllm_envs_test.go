package upstream

import (
	"cmp"
	"os"
	"os/exec"
	"testing"
)

// TestVLLMEnvsTable: the embedded table reads, and its facts hold: each
// examined release's snapshot is listed, and the variables the function
// renders are read where it renders them.
func TestVLLMEnvsTable(t *testing.T) {
	if len(VLLMEnvs.Snapshots()) < 19 {
		t.Fatalf("vllm_envs.tsv has %d snapshots, want at least the 19 examined", len(VLLMEnvs.Snapshots()))
	}
	for _, c := range []struct {
		name    string
		release string
		read    bool
	}{
		{"VLLM_LOGGING_LEVEL", "0.8.3", true},
		{"VLLM_LOG_LEVEL", "0.8.3", false},
		{"VLLM_LOG_LEVEL", "0.27.1", false},
		{"VLLM_USE_V1", "0.11.0", true},
		{"VLLM_USE_V1", "0.11.1", false},
		{"VLLM_RPC_TIMEOUT", "0.10.2", true},
		{"VLLM_RPC_TIMEOUT", "0.22.0", true},
		{"VLLM_RPC_TIMEOUT", "0.26.0", false},
		{"VLLM_API_KEY", "0.27.1", true},
		{"VLLM_ALLOW_RUNTIME_LORA_UPDATING", "0.8.3", true},
		{"VLLM_ALLOW_RUNTIME_LORA_UPDATING", "0.27.1", true},
	} {
		r, _ := ParseVersion(c.release)
		if got := VLLMEnvs.MayRead(c.name, r); got != c.read {
			t.Errorf("vLLM %s reads %s: %v, want %v", c.release, c.name, got, c.read)
		}
	}
	if _, err := parseVLLMEnvs("name\tfirst\tlast\tsource\n#   snapshot 0.9.0 x\n#   snapshot 0.8.3 y\n"); err == nil {
		t.Errorf("snapshots out of order were accepted")
	}
	if _, err := parseVLLMEnvs("name\tfirst\tlast\tsource\n#   snapshot 0.9.0 x\nVLLM_X\t0.8.3\t0.9.0\ts\n"); err == nil {
		t.Errorf("a row naming a release that is no snapshot was accepted")
	}
}

// TestVLLMEnvsTSVIsGenerated: vllm_envs.tsv is what hack/vllm-envs.sh makes
// of the vLLM history, when a copy of it is at hand (VLLM_GIT_DIR, or the
// mirror of the development machines); skipped otherwise.
func TestVLLMEnvsTSVIsGenerated(t *testing.T) {
	dir := cmp.Or(os.Getenv("VLLM_GIT_DIR"), "/work/.mirror/neuralmagic+vllm/repo")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no vLLM git history at %s (set VLLM_GIT_DIR): %v", dir, err)
	}
	out, err := exec.Command("../hack/vllm-envs.sh", dir).Output()
	if err != nil {
		t.Fatalf("hack/vllm-envs.sh %s: %v", dir, err)
	}
	want, err := os.ReadFile("vllm_envs.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(want) {
		t.Errorf("vllm_envs.tsv differs from what hack/vllm-envs.sh makes of %s: regenerate it", dir)
	}
}
