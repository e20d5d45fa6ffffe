// Package kubelet is a kubelet stand-in for the e2e control plane
// (e2e/cluster): it registers a GPU Node and keeps it Ready, and reports the
// pods bound to it as a kubelet would, without running any container.
//
// A pod's annotation Annotation picks what its containers do (Ready when
// absent). Pod IPs come from the documentation range 198.51.100.0/24 (the
// API server refuses loopback addresses in EndpointSlices), the node's
// address is 127.0.0.1; nothing listens on them, and nothing in the tests
// connects to them.
package kubelet

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// Annotation on a pod selects the behaviour of its containers: one of
// Ready (also when absent), ImagePullBackOff, Starting and CrashLoop. A pod
// with another value is left as it is (and logged). Ready, for a pod that
// runs to completion (restartPolicy Never or OnFailure, a Job's), is
// Succeeded: its containers exit with code 0.
const Annotation = "e2e.vllm.ai/kubelet"

// Behaviours, the values of Annotation. Each applies to every container;
// init containers have completed (native sidecars run and are ready).
const (
	// Ready: phase Running, every container running and ready.
	Ready = "ready"
	// ImagePullBackOff: phase Pending, every container waiting with reason
	// ImagePullBackOff.
	ImagePullBackOff = "image-pull-backoff"
	// Starting: phase Running, containers running but not started nor ready,
	// as while a startup probe has not passed.
	Starting = "starting"
	// CrashLoop: phase Running, containers waiting with reason
	// CrashLoopBackOff after restarts (restartCount 3, last exit code 1).
	CrashLoop = "crashloop"
)

// GPU is the extended resource of NVIDIA's device plugin.
const GPU corev1.ResourceName = "nvidia.com/gpu"

// DefaultNodeName is the node's name unless Options.NodeName says otherwise.
const DefaultNodeName = "gpu-node-0"

// Node addresses: nothing listens there. The API server would dial the node
// only for logs, exec or port-forward, so that must stay on this machine.
const nodeIP = "127.0.0.1"

// The node lifecycle controller marks a node NotReady when neither its Lease
// nor its Ready condition was renewed within its grace period (50 s by
// default since v1.32, 40 s before); renew well within it, also on a busy
// machine.
const (
	heartbeat     = 10 * time.Second
	leaseDuration = 40 // seconds, what a kubelet writes
)

// Options configure a Kubelet.
type Options struct {
	// NodeName is the Node's name; default DefaultNodeName.
	NodeName string
	// Capacity overrides or adds to the node's default capacity (cpu 64,
	// memory 512Gi, pods 110, nvidia.com/gpu 8). Allocatable is the same.
	Capacity corev1.ResourceList
	// Labels are added to the node's (kubernetes.io/hostname, os, arch).
	Labels map[string]string
	// TempDir is where the directory of the node's hostPath volumes is made;
	// default os.TempDir(). Stop removes it.
	TempDir string
	// Logf reports what the kubelet cannot do; nil is silent.
	Logf func(format string, args ...any)
}

