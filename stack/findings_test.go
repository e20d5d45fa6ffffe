package stack

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vllm-project/function-vllm-stack/internal/text"
	"github.com/vllm-project/function-vllm-stack/stack/validate"
)

// TestRefusalBounded: a refusal's message goes into events and conditions;
// it stays bounded however many errors a stack has and however long the
// values it quotes.
func TestRefusalBounded(t *testing.T) {
	models := make([]any, 200)
	for i := range models {
		models[i] = map[string]any{"name": fmt.Sprintf("m%d", i), "maxNumSeqs": 0}
	}
	msg := refusal(t, with("model", nil, "models", models))
	if len(msg) > validate.MaxRefusalLength+100 || !strings.HasSuffix(msg, " more errors") {
		t.Errorf("a refusal of %d bytes, want at most about %d ending in how many more errors there are: ...%s", len(msg), validate.MaxRefusalLength, msg[max(0, len(msg)-200):])
	}
	long := strings.Repeat("9", 100000)
	msg = refusal(t, with("vllmConfig.gpuMemoryUtilization", long))
	want := "invalid ProductionStack: " + text.Clip(`spec.vllmConfig.gpuMemoryUtilization "`+long, validate.MaxErrorLength)
	if msg != want {
		t.Errorf("Fatal message:\n got: %.300s...\nwant: %.300s...", msg, want)
	}
}
