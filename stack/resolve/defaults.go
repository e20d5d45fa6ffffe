package resolve

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

const (
	DefaultCacheServerImg = "lmcache/vllm-openai:latest"
)

const (
	DefaultCacheServerSerde = "naive"
)

// Defaults of the ProductionStack API. The XRD carries the same values for
// the top-level fields (xrd/v1alpha1.TopLevelDefaults); the function applies
// them again because `crossplane render` does not apply the XRD, and because
// per-model items inherit them.
const (
	DefaultEngineImage        = "vllm/vllm-openai:latest"
	DefaultImagePullRegistry  = "docker.io"
	DefaultDeploymentStrategy = "RollingUpdate"
	DefaultReplicas           = int32(1)
	DefaultGPUType            = "nvidia.com/gpu"
	DefaultStorageSize        = "50Gi"
	DefaultHFTokenKey         = "token"
	DefaultRouterType         = "roundrobin"
	DefaultSessionKey         = "x-user-id"
	DefaultRouterImage        = "lmcache/lmstack-router"
	DefaultRouterTag          = "latest"
	DefaultRouterReplicas     = int32(1)
	DefaultShmSize            = "20Gi"
	// The LMCache controller's ports in the router (the router's own
	// default, then the chart's), the engines' LMCache worker port, and the
	// seconds between worker heartbeats, for kvaware routing.
	DefaultLMCacheControllerPort          = int32(9000)
	DefaultLMCacheControllerReplyPort     = int32(9001)
	DefaultLMCacheControllerHeartbeatPort = int32(9002)
	DefaultLMCacheWorkerPort              = int32(8001)
	DefaultLMCacheWorkerHeartbeatTime     = int32(10)
)

// ResolveConfig applies defaults to a merged engine configuration: the
// Input's defaults first, then the API's. Every block comes back non-nil.
func ResolveConfig(c v1alpha1.EngineConfig, in *v1beta1.Input) v1alpha1.EngineConfig {
	if c.DeploymentStrategy == "" {
		c.DeploymentStrategy = DefaultDeploymentStrategy
	}
	if c.Replicas == nil {
		c.Replicas = ptr.To(DefaultReplicas)
	}

	v := &v1alpha1.VLLMConfig{}
	if c.VLLMConfig != nil {
		*v = *c.VLLMConfig
	}
	if v.Image == "" {
		v.Image = Or(in.GetEngine().Image, DefaultEngineImage)
	}
	if v.ImagePullRegistry == "" {
		v.ImagePullRegistry = Or(in.GetEngine().ImagePullRegistry, DefaultImagePullRegistry)
	}
	if v.HFTokenSecret != nil && v.HFTokenSecret.Key == "" {
		v.HFTokenSecret = &v1alpha1.SecretKeySelector{Name: v.HFTokenSecret.Name, Key: DefaultHFTokenKey}
	}
	c.VLLMConfig = v

	l := &v1alpha1.LMCacheConfig{}
	if c.LMCacheConfig != nil {
		*l = *c.LMCacheConfig
	}
	c.LMCacheConfig = l

	r := &v1alpha1.Resources{}
	if c.Resources != nil {
		*r = *c.Resources
	}
	if r.GPUType == "" {
		r.GPUType = DefaultGPUType
	}
	c.Resources = r

	s := &v1alpha1.Storage{}
	if c.Storage != nil {
		*s = *c.Storage
	}
	if s.Enabled == nil {
		s.Enabled = ptr.To(true)
	}
	if s.ExistingClaimName == "" && s.EmptyDir == nil {
		if s.Size == "" {
			s.Size = Or(in.GetStorage().Size, DefaultStorageSize)
		}
		if s.StorageClassName == nil && in.GetStorage().StorageClassName != "" {
			s.StorageClassName = ptr.To(in.GetStorage().StorageClassName)
		}
		if len(s.AccessModes) == 0 {
			s.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		}
	}
	c.Storage = s

	if c.Scheduling == nil {
		c.Scheduling = &v1alpha1.Scheduling{}
	}
	if c.Pod == nil {
		c.Pod = &v1alpha1.PodConfig{}
	}
	if c.Probes == nil {
		c.Probes = &v1alpha1.Probes{}
	}
	if c.Service == nil {
		c.Service = &v1alpha1.EngineService{}
	}
	return c
}

