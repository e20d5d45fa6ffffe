package kubeapi

import (
	"path"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// VolumeSource checks a volume's source as validateVolumeSource does: at
// most one source (none is defaulted to an emptyDir by SetDefaults_Volume),
// and the fields of each. volName is the volume's name (an iSCSI volume's
// name and portal share a length limit).
func VolumeSource(volName string, v corev1.VolumeSource) []Problem {
	var ps problems
	if n := SetPointers(v); n > 1 {
		ps.add("", "sets %d volume sources: set exactly one, such as persistentVolumeClaim, configMap, secret or emptyDir", n)
	}
	if e := v.EmptyDir; e != nil && e.SizeLimit != nil && e.SizeLimit.Sign() < 0 {
		ps.add(".emptyDir.sizeLimit", "%s is invalid: must be 0 or more", e.SizeLimit.String())
	}
	if h := v.HostPath; h != nil { // validateHostPathVolumeSource
		if ps.required(".hostPath.path", h.Path, "an absolute path on the node") {
			ps.noBacksteps(".hostPath.path", h.Path)
			if h.Type != nil {
				ps.oneOf(".hostPath.type", string(*h.Type), true, "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice")
			}
		}
	}
	if s := v.Secret; s != nil { // validateSecretVolumeSource
		ps.keyFiles(".secret", "secretName", s.SecretName, "the Secret's name", s.DefaultMode, s.Items)
	}
	if n := v.NFS; n != nil { // validateNFSVolumeSource
		ps.required(".nfs.server", n.Server, "the NFS server's host name or IP address")
		if n.Path == "" {
			ps.add(".nfs.path", "is required: set the exported path, an absolute path")
		} else if !path.IsAbs(n.Path) {
			ps.add(".nfs.path", "%s is invalid: must be an absolute path", Quote(n.Path))
		}
	}
	if c := v.PersistentVolumeClaim; c != nil { // validatePersistentClaimVolumeSource
		ps.required(".persistentVolumeClaim.claimName", c.ClaimName, "the PersistentVolumeClaim's name")
	}
	if d := v.DownwardAPI; d != nil { // validateDownwardAPIVolumeSource
		ps.fileMode(".downwardAPI.defaultMode", d.DefaultMode)
		for i, file := range d.Items {
			ps.downwardAPIFile(index(".downwardAPI.items", i), file)
		}
	}
	if c := v.ConfigMap; c != nil { // validateConfigMapVolumeSource
		ps.keyFiles(".configMap", "name", c.Name, "the ConfigMap's name", c.DefaultMode, c.Items)
	}
	ps.inTree(volName, v)
	if p := v.Projected; p != nil {
		ps.projected(p)
	}
	if c := v.CSI; c != nil { // validateCSIVolumeSource
		if ps.required(".csi.driver", c.Driver, "the CSI driver's name, e.g. csi.example.com") {
			if len(c.Driver) > 63 {
				ps.add(".csi.driver", "is %d characters: must be at most 63", len(c.Driver))
			}
			ps.dnsSubdomain(".csi.driver", strings.ToLower(c.Driver), "a CSI driver name")
		}
		if r := c.NodePublishSecretRef; r != nil && ps.required(".csi.nodePublishSecretRef.name", r.Name, "the Secret's name") {
			ps.dnsSubdomain(".csi.nodePublishSecretRef.name", r.Name, "a Secret name")
		}
	}
	if e := v.Ephemeral; e != nil {
		ps.ephemeral(e)
	}
	if im := v.Image; im != nil { // validateImageVolumeSource
		ps.required(".image.reference", im.Reference, "an image reference")
		ps.oneOf(".image.pullPolicy", string(im.PullPolicy), true, "Always", "IfNotPresent", "Never") // "" is defaulted
	}
	return ps.list
}

// SetPointers counts the pointer fields of a struct that are set: a volume
// source, a probe handler, an environment variable's source each take
// exactly one.
func SetPointers(v any) int {
	rv := reflect.ValueOf(v)
	n := 0
	for i := range rv.NumField() {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			n++
		}
	}
	return n
}

