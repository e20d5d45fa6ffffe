package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	batchv1client "k8s.io/client-go/kubernetes/typed/batch/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	discoveryv1client "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/e2e/cluster"
)

// The control plane (with kube-scheduler) and the kubelet every test
// shares, started by TestMain; nil when KUBE_BIN_DIR is not set.
var (
	cp    *cluster.Cluster
	kl    *Kubelet
	core  corev1client.CoreV1Interface
	apps  appsv1client.AppsV1Interface
	coord coordinationv1client.CoordinationV1Interface
	disco discoveryv1client.DiscoveryV1Interface
)

func TestMain(m *testing.M) { os.Exit(runMain(m)) }

func runMain(m *testing.M) (code int) {
	binDir := os.Getenv("KUBE_BIN_DIR")
	if binDir == "" {
		return m.Run() // every test skips
	}
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "kubelet e2e: "+format+"\n", args...) }
	ctx := context.Background()
	var err error
	if cp, err = cluster.Start(ctx, cluster.Options{BinDir: binDir, Scheduler: true, Logf: logf}); err != nil {
		logf("cannot start the control plane: %v", err)
		return 1
	}
	defer func() {
		if kl != nil {
			kl.Stop()
		}
		if code != 0 {
			cp.WriteLogs(os.Stderr, 40)
		}
		if err := cp.Stop(); err != nil {
			logf("cannot stop the control plane: %v", err)
			code = 1
		}
	}()
	cfg := cp.Config()
	if core, err = corev1client.NewForConfig(cfg); err != nil {
		logf("%v", err)
		return 1
	}
	if apps, err = appsv1client.NewForConfig(cfg); err != nil {
		logf("%v", err)
		return 1
	}
	if coord, err = coordinationv1client.NewForConfig(cfg); err != nil {
		logf("%v", err)
		return 1
	}
	if disco, err = discoveryv1client.NewForConfig(cfg); err != nil {
		logf("%v", err)
		return 1
	}
	start := time.Now()
	if kl, err = Start(ctx, cfg, Options{Logf: logf}); err != nil {
		logf("cannot start the kubelet: %v", err)
		return 1
	}
	logf("node %s ready %s after the kubelet's start", kl.NodeName(), time.Since(start).Round(100*time.Millisecond))
	return m.Run()
}

// need skips the test without a control plane.
func need(t *testing.T) {
	t.Helper()
	if cp == nil {
		t.Skip("KUBE_BIN_DIR is not set; hack/e2e.sh sets it (or: KUBE_BIN_DIR=$(bash tools/kube/build.sh | tail -n1))")
	}
}

// namespace creates a namespace for one test and waits for its default
// ServiceAccount (pods cannot be created before it exists).
func namespace(t *testing.T, name string) string {
	t.Helper()
	ctx := t.Context()
	if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the default ServiceAccount of "+name, func(ctx context.Context) (string, error) {
		_, err := core.ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		return "", nil
	})
	return name
}

// eventually polls check until it reports no mismatch (""), for up to two
// minutes (the machine may run other control planes at the same time).
func eventually(t *testing.T, what string, check func(context.Context) (mismatch string, err error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		last, err = check(ctx)
		return last == "" && err == nil, err
	})
	if err != nil {
		t.Fatalf("%s: %v (last: %s)", what, err, last)
	}
}

const image = "vllm/vllm-openai:v0.8.3"

// gpus asks for n GPUs (none for 0). The tests' pods together ask for no
// more than the node's 8 at any time.
func gpus(n int) corev1.ResourceRequirements {
	if n == 0 {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{GPU: *resource.NewQuantity(int64(n), resource.DecimalSI)}}
}

func podSpec(n int) corev1.PodSpec {
	return corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "fetch-model", Image: "busybox:1.37"}},
		Containers: []corev1.Container{
			{Name: "vllm", Image: image, Resources: gpus(n)},
			{Name: "metrics", Image: "busybox:1.37"},
		},
	}
}

func deployment(name string, replicas int32, n int) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec(n)},
		},
	}
}

func pod(name, behaviour string, n int) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: podSpec(n)}
	if behaviour != "" {
		p.Annotations = map[string]string{Annotation: behaviour}
	}
	return p
}

