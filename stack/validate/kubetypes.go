package validate

import (
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vllm-project/function-vllm-stack/internal/kubeapi"
	"github.com/vllm-project/function-vllm-stack/stack/adaptersync"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// Checks of the Kubernetes types a spec holds as they are (volumes, init
// containers, environment variables, resource requirements): the API server
// would refuse the Deployment they go into, after Crossplane had applied the
// stack's other objects. test/internal/kubecheck checks the same in every
// composed object; test/fuzz holds the function to it.

// validateVolume checks one of storage.extraVolumes at p: its name, its
// source as the API server checks it (internal/kubeapi), and what the
// function asks more of references and quantities.
func validateVolume(f *Findings, p string, v corev1.Volume) {
	if msgs := validation.IsDNS1123Label(v.Name); len(msgs) > 0 {
		f.errorf("%s.name %s is not a volume name: %s", p, resolve.ClipQuote(v.Name), strings.Join(msgs, "; "))
	}
	// The API server makes a volume without a source an emptyDir; the
	// function refuses it: the XRD prunes a misspelled source, and the
	// volume the user meant would silently be an empty directory.
	if kubeapi.SetPointers(v.VolumeSource) == 0 {
		f.errorf("%s sets 0 volume sources: set exactly one, such as persistentVolumeClaim, configMap, secret or emptyDir", p)
	}
	apiProblems(f, p, kubeapi.VolumeSource(v.Name, v.VolumeSource))
	if e := v.EmptyDir; e != nil && e.SizeLimit != nil && e.SizeLimit.Sign() >= 0 && !resolve.QuantityInRange(*e.SizeLimit) {
		f.errorf("%s.emptyDir.sizeLimit is too large: a Kubernetes quantity holds less than 8Ei", p)
	}
	if c := v.PersistentVolumeClaim; c != nil {
		objectName(f, p+".persistentVolumeClaim.claimName", c.ClaimName)
	}
	if c := v.ConfigMap; c != nil {
		objectName(f, p+".configMap.name", c.Name)
	}
	if s := v.Secret; s != nil {
		objectName(f, p+".secret.secretName", s.SecretName)
	}
}

// validateExtraVolumes checks the extraVolumes of the block at p: valid
// volumes, with unique names none of which the stack's own volumes of the
// pod (reserved) take.
func validateExtraVolumes(f *Findings, p string, vols []corev1.Volume, reserved map[string]bool) {
	names := map[string]int{}
	for i, v := range vols {
		vp := fmt.Sprintf("%s.extraVolumes[%d]", p, i)
		if reserved[v.Name] {
			f.errorf("%s.name %q is used by the stack itself: choose another name", vp, v.Name)
		} else if j, dup := names[v.Name]; dup {
			f.errorf("%s.name %q is also the name of extraVolumes[%d]: volume names must be unique", vp, v.Name, j)
		} else {
			names[v.Name] = i
		}
		validateVolume(f, vp, v)
	}
}

// validateRouterVolumes checks routerConfig.extraVolumes and
// extraVolumeMounts: mounts of volumes the pod has, at absolute paths other
// than the router's HOME.
func validateRouterVolumes(f *Findings, p string, extra []corev1.Volume, mounts []corev1.VolumeMount) {
	validateExtraVolumes(f, p, extra, map[string]bool{build.VolumeRouterHome: true})
	vols := map[string]bool{build.VolumeRouterHome: true}
	for _, v := range extra {
		vols[v.Name] = true
	}
	seen := map[string]bool{build.RouterHome: true}
	for i, m := range mounts {
		mp := fmt.Sprintf("%s.extraVolumeMounts[%d]", p, i)
		if !vols[m.Name] {
			f.errorf("%s mounts volume %q, which no volume of the pod has: add it to routerConfig.extraVolumes", mp, m.Name)
		}
		mountPath(f, mp, m.MountPath, seen)
		apiProblems(f, mp, kubeapi.VolumeMount(m, false)) // the router is never privileged
	}
}

// validatePodAnnotations checks the pod annotations of the engines and the
// router that the API server reads as pod settings (seccomp and AppArmor
// profiles, tolerations, deletion cost) against the pods they go on. A pod
// without annotations has nothing to check, so it is not built twice on
// every call (here and when the stack is composed).
func validatePodAnnotations(f *Findings, s *resolve.Stack) {
	for _, e := range s.Engines {
		if len(e.Cfg.Pod.Annotations) == 0 {
			continue
		}
		pod := build.EnginePod(s, e)
		apiProblems(f, e.Block+": pod.annotations", kubeapi.PodAnnotations(e.Cfg.Pod.Annotations, &pod))
	}
	if len(s.Router.PodAnnots) > 0 {
		router := build.RouterDeployment(s).Spec.Template
		apiProblems(f, "spec.routerConfig.podAnnotations", kubeapi.PodAnnotations(router.Annotations, &router.Spec))
	}
}

// apiProblems reports what the API server would refuse in a Kubernetes type
// the spec carries, at the field (at) where the user wrote it.
func apiProblems(f *Findings, at string, ps []kubeapi.Problem) {
	for _, p := range ps {
		f.errorf("%s", p.At(at))
	}
}

// validateEnvSource checks an environment variable's valueFrom (callers
// check value and valueFrom are not both set).
func validateEnvSource(f *Findings, p string, e corev1.EnvVar) {
	if e.ValueFrom == nil {
		return
	}
	if n := kubeapi.SetPointers(*e.ValueFrom); n != 1 {
		f.errorf("%s.valueFrom sets %d sources: set exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef or fileKeyRef", p, n)
	}
}

// validateResourceRequirements checks a container's requests and limits as
// the API server does (kubeapi.ContainerResources), once every quantity is
// one Kubernetes can hold.
func validateResourceRequirements(f *Findings, p string, r corev1.ResourceRequirements) {
	inRange := true
	for _, list := range []struct {
		name string
		l    corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, name := range sortedResourceNames(list.l) {
			if !resolve.QuantityInRange(list.l[name]) {
				f.errorf("%s.%s[%s] is too large: a Kubernetes quantity holds less than 8Ei", p, list.name, name)
				inRange = false
			}
		}
	}
	if inRange {
		apiProblems(f, p, kubeapi.ContainerResources(r))
	}
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	return slices.Sorted(maps.Keys(l))
}

// validateContainer checks a container the user writes whole (an init
// container) at p by itself; the pod it joins is checked by
// validateInitContainers.
func validateContainer(f *Findings, p string, c corev1.Container) {
	image(f, p+".image", c.Image)
	names := map[string]bool{}
	for i, port := range c.Ports {
		pp := fmt.Sprintf("%s.ports[%d]", p, i)
		if msgs := validation.IsValidPortNum(int(port.ContainerPort)); len(msgs) > 0 {
			f.errorf("%s.containerPort %d is invalid: must be a port number from 1 to 65535", pp, port.ContainerPort)
		}
		if port.HostPort != 0 && len(validation.IsValidPortNum(int(port.HostPort))) > 0 {
			f.errorf("%s.hostPort %d is invalid: must be a port number from 1 to 65535", pp, port.HostPort)
		}
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				f.errorf("%s.name %s is not a port name: %s", pp, resolve.ClipQuote(port.Name), strings.Join(msgs, "; "))
			} else if names[port.Name] {
				f.errorf("%s.name %q is also the name of another port of the container: port names must be unique", pp, port.Name)
			}
			names[port.Name] = true
		}
		switch port.Protocol {
		case "", corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			f.errorf("%s.protocol %s is not supported: use one of TCP, UDP, SCTP", pp, resolve.ClipQuote(string(port.Protocol)))
		}
	}
	env := map[string]bool{}
	for i, e := range c.Env {
		ep := fmt.Sprintf("%s.env[%d]", p, i)
		if !isEnvVarName(e.Name) {
			f.errorf("%s.name %s is not a valid environment variable name: use printable ASCII characters other than '='", ep, resolve.ClipQuote(e.Name))
		} else if env[e.Name] {
			f.errorf("%s.name %q is set twice in the container: remove one", ep, e.Name)
		}
		env[e.Name] = true
		if e.Value != "" && e.ValueFrom != nil {
			f.errorf("%s: set value or valueFrom, not both", ep)
		}
		validateEnvSource(f, ep, e)
	}
	mounts := map[string]bool{}
	for i, m := range c.VolumeMounts {
		mp := fmt.Sprintf("%s.volumeMounts[%d]", p, i)
		mountPath(f, mp, m.MountPath, mounts)
		apiProblems(f, mp, kubeapi.VolumeMount(m, kubeapi.Privileged(c.SecurityContext)))
	}
	sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
	for _, pr := range []struct {
		name  string
		probe *corev1.Probe
	}{{"startupProbe", c.StartupProbe}, {"readinessProbe", c.ReadinessProbe}, {"livenessProbe", c.LivenessProbe}} {
		if pr.probe == nil {
			continue
		}
		if !sidecar {
			f.errorf("%s.%s is refused: only an init container with restartPolicy Always (a sidecar) may have probes", p, pr.name)
			continue
		}
		validateProbe(f, p+"."+pr.name, pr.name != "readinessProbe", c, pr.probe)
	}
	if c.Lifecycle != nil && !sidecar {
		f.errorf("%s.lifecycle is refused: only an init container with restartPolicy Always (a sidecar) may have one", p)
	}
	validateResourceRequirements(f, p+".resources", c.Resources)
	apiProblems(f, p+".securityContext", kubeapi.SecurityContext(c.SecurityContext))
}