// A Kubelet runs until Stop or the end of the context it was started with.
type Kubelet struct {
	name   string
	o      Options
	core   corev1client.CoreV1Interface
	leases coordinationv1client.LeaseInterface
	dir    string // hostPath volumes
	since  metav1.Time

	// The pods bound to the node, by namespace/name, as last listed or
	// watched; the worker syncs the keys in queue.
	mu     sync.Mutex
	pods   map[string]*corev1.Pod
	synced chan struct{} // closed after the first list
	queue  workqueue.TypedRateLimitingInterface[string]
	nextIP int // only the worker allocates

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// Start registers the node, starts reporting its pods and waits until the
// node is Ready and no longer carries the not-ready taint (the
// TaintNodesByCondition admission adds it to a new Node; the node lifecycle
// controller removes it), so the scheduler places pods on it. ctx bounds
// the kubelet's life, not only the start.
func Start(ctx context.Context, cfg *rest.Config, o Options) (_ *Kubelet, err error) {
	if o.NodeName == "" {
		o.NodeName = DefaultNodeName
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	k := &Kubelet{name: o.NodeName, o: o, since: metav1.Now().Rfc3339Copy()}
	if k.core, err = corev1client.NewForConfig(cfg); err != nil {
		return nil, err
	}
	coord, err := coordinationv1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	k.leases = coord.Leases(corev1.NamespaceNodeLease)
	if k.dir, err = os.MkdirTemp(o.TempDir, "kubelet-"+k.name+"-"); err != nil {
		return nil, err
	}
	ctx, k.cancel = context.WithCancel(ctx)
	defer func() {
		if err != nil {
			k.Stop()
		}
	}()

	if err := k.register(ctx, cfg); err != nil {
		return nil, fmt.Errorf("cannot register node %s: %w", k.name, err)
	}

	k.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 5*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{})
	k.pods, k.synced = map[string]*corev1.Pod{}, make(chan struct{})
	k.wg.Add(3)
	go func() { defer k.wg.Done(); k.watch(ctx) }()
	go func() { defer k.wg.Done(); k.work(ctx) }()
	go func() {
		defer k.wg.Done()
		wait.UntilWithContext(ctx, k.renew, heartbeat)
	}()
	context.AfterFunc(ctx, k.queue.ShutDown) // ends the worker

	var last string
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-k.synced:
		default:
			last = "its pods not listed yet"
			return false, nil
		}
		n, err := k.core.Nodes().Get(ctx, k.name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = fmt.Sprintf("taints %v", n.Spec.Taints)
		for _, t := range n.Spec.Taints {
			if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("node %s not ready: %w (%s)", k.name, err, last)
	}
	o.Logf("node %s is ready", k.name)
	return k, nil
}

// NodeName is the Node's name.
func (k *Kubelet) NodeName() string { return k.name }

// Stop ends the kubelet, waits for its goroutines and removes its directory.
// The Node stays, as when a real kubelet stops; a Kubelet started again with
// the same name takes it over. Stop is safe to call more than once.
func (k *Kubelet) Stop() {
	k.once.Do(func() {
		k.cancel()
		k.wg.Wait()
		os.RemoveAll(k.dir)
	})
}

// register creates the Node, or takes over an existing one and rewrites its
// status.
func (k *Kubelet) register(ctx context.Context, cfg *rest.Config) error {
	version := "v0.0.0"
	if dc, err := discovery.NewDiscoveryClientForConfig(cfg); err == nil {
		if v, err := dc.ServerVersion(); err == nil {
			version = v.GitVersion
		}
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("512Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
		GPU:                   resource.MustParse("8"),
	}
	maps.Copy(capacity, k.o.Capacity)
	labels := map[string]string{
		corev1.LabelHostname:   k.name,
		corev1.LabelOSStable:   "linux",
		corev1.LabelArchStable: "amd64",
	}
	maps.Copy(labels, k.o.Labels)
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: k.name, Labels: labels},
		Spec:       corev1.NodeSpec{PodCIDR: "198.51.100.0/24", PodCIDRs: []string{"198.51.100.0/24"}},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				k.readyCondition(),
				k.condition(corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				k.condition(corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				k.condition(corev1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: nodeIP},
				{Type: corev1.NodeHostName, Address: k.name},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: k.name, SystemUUID: k.name, BootID: k.name,
				KernelVersion: "6.1.0", OSImage: "e2e stand-in", OperatingSystem: "linux", Architecture: "amd64",
				ContainerRuntimeVersion: "e2e://0.0.0", KubeletVersion: version,
			},
		},
	}
	_, err := k.core.Nodes().Create(ctx, node, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		old, err := k.core.Nodes().Get(ctx, k.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		old.Status = node.Status
		_, err = k.core.Nodes().UpdateStatus(ctx, old, metav1.UpdateOptions{})
		return err
	})
}

func (k *Kubelet) condition(t corev1.NodeConditionType, reason, msg string) corev1.NodeCondition {
	return corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: reason, Message: msg,
		LastHeartbeatTime: k.since, LastTransitionTime: k.since}
}

func (k *Kubelet) readyCondition() corev1.NodeCondition {
	return corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		Reason: "KubeletReady", Message: "kubelet is posting ready status",
		LastHeartbeatTime: metav1.Now().Rfc3339Copy(), LastTransitionTime: k.since}
}

