package stack

import (
	"strings"
	"testing"
	"time"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// TestValidationErrors: each bad spec gives a Fatal result whose message
// names the field, the bad value and what is allowed, and no desired state.
func TestValidationErrors(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	model2 := map[string]any{"name": "b", "modelURL": "org/b"}
	cases := map[string]struct {
		xr   map[string]any
		want string
	}{
		"BothModelAndModels": {
			xr:   with("models", []any{model2}),
			want: prefix + "spec.model and spec.models are both set: set spec.model for one model or spec.models for several, not both",
		},
		"NeitherModelNorModels": {
			xr:   with("model", nil),
			want: prefix + "spec.model is required: set spec.model (one model) or spec.models (several models behind one router)",
		},
		"NoURLNorPath": {
			xr:   with("model.modelURL", nil),
			want: prefix + "spec.model: set modelURL (a Hugging Face model ID such as meta-llama/Llama-3.2-1B-Instruct) or path (a local path to the model files)",
		},
		"EmptyURLAndPathAsInSeed": {
			xr:   with("model.modelURL", "", "model.path", ""),
			want: prefix + "spec.model: set modelURL (a Hugging Face model ID such as meta-llama/Llama-3.2-1B-Instruct) or path (a local path to the model files)",
		},
		"EnableToolWithoutParser": {
			xr:   with("model.enableTool", true),
			want: prefix + "spec.model.toolCallParser is required when enableTool is true: set a parser such as hermes, llama3_json or mistral (vLLM refuses to start without one)",
		},
		"GPUMemoryUtilizationAboveOne": {
			xr:   with("vllmConfig.gpuMemoryUtilization", "1.5"),
			want: prefix + `spec.vllmConfig.gpuMemoryUtilization "1.5" is invalid: must be a number greater than 0 and at most 1, e.g. "0.9"`,
		},
		"GPUMemoryUtilizationZero": {
			xr:   with("vllmConfig.gpuMemoryUtilization", "0"),
			want: prefix + `spec.vllmConfig.gpuMemoryUtilization "0" is invalid: must be a number greater than 0 and at most 1, e.g. "0.9"`,
		},
		"GPUMemoryUtilizationNotANumber": {
			xr:   with("vllmConfig.gpuMemoryUtilization", "ninety"),
			want: prefix + `spec.vllmConfig.gpuMemoryUtilization "ninety" is invalid: must be a number greater than 0 and at most 1, e.g. "0.9"`,
		},
		// ParseFloat reads these; the XRD's pattern and vLLM do not.
		"GPUMemoryUtilizationNaN": {
			xr:   with("vllmConfig.gpuMemoryUtilization", "NaN"),
			want: prefix + `spec.vllmConfig.gpuMemoryUtilization "NaN" is invalid: must be a number greater than 0 and at most 1, e.g. "0.9"`,
		},
		"GPUMemoryUtilizationHexFloat": {
			xr:   with("vllmConfig.gpuMemoryUtilization", "0x1p-1"),
			want: prefix + `spec.vllmConfig.gpuMemoryUtilization "0x1p-1" is invalid: must be a number greater than 0 and at most 1, e.g. "0.9"`,
		},
		"GPUMemoryUtilizationExponent": {
			xr:   with("vllmConfig.gpuMemoryUtilization", "9e-1"),
			want: prefix + `spec.vllmConfig.gpuMemoryUtilization "9e-1" is invalid: must be a number greater than 0 and at most 1, e.g. "0.9"`,
		},
		// 262144 characters (the XRD's maxLength) of 4 bytes each: the XRD
		// takes it, the API server refuses the ConfigMap (1 MiB with its key).
		"ChatTemplateOverConfigMapLimit": {
			xr:   with("model.chatTemplate", strings.Repeat("😀", 262144)),
			want: prefix + `spec.model.chatTemplate is 1048576 bytes: the ConfigMap that holds it takes at most 1048557 bytes of template; shorten the template`,
		},
		"ChatTemplateOverMaxLength": {
			xr:   with("model.chatTemplate", strings.Repeat("a", 262145)),
			want: prefix + `spec.model.chatTemplate is 262145 characters long: at most 262144 are allowed; shorten it`,
		},
		// The XRD's rules on single fields that no hand-written check
		// covers (validate/schema.go).
		"ModelURLOverMaxLength": {
			xr:   with("model.modelURL", strings.Repeat("a", 4097)),
			want: prefix + `spec.model.modelURL is 4097 characters long: at most 4096 are allowed; shorten it`,
		},
		"AutoscalingTypeUnknown": {
			xr:   with("autoscaling", map[string]any{"type": "vpa", "maxReplicas": 2, "prometheusAddress": "http://prometheus:9090"}),
			want: prefix + `spec.autoscaling.type "vpa" is not supported: use one of keda, hpa`,
		},
		"AutoscalingNegativeCooldown": {
			xr:   with("autoscaling", map[string]any{"cooldownPeriod": -1, "maxReplicas": 2, "prometheusAddress": "http://prometheus:9090"}),
			want: prefix + `spec.autoscaling.cooldownPeriod -1 is invalid: must be 0 or more`,
		},
		"TooManyAccessModes": {
			xr:   with("storage.accessModes", []any{"ReadWriteOnce", "ReadWriteOnce", "ReadWriteOnce", "ReadWriteOnce", "ReadWriteOnce"}),
			want: prefix + `spec.storage.accessModes has 5 items: at most 4 are allowed; remove some`,
		},
		// The pattern of the XRD and of the ServiceMonitor CRD takes it;
		// Prometheus cannot hold it in a time.Duration.
		"IntervalOverflowsPrometheus": {
			xr:   with("monitoring.serviceMonitor.interval", "300y"),
			want: prefix + `spec.monitoring.serviceMonitor.interval "300y" is invalid: Prometheus reads durations of at most 292 years; use a scrape interval such as 30s`,
		},
		"IntervalTooShort": {
			xr:   with("monitoring.serviceMonitor.interval", "5"),
			want: prefix + `spec.monitoring.serviceMonitor.interval "5" is invalid: use a Prometheus duration, units y, w, d, h, m, s, ms in that order, each at most once, such as 30s or 1m30s`,
		},
		// The version parser reads pre-releases (of image tags); the XRD's
		// pattern refuses them in engineVersion.
		"EngineVersionPreRelease": {
			xr:   with("vllmConfig.engineVersion", "0.9.2rc1"),
			want: prefix + `spec.vllmConfig.engineVersion "0.9.2rc1" is invalid: must be a release number such as 0.9.2`,
		},
		// The XRD's rule on the bounds holds with the autoscaler off too.
		"DisabledAutoscalingBoundsReversed": {
			xr:   with("autoscaling", map[string]any{"enabled": false, "minReplicas": 3, "maxReplicas": 2}),
			want: prefix + `spec.autoscaling: minReplicas 3 exceeds maxReplicas 2`,
		},
		"DisabledRouterAutoscalingBoundsReversed": {
			xr:   with("routerConfig.autoscaling", map[string]any{"enabled": false, "minReplicas": 3, "maxReplicas": 2}),
			want: prefix + `spec.routerConfig.autoscaling: minReplicas 3 exceeds maxReplicas 2`,
		},
		// A quantity's own decoder does not say where it failed.
		"QuantityInResourceList": {
			xr:   with("routerConfig.resources", map[string]any{"limits": map[string]any{"cpu": "5m30"}}),
			want: `cannot decode spec: spec.routerConfig.resources.limits[cpu]: unable to parse quantity's suffix; use a Kubernetes quantity such as 4Gi or 500m`,
		},
		"QuantityInModelEnv": {
			xr: with("model", nil, "models", []any{map[string]any{"name": "a", "modelURL": "org/a", "env": []any{map[string]any{"name": "CPUS",
				"valueFrom": map[string]any{"resourceFieldRef": map[string]any{"resource": "limits.cpu", "divisor": "one"}}}}}}),
			want: `cannot decode spec: spec.models[0].env[0].valueFrom.resourceFieldRef.divisor: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'; use a Kubernetes quantity such as 4Gi or 500m`,
		},
		// Inline Go structs are no level of the manifest.
		"WrongTypeBelowInlineStruct": {
			xr:   with("envFrom", []any{map[string]any{"configMapRef": map[string]any{"name": 7}}}),
			want: `cannot decode spec: cannot unmarshal number into spec.envFrom.configMapRef.name of type string`,
		},
		"TensorParallelAboveGPUs": {
			xr:   with("vllmConfig.tensorParallelSize", 4, "resources.gpu", "2"),
			want: prefix + `spec: vllmConfig.tensorParallelSize 4 needs 4 GPUs but resources.gpu is "2": raise resources.gpu or lower tensorParallelSize`,
		},
		"TensorParallelWithoutGPUs": {
			xr:   with("vllmConfig.tensorParallelSize", 2, "resources", nil),
			want: prefix + `spec: vllmConfig.tensorParallelSize 2 needs 2 GPUs but resources.gpu is "": raise resources.gpu or lower tensorParallelSize`,
		},
		"TensorParallelInheritedByItem": {
			xr: with("model", nil, "vllmConfig.tensorParallelSize", 2, "resources.gpu", "2",
				"models", []any{map[string]any{"name": "a", "modelURL": "org/a"}, map[string]any{"name": "b", "modelURL": "org/b", "resources": map[string]any{"gpu": "1"}}}),
			want: prefix + `spec.models[1]: vllmConfig.tensorParallelSize 2 needs 2 GPUs but resources.gpu is "1": raise resources.gpu or lower tensorParallelSize`,
		},
		"DuplicateModelNames": {
			xr:   with("model", nil, "models", []any{model2, model2}),
			want: prefix + `spec.models[1].name "b" is also the name of spec.models[0]: model names must be unique within a stack`,
		},
		"ModelNamesCollideAsDNSLabels": {
			xr:   with("model", nil, "models", []any{map[string]any{"name": "Llama.3", "modelURL": "x"}, map[string]any{"name": "llama-3", "modelURL": "y"}}),
			want: prefix + `spec.models[1].name "llama-3" and spec.models[0].name "Llama.3" both make the object name "llama-3": rename one of them`,
		},
		"ModelNameNotMadeValid": {
			xr:   with("model.name", "!!!"),
			want: prefix + `spec.model.name "!!!" cannot be made a DNS label for object names: use letters, digits, '-' or '.'`,
		},
		"ModelNameMissing": {
			xr:   with("model.name", ""),
			want: prefix + "spec.model.name is required: name the model, e.g. llama3",
		},
		"StackNameStartsWithDigit": {
			xr: func() map[string]any {
				xr := minimalXR()
				stacktest.SetPath(xr, "metadata.name", "1st")
				return xr
			}(),
			want: prefix + `metadata.name "1st" cannot name the stack's Services (1st-router-service must be a DNS-1035 label): use a name that starts with a letter`,
		},
		"UnparsableMemory": {
			xr:   with("resources.memory", "16GB"),
			want: prefix + `spec.resources.memory "16GB" is not a Kubernetes quantity: use a value such as 16Gi or 16000Mi`,
		},
		// apimachinery writes 1e21 back as "1", and clamps 1e18Ki to
		// 2^63-1 (found by FuzzQuantities).
		"MemoryTooLargeForAQuantity": {
			xr:   with("resources.memory", "1000000000000000000000"),
			want: prefix + `spec.resources.memory "1000000000000000000000" is too large: a Kubernetes quantity holds less than 8Ei; use a value such as 16Gi or 16000Mi`,
		},
		"RouterLimitTooLargeForAQuantity": {
			xr:   with("routerConfig.resources", map[string]any{"limits": map[string]any{"memory": "1000000000000000000Ki"}}),
			want: prefix + `spec.routerConfig.resources.limits[memory] is too large: a Kubernetes quantity holds less than 8Ei`,
		},
		"UnparsableCPU": {
			xr:   with("resources.cpu", "four"),
			want: prefix + `spec.resources.cpu "four" is not a Kubernetes quantity: use a value such as 4 or 3500m`,
		},
		"FractionalGPU": {
			xr:   with("resources.gpu", "0.5"),
			want: prefix + `spec.resources.gpu "0.5" is invalid: must be a whole number of GPUs, e.g. "1"`,
		},
		"BadGPUType": {
			xr:   with("resources.gpuType", "gpu"),
			want: prefix + `spec.resources.gpuType "gpu" is not an extended resource name: use a name such as nvidia.com/gpu or amd.com/gpu`,
		},
		"UnparsableStorageSize": {
			xr:   with("storage.size", "lots"),
			want: prefix + `spec.storage.size "lots" is not a Kubernetes quantity: use a value such as 50Gi`,
		},
		"UnparsableLMCacheBuffer": {
			xr:   with("lmcacheConfig.enabled", true, "lmcacheConfig.cpuOffloadingBufferSize", "4GiB"),
			want: prefix + `spec.lmcacheConfig.cpuOffloadingBufferSize "4GiB" is invalid: use a quantity such as 4Gi or a plain number of GiB such as 4`,
		},
		"NegativeLMCacheBuffer": {
			xr:   with("lmcacheConfig.diskOffloadingBufferSize", "-1"),
			want: prefix + `spec.lmcacheConfig.diskOffloadingBufferSize "-1" is invalid: use a quantity such as 4Gi or a plain number of GiB such as 4`,
		},
		// A disk buffer sizes an emptyDir in bytes, an int64.
		"LMCacheBufferOverflowsBytes": {
			xr:   with("lmcacheConfig.enabled", true, "lmcacheConfig.diskOffloadingBufferSize", "1e300", "storage.enabled", false),
			want: prefix + `spec.lmcacheConfig.diskOffloadingBufferSize "1e300" is invalid: use a quantity such as 4Gi or a plain number of GiB such as 4`,
		},
		"LMCacheBufferBelowOneByte": {
			xr:   with("lmcacheConfig.enabled", true, "lmcacheConfig.diskOffloadingBufferSize", "1e-12", "storage.enabled", false),
			want: prefix + `spec.lmcacheConfig.diskOffloadingBufferSize "1e-12" is invalid: use a quantity such as 4Gi or a plain number of GiB such as 4`,
		},
		"CPUBufferNotBelowMemory": {
			xr:   with("lmcacheConfig.enabled", true, "lmcacheConfig.cpuOffloadingBufferSize", "16Gi", "resources.memory", "16Gi"),
			want: prefix + "spec: lmcacheConfig.cpuOffloadingBufferSize 16Gi must be less than resources.memory 16Gi: the buffer lives in the engine's memory; raise resources.memory or lower the buffer",
		},
		"RouterTypeUnknown": {
			xr:   with("routerConfig.routerType", "random"),
			want: prefix + `spec.routerConfig.routerType "random" is not supported: use one of roundrobin, session, prefixaware, kvaware`,
		},
		"KVAwareWithoutLMCache": {
			xr:   with("routerConfig.routerType", "kvaware"),
			want: prefix + `spec.lmcacheConfig.enabled must be true with routerConfig.routerType kvaware: the router finds cached prefixes through each engine's LMCache; enable LMCache for m or use routerType prefixaware`,
		},
		"KVAwareModelWithoutLMCache": {
			xr: with("model", nil, "routerConfig.routerType", "kvaware", "lmcacheConfig.enabled", true, "models", []any{
				model2, map[string]any{"name": "c", "modelURL": "org/c", "lmcacheConfig": map[string]any{"enabled": false}},
			}),
			want: prefix + `spec.models[1].lmcacheConfig.enabled must be true with routerConfig.routerType kvaware: the router finds cached prefixes through each engine's LMCache; enable LMCache for c or use routerType prefixaware`,
		},
		"KVAwareTwoRouters": {
			xr:   with("routerConfig.routerType", "kvaware", "routerConfig.replicas", 2, "lmcacheConfig.enabled", true),
			want: prefix + `spec.routerConfig.replicas 2 is invalid with routerType kvaware: the LMCache controller runs inside the router and each engine registers with one router pod; use 1 replica`,
		},
		"KVAwareRouterAutoscaling": {
			xr:   with("routerConfig.routerType", "kvaware", "routerConfig.autoscaling", map[string]any{"maxReplicas": 3}, "lmcacheConfig.enabled", true),
			want: prefix + `spec.routerConfig.autoscaling is enabled with routerType kvaware: the LMCache controller runs inside the router and each engine registers with one router pod; remove autoscaling`,
		},
		"KVAwareWorkerPortsReachEnginePort": {
			xr: with("routerConfig.routerType", "kvaware", "lmcacheConfig.enabled", true, "lmcacheConfig.workerPort", 7999,
				"vllmConfig.tensorParallelSize", 2, "resources.gpu", "2"),
			want: prefix + `spec.lmcacheConfig.workerPort 7999 is invalid: the LMCache workers listen on ports 7999 to 8000 (one per tensor-parallel worker), which must stay at most 65535 and avoid the engine's 8000 and the LoRA sidecar's 30090`,
		},
		"KVAwareControllerPortIsRouterPort": {
			xr:   with("routerConfig.routerType", "kvaware", "routerConfig.lmcacheControllerPort", 8000, "lmcacheConfig.enabled", true),
			want: prefix + `spec.routerConfig.lmcacheControllerPort 8000 is invalid: must be a port from 1024 to 65535 other than the router's 8000`,
		},
		"ControllerPortWithoutKVAware": {
			xr:   with("routerConfig.lmcacheControllerPort", 9000),
			want: prefix + `spec.routerConfig.lmcacheControllerPort applies to routerType kvaware only, and routerType is roundrobin: set routerType to kvaware or remove lmcacheControllerPort`,
		},
		"KVAwareThresholdWithoutKVAware": {
			xr:   with("routerConfig.routerType", "session", "routerConfig.kvAwareThreshold", 100),
			want: prefix + `spec.routerConfig.kvAwareThreshold applies to routerType kvaware only, and routerType is session: set routerType to kvaware or remove kvAwareThreshold`,
		},
		"PrefixMinMatchLengthWithoutPrefixAware": {
			xr:   with("routerConfig.prefixMinMatchLength", 64),
			want: prefix + `spec.routerConfig.prefixMinMatchLength applies to routerType prefixaware only, and routerType is roundrobin: set routerType to prefixaware or remove prefixMinMatchLength`,
		},
		"PrefixMinMatchLengthNegative": {
			xr:   with("routerConfig.routerType", "prefixaware", "routerConfig.prefixMinMatchLength", -1),
			want: prefix + `spec.routerConfig.prefixMinMatchLength -1 is invalid: must be 0 or more`,
		},
		"NodePortOutOfRange": {
			xr:   with("routerConfig.service", map[string]any{"type": "NodePort", "nodePort": 8080}),
			want: prefix + `spec.routerConfig.service.nodePort 8080 is invalid: must be from 30000 to 32767, Kubernetes' default node port range`,
		},
		"NodePortWithClusterIP": {
			xr:   with("routerConfig.service", map[string]any{"nodePort": 30080}),
			want: prefix + `spec.routerConfig.service.nodePort is set but service.type is ClusterIP: use type NodePort or LoadBalancer, or remove nodePort`,
		},
		"RouterPullPolicy": {
			xr:   with("routerConfig.imagePullPolicy", "Sometimes"),
			want: prefix + `spec.routerConfig.imagePullPolicy "Sometimes" is not supported: use one of Always, IfNotPresent, Never`,
		},
		"RouterNodeSelectorLabel": {
			xr:   with("routerConfig.scheduling", map[string]any{"nodeSelector": map[string]any{"pool": "cpu only"}}),
			want: prefix + `spec.routerConfig.scheduling.nodeSelector[pool] "cpu only" is not a valid label value: use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
		},
		"RouterPodAnnotationKey": {
			xr:   with("routerConfig.podAnnotations", map[string]any{"bad key": "x"}),
			want: prefix + `spec.routerConfig.podAnnotations key "bad key" is invalid: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		},
		"CacheServerPriorityClass": {
			xr:   with("lmcacheConfig.server", map[string]any{"scheduling": map[string]any{"priorityClassName": "Hi!"}}),
			want: prefix + `spec.lmcacheConfig.server.scheduling.priorityClassName "Hi!" is not a valid object name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		},
		"EnvFromBothRefs": {
			xr: with("envFrom", []any{map[string]any{
				"configMapRef": map[string]any{"name": "a"}, "secretRef": map[string]any{"name": "b"},
			}}),
			want: prefix + `spec.envFrom[0]: set one of configMapRef or secretRef`,
		},
		"EnvFromSecretWithoutName": {
			xr:   with("envFrom", []any{map[string]any{"secretRef": map[string]any{}}}),
			want: prefix + `spec.envFrom[0].secretRef.name is required`,
		},
		"EnvFromBadPrefix": {
			xr:   with("envFrom", []any{map[string]any{"prefix": "A=", "configMapRef": map[string]any{"name": "a"}}}),
			want: prefix + `spec.envFrom[0].prefix "A=" is not a valid environment variable name prefix: use printable ASCII characters other than '='`,
		},
		"MemoryLimitBelowRequest": {
			xr:   with("resources.memory", "32Gi", "resources.memoryLimit", "16Gi"),
			want: prefix + `spec: resources.memoryLimit 16Gi is less than resources.memory 32Gi: Kubernetes requires a limit of at least the request; raise the limit or lower the request`,
		},
		"CPULimitNotAQuantity": {
			xr:   with("resources.cpuLimit", "eight"),
			want: prefix + `spec.resources.cpuLimit "eight" is not a Kubernetes quantity: use a value such as 8 or 7500m`,
		},
		"WorkerPortPrivileged": {
			xr:   with("lmcacheConfig.workerPort", 80),
			want: prefix + `spec.lmcacheConfig.workerPort 80 is invalid: must be at least 1024`,
		},
		"SessionKeyNotAHeader": {
			xr:   with("routerConfig.routerType", "session", "routerConfig.sessionKey", "user id"),
			want: prefix + `spec.routerConfig.sessionKey "user id" is not an HTTP header name: use letters, digits and '-', e.g. x-user-id`,
		},
		"NegativeReplicas": {
			xr:   with("replicas", -1),
			want: prefix + "spec.replicas -1 is invalid: must be 0 or more",
		},
		"NegativeRouterReplicas": {
			xr:   with("routerConfig.replicas", -2),
			want: prefix + "spec.routerConfig.replicas -2 is invalid: must be 0 or more",
		},
		"DTypeUnknown": {
			xr:   with("model.dtype", "fp8"),
			want: prefix + `spec.model.dtype "fp8" is not supported: use one of auto, half, float16, bfloat16, float, float32`,
		},
		"DeploymentStrategyUnknown": {
			xr:   with("deploymentStrategy", "BlueGreen"),
			want: prefix + `spec.deploymentStrategy "BlueGreen" is not supported: use one of RollingUpdate, Recreate`,
		},
		"PullPolicyUnknown": {
			xr:   with("vllmConfig.imagePullPolicy", "Sometimes"),
			want: prefix + `spec.vllmConfig.imagePullPolicy "Sometimes" is not supported: use one of Always, IfNotPresent, Never`,
		},
		"RemoteSerdeUnknown": {
			xr:   with("lmcacheConfig.remoteSerde", "json"),
			want: prefix + `spec.lmcacheConfig.remoteSerde "json" is not supported: use one of naive, cachegen`,
		},
		"AccessModeUnknown": {
			xr:   with("storage.accessModes", []any{"ReadWriteSome"}),
			want: prefix + `spec.storage.accessModes[0] "ReadWriteSome" is not supported: use one of ReadWriteOnce, ReadOnlyMany, ReadWriteMany, ReadWriteOncePod`,
		},
		// Found by tools/kubediff: the API server refuses the claim.
		"AccessModeReadWriteOncePodWithOthers": {
			xr:   with("storage.accessModes", []any{"ReadWriteOncePod", "ReadWriteOnce"}),
			want: prefix + `spec.storage.accessModes [ReadWriteOncePod ReadWriteOnce] is invalid: ReadWriteOncePod cannot be combined with other access modes; use [ReadWriteOncePod] alone`,
		},
		"ExistingClaimWithSize": {
			xr:   with("storage.existingClaimName", "models", "storage.size", "10Gi"),
			want: prefix + "spec.storage.existingClaimName is set, so the stack mounts a claim it does not own: leave out spec.storage.size, storageClassName and accessModes",
		},
		"HFTokenSecretWithoutName": {
			xr:   with("vllmConfig.hfTokenSecret", map[string]any{"key": "token"}),
			want: prefix + "spec.vllmConfig.hfTokenSecret.name is required: name the Secret that holds the Hugging Face token",
		},
		"MaxNumSeqsZero": {
			xr:   with("model.maxNumSeqs", 0),
			want: prefix + "spec.model.maxNumSeqs 0 is invalid: must be at least 1",
		},
		"EnvNameInvalid": {
			xr:   with("env", []any{map[string]any{"name": "", "value": "x"}}),
			want: prefix + `spec.env[0].name "" is not a valid environment variable name: use printable ASCII characters other than '='`,
		},
		"ItemOverridePathNamed": {
			xr:   with("model", nil, "models", []any{map[string]any{"name": "a", "modelURL": "x", "vllmConfig": map[string]any{"gpuMemoryUtilization": "2"}}}),
			want: prefix + `spec.models[0].vllmConfig.gpuMemoryUtilization "2" is invalid: must be a number greater than 0 and at most 1, e.g. "0.9"`,
		},
		"ReservedPodLabel": {
			xr:   with("pod.labels", map[string]any{"app.kubernetes.io/instance": "x"}),
			want: prefix + "spec.pod.labels[app.kubernetes.io/instance] would replace a label the stack sets on every engine pod: remove it",
		},
		"BadPodLabelValue": {
			xr:   with("pod.labels", map[string]any{"team": "ml platform"}),
			want: prefix + `spec.pod.labels[team] "ml platform" is not a valid label value: use at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit`,
		},
		"BadNodeSelectorKey": {
			xr:   with("scheduling.nodeSelector", map[string]any{"gpu type": "a100"}),
			want: prefix + `spec.scheduling.nodeSelector key "gpu type" is not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		},
		"InitContainerNamedVLLM": {
			xr:   with("pod.initContainers", []any{map[string]any{"name": "vllm", "image": "busybox"}}),
			want: prefix + `spec.pod.initContainers[0].name "vllm" is invalid: use a DNS label other than "vllm"`,
		},
		"ProbePeriodZero": {
			xr:   with("probes.startup.periodSeconds", 0),
			want: prefix + "spec.probes.startup.periodSeconds 0 is invalid: must be at least 1",
		},
		"RollingUpdateBothZero": {
			xr:   with("rollingUpdate", map[string]any{"maxSurge": 0, "maxUnavailable": "0%"}),
			want: prefix + "spec.rollingUpdate: maxSurge and maxUnavailable cannot both be 0: a rollout could never make progress",
		},
		"RollingUpdateBadPercent": {
			xr:   with("rollingUpdate.maxSurge", "150%"),
			want: prefix + `spec.rollingUpdate.maxSurge "150%" is invalid: use a number such as 1 or a percentage such as "25%"`,
		},
		// Atoi reads a sign; the API server and LWS's webhook do not.
		"RollingUpdateSignedPercent": {
			xr:   with("rollingUpdate.maxUnavailable", "+5%"),
			want: prefix + `spec.rollingUpdate.maxUnavailable "+5%" is invalid: use a number such as 1 or a percentage such as "25%"`,
		},
		"PDBNegativeZeroPercent": {
			xr:   with("podDisruptionBudget.maxUnavailable", "-0%"),
			want: prefix + `spec.podDisruptionBudget.maxUnavailable "-0%" is invalid: use a number such as 1 or a percentage such as "25%"`,
		},
		"RollingUpdateWithRecreate": {
			xr:   with("deploymentStrategy", "Recreate", "rollingUpdate.maxSurge", 2),
			want: prefix + "spec: rollingUpdate is set but deploymentStrategy is Recreate: remove rollingUpdate or use RollingUpdate",
		},
		"PDBBothBounds": {
			xr:   with("podDisruptionBudget", map[string]any{"minAvailable": 1, "maxUnavailable": 1}),
			want: prefix + "spec.podDisruptionBudget: set minAvailable or maxUnavailable, not both",
		},
		"EmptyDirWithExistingClaim": {
			xr:   with("storage", map[string]any{"emptyDir": map[string]any{}, "existingClaimName": "models"}),
			want: prefix + "spec.storage: set emptyDir or existingClaimName, not both",
		},
		"ShmSizeUnparsable": {
			xr:   with("storage.shmSize", "lots"),
			want: prefix + `spec.storage.shmSize "lots" is not a Kubernetes quantity: use a value such as 20Gi`,
		},
		"ExtraVolumeReservedName": {
			xr:   with("storage.extraVolumes", []any{map[string]any{"name": "shm", "emptyDir": map[string]any{}}}),
			want: prefix + `spec.storage.extraVolumes[0].name "shm" is used by the stack itself: choose another name`,
		},
		"ExtraVolumeNamedLikeTheModelCache": {
			xr:   with("storage.extraVolumes", []any{map[string]any{"name": "s-storage", "emptyDir": map[string]any{}}}),
			want: prefix + `spec: storage.extraVolumes[0].name "s-storage" is the name of the stack's model cache volume: choose another name, or mount that volume with storage.extraVolumeMounts`,
		},
		"ExtraVolumeNamedLikeTheChatTemplate": {
			xr:   with("model.chatTemplate", "t", "storage.extraVolumes", []any{map[string]any{"name": "s-m-chat-templates", "emptyDir": map[string]any{}}}),
			want: prefix + `spec: storage.extraVolumes[0].name "s-m-chat-templates" is the name of the stack's chat template volume: choose another name, or mount that volume with storage.extraVolumeMounts`,
		},
		"ExtraMountOfTheOldModelCacheName": {
			xr:   with("storage.extraVolumeMounts", []any{map[string]any{"name": "model-cache", "mountPath": "/models", "subPath": "hub"}}),
			want: prefix + `spec: storage.extraVolumeMounts[0] mounts volume "model-cache", which no volume of the pod has: the model cache volume is named "s-storage", as in the Helm chart; mount that`,
		},
		"InitContainerMountOfTheOldModelCacheName": {
			xr:   with("pod.initContainers", []any{map[string]any{"name": "fetch", "image": "busybox", "volumeMounts": []any{map[string]any{"name": "model-cache", "mountPath": "/data"}}}}),
			want: prefix + `spec: pod.initContainers[0].volumeMounts[0] mounts volume "model-cache", which no volume of the pod has: the model cache volume is named "s-storage", as in the Helm chart; mount that`,
		},
		"ExtraMountWithoutVolume": {
			xr:   with("storage.extraVolumeMounts", []any{map[string]any{"name": "adapters", "mountPath": "/adapters"}}),
			want: prefix + `spec: storage.extraVolumeMounts[0] mounts volume "adapters", which no volume of the pod has: add it to storage.extraVolumes`,
		},
		"DiscoveryTypeUnknown": {
			xr:   with("routerConfig.k8sServiceDiscoveryType", "dns"),
			want: prefix + `spec.routerConfig.k8sServiceDiscoveryType "dns" is not supported: use one of pod-ip, service-name`,
		},
		"RouterServiceType": {
			xr:   with("routerConfig.service.type", "ExternalName"),
			want: prefix + `spec.routerConfig.service.type "ExternalName" is not supported: use one of ClusterIP, NodePort, LoadBalancer`,
		},
		"RouterServicePort": {
			xr:   with("routerConfig.service.port", 70000),
			want: prefix + "spec.routerConfig.service.port 70000 is invalid: must be a port number from 1 to 65535",
		},
		"APIKeySecretWithoutName": {
			xr:   with("routerConfig.apiKeySecret", map[string]any{"key": "k"}),
			want: prefix + "spec.routerConfig.apiKeySecret.name is required: name the Secret that holds the API key",
		},
		"SeveralErrorsAtOnce": {
			xr: with("model.enableTool", true, "replicas", -1),
			want: prefix + "spec.replicas -1 is invalid: must be 0 or more; " +
				"spec.model.toolCallParser is required when enableTool is true: set a parser such as hermes, llama3_json or mistral (vLLM refuses to start without one)",
		},
		"UnknownField": {
			xr:   with("model.modelUrl", "org/m"),
			want: `spec has fields the ProductionStack API does not know: unknown field "spec.model.modelUrl"; check the spelling against ` + "`kubectl explain productionstack.spec`",
		},
		"WrongType": {
			xr:   with("replicas", "two"),
			want: `cannot decode spec: cannot unmarshal string into spec.replicas of type int32`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := fatal(t, run(t, req(t, tc.xr, nil, nil)))
			if got != tc.want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

// TestHugeExponents: apimachinery takes seconds to parse 1e-17170000 or to
// compare 1e17170000 (found by FuzzQuantities: the fuzzer's worker was
// killed as hung); such quantities are refused before they are parsed.
func TestHugeExponents(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	cases := map[string]struct {
		xr   map[string]any
		want string
	}{
		"Memory": {
			xr:   with("resources.memory", "1e17170000"),
			want: prefix + `spec.resources.memory "1e17170000" is out of range: a Kubernetes quantity is from 1n to below 8Ei; use a value such as 16Gi or 16000Mi`,
		},
		"CPULimitTiny": {
			xr:   with("resources.cpuLimit", "1e-17170000"),
			want: prefix + `spec.resources.cpuLimit "1e-17170000" is out of range: a Kubernetes quantity is from 1n to below 8Ei; use a value such as 8 or 7500m`,
		},
		"LMCacheBuffer": {
			xr:   with("lmcacheConfig.enabled", true, "lmcacheConfig.cpuOffloadingBufferSize", "1e-17170000Ki"),
			want: prefix + `spec.lmcacheConfig.cpuOffloadingBufferSize "1e-17170000Ki" is invalid: use a quantity such as 4Gi or a plain number of GiB such as 4`,
		},
		"RouterLimit": {
			xr:   with("routerConfig.resources", map[string]any{"limits": map[string]any{"cpu": "1e-17170000"}}),
			want: `cannot decode spec: spec.routerConfig.resources.limits[cpu] "1e-17170000" is out of range: a Kubernetes quantity is from 1n to below 8Ei; use a value such as 4Gi or 500m`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			got := fatal(t, run(t, req(t, tc.xr, nil, nil)))
			if got != tc.want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("the refusal took %v", d)
			}
		})
	}
}