// validateProbe checks a probe of a container the user writes whole.
func validateProbe(f *Findings, p string, oneSuccess bool, c corev1.Container, probe *corev1.Probe) {
	if n := kubeapi.SetPointers(probe.ProbeHandler); n != 1 {
		f.errorf("%s sets %d handlers: set exactly one of exec, httpGet, tcpSocket or grpc", p, n)
	}
	if h := probe.HTTPGet; h != nil {
		if !strings.HasPrefix(h.Path, "/") {
			f.errorf("%s.httpGet.path %s is invalid: must start with /", p, resolve.ClipQuote(h.Path))
		}
		if !hasPort(c, h.Port) {
			f.errorf("%s.httpGet.port %s is not a port of the container: add it to ports", p, resolve.ClipQuote(h.Port.String()))
		}
	}
	for _, n := range []struct {
		field string
		v     int32
	}{{"initialDelaySeconds", probe.InitialDelaySeconds}, {"timeoutSeconds", probe.TimeoutSeconds}, {"periodSeconds", probe.PeriodSeconds},
		{"successThreshold", probe.SuccessThreshold}, {"failureThreshold", probe.FailureThreshold}} {
		if n.v < 0 {
			f.errorf("%s.%s %d is invalid: must be 0 or more", p, n.field, n.v)
		}
	}
	if oneSuccess && probe.SuccessThreshold > 1 {
		f.errorf("%s.successThreshold %d is invalid: must be 1", p, probe.SuccessThreshold)
	}
}