// waitAvailable waits until every replica of the Deployment's current
// template is available and no other pod remains.
func waitAvailable(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, "Deployment "+ns+"/"+name+" available", func(ctx context.Context) (string, error) {
		d, err := apps.Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		s, want := d.Status, *d.Spec.Replicas
		available := false
		for _, c := range s.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
				available = true
			}
		}
		if d.Status.ObservedGeneration < d.Generation || !available || s.Replicas != want || s.UpdatedReplicas != want || s.AvailableReplicas != want {
			return fmt.Sprintf("%+v", s), nil
		}
		return "", nil
	})
}

func podsOf(ctx context.Context, t *testing.T, ns, app string) []corev1.Pod {
	t.Helper()
	l, err := core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// A Deployment that asks for a GPU is scheduled onto the node, becomes
// Available, rolls to a new template, and its pods' status settles.
func TestDeploymentWithGPU(t *testing.T) {
	need(t)
	t.Parallel()
	ctx := t.Context()
	ns := namespace(t, "gpu-deployment")
	if _, err := apps.Deployments(ns).Create(ctx, deployment("vllm", 1, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, ns, "vllm")
	pods := podsOf(ctx, t, ns, "vllm")
	if len(pods) != 1 {
		t.Fatalf("%d pods, want 1", len(pods))
	}
	p := pods[0]
	if p.Spec.NodeName != kl.NodeName() {
		t.Errorf("pod %s on node %q, want %q", p.Name, p.Spec.NodeName, kl.NodeName())
	}
	if err := checkStatus(&p, Ready); err != nil {
		t.Error(err)
	}

	// The Service's EndpointSlice has the pod's address, ready (the API
	// server would refuse a loopback address there).
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "vllm"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "vllm"}, Ports: []corev1.ServicePort{{Port: 8000}}},
	}
	if _, err := core.Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod's address in the Service's EndpointSlice", func(ctx context.Context) (string, error) {
		l, err := disco.EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=vllm"})
		if err != nil {
			return "", err
		}
		var eps []string
		for _, s := range l.Items {
			for _, e := range s.Endpoints {
				eps = append(eps, fmt.Sprintf("%v ready %v", e.Addresses, ptr.Deref(e.Conditions.Ready, false)))
			}
		}
		if want := fmt.Sprintf("[%s] ready true", p.Status.PodIP); !slices.Equal(eps, []string{want}) {
			return fmt.Sprintf("endpoints %q, want %q", eps, want), nil
		}
		return "", nil
	})

	// The status settles: no update follows the kubelet's own.
	time.Sleep(3 * time.Second)
	again, err := core.Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != p.ResourceVersion {
		t.Errorf("pod %s still changes: resourceVersion %s, then %s; status %+v", p.Name, p.ResourceVersion, again.ResourceVersion, again.Status)
	}

	// A new template rolls out: the new pod becomes ready, the old one goes.
	patch := `{"spec":{"template":{"metadata":{"annotations":{"rollout":"2"}}}}}`
	if _, err := apps.Deployments(ns).Patch(ctx, "vllm", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, ns, "vllm")
	eventually(t, "the old pod gone", func(ctx context.Context) (string, error) {
		var names []string
		for _, q := range podsOf(ctx, t, ns, "vllm") {
			names = append(names, q.Name)
		}
		if len(names) != 1 || names[0] == p.Name {
			return fmt.Sprintf("pods %v", names), nil
		}
		return "", nil
	})
}

// A pod that asks for more GPUs than the node has stays Pending: the
// scheduler reports it Unschedulable.
func TestTooManyGPUs(t *testing.T) {
	need(t)
	t.Parallel()
	ctx := t.Context()
	ns := namespace(t, "too-many-gpus")
	if _, err := core.Pods(ns).Create(ctx, pod("nine", "", 9), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "PodScheduled False Unschedulable", func(ctx context.Context) (string, error) {
		p, err := core.Pods(ns).Get(ctx, "nine", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				if !strings.Contains(c.Message, "Insufficient nvidia.com/gpu") {
					return "", fmt.Errorf("unschedulable for another reason: %s", c.Message)
				}
				return "", nil
			}
		}
		return fmt.Sprintf("%+v", p.Status), nil
	})
	// And it stays so.
	time.Sleep(5 * time.Second)
	p, err := core.Pods(ns).Get(ctx, "nine", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
		t.Errorf("pod on node %q, phase %s; want unscheduled and Pending", p.Spec.NodeName, p.Status.Phase)
	}
}

