package cluster

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/vllm-project/function-vllm-stack/e2e/proc"
)

// binDir is the control plane tools/kube/build.sh built.
func binDir(t *testing.T) string {
	t.Helper()
	d := os.Getenv("KUBE_BIN_DIR")
	if d == "" {
		t.Skip("KUBE_BIN_DIR is not set; hack/e2e.sh sets it")
	}
	return d
}

// fakeBinDir has the real etcd and a fake kube-apiserver: script.
func fakeBinDir(t *testing.T, script string) string {
	t.Helper()
	d := t.TempDir()
	if err := os.Symlink(filepath.Join(binDir(t), Etcd), filepath.Join(d, Etcd)); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{APIServer, ControllerManager} {
		if err := os.WriteFile(filepath.Join(d, b), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// A start that fails stops what it started and removes its directory.
func TestStartFailureCleansUp(t *testing.T) {
	cases := map[string]struct {
		script  string
		timeout time.Duration
		want    string
	}{
		"apiserver exits": {
			script: "echo 'E0101 cannot do anything' >&2\nexit 3\n",
			want:   "kube-apiserver exited during start (exit status 3); last lines of its log:\nE0101 cannot do anything",
		},
		"apiserver never ready": {
			// A child in the same process group, which the stop must end too.
			script:  "sleep 600 &\necho $! > CHILD_PID_FILE\nwait\n",
			timeout: 3 * time.Second,
			want:    "kube-apiserver not ready after 3s",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			pidFile := filepath.Join(t.TempDir(), "child.pid")
			var pids []int
			c, err := Start(context.Background(), Options{
				BinDir:       fakeBinDir(t, strings.ReplaceAll(tc.script, "CHILD_PID_FILE", pidFile)),
				TempDir:      tmp,
				StartTimeout: tc.timeout,
				Logf: func(format string, args ...any) {
					if strings.HasPrefix(format, "started ") {
						pids = append(pids, args[len(args)-1].(int))
					}
				},
			})
			if err == nil {
				c.Stop()
				t.Fatal("Start succeeded with a broken kube-apiserver")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if len(pids) != 2 {
				t.Fatalf("started %v, want etcd and kube-apiserver", pids)
			}
			for _, pid := range pids {
				if !proc.Gone(pid) {
					t.Errorf("process %d still exists", pid)
				}
			}
			if b, err := os.ReadFile(pidFile); err == nil {
				child, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				if child == 0 || !proc.Gone(child) {
					t.Errorf("the fake kube-apiserver's child %d still exists", child)
				}
			} else if strings.Contains(tc.script, "CHILD_PID_FILE") {
				t.Errorf("the fake kube-apiserver did not start its child: %v", err)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
				t.Errorf("left behind in the temporary directory: %v", entries)
			}
		})
	}
}

// With Options.Scheduler, kube-scheduler runs as system:kube-scheduler with
// the bootstrap RBAC: it reports a pod unschedulable (there is no node).
// Stop ends it with the rest and frees its port.
func TestScheduler(t *testing.T) {
	ctx := t.Context()
	c, err := Start(ctx, Options{BinDir: binDir(t), Scheduler: true, TempDir: t.TempDir(), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	pids, ports := c.Pids(), c.Ports()
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	if len(pids) != 4 || len(ports) != 4 {
		t.Fatalf("pids %v, ports %v; want etcd, kube-apiserver, kube-controller-manager and kube-scheduler", pids, ports)
	}
	core, err := corev1client.NewForConfig(c.Config())
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := core.ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if _, err := core.Pods(metav1.NamespaceDefault).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last []corev1.PodCondition
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := core.Pods(metav1.NamespaceDefault).Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p.Status.Conditions
		for _, c := range last {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the scheduler did not report the pod unschedulable: %v (conditions %+v)", err, last)
	}

	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if !proc.Gone(pid) {
			t.Errorf("process %d still exists after Stop", pid)
		}
	}
	for _, p := range ports {
		if !proc.PortFree(p) {
			t.Errorf("port %d still in use after Stop", p)
		}
	}
}