func hasPort(c corev1.Container, port intstr.IntOrString) bool {
	for _, p := range c.Ports {
		if port.Type == intstr.Int && p.ContainerPort == port.IntVal || port.Type == intstr.String && p.Name == port.StrVal {
			return true
		}
	}
	return false
}

// mountPath checks a mount's path: absolute, and not mounted twice in the
// container (seen holds the container's paths so far).
func mountPath(f *Findings, p, mp string, seen map[string]bool) {
	switch {
	case !path.IsAbs(mp):
		f.errorf("%s.mountPath %s is invalid: use an absolute path such as /adapters", p, resolve.ClipQuote(mp))
	case seen[path.Clean(mp)]:
		f.errorf("%s.mountPath %s is already mounted in the container: use another path", p, resolve.ClipQuote(mp))
	}
	seen[path.Clean(mp)] = true
}

// podVolumes are the volumes of a model's engine pod, by name.
func podVolumes(e resolve.Engine) map[string]bool {
	vols := map[string]bool{}
	if resolve.Enabled(e.Cfg.Storage.Enabled) {
		vols[e.CacheVolume] = true
	}
	if e.Model.ChatTemplate != "" {
		vols[e.TemplatesVolume] = true
	}
	if e.Shm {
		vols[build.VolumeShm] = true
	}
	if _, ok := build.LMCacheDiskVolume(e); ok {
		vols[build.VolumeLMCacheDisk] = true
	}
	for _, v := range e.Cfg.Storage.ExtraVolumes {
		vols[v.Name] = true
	}
	return vols
}

