package helm2stack

import (
	stdcmp "cmp"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// convertCase converts values and compares the stack's spec with want (YAML)
// and the keys of the dropped and noted findings.
type convertCase struct {
	values, want   string
	dropped, notes []string
}

func (tc convertCase) run(t *testing.T) {
	t.Helper()
	res, err := Convert([]byte(tc.values), Options{Name: "s", Namespace: "llm"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := yaml.Marshal(res.Stack.Spec)
	if err != nil {
		t.Fatal(err)
	}
	var want v1alpha1.ProductionStackSpec
	if err := yaml.UnmarshalStrict([]byte(tc.want), &want); err != nil {
		t.Fatalf("bad want: %v", err)
	}
	wantYAML, _ := yaml.Marshal(want)
	if diff := cmp.Diff(string(wantYAML), string(got)); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	keys := func(fs []Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Key)
		}
		return out
	}
	if diff := cmp.Diff(tc.dropped, keys(res.Dropped)); diff != "" {
		t.Errorf("dropped keys (-want +got):\n%s\n%v", diff, res.Dropped)
	}
	// The function's own warnings (no GPU in most cases here) are
	// TestFunctionWarnings' business.
	own := slices.DeleteFunc(slices.Clone(res.Notes), func(f Finding) bool { return f.Key == functionWarning })
	if diff := cmp.Diff(tc.notes, keys(own)); diff != "" {
		t.Errorf("noted keys (-want +got):\n%s\n%v", diff, res.Notes)
	}
}

// TestFunctionWarnings: the converted stack is built with the library the
// function runs; what the function would warn about comes out as notes, and
// a stack it would refuse is an error that says so.
func TestFunctionWarnings(t *testing.T) {
	res, err := Convert([]byte(modelHead), Options{Name: "s", Namespace: "llm"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Finding{{functionWarning, "spec: resources.gpu is unset and vllm/vllm-openai is vLLM built for NVIDIA GPUs, which fails at start without one: set resources.gpu, or use a CPU image of vLLM"}}
	if diff := cmp.Diff(want, res.Notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	// The chart renders VLLM_USE_V1=0 for any image; the function refuses
	// V0 on a vLLM without it, and so does the converter.
	latestV0 := strings.Replace(modelHead, "tag: v0.10.2", "tag: latest", 1) + "      vllmConfig: {v0: 1}\n"
	_, err = Convert([]byte(latestV0), Options{Name: "s", Namespace: "llm"})
	const refused = "the function would refuse the converted stack: invalid ProductionStack: spec.vllmConfig.v1 is false, which needs vLLM's V0 engine, and the engine runs vLLM 0.27.1 (the newest known, as vllmConfig.image names no release): vLLM 0.11.0 removed the V0 engine; remove v1 or use an image of an older vLLM"
	if err == nil || err.Error() != refused {
		t.Errorf("error:\n got: %v\nwant: %s", err, refused)
	}
}

const modelHead = `
servingEngineSpec:
  runtimeClassName: ""
  modelSpec:
    - name: m
      repository: vllm/vllm-openai
      tag: v0.10.2
      modelURL: facebook/opt-125m
      pvcStorage: 10Gi
`

const modelSpecHead = `
model: {name: m, modelURL: facebook/opt-125m}
storage: {size: 10Gi}
`

func TestConvert(t *testing.T) {
	cases := map[string]convertCase{
		"the chart's dashboards become the stack's, with the ServiceMonitors they need": {
			values: modelHead + `grafanaDashboards: {enabled: true, labels: {dashboards: vllm}, annotations: {grafana_folder: LLM}}
`,
			want: modelSpecHead + `
vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
monitoring: {serviceMonitor: {}, dashboard: {labels: {dashboards: vllm}, annotations: {grafana_folder: LLM}}}
`,
			notes: []string{"grafanaDashboards"}},
		"the chart's default dashboard label is the stack's default": {
			values: modelHead + `  serviceMonitor: {enabled: true, interval: 15s}
grafanaDashboards: {enabled: true, labels: {grafana_dashboard: "1"}}
`,
			want: modelSpecHead + `
vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
monitoring: {serviceMonitor: {interval: 15s}, dashboard: {}}
`,
			notes: []string{"grafanaDashboards", "servingEngineSpec.serviceMonitor"}},
		"a worker heartbeat the stack refuses is dropped, not copied": {
			values: modelHead + `      lmcacheConfig: {enabled: true, workerHeartbeatTime: 30}
    - name: second
      repository: vllm/vllm-openai
      tag: v0.10.2
      modelURL: facebook/opt-350m
      pvcStorage: 10Gi
      lmcacheConfig: {enabled: true, workerHeartbeatTime: 29}
`,
			want: `
models:
  - {name: m, modelURL: facebook/opt-125m, storage: {size: 10Gi}, vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}, lmcacheConfig: {enabled: true}}
  - {name: second, modelURL: facebook/opt-350m, storage: {size: 10Gi}, vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}, lmcacheConfig: {enabled: true, workerHeartbeatTime: 29}}
`,
			dropped: []string{"servingEngineSpec.modelSpec[0].lmcacheConfig.workerHeartbeatTime"}},
		"tolerations are appended to the shared ones by default": {
			values: `
servingEngineSpec:
  tolerations: [{key: gpu, operator: Exists}]
  modelSpec:
    - {name: a, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: x, pvcStorage: 1Gi, tolerations: [{key: a, operator: Exists}]}
    - {name: b, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: why, pvcStorage: 1Gi, tolerations: [{key: b, operator: Exists}], tolerationsPolicy: override}
    - {name: c, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: zed, pvcStorage: 1Gi}
`,
			want: `
scheduling: {tolerations: [{key: gpu, operator: Exists}]}
models:
  - {name: a, modelURL: x, storage: {size: 1Gi}, vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}, scheduling: {tolerations: [{key: gpu, operator: Exists}, {key: a, operator: Exists}]}}
  - {name: b, modelURL: why, storage: {size: 1Gi}, vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}, scheduling: {tolerations: [{key: b, operator: Exists}]}}
  - {name: c, modelURL: zed, storage: {size: 1Gi}, vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}}
`,
			notes: []string{"servingEngineSpec.runtimeClassName"}},
		"one model folds into the top level, env by name": {
			values: `
servingEngineSpec:
  env: [{name: A, value: shared}, {name: B, value: shared}]
  runtimeClassName: nvidia
  modelSpec:
    - name: m
      repository: lmcache/vllm-openai
      tag: latest
      modelURL: x
      runtimeClassName: ""
      priorityClassName: high
      env: [{name: B, value: model}]
      vllmConfig: {runner: pooling, convert: embed, prometheusMultiprocDir: /prom}
      modelRevision: abc123
`,
			want: `
model: {name: m, modelURL: x, revision: abc123}
env: [{name: A, value: shared}, {name: B, value: model}, {name: PROMETHEUS_MULTIPROC_DIR, value: /prom}]
scheduling: {priorityClassName: high}
storage: {enabled: false}
vllmConfig: {image: "lmcache/vllm-openai:latest", extraArgs: [--runner, pooling, --convert, embed]}
`,
			notes: []string{"servingEngineSpec.modelSpec[0]", "servingEngineSpec.modelSpec[0].tag"}},
		"v0 on a release that has the V0 engine": {
			values: modelHead + "      vllmConfig: {v0: 1}\n",
			want:   modelSpecHead + `vllmConfig: {image: "vllm/vllm-openai:v0.10.2", v1: false}` + "\n"},
		"runtimeClassName per model, KEDA's default trigger": {
			values: `
servingEngineSpec:
  runtimeClassName: nvidia
  modelSpec:
    - {name: a, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: x, pvcStorage: 1Gi}
    - {name: b, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: why, pvcStorage: 1Gi, runtimeClassName: ""}
    - {name: c, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: zed, pvcStorage: 1Gi, runtimeClassName: kata, keda: {enabled: true, maxReplicaCount: 3}}
`,
			want: `
models:
  - {name: a, modelURL: x, storage: {size: 1Gi}, vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}, scheduling: {runtimeClassName: nvidia}}
  - {name: b, modelURL: why, storage: {size: 1Gi}, vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}}
  - name: c
    modelURL: zed
    storage: {size: 1Gi}
    vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
    scheduling: {runtimeClassName: kata}
    autoscaling: {type: keda, maxReplicas: 3, prometheusAddress: "http://prometheus-operated.monitoring.svc:9090"}
`,
			notes: []string{"servingEngineSpec.modelSpec[2].keda"}},
		"KEDA's initialCooldownPeriod and HPA behaviour": {
			values: modelHead + `
      keda:
        enabled: true
        maxReplicaCount: 3
        initialCooldownPeriod: 120
        advanced:
          restoreToOriginalReplicaCount: true
          horizontalPodAutoscalerConfig:
            name: mine
            behavior:
              scaleDown: {stabilizationWindowSeconds: 300, policies: [{type: Percent, value: 50, periodSeconds: 60}]}
`,
			want: modelSpecHead + `
vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
autoscaling:
  type: keda
  maxReplicas: 3
  prometheusAddress: "http://prometheus-operated.monitoring.svc:9090"
  initialCooldownPeriod: 120
  behavior: {scaleDown: {stabilizationWindowSeconds: 300, policies: [{type: Percent, value: 50, periodSeconds: 60}]}}
`,
			notes:   []string{"servingEngineSpec.modelSpec[0].keda"},
			dropped: []string{"servingEngineSpec.modelSpec[0].keda.advanced.horizontalPodAutoscalerConfig.name", "servingEngineSpec.modelSpec[0].keda.advanced.restoreToOriginalReplicaCount"}},
		"KEDA's several triggers and fallback": {
			values: modelHead + `
      keda:
        enabled: true
        maxReplicaCount: 4
        fallback: {failureThreshold: 3, replicas: 2, behavior: currentReplicasIfHigher}
        triggers:
          - type: prometheus
            name: waiting
            metadata: {serverAddress: "http://prom:9090", metricName: w, query: "sum(vllm:num_requests_waiting)", threshold: "5"}
          - type: prometheus
            name: Running_Requests
            metadata: {serverAddress: "http://prom:9090", query: "sum(vllm:num_requests_running)", threshold: "20"}
          - type: prometheus
            metricType: Value
            metadata: {serverAddress: "http://prom:9090", query: "avg(vllm:kv_cache_usage_perc)", threshold: "0.8"}
          - type: prometheus
            metadata: {serverAddress: "http://other:9090", query: "sum(x)", threshold: "1"}
          - type: cpu
            metadata: {value: "80"}
`,
			want: modelSpecHead + `
vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
autoscaling:
  type: keda
  maxReplicas: 4
  prometheusAddress: "http://prom:9090"
  fallback: {failureThreshold: 3, replicas: 2, behavior: currentReplicasIfHigher}
  triggers:
    - {name: waiting, query: "sum(vllm:num_requests_waiting)", threshold: "5"}
    - {name: trigger-1, query: "sum(vllm:num_requests_running)", threshold: "20"}
`,
			notes: []string{"servingEngineSpec.modelSpec[0].keda.triggers[1].name"},
			dropped: []string{"servingEngineSpec.modelSpec[0].keda.triggers[2]", "servingEngineSpec.modelSpec[0].keda.triggers[3]",
				"servingEngineSpec.modelSpec[0].keda.triggers[4]"}},
		"probes, strategy, API key Secret, router flags": {
			values: modelHead + `
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: "25%"}}
  startupProbe: {initialDelaySeconds: 300, httpGet: {path: /health, port: 8000}}
  livenessProbe: {periodSeconds: 20, httpGet: {path: /v1/models}}
  vllmApiKey: {secretName: api, secretKey: key}
routerSpec:
  repository: lmcache/lmstack-router
  tag: v0.1.9
  engineScrapeInterval: 30
  requestStatsWindow: 60
  rootPath: /vllm
  otel: {endpoint: "otel:4317", secure: true}
  serviceType: LoadBalancer
  servicePort: 8080
  nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [cpu]}]}]
  imagePullSecrets: [{name: one}, {name: two}]
`,
			want: modelSpecHead + `
vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
rollingUpdate: {maxSurge: 1, maxUnavailable: "25%"}
probes: {startup: {initialDelaySeconds: 300}, liveness: {periodSeconds: 20}}
routerConfig:
  image: "lmcache/lmstack-router:v0.1.9"
  apiKeySecret: {name: api, key: key}
  extraArgs: [--engine-stats-interval, "30", --otel-endpoint, "otel:4317", --otel-service-name, vllm-router, --otel-secure, --root-path, /vllm]
  service: {type: LoadBalancer, port: 8080}
  imagePullSecretName: one
  scheduling: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [cpu]}]}]}}}}
`,
			dropped: []string{"routerSpec.imagePullSecrets[1]", "servingEngineSpec.livenessProbe.httpGet"}},
		"disabled blocks and unsupported keys": {
			values: modelHead + `
      keda: {enabled: false, maxReplicaCount: 3}
      pdb: {enabled: false, maxUnavailable: 1}
      raySpec: {enabled: false}
      nodeName: node-1
      requestGPUMem: "3000"
      resources: {}
      pvcLabels: {}
  containerPort: 8000
  extraPorts: [{name: x, containerPort: 1}]
routerSpec:
  routingLogic: disaggregated_prefill
  prefixMinMatchLength: 8
  ingress: {enabled: false, hosts: [{host: a}]}
extraObjects: [{apiVersion: v1, kind: ConfigMap}]
grafanaDashboards: {enabled: false}
kube-prometheus-stack: {enabled: true}
`,
			want: modelSpecHead + `
vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
`,
			dropped: []string{"extraObjects", "kube-prometheus-stack", "routerSpec.prefixMinMatchLength", "routerSpec.routingLogic",
				"servingEngineSpec.extraPorts", "servingEngineSpec.modelSpec[0].nodeName", "servingEngineSpec.modelSpec[0].requestGPUMem"}},
		"kvaware with the engines' controller settings": {
			values: modelHead + `
      lmcacheConfig: {enabled: true, enableController: true, controllerPort: 9100, controllerReplyPort: 9201, workerPorts: "8001,8002", instanceId: x}
routerSpec:
  routingLogic: kvaware
  lmcacheControllerPort: 9000
`,
			want: modelSpecHead + `
vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
lmcacheConfig: {enabled: true, workerPort: 8001}
routerConfig: {routerType: kvaware, lmcacheControllerPort: 9000, lmcacheControllerReplyPort: 9201}
`,
			dropped: []string{"servingEngineSpec.modelSpec[0].lmcacheConfig.instanceId"},
			notes:   []string{"servingEngineSpec.modelSpec[0].lmcacheConfig.controllerPort", "servingEngineSpec.modelSpec[0].lmcacheConfig.workerPorts"}},
		"controller settings without kvaware": {
			values: modelHead + `
      lmcacheConfig: {enabled: true, enableController: true, controllerReplyPort: 9001}
`,
			want: modelSpecHead + `
vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
lmcacheConfig: {enabled: true}
`,
			dropped: []string{"servingEngineSpec.modelSpec[0].lmcacheConfig.controllerReplyPort", "servingEngineSpec.modelSpec[0].lmcacheConfig.enableController"}},
		"init container, envFromSecret, configs, emptyDir cache": {
			values: `
servingEngineSpec:
  runtimeClassName: ""
  configs: {MODE: fast}
  modelSpec:
    - name: m
      repository: vllm/vllm-openai
      tag: v0.10.2
      modelURL: x
      pvcStorage: {emptyDir: {sizeLimit: 40Gi}}
      envFromSecret: {name: s3}
      initContainer: {name: fetch, image: "busybox:1.37", command: [sh, -c], args: [ls /data], mountPvcStorage: true}
cacheserverSpec: {enabled: true, serde: cachegen}
`,
			want: `
model: {name: m, modelURL: x}
vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
storage: {emptyDir: {sizeLimit: 40Gi}}
envFrom: [{configMapRef: {name: s-configs}}, {secretRef: {name: s3}}]
lmcacheConfig: {server: {serde: cachegen}}
pod:
  initContainers:
    - name: fetch
      image: "busybox:1.37"
      command: [sh, -c]
      args: [ls /data]
      env: [{name: RELEASE_NAME, value: s}, {name: LMCACHE_SERVER_SERVICE_PORT, value: "80"}]
      envFrom: [{secretRef: {name: s3}}]
      resources: {}
      volumeMounts: [{name: s-storage, mountPath: /data}]
`,
			notes: []string{"servingEngineSpec.configs"}},
		"keys the merge of issue 13 gave fields, storageClass \"\" kept": {
			values: `
servingEngineSpec:
  runtimeClassName: ""
  modelSpec:
    - {name: a, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: x, pvcStorage: 1Gi, pvcExistingClaimName: weights,
       labels: {team: ml}, podLabels: {tier: gpu}, serviceAnnotations: {mesh: "on"}, modelRevision: v1.0}
    - {name: b, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: why, pvcStorage: 1Gi, storageClass: "", pvcAccessMode: [ReadWriteMany], pvcExistingClaimName: shared}
    - {name: c, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: zed, pvcStorage: {emptyDir: {}}, pvcExistingClaimName: ignored}
    - {name: d, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: dee, pvcExistingClaimName: ignored}
    - {name: e, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: e, pvcStorage: 1Gi, storageClass: ""}
routerSpec:
  serviceAccountName: router-sa
  extraVolumes: [{name: certs, secret: {secretName: certs}}]
  extraVolumeMounts: [{name: certs, mountPath: /certs}]
`,
			want: `
models:
  - name: a
    modelURL: x
    revision: v1.0
    storage: {existingClaimName: weights}
    vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
    pod: {labels: {team: ml, tier: gpu}}
    service: {annotations: {mesh: "on"}}
  - {name: b, modelURL: why, storage: {existingClaimName: shared}, vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}}
  - {name: c, modelURL: zed, storage: {emptyDir: {}}, vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}}
  - {name: d, modelURL: dee, storage: {enabled: false}, vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}}
  - {name: e, modelURL: e, storage: {size: 1Gi, storageClassName: ""}, vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}}
routerConfig:
  serviceAccountName: router-sa
  extraVolumes: [{name: certs, secret: {secretName: certs}}]
  extraVolumeMounts: [{name: certs, mountPath: /certs}]
`,
			notes: []string{"servingEngineSpec.modelSpec[0].labels", "servingEngineSpec.modelSpec[1].pvcExistingClaimName",
				"servingEngineSpec.modelSpec[2].pvcExistingClaimName", "servingEngineSpec.modelSpec[3]", "servingEngineSpec.modelSpec[3].pvcExistingClaimName"}},
		"loraAdapters on their base model": {
			values: modelHead + `
      enableLoRA: true
loraAdapters:
  - {name: a, baseModel: m, adapterSource: {type: huggingface, adapterName: sql, repository: org/sql-lora}}
  - {name: b, baseModel: other, adapterSource: {type: local, adapterName: b, adapterPath: /data/b}}
  - {name: c, baseModel: m, adapterSource: {type: s3, adapterName: c}}
  - {name: d, enabled: false, baseModel: m, adapterSource: {type: local}}
`,
			want: `
model: {name: m, modelURL: facebook/opt-125m, enableLoRA: true, enableRuntimeAdapters: true, adapters: [{name: sql, huggingFace: {repo: org/sql-lora}}]}
storage: {size: 10Gi}
vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
`,
			dropped: []string{"loraAdapters[1]", "loraAdapters[2]"},
			notes:   []string{"loraAdapters[0]"}},
		// The LoRA controller loads adapterPath whatever the type; a
		// Hugging Face download takes the model's token; what runtime
		// adapters cannot take is loaded at start-up.
		"loraAdapters at run time where they can be": {
			values: modelHead + `
      enableLoRA: true
      hf_token: {secretName: hf, secretKey: token}
loraAdapters:
  - name: a
    baseModel: m
    adapterSource: {type: huggingface, adapterName: sql, repository: org/sql-lora, credentials: {secretName: hf, secretKey: token}}
    loraAdapterDeploymentConfig: {algorithm: default}
  - {name: b, baseModel: m, adapterSource: {type: local, adapterName: local, adapterPath: /data/lora-adapters/local}}
  - {name: c, baseModel: m, adapterSource: {type: huggingface, adapterName: chat, repository: org/chat-lora, credentials: literal-token}}
  - {name: d, baseModel: m, adapterSource: {type: local, adapterName: baked, adapterPath: /adapters/baked}}
  - {name: e, baseModel: m, adapterSource: {type: huggingface, adapterName: org/named, repository: org/named}}
  - name: f
    baseModel: m
    labels: {team: ml}
    vllmApiKey: {secretName: key, secretKey: k}
    adapterSource: {type: s3, adapterName: s3-copy, adapterPath: /data/s3/copy, pattern: x, maxAdapters: 2}
    loraAdapterDeploymentConfig: {algorithm: ordered, replicas: 2}
`,
			want: `
model:
  name: m
  modelURL: facebook/opt-125m
  enableLoRA: true
  loraAdapters: [{name: baked, path: /adapters/baked}, {name: org/named, path: org/named}]
  enableRuntimeAdapters: true
  adapters:
    - {name: sql, huggingFace: {repo: org/sql-lora}}
    - {name: local, path: /data/lora-adapters/local}
    - {name: chat, huggingFace: {repo: org/chat-lora}}
    - {name: s3-copy, path: /data/s3/copy}
storage: {size: 10Gi}
vllmConfig: {image: "vllm/vllm-openai:v0.10.2", hfTokenSecret: {name: hf, key: token}}
`,
			dropped: []string{"loraAdapters[2].adapterSource.credentials"},
			notes:   []string{"loraAdapters[0]", "loraAdapters[1]", "loraAdapters[2]", "loraAdapters[3]", "loraAdapters[4]", "loraAdapters[5]"}},
		"loraAdapters of a model without pvcStorage": {
			values: strings.Replace(modelHead, "      pvcStorage: 10Gi\n", "", 1) + `
      enableLoRA: true
loraAdapters:
  - {name: a, baseModel: m, adapterSource: {type: huggingface, adapterName: sql, repository: org/sql-lora}}
`,
			want: `
model: {name: m, modelURL: facebook/opt-125m, enableLoRA: true, loraAdapters: [{name: sql, path: org/sql-lora}]}
storage: {enabled: false}
vllmConfig: {image: "vllm/vllm-openai:v0.10.2"}
`,
			notes: []string{"loraAdapters[0]", "servingEngineSpec.modelSpec[0]"}},
	}
	for name, tc := range cases {
		t.Run(name, tc.run)
	}
}

// TestSecretsNeverCopied: literal tokens and keys reach neither the stack
// nor any message; the commands name the values keys instead.
func TestSecretsNeverCopied(t *testing.T) {
	const token, key, routerToken = "hf_literalTokenValue", "sk-literal-api-key", "hf_routerLiteral"
	values := `
servingEngineSpec:
  vllmApiKey: ` + key + `
  modelSpec:
    - {name: a, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: x, hf_token: ` + token + `}
    - {name: b, repository: vllm/vllm-openai, tag: v0.10.2, modelURL: why, hf_token: {secretName: hf, secretKey: token}}
routerSpec:
  hf_token: ` + routerToken + `
`
	res, err := Convert([]byte(values), Options{Name: "s", Namespace: "llm"})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := Manifest(res.Stack)
	if err != nil {
		t.Fatal(err)
	}
	all := string(manifest)
	for _, f := range slices.Concat(res.Dropped, res.Notes) {
		all += f.String()
	}
	cmds := res.SecretCommands()
	all += strings.Join(cmds, "\n")
	for _, secret := range []string{token, key, routerToken} {
		if strings.Contains(all, secret) {
			t.Errorf("the literal %q was copied:\n%s", secret, all)
		}
	}
	want := []string{"kubectl create secret generic s-secrets --namespace llm" +
		" --from-literal=router_hf_token='<the value of routerSpec.hf_token>'" +
		" --from-literal=hf_token_a='<the value of servingEngineSpec.modelSpec[0].hf_token>'" +
		" --from-literal=vllmApiKey='<the value of servingEngineSpec.vllmApiKey>'"}
	if diff := cmp.Diff(want, cmds); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	spec := res.Stack.Spec
	refs := []*v1alpha1.SecretKeySelector{spec.Models[0].VLLMConfig.HFTokenSecret, spec.Models[1].VLLMConfig.HFTokenSecret, spec.RouterConfig.APIKeySecret}
	wantRefs := []*v1alpha1.SecretKeySelector{{Name: "s-secrets", Key: "hf_token_a"}, {Name: "hf", Key: "token"}, {Name: "s-secrets", Key: "vllmApiKey"}}
	if diff := cmp.Diff(wantRefs, refs); diff != "" {
		t.Errorf("Secret references (-want +got):\n%s", diff)
	}
	if r := spec.RouterConfig.Env[0].ValueFrom.SecretKeyRef; r.Name != "s-secrets" || r.Key != "router_hf_token" {
		t.Errorf("router HF_TOKEN from %s/%s, want s-secrets/router_hf_token", r.Name, r.Key)
	}
}

// chartMirror is a git repository of vllm-project/production-stack
// (CHART_SRC, as for hack/helm-compare.sh, or the development VM's mirror);
// the tests that read the chart's own files skip without it.
var chartMirror = stdcmp.Or(os.Getenv("CHART_SRC"), "/work/.mirror/vllm-project+production-stack/repo")

// chartFile reads a file of the chart's release from the mirror.
func chartFile(t *testing.T, path string) []byte {
	t.Helper()
	out, err := exec.Command("git", "--git-dir="+chartMirror, "show", "vllm-stack-"+ChartVersion+":"+path).Output()
	if err != nil {
		t.Skipf("%s of the chart is not available from %s: %v", path, chartMirror, err)
	}
	return out
}

// TestTutorials converts every values file of the chart's release (its
// example and the tutorials' assets): a stack, never an error.
func TestTutorials(t *testing.T) {
	chartFile(t, "helm/values.yaml")
	out, err := exec.Command("git", "--git-dir="+chartMirror, "ls-tree", "-r", "--name-only", "vllm-stack-"+ChartVersion, "tutorials/assets", "helm/values-example.yaml").Output()
	if err != nil {
		t.Fatal(err)
	}
	// Tutorials whose stacks the function refuses, as the chart's release
	// would start but not serve as asked (or not start).
	refused := map[string]string{
		// A fraction of a GPU: the device plugin allocates whole GPUs.
		"tutorials/assets/values-01-2pods-minimal-example.yaml": `the function would refuse the converted stack: invalid ProductionStack: spec.resources.gpu "0.5" is invalid: must be a whole number of GPUs, e.g. "1"`,
		// LMCache's CPU buffer (GB) above the memory the pod asks for.
		"tutorials/assets/values-14-vllm-v1.yaml":      "the function would refuse the converted stack: invalid ProductionStack: spec: lmcacheConfig.cpuOffloadingBufferSize 20 must be less than resources.memory 16Gi: the buffer lives in the engine's memory; raise resources.memory or lower the buffer",
		"tutorials/assets/values-18-prefix-aware.yaml": "the function would refuse the converted stack: invalid ProductionStack: spec: lmcacheConfig.cpuOffloadingBufferSize 60 must be less than resources.memory 30Gi: the buffer lives in the engine's memory; raise resources.memory or lower the buffer",
	}
	var n int
	for _, path := range strings.Fields(string(out)) {
		if !strings.HasSuffix(path, ".yaml") || !strings.Contains(filepath.Base(path), "values") {
			continue
		}
		n++
		_, err := Convert(chartFile(t, path), Options{Name: "s"})
		switch want, ok := refused[path]; {
		case ok && (err == nil || err.Error() != want):
			t.Errorf("%s: error %v, want %s", path, err, want)
		case !ok && err != nil:
			t.Errorf("%s: %v", path, err)
		}
	}
	if n < 20 {
		t.Errorf("only %d values files among the tutorials", n)
	}
}

// TestTableCoversTheChart: every key of the chart's own values.yaml (0.1.12)
// has a table entry (itself or an ancestor).
func TestTableCoversTheChart(t *testing.T) {
	out := chartFile(t, "helm/values.yaml")
	raw, err := parseValues(out)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	var visit func(pattern string, v any)
	visit = func(pattern string, v any) {
		if pattern != "" && covered(pattern) {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				visit(joinKey(pattern, k), e)
			}
		case []any:
			for _, e := range v {
				visit(pattern+"[]", e)
			}
		default:
			missing = append(missing, pattern)
		}
	}
	visit("", raw)
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("keys of the chart's values.yaml with no table entry:\n%s", strings.Join(slices.Compact(missing), "\n"))
	}
}

// covered reports whether the table has key or one of its ancestors.
func covered(key string) bool {
	for k := key; ; {
		if _, ok := rules[k]; ok {
			return true
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			return false
		}
		k = k[:i]
	}
}

// FuzzConvert: any input converts to a stack that decodes strictly, or is
// refused with an error; never a panic. Seeded with the scenarios.
func FuzzConvert(f *testing.F) {
	seeds, _ := filepath.Glob("../cmd/helm2stack/testdata/scenarios/*.values.yaml")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(modelHead))
	f.Fuzz(func(t *testing.T, values []byte) {
		res, err := Convert(values, Options{Name: "s", Namespace: "llm"})
		if err != nil {
			if res != nil {
				t.Fatalf("a result next to the error %v", err)
			}
			return
		}
		manifest, err := Manifest(res.Stack)
		if err != nil {
			t.Fatalf("no manifest: %v", err)
		}
		var back v1alpha1.ProductionStack
		if err := yaml.UnmarshalStrict(manifest, &back); err != nil {
			t.Fatalf("the manifest does not decode strictly: %v\n%s", err, manifest)
		}
		if back.Spec.Model == nil && len(back.Spec.Models) == 0 {
			t.Fatalf("a stack without a model:\n%s", manifest)
		}
	})
}