// renew renews the node's Lease and the heartbeat of its Ready condition
// (which also sets it back to True, should the node lifecycle controller
// have given up on it). A failure is retried at the next heartbeat.
func (k *Kubelet) renew(ctx context.Context) {
	if err := k.renewLease(ctx); err != nil && ctx.Err() == nil {
		k.o.Logf("node %s: cannot renew its Lease: %v", k.name, err)
	}
	// A strategic merge patch replaces only the Ready condition (conditions
	// merge on type), as the kubelet's status update does.
	patch := fmt.Appendf(nil, `{"status":{"conditions":[%s]}}`, mustJSON(k.readyCondition()))
	if _, err := k.core.Nodes().PatchStatus(ctx, k.name, patch); err != nil && ctx.Err() == nil {
		k.o.Logf("node %s: cannot update its Ready condition: %v", k.name, err)
	}
}

func (k *Kubelet) renewLease(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	l, err := k.leases.Get(ctx, k.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		n, err := k.core.Nodes().Get(ctx, k.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		// Owned by the Node, so that the garbage collector deletes it with it.
		_, err = k.leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID,
			}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &k.name, LeaseDurationSeconds: ptr.To[int32](leaseDuration), RenewTime: &now},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &k.name, ptr.To[int32](leaseDuration), &now
	_, err = k.leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}

// watch lists and watches the pods bound to the node, again after the watch
// ends or fails, and queues those that changed. (A client-go informer would
// do, but k8s.io/client-go/tools/cache needs github.com/pmezard/go-difflib,
// which e2e/go.mod does not list.)
func (k *Kubelet) watch(ctx context.Context) {
	pods := k.core.Pods(metav1.NamespaceAll)
	onNode := fields.OneTermEqualSelector("spec.nodeName", k.name).String()
	first := true
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: onNode})
		if err != nil {
			if ctx.Err() == nil {
				k.o.Logf("node %s: cannot list its pods: %v", k.name, err)
			}
			return
		}
		k.mu.Lock()
		clear(k.pods)
		for i := range list.Items {
			p := &list.Items[i]
			k.pods[p.Namespace+"/"+p.Name] = p
			k.queue.Add(p.Namespace + "/" + p.Name)
		}
		k.mu.Unlock()
		if first {
			close(k.synced)
			first = false
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: onNode, ResourceVersion: list.ResourceVersion})
		if err != nil {
			return
		}
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok { // an error, e.g. 410 Gone: list again
				return
			}
			key := p.Namespace + "/" + p.Name
			k.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(k.pods, key)
			} else {
				k.pods[key] = p
			}
			k.mu.Unlock()
			k.queue.Add(key)
		}
	}, time.Second)
}

// work syncs the queued pods, one at a time, until the queue shuts down.
func (k *Kubelet) work(ctx context.Context) {
	for {
		key, quit := k.queue.Get()
		if quit {
			return
		}
		if err := k.sync(ctx, key); err != nil && ctx.Err() == nil {
			k.o.Logf("node %s: pod %s: %v (retrying)", k.name, key, err)
			k.queue.AddRateLimited(key)
		} else {
			k.queue.Forget(key)
		}
		k.queue.Done(key)
	}
}