// validateInitContainers checks a merged engine's init containers against
// the pod they join: unique container names, port names not taken by the
// engine's containers, volumes the pod has.
func validateInitContainers(f *Findings, s *resolve.Stack, e resolve.Engine) {
	vols := podVolumes(e)
	taken := map[string]string{build.EngineContainer: "the engine"}
	if e.LoRASidecar {
		taken[build.LoRASidecarContainer] = "the LoRA sidecar"
	}
	if e.RuntimeAdapters {
		taken[adaptersync.ContainerName] = "the adapter sync container"
	}
	if e.RoutingSidecar {
		taken[inferencepool.SidecarContainerName] = "the routing sidecar"
	}
	ports := map[string]bool{}
	for _, p := range build.EnginePorts(s, e) {
		ports[p.Name] = true
	}
	if e.LoRASidecar {
		ports[build.LoRASidecarPortName] = true
	}
	if e.RoutingSidecar {
		ports[inferencepool.SidecarPortName] = true
	}
	for i, c := range e.Cfg.Pod.InitContainers {
		p := fmt.Sprintf("pod.initContainers[%d]", i)
		if other, ok := taken[c.Name]; ok && c.Name != build.EngineContainer {
			f.errorf("%s: %s.name %q is also the name of %s: container names must be unique in the pod", e.Block, p, c.Name, other)
		}
		if _, ok := taken[c.Name]; !ok {
			taken[c.Name] = p
		}
		for _, port := range c.Ports {
			if port.Name != "" && ports[port.Name] {
				f.errorf("%s: %s port name %q is also the name of another port of the pod: port names must be unique", e.Block, p, port.Name)
			}
			ports[port.Name] = port.Name != ""
		}
		for j, m := range c.VolumeMounts {
			switch what, sync := syncVolumes(e)[m.Name]; {
			case sync:
				f.errorf("%s: %s.volumeMounts[%d] %s", e.Block, p, j, syncVolumeRefusal(m.Name, what))
			case !vols[m.Name]:
				f.errorf("%s: %s.volumeMounts[%d] mounts volume %q, which no volume of the pod has: %s", e.Block, p, j, m.Name, missingVolumeFix(e, m.Name))
			}
		}
	}
}

// validateExtraMounts checks a merged engine's storage.extraVolumeMounts:
// volumes the pod has, absolute paths not mounted already.
func validateExtraMounts(f *Findings, e resolve.Engine) {
	vols := podVolumes(e)
	seen := map[string]bool{}
	for _, m := range build.EngineVolumeMounts(e)[:len(build.EngineVolumeMounts(e))-len(e.Cfg.Storage.ExtraVolumeMounts)] {
		seen[path.Clean(m.MountPath)] = true
	}
	for i, m := range e.Cfg.Storage.ExtraVolumeMounts {
		p := fmt.Sprintf("%s: storage.extraVolumeMounts[%d]", e.Block, i)
		switch what, sync := syncVolumes(e)[m.Name]; {
		case sync:
			f.errorf("%s %s", p, syncVolumeRefusal(m.Name, what))
		case !vols[m.Name]:
			f.errorf("%s mounts volume %q, which no volume of the pod has: %s", p, m.Name, missingVolumeFix(e, m.Name))
		}
		mountPath(f, p, m.MountPath, seen)
		apiProblems(f, p, kubeapi.VolumeMount(m, kubeapi.Privileged(e.Cfg.Pod.ContainerSecurityContext)))
	}
}

