package xp

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Environment variables hack/e2e-crossplane.sh sets to the network and mount
// namespaces it was started in (readlink /proc/self/ns/{net,mnt}), before it
// runs the test binary under `unshare --net --mount`.
const (
	EnvOuterNetNS = "E2E_OUTER_NETNS"
	EnvOuterMntNS = "E2E_OUTER_MNTNS"
)

// CheckIsolated returns an error unless this process runs in a network
// namespace of its own whose only interfaces are loopback ones (Crossplane's
// metrics and health servers and the RBAC manager's metrics server bind every
// interface: here that is only lo), and in a mount namespace of its own (the
// harness bind-mounts /etc/hosts and /etc/resolv.conf).
func CheckIsolated() error {
	var errs []error
	for env, ns := range map[string]string{EnvOuterNetNS: "net", EnvOuterMntNS: "mnt"} {
		outer := os.Getenv(env)
		self, err := os.Readlink("/proc/self/ns/" + ns)
		switch {
		case err != nil:
			errs = append(errs, err)
		case outer == "":
			errs = append(errs, fmt.Errorf("%s is not set: run the suite with hack/e2e-crossplane.sh, which starts it in private network and mount namespaces", env))
		case outer == self:
			errs = append(errs, fmt.Errorf("this process runs in the %s namespace it was started from (%s): run the suite under `unshare --net --mount --fork` (hack/e2e-crossplane.sh)", ns, self))
		}
	}
	ifs, err := net.Interfaces()
	if err != nil {
		errs = append(errs, err)
	}
	up := false
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			errs = append(errs, fmt.Errorf("network interface %s is not loopback: the suite must run in a network namespace with only lo", i.Name))
		} else if i.Flags&net.FlagUp != 0 {
			up = true
		}
	}
	if err == nil && !up {
		errs = append(errs, errors.New("the loopback interface is down (ip link set lo up)"))
	}
	return errors.Join(errs...)
}

// bindMounts replaces /etc/hosts with one that resolves names to 127.0.0.1
// (and localhost as usual), and /etc/resolv.conf with one whose only name
// server is 127.0.0.1 (nothing listens there: a DNS query fails at once and
// never leaves loopback), by bind mounts in this process's private mount
// namespace. CheckIsolated must have passed. The returned function undoes
// the mounts.
func bindMounts(dir string, names []string) (func() error, error) {
	if err := CheckIsolated(); err != nil {
		return nil, err
	}
	names = slices.Clone(names)
	slices.Sort(names)
	hosts := "127.0.0.1 localhost\n::1 localhost\n"
	if names = slices.Compact(names); len(names) > 0 {
		hosts += "127.0.0.1 " + strings.Join(names, " ") + "\n"
	}
	resolv := "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"
	var undo []string
	unmount := func() error {
		var errs []error
		for _, target := range slices.Backward(undo) {
			if err := syscall.Unmount(target, 0); err != nil {
				errs = append(errs, fmt.Errorf("cannot unmount %s: %w", target, err))
			}
		}
		undo = nil
		return errors.Join(errs...)
	}
	for target, content := range map[string]string{"/etc/hosts": hosts, "/etc/resolv.conf": resolv} {
		src := filepath.Join(dir, filepath.Base(target))
		if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
			return nil, errors.Join(err, unmount())
		}
		if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
			return nil, errors.Join(fmt.Errorf("cannot bind-mount %s over %s: %w", src, target, err), unmount())
		}
		undo = append(undo, target)
	}
	return unmount, nil
}