func (ps *problems) between(fld string, v, lo, hi int64) {
	if v < lo || v > hi {
		ps.add(fld, "%d is invalid: must be from %d to %d", v, lo, hi)
	}
}

// fileMode: a file's mode bits, 0 to 0777 (fileModeErrorMsg).
func (ps *problems) fileMode(fld string, m *int32) {
	if m != nil && (*m < 0 || *m > 0o777) {
		ps.add(fld, "%d is invalid: must be a file mode from 0 to 0777 (octal; 511 in decimal), e.g. 0644 (420 in decimal)", *m)
	}
}

func (ps *problems) dnsLabel(fld, v, what string) {
	if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
		ps.add(fld, "%s is not %s: %s", Quote(v), what, msgs[0])
	}
}

// keyFiles: a Secret's or a ConfigMap's volume, its object's name required
// (at nameField), its mode and items.
func (ps *problems) keyFiles(at, nameField, name, what string, mode *int32, items []corev1.KeyToPath) {
	ps.required(at+"."+nameField, name, what)
	ps.fileMode(at+".defaultMode", mode)
	ps.keyPaths(at+".items", items, nil)
}

// keyPaths: validateKeyToPath for each item; paths, when not nil, collects
// the paths of a projected volume (which must not repeat).
func (ps *problems) keyPaths(fld string, items []corev1.KeyToPath, paths map[string]bool) {
	for i, kp := range items {
		at := index(fld, i)
		ps.required(at+".key", kp.Key, "the key to project")
		if ps.required(at+".path", kp.Path, "the file's path, relative to the mount") {
			ps.localNonReservedPath(at+".path", kp.Path)
		}
		ps.fileMode(at+".mode", kp.Mode)
		ps.uniquePath(at+".path", kp.Path, paths)
	}
}

// uniquePath: a projected volume's "conflicting duplicate paths".
func (ps *problems) uniquePath(fld, p string, paths map[string]bool) {
	if paths == nil || p == "" {
		return
	}
	if paths[p] {
		ps.add(fld, "%s is also the path of another file of the projected volume: use another path", Quote(p))
	}
	paths[p] = true
}

// Downward API fields a volume file may hold (validateDownwardAPIVolumeFile).
var (
	downwardFieldPaths    = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}
	downwardResourcePaths = []string{"limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"}
)

// downwardAPIFile: validateDownwardAPIVolumeFile.
func (ps *problems) downwardAPIFile(at string, file corev1.DownwardAPIVolumeFile) {
	if ps.required(at+".path", file.Path, "the file's path, relative to the mount") {
		ps.localNonReservedPath(at+".path", file.Path)
	}
	switch {
	case file.FieldRef != nil && file.ResourceFieldRef != nil:
		ps.add(at, "sets fieldRef and resourceFieldRef: set one of them")
	case file.FieldRef != nil:
		ps.objectFieldSelector(at+".fieldRef", file.FieldRef)
	case file.ResourceFieldRef != nil:
		ps.resourceFieldSelector(at+".resourceFieldRef", file.ResourceFieldRef)
	default:
		ps.add(at, "sets neither fieldRef nor resourceFieldRef: set one of them")
	}
	ps.fileMode(at+".mode", file.Mode)
}

// objectFieldSelector: validateObjectFieldSelector for a volume file
// (apiVersion "" is defaulted to v1).
func (ps *problems) objectFieldSelector(at string, fs *corev1.ObjectFieldSelector) {
	if fs.APIVersion != "" && fs.APIVersion != "v1" {
		ps.add(at+".apiVersion", "%s is not supported: use v1", Quote(fs.APIVersion))
		return
	}
	if fs.FieldPath == "" {
		ps.add(at+".fieldPath", "is required: use one of %s, or metadata.labels['key'] or metadata.annotations['key']", orList(downwardFieldPaths))
		return
	}
	if p, sub, ok := subscripted(fs.FieldPath); ok {
		key := sub
		switch p {
		case "metadata.annotations":
			key = strings.ToLower(sub)
		case "metadata.labels":
		default:
			ps.add(at+".fieldPath", "%s is invalid: only metadata.labels and metadata.annotations take a subscript", Quote(fs.FieldPath))
			return
		}
		if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
			ps.add(at+".fieldPath", "%s is invalid: %s", Quote(fs.FieldPath), msgs[0])
		}
		return
	}
	ps.oneOf(at+".fieldPath", fs.FieldPath, false, downwardFieldPaths...)
}