// oldModelCacheVolume is what the model cache volume was named before it
// took the chart's name; a mount that still names it gets the new name.
const oldModelCacheVolume = "model-cache"

// missingVolumeFix says how to fix a mount of a volume the pod lacks.
func missingVolumeFix(e resolve.Engine, name string) string {
	if name == oldModelCacheVolume && resolve.Enabled(e.Cfg.Storage.Enabled) {
		return fmt.Sprintf("the model cache volume is named %q, as in the Helm chart; mount that", e.CacheVolume)
	}
	return "add it to storage.extraVolumes"
}

// validateOwnVolumeNames refuses an extra volume named like a volume the
// stack gives the pod under a name derived from the stack's
// (ValidateBlocks refuses the fixed names).
func validateOwnVolumeNames(f *Findings, e resolve.Engine) {
	own := map[string]string{}
	if resolve.Enabled(e.Cfg.Storage.Enabled) {
		own[e.CacheVolume] = "model cache"
	}
	if e.Model.ChatTemplate != "" {
		own[e.TemplatesVolume] = "chat template"
	}
	for i, v := range e.Cfg.Storage.ExtraVolumes {
		if what, ok := own[v.Name]; ok {
			f.errorf("%s: storage.extraVolumes[%d].name %q is the name of the stack's %s volume: choose another name, or mount that volume with storage.extraVolumeMounts", e.Block, i, v.Name, what)
		}
		if what, ok := syncVolumes(e)[v.Name]; ok {
			f.errorf("%s: storage.extraVolumes[%d].name %q is the name of the %s volume of the adapter sync container: choose another name", e.Block, i, v.Name, what)
		}
	}
}

// syncVolumes are the adapter sync container's own volumes, by name, with
// what each holds: no other container mounts them (the engine mounts the
// downloads read-only, as the stack renders it).
func syncVolumes(e resolve.Engine) map[string]string {
	if !e.RuntimeAdapters {
		return nil
	}
	return map[string]string{
		adaptersync.ConfigVolume:   "configuration",
		adaptersync.TokenVolume:    "token",
		adaptersync.DownloadVolume: "downloads",
	}
}

// syncVolumeRefusal is the message on a user's mount of a sync volume.
func syncVolumeRefusal(name, what string) string {
	return fmt.Sprintf("mounts volume %q, the adapter sync container's %s, which no other container may mount (the token is the sync identity's, the rest only the sync container reads or writes); remove the mount", name, what)
}

// annotationSize refuses annotations larger than the API server takes.
func annotationSize(f *Findings, field string, m map[string]string) {
	if err := apivalidation.ValidateAnnotationsSize(m); err != nil {
		f.errorf("%s are too large: %v; shorten them", field, err)
	}
}

// maxProgressDeadline is the most an engine's progress deadline (its startup
// probe's budget and the rollout margin, in seconds) can be: an int32.
const maxProgressDeadline = math.MaxInt32

// validateStartupBudget refuses startup probe overrides whose budget does
// not fit the Deployment's progressDeadlineSeconds.
func validateStartupBudget(f *Findings, e resolve.Engine) {
	pr := build.StartupProbe(e)
	budget := int64(pr.InitialDelaySeconds) + int64(pr.PeriodSeconds)*int64(pr.FailureThreshold)
	if budget+build.RolloutMarginSeconds > maxProgressDeadline {
		f.errorf("%s: probes.startup allows %d seconds (initialDelaySeconds + periodSeconds × failureThreshold), more than the %d a Deployment's progress deadline can hold: lower periodSeconds or failureThreshold",
			e.Block, budget, maxProgressDeadline-build.RolloutMarginSeconds)
	}
}