// Each behaviour the annotation selects produces the status a kubelet
// reports, and it settles.
func TestBehaviours(t *testing.T) {
	need(t)
	t.Parallel()
	ns := namespace(t, "behaviours")
	for _, b := range []string{"", Ready, ImagePullBackOff, Starting, CrashLoop} {
		name := cmpOr(b, "default")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			if _, err := core.Pods(ns).Create(ctx, pod(name, b, 0), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var p *corev1.Pod
			eventually(t, "the status of "+cmpOr(b, "no behaviour"), func(ctx context.Context) (string, error) {
				var err error
				if p, err = core.Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
					return "", err
				}
				if err := checkStatus(p, cmpOr(b, Ready)); err != nil {
					return err.Error(), nil
				}
				return "", nil
			})
			time.Sleep(3 * time.Second)
			again, err := core.Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if again.ResourceVersion != p.ResourceVersion {
				t.Errorf("the status still changes: resourceVersion %s, then %s", p.ResourceVersion, again.ResourceVersion)
			}
		})
	}
}

// A Job's pod (restartPolicy Never) runs to completion: Succeeded, its
// containers ended with exit code 0, and the Job controller counts it, so
// the Job is Complete (as a model cache's fill Job in e2e-crossplane).
func TestRunToCompletion(t *testing.T) {
	need(t)
	t.Parallel()
	ns := namespace(t, "jobs")
	ctx := t.Context()
	batch, err := batchv1client.NewForConfig(cp.Config())
	if err != nil {
		t.Fatal(err)
	}
	spec := corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "fill", Image: image}}}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "fill"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}
	if _, err := batch.Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Job Complete", func(ctx context.Context) (string, error) {
		j, err := batch.Jobs(ns).Get(ctx, "fill", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return "", nil
			}
		}
		return fmt.Sprintf("conditions %v, succeeded %d", j.Status.Conditions, j.Status.Succeeded), nil
	})
	pods, err := core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=fill"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the Job's pods: %v (%v)", pods, err)
	}
	p := pods.Items[0]
	c := p.Status.ContainerStatuses
	if p.Status.Phase != corev1.PodSucceeded || len(c) != 1 || c[0].State.Terminated == nil || c[0].State.Terminated.ExitCode != 0 || c[0].State.Terminated.Reason != "Completed" {
		t.Errorf("the Job's pod: phase %s, containers %+v; want Succeeded, fill terminated with exit code 0", p.Status.Phase, c)
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady && (cond.Status != corev1.ConditionFalse || cond.Reason != "PodCompleted") {
			t.Errorf("the Job's pod is Ready %s (%s), want False (PodCompleted)", cond.Status, cond.Reason)
		}
	}
}

