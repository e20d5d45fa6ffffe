package kubeapi

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// PodSecurityContext checks a pod's securityContext as
// validatePodSpecSecurityContext does, for a pod without hostNetwork and
// hostIPC (HostIPCSysctls adds what a pod with hostIPC may not set).
func PodSecurityContext(sc *corev1.PodSecurityContext) []Problem {
	var ps problems
	if sc == nil {
		return nil
	}
	ps.groupID(".fsGroup", sc.FSGroup)
	ps.userID(".runAsUser", sc.RunAsUser)
	ps.groupID(".runAsGroup", sc.RunAsGroup)
	for i, g := range sc.SupplementalGroups {
		ps.groupID(index(".supplementalGroups", i), &g)
	}
	names := map[string]bool{}
	for i, s := range sc.Sysctls { // validateSysctls
		at := index(".sysctls", i) + ".name"
		switch {
		case s.Name == "":
			ps.add(at, "is required: name a sysctl, e.g. net.core.somaxconn")
		case !IsValidSysctlName(s.Name):
			ps.add(at, "%s is not a sysctl name: use at most %d characters, segments of lowercase letters, digits, '-' and '_' joined by '.' or '/', e.g. net.core.somaxconn", Quote(s.Name), sysctlMaxLength)
		case names[s.Name]:
			ps.add(at, "%s is set twice: remove one", Quote(s.Name))
		}
		names[s.Name] = true
	}
	if p := sc.FSGroupChangePolicy; p != nil { // validateFSGroupChangePolicy
		ps.oneOf(".fsGroupChangePolicy", string(*p), false, string(corev1.FSGroupChangeAlways), string(corev1.FSGroupChangeOnRootMismatch))
	}
	ps.seccompProfile(".seccompProfile", sc.SeccompProfile)
	ps.windowsOptions(".windowsOptions", sc.WindowsOptions)
	ps.appArmorProfile(".appArmorProfile", sc.AppArmorProfile)
	if p := sc.SupplementalGroupsPolicy; p != nil { // validateSupplementalGroupsPolicy
		ps.oneOf(".supplementalGroupsPolicy", string(*p), false, string(corev1.SupplementalGroupsPolicyMerge), string(corev1.SupplementalGroupsPolicyStrict))
	}
	if p := sc.SELinuxChangePolicy; p != nil { // validateSELinuxChangePolicy, SELinuxMount on (GA in 1.37)
		ps.oneOf(".seLinuxChangePolicy", string(*p), false, string(corev1.SELinuxChangePolicyMountOption), string(corev1.SELinuxChangePolicyRecursive))
	}
	return ps.list
}

// SecurityContext checks a container's securityContext as
// ValidateSecurityContext does, for a pod in the host's user namespace
// (hostUsers unset). privileged: true passes: whether the API server takes
// it is the cluster's policy (kube-apiserver --allow-privileged).
func SecurityContext(sc *corev1.SecurityContext) []Problem {
	var ps problems
	if sc == nil {
		return nil
	}
	ps.userID(".runAsUser", sc.RunAsUser)
	ps.groupID(".runAsGroup", sc.RunAsGroup)
	if pm := sc.ProcMount; pm != nil { // ValidateProcMountType
		switch *pm {
		case corev1.DefaultProcMount:
		case corev1.UnmaskedProcMount:
			ps.add(".procMount", "Unmasked needs a pod with hostUsers: false, which the stack does not set: use Default or remove procMount")
		default:
			ps.add(".procMount", "%s is not supported: use Default", Quote(string(*pm)))
		}
	}
	ps.seccompProfile(".seccompProfile", sc.SeccompProfile)
	if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		if sc.Privileged != nil && *sc.Privileged {
			ps.add(".allowPrivilegeEscalation", "cannot be false with privileged: true (a privileged container escalates): remove one of them")
		}
		if c := sc.Capabilities; c != nil {
			for i, cp := range c.Add {
				if cp == "CAP_SYS_ADMIN" {
					ps.add(index(".capabilities.add", i), "CAP_SYS_ADMIN cannot be added with allowPrivilegeEscalation: false: remove one of them")
				}
			}
		}
	}
	ps.windowsOptions(".windowsOptions", sc.WindowsOptions)
	ps.appArmorProfile(".appArmorProfile", sc.AppArmorProfile)
	return ps.list
}

