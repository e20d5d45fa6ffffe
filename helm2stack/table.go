package helm2stack

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// table is every key of the chart's values, vllm-stack 0.1.12 to HEAD as
// stack/testdata/helm/chart-keys.tsv lists them, plus notChartKeys, in the
// order of the "Coming from the Helm chart" table (docs/helm.md): what it
// becomes, or (drop) why the stack does not support it, in the row's words.
// A key not here is an error. An entry may take a block whole (ingress,
// serviceMonitor): its conversion decodes the block strictly, so a key the
// chart lacks inside it is an error too. In the keys, modelSpec[] is one
// servingEngineSpec.modelSpec item; its engine settings go to the model's
// engine block (the top level for a one-model stack). Conversions longer
// than a line are in the files of their concern (model.go, storage.go,
// secrets.go, scheduling.go, engine.go, scaling.go, monitoring.go, router.go,
// exposure.go, lora.go, lmcache.go, drops.go). TestTableMatchesChartKeys ties the table
// to chart-keys.tsv.
var table = []rule{
	{key: "servingEngineSpec.enableEngine", do: dropUnless("true", enableReason)},
	{key: "routerSpec.enableRouter", do: dropUnless("true", enableReason)},

	{key: "servingEngineSpec.modelSpec", do: (*converter).modelSpecs},
	{key: "servingEngineSpec.modelSpec[].name", do: str(func(c *converter, s string) { c.model().Name = s })},
	{key: "servingEngineSpec.modelSpec[].enabled", do: checkOnly((node).boolean)}, // false: modelSpecs leaves the model out
	{key: "servingEngineSpec.modelSpec[].repository", do: imagePart(func(c *converter) *image { return &c.cur.image })},
	{key: "servingEngineSpec.modelSpec[].tag", do: imagePart(func(c *converter) *image { return &c.cur.image })},
	{key: "servingEngineSpec.imagePullPolicy", do: str(func(c *converter, s string) { ensure(&c.engine().VLLMConfig).ImagePullPolicy = s })},
	{key: "servingEngineSpec.modelSpec[].imagePullSecret", do: str(func(c *converter, s string) { ensure(&c.engine().VLLMConfig).ImagePullSecretName = s })},
	{key: "servingEngineSpec.modelSpec[].modelURL", do: str(func(c *converter, s string) { c.model().ModelURL = s })},
	{key: "servingEngineSpec.modelSpec[].modelRevision", do: str(func(c *converter, s string) { c.model().Revision = s })},
	{key: "servingEngineSpec.modelSpec[].replicaCount", do: integer(func(c *converter, v *int32) { c.engine().Replicas = v })},

	{key: "servingEngineSpec.modelSpec[].requestCPU", do: scalar(func(c *converter, s string) { ensure(&c.engine().Resources).CPU = s })},
	{key: "servingEngineSpec.modelSpec[].requestMemory", do: scalar(func(c *converter, s string) { ensure(&c.engine().Resources).Memory = s })},
	{key: "servingEngineSpec.modelSpec[].requestGPU", do: scalar(func(c *converter, s string) { ensure(&c.engine().Resources).GPU = s })},
	{key: "servingEngineSpec.modelSpec[].requestGPUType", do: str(func(c *converter, s string) { ensure(&c.engine().Resources).GPUType = s })},
	{key: "servingEngineSpec.modelSpec[].limitCPU", do: scalar(func(c *converter, s string) { ensure(&c.engine().Resources).CPULimit = s })},
	{key: "servingEngineSpec.modelSpec[].limitMemory", do: scalar(func(c *converter, s string) { ensure(&c.engine().Resources).MemoryLimit = s })},
	{key: "servingEngineSpec.modelSpec[].resources", do: drop("a raw resources block is not accepted: set requestCPU, requestMemory, requestGPU, limitCPU, limitMemory instead")},
	{key: "servingEngineSpec.modelSpec[].requestGPUMem", do: drop(hamiReason)},
	{key: "servingEngineSpec.modelSpec[].requestGPUMemPercentage", do: drop(hamiReason)},
	{key: "servingEngineSpec.modelSpec[].requestGPUCores", do: drop(hamiReason)},
	{key: "servingEngineSpec.modelSpec[].limitGPUMem", do: drop(hamiReason)},
	{key: "servingEngineSpec.modelSpec[].limitGPUMemPercentage", do: drop(hamiReason)},
	{key: "servingEngineSpec.modelSpec[].limitGPUCores", do: drop(hamiReason)},

	{key: "servingEngineSpec.modelSpec[].pvcStorage", do: (*converter).pvcStorage},
	{key: "servingEngineSpec.modelSpec[].storageClass", do: (*converter).storageClass},
	{key: "servingEngineSpec.modelSpec[].pvcAccessMode", do: object(func(c *converter, v []corev1.PersistentVolumeAccessMode) { ensure(&c.engine().Storage).AccessModes = v })},
	{key: "servingEngineSpec.modelSpec[].pvcExistingClaimName", do: str(func(c *converter, s string) { c.cur.existingClaim = s })}, // completeModel
	{key: "servingEngineSpec.modelSpec[].pvcMatchLabels", do: drop("not supported: the claim has no volume selector; bind a pre-provisioned volume to a claim of your own and mount it with storage.existingClaimName")},
	{key: "servingEngineSpec.modelSpec[].pvcLabels", do: drop("not supported: the claim carries the stack's labels only")},
	{key: "servingEngineSpec.modelSpec[].pvcAnnotations", do: drop("not supported: the claim carries the stack's labels only")},
	{key: "servingEngineSpec.modelSpec[].extraVolumes", do: object(func(c *converter, v []corev1.Volume) { ensure(&c.engine().Storage).ExtraVolumes = v })},
	{key: "servingEngineSpec.modelSpec[].extraVolumeMounts", do: object(func(c *converter, v []corev1.VolumeMount) { ensure(&c.engine().Storage).ExtraVolumeMounts = v })},
	{key: "sharedPvcStorage", do: (*converter).sharedStorage},
	{key: "servingEngineSpec.modelSpec[].initContainer", do: (*converter).initContainer},

	{key: "servingEngineSpec.modelSpec[].vllmConfig.enableChunkedPrefill", do: boolean(func(c *converter, b bool) { ensure(&c.engine().VLLMConfig).EnableChunkedPrefill = &b })},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.enablePrefixCaching", do: boolean(func(c *converter, b bool) { ensure(&c.engine().VLLMConfig).EnablePrefixCaching = &b })},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.tensorParallelSize", do: integer(func(c *converter, v *int32) { ensure(&c.engine().VLLMConfig).TensorParallelSize = v })},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.gpuMemoryUtilization", do: scalar(func(c *converter, s string) { ensure(&c.engine().VLLMConfig).GPUMemoryUtilization = s })},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.maxLoras", do: integer(func(c *converter, v *int32) { ensure(&c.engine().VLLMConfig).MaxLoras = v })},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.extraArgs", do: stringList(func(c *converter, l []string) { c.cur.extraArgs = l })},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.maxModelLen", do: integer(func(c *converter, v *int32) { c.model().MaxModelLen = v })},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.dtype", do: str(func(c *converter, s string) { c.model().DType = s })},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.maxNumSeqs", do: integer(func(c *converter, v *int32) { c.model().MaxNumSeqs = v })},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.v0", do: scalar(func(c *converter, s string) {
		if s == "1" {
			ensure(&c.engine().VLLMConfig).V1 = ptr.To(false)
		}
	})},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.v1", do: chartIgnores("the chart reads it for raySpec models only, which the stack does not run; vllmConfig.v1 sets VLLM_USE_V1")},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.pipelineParallelSize", do: (*converter).pipelineParallel},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.runner", do: str(func(c *converter, s string) { c.cur.runner = []string{"--runner", s} })},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.convert", do: str(func(c *converter, s string) { c.cur.convert = []string{"--convert", s} })},
	{key: "servingEngineSpec.modelSpec[].vllmConfig.prometheusMultiprocDir", do: str(func(c *converter, s string) {
		setEnv(&c.engine().Env, corev1.EnvVar{Name: "PROMETHEUS_MULTIPROC_DIR", Value: s})
	})},

	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.enabled", do: boolean(func(c *converter, b bool) { ensure(&c.engine().LMCacheConfig).Enabled = &b })},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.cpuOffloadingBufferSize", do: scalar(func(c *converter, s string) {
		if s != "0" {
			ensure(&c.engine().LMCacheConfig).CPUOffloadingBufferSize = s
		}
	})},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.diskOffloadingBufferSize", do: scalar(func(c *converter, s string) { ensure(&c.engine().LMCacheConfig).DiskOffloadingBufferSize = s })},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.logLevel", do: str(func(c *converter, s string) {
		setEnv(&c.engine().Env, corev1.EnvVar{Name: "LMCACHE_LOG_LEVEL", Value: s})
	})},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.enableController", do: (*converter).kvawareDerived},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.instanceId", do: drop("not offered: the instance id is the pod's name (LMCACHE_LMCACHE_INSTANCE_ID=$(POD_NAME)), since two replicas of a model would register under one id")},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.controllerPort", do: (*converter).kvawareDerived},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.controllerReplyPort", do: (*converter).controllerReplyPort},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.workerHeartbeatTime", do: (*converter).workerHeartbeatTime},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.workerPort", do: integer(func(c *converter, v *int32) { ensure(&c.engine().LMCacheConfig).WorkerPort = v })},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.workerPorts", do: (*converter).workerPorts},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.p2pHost", do: envVar("LMCACHE_P2P_HOST")},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.p2pInitPorts", do: envVar("LMCACHE_P2P_INIT_PORTS")},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.cudaVisibleDevices", do: envVar("CUDA_VISIBLE_DEVICES")},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.enablePD", do: pdEnable},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.kvRole", do: pdKVRole},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.enableNixl", do: pdOther},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.nixlRole", do: pdNixlRole},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.nixlPeerHost", do: pdOther},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.nixlPeerPort", do: pdOther},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.nixlBufferSize", do: pdOther},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.nixlBufferDevice", do: pdOther},
	{key: "servingEngineSpec.modelSpec[].lmcacheConfig.nixlEnableGc", do: pdOther},

	{key: "servingEngineSpec.modelSpec[].hf_token", do: (*converter).hfToken},
	{key: "servingEngineSpec.env", do: object(func(c *converter, v []corev1.EnvVar) { c.engine().Env = append(c.engine().Env, v...) })},
	{key: "servingEngineSpec.modelSpec[].env", do: object(func(c *converter, v []corev1.EnvVar) {
		for _, e := range v {
			setEnv(&c.engine().Env, e)
		}
	})},
	{key: "servingEngineSpec.modelSpec[].envFromSecret", do: (*converter).envFromSecret},
	{key: "servingEngineSpec.configs", do: (*converter).configs},
	{key: "servingEngineSpec.modelSpec[].serviceAccountName", do: str(func(c *converter, s string) { ensure(&c.engine().Pod).ServiceAccountName = s })},
	{key: "servingEngineSpec.modelSpec[].podAnnotations", do: stringMap(func(c *converter, m map[string]string) { mergeInto(&ensure(&c.engine().Pod).Annotations, m) })},
	{key: "servingEngineSpec.modelSpec[].annotations", do: stringMap(func(c *converter, m map[string]string) {
		mergeInto(&ensure(&c.engine().Pod).Annotations, m)
		c.res.note(c.cur.path+".annotations", "the Deployment's annotations are not settable: they go on the pods (pod.annotations)")
	})},
	{key: "servingEngineSpec.modelSpec[].podLabels", do: stringMap(func(c *converter, m map[string]string) { mergeInto(&ensure(&c.engine().Pod).Labels, m) })},
	{key: "servingEngineSpec.modelSpec[].labels", do: stringMap(func(c *converter, m map[string]string) {
		mergeInto(&ensure(&c.engine().Pod).Labels, m)
		c.res.note(c.cur.path+".labels", "the Deployment's labels are the stack's: they go on the pods (pod.labels)")
	})},
	{key: "servingEngineSpec.modelSpec[].serviceAnnotations", do: stringMap(func(c *converter, m map[string]string) { ensure(&c.engine().Service).Annotations = m })},
	{key: "servingEngineSpec.runtimeClassName", do: checkOnly((node).str)}, // completeModel: per model, unless the model sets its own (even "")
	{key: "servingEngineSpec.schedulerName", do: str(func(c *converter, s string) { ensure(&c.engine().Scheduling).SchedulerName = s })},
	{key: "servingEngineSpec.tolerations", do: object(func(c *converter, v []corev1.Toleration) { ensure(&c.engine().Scheduling).Tolerations = v })},
	{key: "servingEngineSpec.modelSpec[].runtimeClassName", do: str(func(c *converter, s string) { ensure(&c.engine().Scheduling).RuntimeClassName = s })},
	{key: "servingEngineSpec.modelSpec[].priorityClassName", do: str(func(c *converter, s string) { ensure(&c.engine().Scheduling).PriorityClassName = s })},
	{key: "servingEngineSpec.modelSpec[].tolerations", do: (*converter).modelTolerations},
	{key: "servingEngineSpec.modelSpec[].tolerationsPolicy", do: (*converter).tolerationsPolicy},
	{key: "servingEngineSpec.modelSpec[].affinity", do: object(func(c *converter, v corev1.Affinity) { ensure(&c.engine().Scheduling).Affinity = &v })},
	{key: "servingEngineSpec.modelSpec[].nodeSelectorTerms", do: (*converter).engineNodeSelectorTerms},
	{key: "servingEngineSpec.modelSpec[].nodeName", do: drop("not supported: pin a model with scheduling.nodeSelector: {kubernetes.io/hostname: <node>}, which keeps the scheduler's resource checks")},
	{key: "servingEngineSpec.modelSpec[].shmSize", do: scalar(func(c *converter, s string) { ensure(&c.engine().Storage).ShmSize = s })},
	{key: "servingEngineSpec.modelSpec[].chatTemplate", do: (*converter).chatTemplate},
	{key: "servingEngineSpec.modelSpec[].chatTemplateConfigMap", do: str(func(c *converter, s string) { c.model().ChatTemplate = s })},
	{key: "servingEngineSpec.modelSpec[].enableLoRA", do: boolean(func(c *converter, b bool) { c.model().EnableLoRA = b })},
	{key: "servingEngineSpec.modelSpec[].enableTool", do: boolean(func(c *converter, b bool) { c.model().EnableTool = b })},
	{key: "servingEngineSpec.modelSpec[].toolCallParser", do: str(func(c *converter, s string) { c.model().ToolCallParser = s })},

	{key: "servingEngineSpec.modelSpec[].keda.enabled", do: boolean(func(c *converter, b bool) { autoscalingOf(c.engine()).Enabled = &b })},
	{key: "servingEngineSpec.modelSpec[].keda.minReplicaCount", do: integer(func(c *converter, v *int32) { autoscalingOf(c.engine()).MinReplicas = v })},
	{key: "servingEngineSpec.modelSpec[].keda.maxReplicaCount", do: integer(func(c *converter, v *int32) { autoscalingOf(c.engine()).MaxReplicas = v })},
	{key: "servingEngineSpec.modelSpec[].keda.pollingInterval", do: integer(func(c *converter, v *int32) { autoscalingOf(c.engine()).PollingInterval = v })},
	{key: "servingEngineSpec.modelSpec[].keda.cooldownPeriod", do: integer(func(c *converter, v *int32) { autoscalingOf(c.engine()).CooldownPeriod = v })},
	{key: "servingEngineSpec.modelSpec[].keda.idleReplicaCount", do: integer(func(c *converter, v *int32) { autoscalingOf(c.engine()).IdleReplicas = v })},
	{key: "servingEngineSpec.modelSpec[].keda.fallback", do: object(func(c *converter, v v1alpha1.AutoscalingFallback) { autoscalingOf(c.engine()).Fallback = &v })},
	{key: "servingEngineSpec.modelSpec[].keda.triggers", do: (*converter).kedaTriggers},
	{key: "servingEngineSpec.modelSpec[].keda.initialCooldownPeriod", do: integer(func(c *converter, v *int32) { autoscalingOf(c.engine()).InitialCooldownPeriod = v })},
	{key: "servingEngineSpec.modelSpec[].keda.advanced", do: (*converter).kedaAdvanced},
	{key: "servingEngineSpec.modelSpec[].pdb.enabled", do: boolean(func(c *converter, b bool) { ensure(&c.engine().PodDisruptionBudget).Enabled = &b })},
	{key: "servingEngineSpec.modelSpec[].pdb.minAvailable", do: intOrString(func(c *converter) **v1alpha1.PodDisruptionBudget { return &c.engine().PodDisruptionBudget }, true)},
	{key: "servingEngineSpec.modelSpec[].pdb.maxUnavailable", do: intOrString(func(c *converter) **v1alpha1.PodDisruptionBudget { return &c.engine().PodDisruptionBudget }, false)},
	{key: "servingEngineSpec.modelSpec[].pdb.labels", do: drop(pdbMetaReason)},
	{key: "servingEngineSpec.modelSpec[].pdb.annotations", do: drop(pdbMetaReason)},
	{key: "servingEngineSpec.modelSpec[].raySpec", do: (*converter).raySpec},

	{key: "servingEngineSpec.labels", do: stringMap(func(c *converter, m map[string]string) {
		mergeInto(&ensure(&c.engine().Pod).Labels, m)
		c.res.note("servingEngineSpec.labels", "pod.labels: extra engine pod labels; the router selects the stack's engines by app.kubernetes.io/instance and component, not by these labels")
	})},
	{key: "servingEngineSpec.extraPorts", do: drop(extraPortsReason)},
	{key: "routerSpec.extraPorts", do: drop(extraPortsReason)},
	{key: "servingEngineSpec.containerPort", do: dropUnless("8000", fixedPortsReason)},
	{key: "servingEngineSpec.servicePort", do: dropUnless("80", fixedPortsReason)},
	{key: "routerSpec.containerPort", do: dropUnless("8000", fixedPortsReason)},
	{key: "servingEngineSpec.strategy", do: (*converter).engineStrategy},
	{key: "servingEngineSpec.startupProbe", do: (*converter).engineProbe},
	{key: "servingEngineSpec.readinessProbe", do: (*converter).engineProbe},
	{key: "servingEngineSpec.livenessProbe", do: (*converter).engineProbe},
	{key: "servingEngineSpec.securityContext", do: object(func(c *converter, v corev1.PodSecurityContext) { ensure(&c.engine().Pod).SecurityContext = &v })},
	{key: "servingEngineSpec.containerSecurityContext", do: object(func(c *converter, v corev1.SecurityContext) { ensure(&c.engine().Pod).ContainerSecurityContext = &v })},
	{key: "servingEngineSpec.vllmApiKey", do: (*converter).engineAPIKey},
	{key: "routerSpec.vllmApiKey", do: (*converter).routerAPIKey},
	{key: "servingEngineSpec.sidecar.image", do: str(func(c *converter, s string) { ensure(&c.engine().LoRASidecar).Image = s })},
	{key: "servingEngineSpec.sidecar.imagePullPolicy", do: dropUnless("Always", "the sidecar's pull policy is Kubernetes' default")},

	{key: "servingEngineSpec.serviceMonitor", do: (*converter).serviceMonitor},
	{key: "routerSpec.serviceMonitor", do: (*converter).serviceMonitor},

	{key: "routerSpec.repository", do: imagePart(func(c *converter) *image { return &c.routerImage })},
	{key: "routerSpec.tag", do: imagePart(func(c *converter) *image { return &c.routerImage })},
	{key: "routerSpec.imagePullPolicy", do: str(func(c *converter, s string) { c.router().ImagePullPolicy = s })},
	{key: "routerSpec.imagePullSecrets", do: (*converter).routerPullSecrets},
	{key: "routerSpec.replicaCount", do: integer(func(c *converter, v *int32) { c.router().Replicas = v })},
	{key: "routerSpec.resources", do: object(func(c *converter, v corev1.ResourceRequirements) { c.router().Resources = &v })},
	{key: "routerSpec.autoscaling.enabled", do: boolean(func(c *converter, b bool) { ensure(&c.router().Autoscaling).Enabled = &b })},
	{key: "routerSpec.autoscaling.minReplicas", do: integer(func(c *converter, v *int32) { ensure(&c.router().Autoscaling).MinReplicas = v })},
	{key: "routerSpec.autoscaling.maxReplicas", do: integer(func(c *converter, v *int32) { ensure(&c.router().Autoscaling).MaxReplicas = v })},
	{key: "routerSpec.autoscaling.targetCPUUtilizationPercentage", do: integer(func(c *converter, v *int32) {
		ensure(&c.router().Autoscaling).TargetCPUUtilizationPercentage = v
	})},
	{key: "routerSpec.pdb.enabled", do: boolean(func(c *converter, b bool) { ensure(&c.router().PodDisruptionBudget).Enabled = &b })},
	{key: "routerSpec.pdb.minAvailable", do: intOrString(func(c *converter) **v1alpha1.PodDisruptionBudget { return &c.router().PodDisruptionBudget }, true)},
	{key: "routerSpec.pdb.maxUnavailable", do: intOrString(func(c *converter) **v1alpha1.PodDisruptionBudget { return &c.router().PodDisruptionBudget }, false)},
	{key: "routerSpec.pdb.labels", do: drop(pdbMetaReason)},
	{key: "routerSpec.pdb.annotations", do: drop(pdbMetaReason)},
	{key: "routerSpec.priorityClassName", do: str(func(c *converter, s string) { ensure(&c.router().Scheduling).PriorityClassName = s })},
	{key: "routerSpec.affinity", do: object(func(c *converter, v corev1.Affinity) { ensure(&c.router().Scheduling).Affinity = &v })},
	{key: "routerSpec.nodeSelectorTerms", do: (*converter).routerNodeSelectorTerms},
	{key: "routerSpec.podAnnotations", do: stringMap(func(c *converter, m map[string]string) { c.router().PodAnnotations = m })},
	{key: "routerSpec.serviceAccountName", do: str(func(c *converter, s string) { c.router().ServiceAccountName = s })},
	{key: "routerSpec.extraVolumes", do: object(func(c *converter, v []corev1.Volume) { c.router().ExtraVolumes = v })},
	{key: "routerSpec.extraVolumeMounts", do: object(func(c *converter, v []corev1.VolumeMount) { c.router().ExtraVolumeMounts = v })},
	{key: "routerSpec.labels", do: drop("not supported: the router's pods carry the stack's labels, which its Deployment, Service and the engines' NetworkPolicy select")},
	{key: "routerSpec.securityContext", do: drop(routerSecurityReason)},
	{key: "routerSpec.containerSecurityContext", do: drop(routerSecurityReason)},
	{key: "routerSpec.strategy", do: drop("not settable: a rolling update with maxSurge 1 and maxUnavailable 0, so a new router is ready before an old one stops")},
	{key: "routerSpec.startupProbe", do: drop(routerProbeReason)},
	{key: "routerSpec.readinessProbe", do: drop(routerProbeReason)},
	{key: "routerSpec.livenessProbe", do: drop(routerProbeReason)},
	{key: "routerSpec.serviceType", do: (*converter).routerServiceType},
	{key: "routerSpec.servicePort", do: integer(func(c *converter, v *int32) {
		if *v != 80 {
			ensure(&c.router().Service).Port = v
		}
	})},
	{key: "routerSpec.serviceAnnotations", do: stringMap(func(c *converter, m map[string]string) { ensure(&c.router().Service).Annotations = m })},
	{key: "routerSpec.nodePort", do: integer(func(c *converter, v *int32) { ensure(&c.router().Service).NodePort = v })},
	{key: "routerSpec.serviceDiscovery", do: dropUnless("k8s", staticReason)},
	{key: "routerSpec.staticBackends", do: drop(staticReason)},
	{key: "routerSpec.staticModels", do: drop(staticReason)},
	{key: "routerSpec.k8sServiceDiscoveryType", do: str(func(c *converter, s string) {
		if s != "pod-ip" {
			c.router().K8sServiceDiscoveryType = s
		}
	})},
	{key: "routerSpec.routingLogic", do: (*converter).routingLogicKey},
	{key: "routerSpec.enablePD", do: chartIgnores("the chart's templates do not read it (its disaggregated prefill tutorial sets it)")},
	{key: "routerSpec.sessionKey", do: str(func(c *converter, s string) { c.router().SessionKey = s })},
	{key: "routerSpec.lmcacheControllerPort", do: integer(func(c *converter, v *int32) { c.router().LMCacheControllerPort = v })},
	{key: "routerSpec.lmcacheControllerReplyPort", do: integer(func(c *converter, v *int32) { c.router().LMCacheControllerReplyPort = v })},
	{key: "routerSpec.lmcacheControllerHeartbeatPort", do: integer(func(c *converter, v *int32) { c.router().LMCacheControllerHeartbeatPort = v })},
	{key: "routerSpec.prefixMinMatchLength", do: (*converter).prefixMinMatchLength},
	{key: "routerSpec.extraArgs", do: stringList(func(c *converter, l []string) { c.router().ExtraArgs = append(c.router().ExtraArgs, l...) })},
	{key: "routerSpec.rootPath", do: routerFlag("--root-path")},
	{key: "routerSpec.otel.endpoint", do: (*converter).otel},
	{key: "routerSpec.otel.serviceName", do: checkOnly((node).str)},
	{key: "routerSpec.otel.secure", do: checkOnly((node).boolean)},
	{key: "routerSpec.engineScrapeInterval", do: routerFlagUnless("--engine-stats-interval", "15")},
	{key: "routerSpec.requestStatsWindow", do: routerFlagUnless("--request-stats-window", "60")},
	{key: "routerSpec.env", do: object(func(c *converter, v []corev1.EnvVar) {
		for _, e := range v {
			setEnv(&c.router().Env, e)
		}
	})},
	{key: "routerSpec.hf_token", do: (*converter).routerHFToken},
	{key: "routerSpec.lmcacheConfig.logLevel", do: str(func(c *converter, s string) {
		if s != "INFO" {
			setEnv(&c.router().Env, corev1.EnvVar{Name: "LMCACHE_LOG_LEVEL", Value: s})
		}
	})},
	{key: "routerSpec.ingress", do: (*converter).ingress},
	{key: "routerSpec.route", do: (*converter).routes},

	{key: "cacheserverSpec.enabled", do: boolean(func(c *converter, b bool) { c.server().Enabled = &b })},
	{key: "cacheserverSpec.image.repository", do: imagePart(func(c *converter) *image { return &c.serverImage })},
	{key: "cacheserverSpec.image.tag", do: imagePart(func(c *converter) *image { return &c.serverImage })},
	{key: "cacheserverSpec.replicaCount", do: integer(func(c *converter, v *int32) { c.server().Replicas = v })},
	{key: "cacheserverSpec.resources", do: object(func(c *converter, v corev1.ResourceRequirements) { c.server().Resources = &v })},
	{key: "cacheserverSpec.serde", do: str(func(c *converter, s string) { c.server().Serde = s })},
	{key: "cacheserverSpec.repository", do: chartIgnores("the chart's image is cacheserverSpec.image.repository")},
	{key: "cacheserverSpec.tag", do: chartIgnores("the chart's image is cacheserverSpec.image.tag")},
	{key: "cacheserverSpec.nodeSelector", do: stringMap(func(c *converter, m map[string]string) { ensure(&c.server().Scheduling).NodeSelector = m })},
	{key: "cacheserverSpec.affinity", do: object(func(c *converter, v corev1.Affinity) { ensure(&c.server().Scheduling).Affinity = &v })},
	{key: "cacheserverSpec.tolerations", do: object(func(c *converter, v []corev1.Toleration) { ensure(&c.server().Scheduling).Tolerations = v })},
	{key: "cacheserverSpec.priorityClassName", do: str(func(c *converter, s string) { ensure(&c.server().Scheduling).PriorityClassName = s })},
	{key: "cacheserverSpec.runtimeClassName", do: str(func(c *converter, s string) { ensure(&c.server().Scheduling).RuntimeClassName = s })},
	{key: "cacheserverSpec.schedulerName", do: str(func(c *converter, s string) { ensure(&c.server().Scheduling).SchedulerName = s })},
	{key: "cacheserverSpec.containerPort", do: drop(cacheServerPortsReason)},
	{key: "cacheserverSpec.servicePort", do: dropUnless("80", cacheServerPortsReason)},
	{key: "cacheserverSpec.serviceType", do: dropUnless("ClusterIP", cacheServerPortsReason)},
	{key: "cacheserverSpec.serviceAnnotations", do: drop(cacheServerPortsReason)},
	{key: "cacheserverSpec.imagePullPolicy", do: drop(cacheServerReason)},
	{key: "cacheserverSpec.imagePullSecrets", do: drop(cacheServerReason)},
	{key: "cacheserverSpec.annotations", do: drop(cacheServerReason)},
	{key: "cacheserverSpec.labels", do: drop(cacheServerReason)},
	{key: "cacheserverSpec.strategy", do: drop(cacheServerReason)},
	{key: "cacheserverSpec.livenessProbe", do: drop(cacheServerReason)},
	{key: "cacheserverSpec.securityContext", do: drop(cacheServerReason)},
	{key: "cacheserverSpec.containerSecurityContext", do: drop(cacheServerReason)},

	{key: "loraAdapters", do: (*converter).loraAdapters},
	{key: "loraController", do: dropEnabled("enableLoraController", "not included: loraAdapters become the model's runtime adapters, which the stack loads itself; the LoRA controller is a separate operator with its own LoraAdapter CRD, to install next to the stack for LoraAdapter objects of your own")},
	{key: "extraObjects", do: drop("compose them in the Composition: desired resources of another function step pass through this one unchanged")},
	{key: "grafanaDashboards", do: (*converter).grafanaDashboards},
	{key: "kube-prometheus-stack", do: dropEnabled("enabled", installSeparatelyReason)},
	{key: "prometheus-adapter", do: dropEnabled("enabled", installSeparatelyReason)},
}