// sync deletes the pod if it is being deleted, or else brings its status to
// what its behaviour shows. A conflict is retried on a fresh read.
func (k *Kubelet) sync(ctx context.Context, key string) error {
	k.mu.Lock()
	pod, ok := k.pods[key]
	k.mu.Unlock()
	if !ok {
		return nil
	}
	pods := k.core.Pods(pod.Namespace)
	if pod.DeletionTimestamp != nil {
		// What a kubelet does once the containers have stopped. The UID
		// precondition spares a new pod of the same name (a StatefulSet's).
		err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &pod.UID},
		})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		st, ok := k.status(pod)
		if !ok || equality.Semantic.DeepEqual(st, pod.Status) {
			return nil
		}
		p := pod.DeepCopy()
		p.Status = st
		_, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			fresh, gerr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			if fresh.UID != pod.UID || fresh.DeletionTimestamp != nil {
				return nil // another pod now, or being deleted: its own event follows
			}
			pod = fresh
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// status is the pod's status as its behaviour shows it; false for an
// unknown behaviour. Times already reported are kept, so that a second
// call gives the same status and the update stops.
func (k *Kubelet) status(pod *corev1.Pod) (corev1.PodStatus, bool) {
	behaviour := pod.Annotations[Annotation]
	switch behaviour {
	case "":
		behaviour = Ready
	case Ready, ImagePullBackOff, Starting, CrashLoop:
	default:
		k.o.Logf("node %s: pod %s/%s: unknown %s %q, left as it is", k.name, pod.Namespace, pod.Name, Annotation, behaviour)
		return corev1.PodStatus{}, false
	}
	now := metav1.Now().Rfc3339Copy()
	old := pod.Status
	st := *old.DeepCopy()
	st.ObservedGeneration = pod.Generation
	st.HostIP, st.HostIPs = nodeIP, []corev1.HostIP{{IP: nodeIP}}
	if st.PodIP == "" {
		ip := fmt.Sprintf("198.51.100.%d", 1+k.nextIP%254)
		k.nextIP++
		st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	}
	if st.StartTime == nil {
		st.StartTime = &now
	}

	st.InitContainerStatuses = nil
	for _, c := range pod.Spec.InitContainers {
		prev := find(old.InitContainerStatuses, c.Name)
		s := containerStatus(pod, c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: startedAt(prev, now)}
			s.Started, s.Ready = ptr.To(true), true
		} else {
			completed(&s, prev, now)
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, s)
	}

	st.ContainerStatuses = nil
	var unready []string
	// A pod that runs to completion (a Job's) does, with exit code 0: what
	// Ready means for a program that ends.
	completes := behaviour == Ready && pod.Spec.RestartPolicy != corev1.RestartPolicyAlways && pod.Spec.RestartPolicy != ""
	for _, c := range pod.Spec.Containers {
		prev := find(old.ContainerStatuses, c.Name)
		s := containerStatus(pod, c)
		if completes {
			completed(&s, prev, now)
			st.ContainerStatuses = append(st.ContainerStatuses, s)
			continue
		}
		switch behaviour {
		case Ready:
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: startedAt(prev, now)}
			s.Started, s.Ready = ptr.To(true), true
		case Starting:
			s.State.Running = &corev1.ContainerStateRunning{StartedAt: startedAt(prev, now)}
			s.Started = ptr.To(false)
		case ImagePullBackOff:
			s.ImageID, s.ContainerID = "", ""
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
				Message: fmt.Sprintf("Back-off pulling image %q", c.Image)}
			s.Started = ptr.To(false)
		case CrashLoop:
			s.RestartCount = 3
			s.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: fmt.Sprintf("back-off 40s restarting failed container=%s pod=%s_%s(%s)", c.Name, pod.Name, pod.Namespace, pod.UID)}
			t := &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", ContainerID: s.ContainerID,
				StartedAt: now, FinishedAt: now}
			if prev != nil && prev.LastTerminationState.Terminated != nil {
				t.StartedAt, t.FinishedAt = prev.LastTerminationState.Terminated.StartedAt, prev.LastTerminationState.Terminated.FinishedAt
			}
			s.LastTerminationState.Terminated, s.Started = t, ptr.To(false)
		}
		if !s.Ready {
			unready = append(unready, c.Name)
		}
		st.ContainerStatuses = append(st.ContainerStatuses, s)
	}

	st.Phase = corev1.PodRunning
	if behaviour == ImagePullBackOff {
		st.Phase = corev1.PodPending // no container has ever started
	}
	ready := corev1.ConditionTrue
	var reason, msg string
	if len(unready) > 0 {
		ready, reason, msg = corev1.ConditionFalse, "ContainersNotReady", fmt.Sprintf("containers with unready status: %v", unready)
	}
	if completes {
		// The kubelet's words for a pod whose containers all succeeded.
		st.Phase, ready, reason = corev1.PodSucceeded, corev1.ConditionFalse, "PodCompleted"
	}
	setCondition(&st, pod.Generation, now, corev1.PodReadyToStartContainers, corev1.ConditionTrue, "", "")
	setCondition(&st, pod.Generation, now, corev1.PodInitialized, corev1.ConditionTrue, "", "")
	setCondition(&st, pod.Generation, now, corev1.ContainersReady, ready, reason, msg)
	setCondition(&st, pod.Generation, now, corev1.PodReady, ready, reason, msg)
	setCondition(&st, pod.Generation, now, corev1.PodScheduled, corev1.ConditionTrue, "", "")
	return st, true
}