// userID and groupID: IsValidUserID and IsValidGroupID, 0 to 2147483647.
func (ps *problems) userID(fld string, id *int64) {
	if id != nil && len(validation.IsValidUserID(*id)) > 0 {
		ps.add(fld, "%d is invalid: must be a user ID from 0 to 2147483647", *id)
	}
}

func (ps *problems) groupID(fld string, id *int64) {
	if id != nil && len(validation.IsValidGroupID(*id)) > 0 {
		ps.add(fld, "%d is invalid: must be a group ID from 0 to 2147483647", *id)
	}
}

const sysctlMaxLength = 253

// HostIPCSysctls finds the sysctls a pod in the host's IPC namespace
// (hostIPC) may not set, as ValidateHostSysctl does: those of the IPC
// namespace.
func HostIPCSysctls(sc *corev1.PodSecurityContext) []Problem {
	var ps problems
	if sc == nil {
		return nil
	}
	for i, s := range sc.Sysctls {
		if ipcSysctl(s.Name) {
			ps.add(index(".sysctls", i)+".name", "%s belongs to the IPC namespace, which a pod in the host's IPC namespace (disaggregation.hostPIDAndIPC) may not set: remove it or hostPIDAndIPC", Quote(s.Name))
		}
	}
	return ps.list
}

// ipcSysctl reports whether a sysctl belongs to the IPC namespace, as
// component-helpers' node/util/sysctl GetNamespace finds it: a name of
// nameToNamespace or under the fs.mqueue prefix, after NormalizeName (a name
// written with '/' first has '.' and '/' swapped) and up to a '*'.
func ipcSysctl(name string) bool {
	if i := strings.IndexAny(name, "./"); i >= 0 && name[i] == '/' {
		name = strings.Map(func(r rune) rune {
			switch r {
			case '.':
				return '/'
			case '/':
				return '.'
			}
			return r
		}, name)
	}
	if i := strings.IndexByte(name, '*'); i >= 0 {
		name = name[:i]
	}
	switch name {
	case "kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced", "kernel.shm",
		"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.msg":
		return true
	}
	return strings.HasPrefix(name, "fs.mqueue.")
}

// sysctlName: SysctlContainSlashFmt, segments joined by '.' or '/'.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// IsValidSysctlName is the API server's IsValidSysctlName.
func IsValidSysctlName(name string) bool {
	return len(name) <= sysctlMaxLength && sysctlName.MatchString(name)
}

// seccompProfile: validateSeccompProfileField.
func (ps *problems) seccompProfile(fld string, sp *corev1.SeccompProfile) {
	if sp == nil {
		return
	}
	switch sp.Type {
	case corev1.SeccompProfileTypeLocalhost:
		if sp.LocalhostProfile == nil {
			ps.add(fld+".localhostProfile", "is required when type is Localhost: give the profile's path below the kubelet's seccomp directory, e.g. profiles/vllm.json")
		} else {
			ps.localDescendingPath(fld+".localhostProfile", *sp.LocalhostProfile)
		}
		return
	case corev1.SeccompProfileTypeRuntimeDefault, corev1.SeccompProfileTypeUnconfined:
	case "":
		ps.add(fld+".type", "is required when seccompProfile is set: use RuntimeDefault, Unconfined or Localhost")
	default:
		ps.add(fld+".type", "%s is not supported: use RuntimeDefault, Unconfined or Localhost", Quote(string(sp.Type)))
	}
	if sp.LocalhostProfile != nil {
		ps.add(fld+".localhostProfile", "can only be set when type is Localhost: remove it, or use type: Localhost")
	}
}

// appArmorProfile: ValidateAppArmorProfileField.
func (ps *problems) appArmorProfile(fld string, p *corev1.AppArmorProfile) {
	if p == nil {
		return
	}
	switch p.Type {
	case corev1.AppArmorProfileTypeLocalhost:
		lp := p.LocalhostProfile
		switch {
		case lp == nil || *lp == "":
			ps.add(fld+".localhostProfile", "is required when type is Localhost: name a profile loaded on the node")
		case strings.TrimSpace(*lp) != *lp:
			ps.add(fld+".localhostProfile", "%s is invalid: must not be padded with whitespace", Quote(*lp))
		}
		if lp != nil && len(*lp) > 4095 {
			ps.add(fld+".localhostProfile", "is %d bytes: must be at most 4095", len(*lp))
		}
	case corev1.AppArmorProfileTypeRuntimeDefault, corev1.AppArmorProfileTypeUnconfined:
		if p.LocalhostProfile != nil {
			ps.add(fld+".localhostProfile", "can only be set when type is Localhost: remove it, or use type: Localhost")
		}
	case "":
		ps.add(fld+".type", "is required when appArmorProfile is set: use RuntimeDefault, Unconfined or Localhost")
	default:
		ps.add(fld+".type", "%s is not supported: use RuntimeDefault, Unconfined or Localhost", Quote(string(p.Type)))
	}
}