func cmpOr(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

var podNet = netip.MustParsePrefix("198.51.100.0/24")

// checkStatus returns what in p's status differs from what behaviour shows.
func checkStatus(p *corev1.Pod, behaviour string) error {
	s := p.Status
	var errs []error
	mismatch := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	wantPhase, ready := corev1.PodRunning, behaviour == Ready
	if behaviour == ImagePullBackOff {
		wantPhase = corev1.PodPending
	}
	if s.Phase != wantPhase {
		mismatch("phase %q, want %q", s.Phase, wantPhase)
	}
	if ip, err := netip.ParseAddr(s.PodIP); err != nil || !podNet.Contains(ip) || len(s.PodIPs) != 1 || s.PodIPs[0].IP != s.PodIP {
		mismatch("podIP %q, podIPs %v; want one in %s", s.PodIP, s.PodIPs, podNet)
	}
	if s.HostIP != "127.0.0.1" || len(s.HostIPs) != 1 {
		mismatch("hostIP %q, hostIPs %v", s.HostIP, s.HostIPs)
	}
	if s.StartTime == nil {
		mismatch("no startTime")
	}
	conds := map[corev1.PodConditionType]corev1.PodCondition{}
	for _, c := range s.Conditions {
		conds[c.Type] = c
	}
	for _, typ := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		c, want := conds[typ], corev1.ConditionTrue
		if !ready && (typ == corev1.ContainersReady || typ == corev1.PodReady) {
			want = corev1.ConditionFalse
			if c.Reason != "ContainersNotReady" {
				mismatch("condition %s reason %q, want ContainersNotReady", typ, c.Reason)
			}
		}
		if c.Status != want {
			mismatch("condition %s %q, want %s", typ, c.Status, want)
		}
	}

	if len(s.InitContainerStatuses) != 1 {
		mismatch("%d initContainerStatuses, want 1", len(s.InitContainerStatuses))
	} else if t := s.InitContainerStatuses[0].State.Terminated; t == nil || t.Reason != "Completed" || t.ExitCode != 0 {
		mismatch("init container state %+v, want terminated Completed", s.InitContainerStatuses[0].State)
	}
	if len(s.ContainerStatuses) != len(p.Spec.Containers) {
		return errors.Join(append(errs, fmt.Errorf("%d containerStatuses, want %d", len(s.ContainerStatuses), len(p.Spec.Containers)))...)
	}
	for i, cs := range s.ContainerStatuses {
		c := p.Spec.Containers[i]
		if cs.Name != c.Name || cs.Image != c.Image {
			mismatch("containerStatuses[%d] is %s with image %s, want %s with %s", i, cs.Name, cs.Image, c.Name, c.Image)
		}
		started := ptr.Deref(cs.Started, false)
		switch behaviour {
		case Ready, Starting:
			if cs.State.Running == nil || cs.Ready != ready || started != ready || cs.RestartCount != 0 || cs.ImageID == "" || cs.ContainerID == "" {
				mismatch("container %s: state %+v, ready %v, started %v, restarts %d, imageID %q, containerID %q; want running, ready and started %v",
					c.Name, cs.State, cs.Ready, started, cs.RestartCount, cs.ImageID, cs.ContainerID, ready)
			}
		case ImagePullBackOff:
			w := cs.State.Waiting
			if w == nil || w.Reason != "ImagePullBackOff" || w.Message != fmt.Sprintf("Back-off pulling image %q", c.Image) || cs.Ready || started {
				mismatch("container %s: state %+v, ready %v, started %v; want waiting ImagePullBackOff", c.Name, cs.State, cs.Ready, started)
			}
		case CrashLoop:
			w, last := cs.State.Waiting, cs.LastTerminationState.Terminated
			if w == nil || w.Reason != "CrashLoopBackOff" || !regexp.MustCompile(`^back-off \d+s restarting failed container=`).MatchString(w.Message) ||
				cs.RestartCount == 0 || last == nil || last.ExitCode == 0 || cs.Ready || started {
				mismatch("container %s: state %+v, last %+v, restarts %d, ready %v; want waiting CrashLoopBackOff after restarts", c.Name, cs.State, last, cs.RestartCount, cs.Ready)
			}
		}
	}
	return errors.Join(errs...)
}

// A claim without a StorageClass binds to one of the node's volumes, and a
// pod that mounts it runs on the node.
func TestClaimBindsVolume(t *testing.T) {
	need(t)
	t.Parallel()
	ctx := t.Context()
	ns := namespace(t, "claims")
	pvs, err := kl.CreatePersistentVolumes(ctx, 2, "100Gi")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, pv := range pvs {
		names = append(names, pv.Name)
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "models"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("50Gi")}},
		},
	}
	if _, err := core.PersistentVolumeClaims(ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the claim bound", func(ctx context.Context) (string, error) {
		c, err := core.PersistentVolumeClaims(ns).Get(ctx, "models", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if c.Spec.StorageClassName != nil {
			return "", fmt.Errorf("the claim got StorageClass %q", *c.Spec.StorageClassName)
		}
		if c.Status.Phase != corev1.ClaimBound {
			return fmt.Sprintf("phase %s", c.Status.Phase), nil
		}
		if !slices.Contains(names, c.Spec.VolumeName) {
			return "", fmt.Errorf("bound to %q, want one of %v", c.Spec.VolumeName, names)
		}
		return "", nil
	})

	p := pod("uses-claim", "", 0)
	p.Spec.Volumes = []corev1.Volume{{Name: "models", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models"},
	}}}
	if _, err := core.Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod that mounts the claim ready", func(ctx context.Context) (string, error) {
		p, err := core.Pods(ns).Get(ctx, "uses-claim", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if err := checkStatus(p, Ready); err != nil {
			return err.Error(), nil
		}
		return "", nil
	})
}

