package kubeapi

import (
	"net"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// inTree checks the in-tree volume sources (most of them removed from the
// kubelet, all still validated by the API server), as validateVolumeSource
// does.
func (ps *problems) inTree(volName string, v corev1.VolumeSource) {
	if g := v.GitRepo; g != nil { // validateGitRepoVolumeSource
		ps.required(".gitRepo.repository", g.Repository, "the repository's URL")
		ps.localDescendingPath(".gitRepo.directory", g.Directory)
	}
	if d := v.GCEPersistentDisk; d != nil { // validateGCEPersistentDiskVolumeSource
		ps.required(".gcePersistentDisk.pdName", d.PDName, "the disk's name")
		ps.between(".gcePersistentDisk.partition", int64(d.Partition), 0, 255)
	}
	if d := v.AWSElasticBlockStore; d != nil { // validateAWSElasticBlockStoreVolumeSource
		ps.required(".awsElasticBlockStore.volumeID", d.VolumeID, "the volume's ID")
		ps.between(".awsElasticBlockStore.partition", int64(d.Partition), 0, 255)
	}
	if i := v.ISCSI; i != nil {
		ps.iscsi(volName, i)
	}
	if g := v.Glusterfs; g != nil { // validateGlusterfsVolumeSource
		ps.required(".glusterfs.endpoints", g.EndpointsName, "the Endpoints of the Glusterfs cluster")
		ps.required(".glusterfs.path", g.Path, "the Glusterfs volume's path")
	}
	if fl := v.Flocker; fl != nil { // validateFlockerVolumeSource
		if (fl.DatasetName == "") == (fl.DatasetUUID == "") {
			ps.add(".flocker", "must set exactly one of datasetName and datasetUUID")
		}
		if strings.Contains(fl.DatasetName, "/") {
			ps.add(".flocker.datasetName", "%s is invalid: must not contain '/'", Quote(fl.DatasetName))
		}
	}
	if r := v.RBD; r != nil { // validateRBDVolumeSource
		if len(r.CephMonitors) == 0 {
			ps.add(".rbd.monitors", "is required: list the Ceph monitors")
		}
		ps.required(".rbd.image", r.RBDImage, "the RADOS image's name")
	}
	if c := v.Cinder; c != nil { // validateCinderVolumeSource
		ps.required(".cinder.volumeID", c.VolumeID, "the volume's ID")
		if c.SecretRef != nil {
			ps.required(".cinder.secretRef.name", c.SecretRef.Name, "the Secret's name")
		}
	}
	if c := v.CephFS; c != nil && len(c.Monitors) == 0 { // validateCephFSVolumeSource
		ps.add(".cephfs.monitors", "is required: list the Ceph monitors")
	}
	if q := v.Quobyte; q != nil {
		ps.quobyte(q)
	}
	if fc := v.FC; fc != nil { // validateFCVolumeSource
		switch {
		case len(fc.TargetWWNs) == 0 && len(fc.WWIDs) == 0:
			ps.add(".fc", "sets neither targetWWNs nor wwids: set one of them")
		case len(fc.TargetWWNs) > 0 && len(fc.WWIDs) > 0:
			ps.add(".fc", "sets both targetWWNs and wwids: set one of them")
		}
		if len(fc.TargetWWNs) > 0 {
			if fc.Lun == nil {
				ps.add(".fc.lun", "is required with targetWWNs: set a LUN from 0 to 255")
			} else {
				ps.between(".fc.lun", int64(*fc.Lun), 0, 255)
			}
		}
	}
	if fv := v.FlexVolume; fv != nil { // validateFlexVolumeSource
		ps.required(".flexVolume.driver", fv.Driver, "the driver's name")
		for _, k := range sortedKeys(fv.Options) {
			ns, _, found := strings.Cut(k, "/")
			if !found {
				ns = k
			}
			if n := "." + strings.ToLower(ns); strings.HasSuffix(n, ".kubernetes.io") || strings.HasSuffix(n, ".k8s.io") {
				ps.add(".flexVolume.options["+k+"]", "is in a namespace Kubernetes reserves (kubernetes.io, k8s.io): use another key")
			}
		}
	}
	if a := v.AzureFile; a != nil { // validateAzureFile
		ps.required(".azureFile.secretName", a.SecretName, "the Secret that holds the storage account")
		ps.required(".azureFile.shareName", a.ShareName, "the share's name")
	}
	if d := v.VsphereVolume; d != nil { // validateVsphereVolumeSource
		ps.required(".vsphereVolume.volumePath", d.VolumePath, "the volume's path")
	}
	if d := v.PhotonPersistentDisk; d != nil { // validatePhotonPersistentDiskVolumeSource
		ps.required(".photonPersistentDisk.pdID", d.PdID, "the disk's ID")
	}
	if d := v.PortworxVolume; d != nil { // validatePortworxVolumeSource
		ps.required(".portworxVolume.volumeID", d.VolumeID, "the volume's ID")
	}
	if a := v.AzureDisk; a != nil {
		ps.azureDisk(a)
	}
	if s := v.StorageOS; s != nil { // validateStorageOSVolumeSource
		if ps.required(".storageos.volumeName", s.VolumeName, "the volume's name") {
			ps.dnsLabel(".storageos.volumeName", s.VolumeName, "a volume name")
		}
		if s.VolumeNamespace != "" {
			ps.dnsLabel(".storageos.volumeNamespace", s.VolumeNamespace, "a namespace name")
		}
		if s.SecretRef != nil {
			ps.required(".storageos.secretRef.name", s.SecretRef.Name, "the Secret's name")
		}
	}
	if s := v.ScaleIO; s != nil { // validateScaleIOVolumeSource
		ps.required(".scaleIO.gateway", s.Gateway, "the ScaleIO gateway's address")
		ps.required(".scaleIO.system", s.System, "the ScaleIO system's name")
		ps.required(".scaleIO.volumeName", s.VolumeName, "the volume's name")
	}
}

// iSCSI names (iscsiInitiator*Regex).
var (
	iqnName = regexp.MustCompile(`iqn\.\d{4}-\d{2}\.([[:alnum:]-.]+)(:[^,;*&$|\s]+)$`)
	euiName = regexp.MustCompile(`^eui.[[:alnum:]]{16}$`)
	naaName = regexp.MustCompile(`^naa.[[:alnum:]]{32}$`)
)

// iscsiName: an IQN, EUI or NAA name, "" when it is one.
func iscsiName(v string) string {
	switch {
	case strings.HasPrefix(v, "iqn"):
		if !iqnName.MatchString(v) {
			return "must be an IQN such as iqn.2001-04.com.example:storage"
		}
	case strings.HasPrefix(v, "eui"):
		if !euiName.MatchString(v) {
			return "must be an EUI name, eui. and 16 letters or digits"
		}
	case strings.HasPrefix(v, "naa"):
		if !naaName.MatchString(v) {
			return "must be an NAA name, naa. and 32 letters or digits"
		}
	default:
		return "must start with iqn, eui or naa"
	}
	return ""
}

// iscsi: validateISCSIVolumeSource, and the volume name's limit.
func (ps *problems) iscsi(volName string, i *corev1.ISCSIVolumeSource) {
	ps.required(".iscsi.targetPortal", i.TargetPortal, "the target's portal, ip:port")
	if ps.required(".iscsi.iqn", i.IQN, "the target's IQN") {
		if msg := iscsiName(i.IQN); msg != "" {
			ps.add(".iscsi.iqn", "%s is invalid: %s", Quote(i.IQN), msg)
		}
	}
	ps.between(".iscsi.lun", int64(i.Lun), 0, 255)
	if (i.DiscoveryCHAPAuth || i.SessionCHAPAuth) && i.SecretRef == nil {
		ps.add(".iscsi.secretRef", "is required with CHAP authentication: name the Secret that holds the credentials")
	}
	if i.InitiatorName != nil {
		if msg := iscsiName(*i.InitiatorName); msg != "" {
			ps.add(".iscsi.initiatorName", "%s is invalid: %s", Quote(*i.InitiatorName), msg)
		}
		if n := len(volName + ":" + i.TargetPortal); n > 64 {
			ps.add(".iscsi.targetPortal", "makes <volume name>:<targetPortal> %d characters, more than 64 with initiatorName set: shorten the volume's name", n)
		}
	}
}

// quobyte: validateQuobyteVolumeSource.
func (ps *problems) quobyte(q *corev1.QuobyteVolumeSource) {
	switch {
	case q.Registry == "":
		ps.add(".quobyte.registry", "is required: set host:port pairs separated by commas")
	case len(q.Tenant) >= 65:
		ps.add(".quobyte.tenant", "is %d characters: must be a UUID of at most 64", len(q.Tenant))
	default:
		for _, hp := range strings.Split(q.Registry, ",") {
			if _, _, err := net.SplitHostPort(hp); err != nil {
				ps.add(".quobyte.registry", "%s is invalid: must be host:port pairs separated by commas", Quote(q.Registry))
				break
			}
		}
	}
	ps.required(".quobyte.volume", q.Volume, "the volume's name")
}

// azureDisk: validateAzureDisk, after defaulting (kind Shared, which takes a
// blob URI).
func (ps *problems) azureDisk(a *corev1.AzureDiskVolumeSource) {
	ps.required(".azureDisk.diskName", a.DiskName, "the disk's name")
	ps.required(".azureDisk.diskURI", a.DataDiskURI, "the disk's URI")
	if a.CachingMode != nil {
		ps.oneOf(".azureDisk.cachingMode", string(*a.CachingMode), false, "None", "ReadOnly", "ReadWrite")
	}
	kind := corev1.AzureSharedBlobDisk
	if a.Kind != nil {
		kind = *a.Kind
		ps.oneOf(".azureDisk.kind", string(kind), false, "Dedicated", "Managed", "Shared")
	}
	if kind == corev1.AzureManagedDisk && !strings.HasPrefix(a.DataDiskURI, "/subscriptions/") {
		ps.add(".azureDisk.diskURI", "%s is invalid for a Managed disk: use /subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}", Quote(a.DataDiskURI))
	}
	if kind != corev1.AzureManagedDisk && !strings.HasPrefix(a.DataDiskURI, "https://") {
		ps.add(".azureDisk.diskURI", "%s is invalid for a %s disk: use https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd", Quote(a.DataDiskURI), kind)
	}
}