// completed is a container that ran and exited with code 0, at the time
// first reported.
func completed(s *corev1.ContainerStatus, prev *corev1.ContainerStatus, now metav1.Time) {
	t := &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", ContainerID: s.ContainerID,
		StartedAt: now, FinishedAt: now}
	if prev != nil && prev.State.Terminated != nil {
		t.StartedAt, t.FinishedAt = prev.State.Terminated.StartedAt, prev.State.Terminated.FinishedAt
	}
	s.State.Terminated, s.Started = t, ptr.To(false)
}

// containerStatus has what every state shares: a container ID and an image
// ID derived from the pod and the image, so that they do not change.
func containerStatus(pod *corev1.Pod, c corev1.Container) corev1.ContainerStatus {
	id := sha256.Sum256([]byte(string(pod.UID) + "/" + c.Name))
	digest := sha256.Sum256([]byte(c.Image))
	return corev1.ContainerStatus{
		Name:        c.Name,
		Image:       c.Image,
		ImageID:     fmt.Sprintf("%s@sha256:%x", c.Image, digest),
		ContainerID: fmt.Sprintf("e2e://%x", id),
	}
}

func find(ss []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range ss {
		if ss[i].Name == name {
			return &ss[i]
		}
	}
	return nil
}

func startedAt(prev *corev1.ContainerStatus, now metav1.Time) metav1.Time {
	if prev != nil && prev.State.Running != nil {
		return prev.State.Running.StartedAt
	}
	return now
}

// setCondition sets a pod condition, keeping its transition time while its
// status stays.
func setCondition(st *corev1.PodStatus, generation int64, now metav1.Time, t corev1.PodConditionType, s corev1.ConditionStatus, reason, msg string) {
	c := corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg, ObservedGeneration: generation, LastTransitionTime: now}
	for i := range st.Conditions {
		if st.Conditions[i].Type != t {
			continue
		}
		if st.Conditions[i].Status == s {
			if t == corev1.PodScheduled {
				return // the scheduler's
			}
			c.LastTransitionTime = st.Conditions[i].LastTransitionTime
		}
		st.Conditions[i] = c
		return
	}
	st.Conditions = append(st.Conditions, c)
}

// CreatePersistentVolumes creates n hostPath PersistentVolumes of size (e.g.
// "50Gi") on the node, with no StorageClass and access modes ReadWriteOnce
// and ReadWriteMany, which the controller manager's PV binder binds to claims
// that ask for no class. (A claim without storageClassName keeps none as long
// as the cluster has no default StorageClass, as here: the DefaultStorageClass
// admission and the PV controller's retroactive assignment set one only if a
// default class exists.) The reclaim policy is Retain, so that the
// controller manager never removes a directory (its hostPath deleter would,
// for a path under /tmp/); a volume released by its claim is not bound
// again. The directories are under the kubelet's temporary directory.
func (k *Kubelet) CreatePersistentVolumes(ctx context.Context, n int, size string) ([]*corev1.PersistentVolume, error) {
	q, err := resource.ParseQuantity(size)
	if err != nil {
		return nil, err
	}
	var pvs []*corev1.PersistentVolume
	for range n {
		dir, err := os.MkdirTemp(k.dir, "pv-")
		if err != nil {
			return pvs, err
		}
		pv, err := k.core.PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: k.name + "-" + filepath.Base(dir)},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: q},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				PersistentVolumeSource: corev1.PersistentVolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectory)},
				},
				// A hostPath volume exists on its node only: the scheduler
				// places the claim's pods there.
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{k.name},
					}},
				}}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return pvs, err
		}
		pvs = append(pvs, pv)
	}
	return pvs, nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