// The node stays Ready and untainted for longer than the node lifecycle
// controller's grace period, and its Lease is renewed.
func TestNodeStaysReady(t *testing.T) {
	need(t)
	t.Parallel()
	ctx := t.Context()
	lease := func() time.Time {
		l, err := coord.Leases(corev1.NamespaceNodeLease).Get(ctx, kl.NodeName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Spec.RenewTime.Time
	}
	first := lease()
	const hold = 65 * time.Second
	for end := time.Now().Add(hold); time.Now().Before(end); time.Sleep(time.Second) {
		n, err := core.Nodes().Get(ctx, kl.NodeName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(n.Spec.Taints) > 0 {
			t.Fatalf("node tainted: %v", n.Spec.Taints)
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				t.Fatalf("node not ready: %+v", c)
			}
		}
		if q := n.Status.Allocatable[GPU]; q.Value() != 8 {
			t.Fatalf("allocatable %s: %s, want 8", GPU, &q)
		}
	}
	if d := lease().Sub(first); d < hold-2*heartbeat {
		t.Errorf("the Lease was renewed %s later over %s", d, hold)
	}
}

// Deleting a Deployment removes its pods, and a namespace empties.
func TestDeletion(t *testing.T) {
	need(t)
	t.Parallel()
	ctx := t.Context()
	ns := namespace(t, "deletion")
	if _, err := apps.Deployments(ns).Create(ctx, deployment("doomed", 2, 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAvailable(t, ns, "doomed")
	if err := apps.Deployments(ns).Delete(ctx, "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment's pods gone", func(ctx context.Context) (string, error) {
		if pods := podsOf(ctx, t, ns, "doomed"); len(pods) > 0 {
			return fmt.Sprintf("%d pods left", len(pods)), nil
		}
		return "", nil
	})

	if _, err := core.Pods(ns).Create(ctx, pod("last", "", 0), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pod running", func(ctx context.Context) (string, error) {
		p, err := core.Pods(ns).Get(ctx, "last", metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("phase %q", p.Status.Phase), nil
		}
		return "", nil
	})
	if err := core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the namespace gone", func(ctx context.Context) (string, error) {
		_, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return fmt.Sprintf("namespace: %v", err), nil
	})
}

// Stop, or the end of the context, ends the kubelet's goroutines; a kubelet
// started again takes its Node over. (Not parallel: the parallel tests'
// pods must not land on this node.)
func TestStop(t *testing.T) {
	need(t)
	const name = "gpu-node-1"
	defer func() {
		if err := core.Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("cannot delete node %s: %v", name, err)
		}
	}()
	before := goroutines()
	for _, how := range []string{"Stop", "context"} {
		t.Run(how, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			k, err := Start(ctx, cp.Config(), Options{
				NodeName: name,
				Capacity: corev1.ResourceList{GPU: resource.MustParse("4")},
				Labels:   map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
				TempDir:  t.TempDir(),
				Logf:     t.Logf,
			})
			if err != nil {
				t.Fatal(err)
			}
			n, err := core.Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if q := n.Status.Capacity[GPU]; q.Value() != 4 || n.Labels["nvidia.com/gpu.product"] != "NVIDIA-H100-80GB-HBM3" {
				t.Errorf("capacity %s %s, labels %v", GPU, &q, n.Labels)
			}
			if got := goroutines(); got <= before {
				t.Fatalf("%d goroutines of this package running, as many as before the start", got)
			}
			if how == "Stop" {
				k.Stop()
			} else {
				cancel()
			}
			eventually(t, "the kubelet's goroutines ended", func(context.Context) (string, error) {
				if got := goroutines(); got != before {
					return fmt.Sprintf("%d goroutines, want %d", got, before), nil
				}
				return "", nil
			})
			k.Stop()
			k.Stop()
		})
	}
}

// goroutines counts the goroutines this package (not its tests) started.
func goroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "created by github.com/vllm-project/function-vllm-stack/e2e/kubelet.Start")
}