// Windows user names, as validateWindowsSecurityContextOptions reads them.
var (
	controlChars        = regexp.MustCompile(`[[:cntrl:]]+`)
	netBiosDomain       = regexp.MustCompile(`^[^\\/:\*\?"<>|\.][^\\/:\*\?"<>|]{0,14}$`)
	dnsDomain           = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$`)
	userNameChars       = regexp.MustCompile(`["/\\:;|=,\+\*\?<>@\[\]]`)
	userNameDotsSpaces  = regexp.MustCompile(`^[\. ]+$`)
	maxGMSACredSpec     = 64 * 1024
	maxWindowsDomainLen = 256
	maxWindowsUserLen   = 104
)

// windowsOptions: validateWindowsSecurityContextOptions, and
// validateWindowsHostProcessPod for a pod without hostNetwork.
func (ps *problems) windowsOptions(fld string, w *corev1.WindowsSecurityContextOptions) {
	if w == nil {
		return
	}
	if n := w.GMSACredentialSpecName; n != nil {
		ps.dnsSubdomain(fld+".gmsaCredentialSpecName", *n, "the name of a GMSACredentialSpec")
	}
	if s := w.GMSACredentialSpec; s != nil && (len(*s) == 0 || len(*s) > maxGMSACredSpec) {
		ps.add(fld+".gmsaCredentialSpec", "is %d bytes: must be from 1 byte to 64 KiB", len(*s))
	}
	if u := w.RunAsUserName; u != nil {
		if msg := windowsUserName(*u); msg != "" {
			ps.add(fld+".runAsUserName", "%s is invalid: %s", Quote(*u), msg)
		}
	}
	if w.HostProcess != nil && *w.HostProcess {
		ps.add(fld+".hostProcess", "needs a pod with hostNetwork: true, which the stack does not set: remove hostProcess")
	}
}

// windowsUserName: the rules of a Windows runAsUserName, "" when it passes.
func windowsUserName(u string) string {
	if u == "" {
		return "must not be empty"
	}
	if controlChars.MatchString(u) {
		return "must not contain control characters"
	}
	parts := strings.Split(u, `\`)
	if len(parts) > 2 {
		return "must contain at most one backslash, between a domain and a user"
	}
	domain, user := "", parts[0]
	if len(parts) == 2 {
		domain, user = parts[0], parts[1]
		if len(domain) >= maxWindowsDomainLen {
			return fmt.Sprintf("the domain must be shorter than %d characters", maxWindowsDomainLen)
		}
		if !netBiosDomain.MatchString(domain) && !dnsDomain.MatchString(domain) {
			return "the domain is neither a NetBIOS nor a DNS name"
		}
	}
	switch {
	case user == "":
		return "the user must not be empty"
	case len(user) > maxWindowsUserLen:
		return fmt.Sprintf("the user must be at most %d characters", maxWindowsUserLen)
	case userNameDotsSpaces.MatchString(user):
		return "the user must not be only periods or spaces"
	case userNameChars.MatchString(user):
		return `the user must not contain any of "/\:;|=,+*?<>@[]`
	}
	return ""
}

// localDescendingPath: validateLocalDescendingPath, a relative path without
// "..".
func (ps *problems) localDescendingPath(fld, p string) {
	if path.IsAbs(p) {
		ps.add(fld, "%s is invalid: must be a relative path", Quote(p))
	}
	ps.noBacksteps(fld, p)
}

// noBacksteps: validatePathNoBacksteps.
func (ps *problems) noBacksteps(fld, p string) {
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		if part == ".." {
			ps.add(fld, "%s is invalid: must not contain '..'", Quote(p))
			return
		}
	}
}

// localNonReservedPath: ValidateLocalNonReservedPath, a relative path
// without "..", not starting with "..".
func (ps *problems) localNonReservedPath(fld, p string) {
	ps.localDescendingPath(fld, p)
	if strings.HasPrefix(p, "..") && !strings.HasPrefix(p, "../") {
		ps.add(fld, "%s is invalid: must not start with '..'", Quote(p))
	}
}