// notChartKeys are the table's keys the chart's templates never read, each
// with the file of the chart's release that sets it: the converter accepts
// what the chart's own example and tutorials set, so that each of them
// converts (TestTutorials); the chart ignores these keys, and so does the
// converter, with a note. Any other key the chart lacks is an error.
var notChartKeys = map[string]string{
	"routerSpec.enablePD":        "tutorials/assets/values-16-disagg-prefill.yaml",
	"cacheserverSpec.repository": "helm/values-example.yaml",
	"cacheserverSpec.tag":        "helm/values-example.yaml",
}

// Reasons shared by several keys, as docs/helm.md's rows give them.
const (
	enableReason            = "not needed: a stack is its models behind its router; model or models[] is required and the router always runs"
	hamiReason              = "not supported: HAMi's GPU sharing needs several extended resources per engine; resources.gpuType names one"
	pdReason                = "not converted: the chart's P/D keys convert only as its whole recipe (one prefill and one decode model of the same weights behind routingLogic disaggregated_prefill), which becomes a model with disaggregation"
	pdbMetaReason           = "not supported: the PodDisruptionBudget carries the stack's labels only"
	extraPortsReason        = "not supported: the Services expose the API port only (engines 80 -> 8000, where vLLM also serves /metrics; the router router-sport, plus lmcache-port with kvaware)"
	fixedPortsReason        = "fixed: engine and router containers listen on 8000, engine Services on 80 (the router's contract with the engines); the router Service's port is routerConfig.service.port"
	routerSecurityReason    = "not settable: the router runs as user 1000, non-root, with the RuntimeDefault seccomp profile, no privilege escalation and no capabilities, and HOME=/home/router on an emptyDir"
	routerProbeReason       = "not settable: GET /health on 8000, readiness every 5 s and liveness every 10 s, 3 failures each"
	staticReason            = "not needed: the router always discovers the stack's own engine pods through the Kubernetes API (--service-discovery k8s); static backends outside the stack are not supported"
	cacheServerPortsReason  = "fixed: a ClusterIP Service, port 80 -> 8080, which engines reach as lm://S-cache-server-service:80"
	cacheServerReason       = "not supported: the cache server runs with the stack's labels, Kubernetes' pull policy and security defaults, no API token, a TCP readiness probe on 8080, and rolls with maxSurge 1 and maxUnavailable 0"
	installSeparatelyReason = "install those charts separately; the ServiceMonitors carry app.kubernetes.io/part-of: vllm-stack, the label the chart's Prometheus selects"
)
