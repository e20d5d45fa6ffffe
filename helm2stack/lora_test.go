package helm2stack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLoRAAdapterFindings: what each kind of loraAdapters item is told, word
// for word: a runtime adapter needs the Input's adapterSync.image, a
// download's own credentials are dropped for the model's token, and an
// adapter runtime adapters cannot take says why it is loaded at start-up.
func TestLoRAAdapterFindings(t *testing.T) {
	values := modelHead + `
      enableLoRA: true
      replicaCount: 3
loraAdapters:
  - {name: a, baseModel: m, adapterSource: {type: huggingface, adapterName: sql, repository: org/sql-lora, credentials: {secretName: other, secretKey: t}}}
  - {name: b, baseModel: m, adapterSource: {type: local, adapterName: baked, adapterPath: /adapters/baked}}
  - name: c
    baseModel: m
    vllmApiKey: {secretName: key, secretKey: k}
    labels: {team: ml}
    adapterSource: {type: local, adapterName: local, adapterPath: /data/local}
    loraAdapterDeploymentConfig: {replicas: 2}
  - {name: e, baseModel: m, adapterSource: {type: local, adapterName: everywhere, adapterPath: /data/e}, loraAdapterDeploymentConfig: {replicas: 3}}
  - {name: d, baseModel: m, adapterSource: {type: http, adapterName: web}}
`
	res, err := Convert([]byte(values), Options{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	runtime := "loaded at run time by every replica's adapter sync container (model.adapters): the Composition's Input must name the function's image as adapterSync.image"
	wantNotes := []string{
		"loraAdapters[0]: " + runtime,
		"loraAdapters[1]: loaded at start-up by every replica (loraAdapters, --lora-modules), not at run time (model.adapters), because its adapterPath /adapters/baked is not on the model cache (under /data/, where the chart mounts pvcStorage): adding or removing such an adapter restarts the engines",
		"loraAdapters[2]: " + runtime + "; not carried over: vllmApiKey (the engines are called with the stack's API key), " +
			"labels (of the LoraAdapter object, which the stack does not make), " +
			"loraAdapterDeploymentConfig.replicas 2 (the controller loaded it on the first 2 ready pods by name; every replica loads it)",
		"loraAdapters[3]: " + runtime,
	}
	var notes []string
	for _, n := range res.Notes {
		if n.Key != functionWarning {
			notes = append(notes, n.String())
		}
	}
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	wantDropped := []string{
		"loraAdapters[0].adapterSource.credentials: not supported: the sync container downloads adapters with the model's token (vllmConfig.hfTokenSecret, the chart's servingEngineSpec.modelSpec[0].hf_token); give that token read access to org/sql-lora, or make hf_token the Secret of credentials",
		"loraAdapters[4]: not supported: adapters come from a directory (adapterPath) or a Hugging Face repository; the LoRA controller of vllm-stack 0.1.12 implements no other source either",
	}
	if diff := cmp.Diff(wantDropped, findingStrings(res.Dropped)); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
}