// subscripted: fieldpath.SplitMaybeSubscriptedPath, path['key'].
func subscripted(fp string) (string, string, bool) {
	if !strings.HasSuffix(fp, "']") {
		return fp, "", false
	}
	s := strings.TrimSuffix(fp, "']")
	parts := strings.SplitN(s, "['", 2)
	if len(parts) < 2 || len(parts[0]) == 0 {
		return fp, "", false
	}
	return parts[0], parts[1], true
}

// resourceFieldSelector: validateContainerResourceFieldSelector for a
// volume file, and validateContainerResourceDivisor.
func (ps *problems) resourceFieldSelector(at string, fs *corev1.ResourceFieldSelector) {
	switch {
	case fs.ContainerName == "":
		ps.add(at+".containerName", "is required in a volume: name the container whose resources the file holds")
	case fs.Resource == "":
		ps.add(at+".resource", "is required: use one of %s", orList(downwardResourcePaths))
	case !strings.HasPrefix(fs.Resource, "requests.hugepages-") && !strings.HasPrefix(fs.Resource, "limits.hugepages-"):
		ps.oneOf(at+".resource", fs.Resource, false, downwardResourcePaths...)
	}
	ps.divisor(at+".divisor", fs.Resource, fs.Divisor)
}

// divisor: validateContainerResourceDivisor.
func (ps *problems) divisor(fld, res string, d resource.Quantity) {
	if d.IsZero() {
		return // unset: defaulted to 1
	}
	var allowed []string
	switch {
	case res == "limits.cpu" || res == "requests.cpu":
		allowed = []string{"1m", "1"}
	case res == "limits.memory" || res == "requests.memory" || res == "limits.ephemeral-storage" || res == "requests.ephemeral-storage" ||
		strings.HasPrefix(res, "requests.hugepages-") || strings.HasPrefix(res, "limits.hugepages-"):
		allowed = []string{"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}
	default:
		return
	}
	if slices.Contains(allowed, d.String()) { // the API server compares the canonical form: 1024 is not 1Ki
		return
	}
	ps.add(fld, "%s is not supported for %s: use %s", d.String(), res, orList(allowed))
}

// projected: validateProjectedVolumeSource and validateProjectionSources.
func (ps *problems) projected(p *corev1.ProjectedVolumeSource) {
	ps.fileMode(".projected.defaultMode", p.DefaultMode)
	paths := map[string]bool{}
	for i, src := range p.Sources {
		at := index(".projected.sources", i)
		if n := SetPointers(src); n > 1 {
			ps.add(at, "sets %d sources: set one per item of sources", n)
		}
		if s := src.Secret; s != nil {
			ps.required(at+".secret.name", s.Name, "the Secret's name")
			ps.keyPaths(at+".secret.items", s.Items, paths)
		}
		if c := src.ConfigMap; c != nil {
			ps.required(at+".configMap.name", c.Name, "the ConfigMap's name")
			ps.keyPaths(at+".configMap.items", c.Items, paths)
		}
		if d := src.DownwardAPI; d != nil {
			for j, file := range d.Items {
				ps.downwardAPIFile(index(at+".downwardAPI.items", j), file)
				ps.uniquePath(index(at+".downwardAPI.items", j)+".path", file.Path, paths)
			}
		}
		if t := src.ServiceAccountToken; t != nil {
			if e := t.ExpirationSeconds; e != nil && (*e < 600 || *e > 1<<32) { // nil is defaulted to an hour
				ps.add(at+".serviceAccountToken.expirationSeconds", "%d is invalid: must be from 600 (10 minutes) to 4294967296 (2^32)", *e)
			}
			if ps.required(at+".serviceAccountToken.path", t.Path, "the token file's path, relative to the mount") {
				ps.localNonReservedPath(at+".serviceAccountToken.path", t.Path)
			}
		}
		if b := src.ClusterTrustBundle; b != nil {
			ps.clusterTrustBundle(at+".clusterTrustBundle", b, paths)
		}
		if c := src.PodCertificate; c != nil {
			ps.podCertificate(at+".podCertificate", c, paths)
		}
	}
}

// clusterTrustBundle: the clusterTrustBundle projection, as
// validateProjectionSources checks it.
func (ps *problems) clusterTrustBundle(at string, b *corev1.ClusterTrustBundleProjection, paths map[string]bool) {
	switch {
	case b.Name != nil && b.SignerName != nil:
		ps.add(at, "sets name and signerName: set one of them")
	case b.Name != nil:
		if *b.Name == "" {
			ps.add(at+".name", "is required: name a ClusterTrustBundle")
		} else if msg := clusterTrustBundleName(*b.Name); msg != "" { // ValidateClusterTrustBundleName
			ps.add(at+".name", "%s is not a ClusterTrustBundle name: %s", Quote(*b.Name), msg)
		}
		if b.LabelSelector != nil {
			ps.add(at+".labelSelector", "must not be set with name: remove it, or use signerName")
		}
	case b.SignerName != nil:
		ps.signerName(at+".signerName", *b.SignerName)
		ps.fieldErrors(at+".labelSelector", metavalidation.ValidateLabelSelector(b.LabelSelector, metavalidation.LabelSelectorValidationOptions{}, field.NewPath("x")))
	default:
		ps.add(at, "sets neither name nor signerName: set one of them")
	}
	if ps.required(at+".path", b.Path, "the file's path, relative to the mount") {
		ps.localNonReservedPath(at+".path", b.Path)
	}
	ps.uniquePath(at+".path", b.Path, paths)
}

// clusterTrustBundleName: ValidateClusterTrustBundleName for the signer a
// name holds before its last ':', "" when it passes.
func clusterTrustBundleName(name string) string {
	i := strings.LastIndex(name, ":")
	if i < 0 {
		return strings.Join(validation.IsDNS1123Subdomain(name), "; ")
	}
	// The signer is what precedes the last ':', with '/' for ':'; the name
	// must start with the signer written with ':' for '/', which it does
	// unless that part holds a '/'.
	if strings.Contains(name[:i], "/") {
		return "the part before its last ':' (the signer, with ':' for '/') must not contain '/'"
	}
	return strings.Join(validation.IsDNS1123Subdomain(name[i+1:]), "; ")
}

// signerName: ValidateSignerName, a domain with a dot, '/', and a path of
// DNS subdomains joined by '.'.
func (ps *problems) signerName(fld, v string) {
	const how = "use a signer name such as example.com/signer"
	domain, signerPath, ok := strings.Cut(v, "/")
	switch {
	case v == "":
		ps.add(fld, "is required: %s", how)
	case !ok || strings.Contains(signerPath, "/"):
		ps.add(fld, "%s is not a signer name: %s", Quote(v), how)
	case len(domain) > 253 || len(v) > 253+253+63+2 || !strings.Contains(domain, "."):
		ps.add(fld, "%s is not a signer name: %s (a domain with at least one dot, at most 571 characters in all)", Quote(v), how)
	default:
		for _, l := range strings.Split(domain, ".") {
			if len(validation.IsDNS1123Label(l)) > 0 {
				ps.add(fld, "%s is not a signer name: its domain's label %s is not a DNS label; %s", Quote(v), Quote(l), how)
				return
			}
		}
		for _, l := range strings.Split(signerPath, ".") {
			if len(validation.IsDNS1123Subdomain(l)) > 0 {
				ps.add(fld, "%s is not a signer name: its path's part %s is not a DNS subdomain; %s", Quote(v), Quote(l), how)
				return
			}
		}
	}
}

// podCertificate: the podCertificate projection, as
// validateProjectionSources checks it.
func (ps *problems) podCertificate(at string, c *corev1.PodCertificateProjection, paths map[string]bool) {
	ps.signerName(at+".signerName", c.SignerName)
	for _, k := range sortedKeys(c.UserAnnotations) { // ValidateUserAnnotations
		for _, e := range validation.IsDomainPrefixedKey(field.NewPath("x"), strings.ToLower(k)) {
			ps.add(at+".userAnnotations["+k+"]", "%s", e.ErrorBody())
		}
	}
	if err := apivalidation.ValidateAnnotationsSize(c.UserAnnotations); err != nil {
		ps.add(at+".userAnnotations", "are too large: %v", err)
	}
	ps.oneOf(at+".keyType", c.KeyType, false, "RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519")
	if e := c.MaxExpirationSeconds; e != nil {
		limit := int32(91 * 24 * 3600) // certificates.MaxMaxExpirationSeconds
		if host, _, _ := strings.Cut(c.SignerName, "/"); host == "kubernetes.io" || strings.HasSuffix(host, ".kubernetes.io") {
			limit = 24 * 3600 // certificates.KubernetesMaxMaxExpirationSeconds
		}
		if *e < 3600 || *e > limit {
			ps.add(at+".maxExpirationSeconds", "%d is invalid: must be from 3600 to %d for this signer", *e, limit)
		}
	}
	n := 0
	for _, f := range []struct{ name, v string }{{"credentialBundlePath", c.CredentialBundlePath}, {"keyPath", c.KeyPath}, {"certificateChainPath", c.CertificateChainPath}} {
		if f.v != "" {
			n++
			ps.localNonReservedPath(at+"."+f.name, f.v)
			ps.uniquePath(at+"."+f.name, f.v, paths)
		}
	}
	if n == 0 {
		ps.add(at, "sets no path: set at least one of credentialBundlePath, keyPath and certificateChainPath")
	}
}

// ephemeral: validateEphemeralVolumeSource, ValidateTemplateObjectMeta and
// ValidatePersistentVolumeClaimSpec.
func (ps *problems) ephemeral(e *corev1.EphemeralVolumeSource) {
	t := e.VolumeClaimTemplate
	if t == nil {
		ps.add(".ephemeral.volumeClaimTemplate", "is required: describe the claim each pod gets")
		return
	}
	at := ".ephemeral.volumeClaimTemplate"
	ps.fieldErrors(at+".metadata.annotations", apivalidation.ValidateAnnotations(t.Annotations, field.NewPath("x")))
	ps.fieldErrors(at+".metadata.labels", metavalidation.ValidateLabels(t.Labels, field.NewPath("x")))
	m := t.ObjectMeta
	m.Labels, m.Annotations = nil, nil
	if !reflect.ValueOf(m).IsZero() {
		ps.add(at+".metadata", "may only set labels and annotations: remove the other fields")
	}
	s := t.Spec
	if len(s.AccessModes) == 0 {
		ps.add(at+".spec.accessModes", "is required: give at least one access mode, e.g. ReadWriteOnce")
	}
	once, other := false, false
	for i, m := range s.AccessModes {
		ps.oneOf(index(at+".spec.accessModes", i), string(m), false, "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")
		once = once || m == corev1.ReadWriteOncePod
		other = other || m == corev1.ReadWriteOnce || m == corev1.ReadOnlyMany || m == corev1.ReadWriteMany
	}
	if once && other {
		ps.add(at+".spec.accessModes", "may not use ReadWriteOncePod with other access modes: use it alone")
	}
	ps.fieldErrors(at+".spec.selector", metavalidation.ValidateLabelSelector(s.Selector, metavalidation.LabelSelectorValidationOptions{}, field.NewPath("x")))
	if q, ok := s.Resources.Requests[corev1.ResourceStorage]; !ok {
		ps.add(at+".spec.resources.requests.storage", "is required: request a size, e.g. 10Gi")
	} else if q.Sign() <= 0 {
		ps.add(at+".spec.resources.requests.storage", "%s is invalid: must be more than 0", q.String())
	}
	if c := s.StorageClassName; c != nil && *c != "" {
		ps.dnsSubdomain(at+".spec.storageClassName", *c, "a StorageClass name")
	}
	if vm := s.VolumeMode; vm != nil {
		ps.oneOf(at+".spec.volumeMode", string(*vm), false, "Block", "Filesystem")
	}
	if c := s.VolumeAttributesClassName; c != nil && *c != "" {
		ps.dnsSubdomain(at+".spec.volumeAttributesClassName", *c, "a VolumeAttributesClass name")
	}
	if d := s.DataSource; d != nil { // validateDataSource
		ps.dataSource(at+".spec.dataSource", d.APIGroup, d.Kind, d.Name)
	}
	if d := s.DataSourceRef; d != nil { // validateDataSourceRef
		ps.dataSource(at+".spec.dataSourceRef", d.APIGroup, d.Kind, d.Name)
		if d.Namespace != nil && *d.Namespace != "" {
			ps.dnsLabel(at+".spec.dataSourceRef.namespace", *d.Namespace, "a namespace name")
		}
	}
	if r := s.DataSourceRef; r != nil && r.Namespace != nil && *r.Namespace != "" {
		if s.DataSource != nil {
			ps.add(at+".spec.dataSource", "cannot be set with dataSourceRef.namespace: remove dataSource")
		}
	} else if d := s.DataSource; d != nil && r != nil && (ptrString(d.APIGroup) != ptrString(r.APIGroup) || (d.APIGroup == nil) != (r.APIGroup == nil) || d.Kind != r.Kind || d.Name != r.Name) {
		ps.add(at+".spec.dataSource", "must be the same as dataSourceRef: set one of them")
	}
}

// dataSource: a claim's data source, an object of an API group, or a
// PersistentVolumeClaim of the core group.
func (ps *problems) dataSource(at string, group *string, kind, name string) {
	ps.required(at+".name", name, "the source object's name")
	ps.required(at+".kind", kind, "the source object's kind, e.g. VolumeSnapshot")
	if g := ptrString(group); g == "" && kind != "PersistentVolumeClaim" {
		ps.add(at, "refers to kind %s of the core API group, which must be PersistentVolumeClaim: set apiGroup, e.g. snapshot.storage.k8s.io", Quote(kind))
	} else if g != "" {
		ps.dnsSubdomain(at+".apiGroup", g, "an API group")
	}
}

func ptrString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// VolumeMount checks what ValidateVolumeMounts checks of a mount beyond its
// volume's name and its path (which the callers check against the pod):
// subPath and subPathExpr, mountPropagation (validateMountPropagation; only
// a privileged container may use Bidirectional) and recursiveReadOnly
// (validateMountRecursiveReadOnly).
func VolumeMount(m corev1.VolumeMount, privileged bool) []Problem {
	var ps problems
	if m.SubPath != "" {
		ps.localDescendingPath(".subPath", m.SubPath)
	}
	if m.SubPathExpr != "" {
		if m.SubPath != "" {
			ps.add(".subPathExpr", "cannot be set with subPath: set one of them")
		}
		ps.localDescendingPath(".subPathExpr", m.SubPathExpr)
	}
	if mp := m.MountPropagation; mp != nil {
		ps.oneOf(".mountPropagation", string(*mp), false, string(corev1.MountPropagationBidirectional), string(corev1.MountPropagationHostToContainer), string(corev1.MountPropagationNone))
		if *mp == corev1.MountPropagationBidirectional && !privileged {
			ps.add(".mountPropagation", "Bidirectional is only for a privileged container: use HostToContainer or None, or make the container privileged")
		}
	}
	if r := m.RecursiveReadOnly; r != nil {
		switch *r {
		case corev1.RecursiveReadOnlyDisabled:
		case corev1.RecursiveReadOnlyEnabled, corev1.RecursiveReadOnlyIfPossible:
			if !m.ReadOnly {
				ps.add(".recursiveReadOnly", "%s needs readOnly: true: set readOnly, or remove recursiveReadOnly", *r)
			}
			if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
				ps.add(".recursiveReadOnly", "%s needs mountPropagation None or unset: remove one of them", *r)
			}
		default:
			ps.add(".recursiveReadOnly", "%s is not supported: use Disabled, IfPossible or Enabled", Quote(string(*r)))
		}
	}
	return ps.list
}

// Privileged says whether a container's security context makes it
// privileged.
func Privileged(sc *corev1.SecurityContext) bool {
	return sc != nil && sc.Privileged != nil && *sc.Privileged
}