// resolveRouter applies defaults to the router's configuration.
func resolveRouter(rc *v1alpha1.RouterConfig, in *v1beta1.Input) Router {
	if rc == nil {
		rc = &v1alpha1.RouterConfig{}
	}
	r := Router{
		RouterType: Or(rc.RouterType, DefaultRouterType),
		SessionKey: Or(rc.SessionKey, DefaultSessionKey),
		Image:      rc.Image,
		Replicas:   ptr.Deref(rc.Replicas, DefaultRouterReplicas),
	}
	if r.Image == "" {
		r.Image = Or(in.GetRouter().Image, DefaultRouterImage) + ":" + Or(in.GetRouter().Tag, DefaultRouterTag)
	}
	r.Version, r.VersionErr = resolveRouterVersion(r.Image, rc.RouterVersion, in)
	if rc.Resources != nil {
		r.Resources = *rc.Resources.DeepCopy()
	} else {
		r.Resources = defaultRouterResources()
	}
	r.PullPolicy = corev1.PullPolicy(rc.ImagePullPolicy)
	r.PullSecret = rc.ImagePullSecretName
	r.Scheduling = rc.Scheduling
	r.PodAnnots = rc.PodAnnotations
	r.ServiceAccount = rc.ServiceAccountName
	r.ExtraVolumes, r.ExtraMounts = rc.ExtraVolumes, rc.ExtraVolumeMounts
	r.PrefixMinMatch = rc.PrefixMinMatchLength
	if r.RouterType == RoutingKVAware {
		r.ControllerPort = ptr.Deref(rc.LMCacheControllerPort, DefaultLMCacheControllerPort)
		r.ReplyPort = ptr.Deref(rc.LMCacheControllerReplyPort, DefaultLMCacheControllerReplyPort)
		r.HeartbeatPort = ptr.Deref(rc.LMCacheControllerHeartbeatPort, DefaultLMCacheControllerHeartbeatPort)
		r.KVThreshold = rc.KVAwareThreshold
	}
	r.DiscoveryType = rc.K8sServiceDiscoveryType
	r.ExtraArgs = rc.ExtraArgs
	r.Env = rc.Env
	if k := rc.APIKeySecret; k != nil {
		r.APIKey = &v1alpha1.SecretKeySelector{Name: k.Name, Key: Or(k.Key, DefaultHFTokenKey)}
	}
	r.ServiceType, r.ServicePort = corev1.ServiceTypeClusterIP, names.ServicePort
	if svc := rc.Service; svc != nil {
		r.ServiceType = corev1.ServiceType(Or(svc.Type, string(corev1.ServiceTypeClusterIP)))
		r.ServicePort = ptr.Deref(svc.Port, names.ServicePort)
		r.ServiceAnnots = svc.Annotations
		r.NodePort = svc.NodePort
	}
	r.PDB = rc.PodDisruptionBudget
	r.Autoscaling = rc.Autoscaling
	r.Ingress = rc.Ingress
	r.HttpRoute = rc.HTTPRoute
	return r
}

const (
	RoutingSession = "session"
)

const (
	RoutingPrefixAware = "prefixaware"
)

const (
	RoutingKVAware = "kvaware"
)

const (
	DiscoveryServiceName = "service-name"
)

func defaultRouterResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("400m"),
			corev1.ResourceMemory: resource.MustParse("1000Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceMemory: resource.MustParse("1000Mi"),
		},
	}
}

// The autoscalers of autoscaling.type; a block that names none runs KEDA.
const (
	AutoscalerKEDA = "keda"
	AutoscalerHPA  = "hpa"
)

// AutoscalerType is the autoscaler an autoscaling block asks for: its type,
// else KEDA.
func AutoscalerType(a *v1alpha1.Autoscaling) string { return Or(a.Type, AutoscalerKEDA) }
