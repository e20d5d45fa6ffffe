// Package stacks builds RunFunctionRequests as Crossplane sends them to
// function-vllm-stack, for benchmarks: a ProductionStack of any number of
// models, and the observed state of that stack once it serves (composed
// resources and pods as the API server returns them, with status,
// managedFields and defaulted fields).
//
// It does not import the function: callers pass the function's first
// response, from which the observed objects are derived.
package stacks

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// Namespace is where benchmark stacks live.
const Namespace = "llm"

// Times in observed objects; fixed, so requests are the same on every run.
const (
	created = "2025-06-02T10:00:00Z"
	started = "2025-06-02T10:00:09Z"
	updated = "2025-06-02T10:04:31Z"
)

// SeedXR reads the seed stack (example/xr.yaml) and puts it in Namespace, as
// the API server stores a namespaced XR.
func SeedXR(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	xr := map[string]any{}
	if err := yaml.Unmarshal(b, &xr); err != nil {
		return nil, fmt.Errorf("cannot parse %s: %w", path, err)
	}
	meta, _ := xr["metadata"].(map[string]any)
	if meta == nil {
		return nil, fmt.Errorf("%s has no metadata", path)
	}
	meta["namespace"] = Namespace
	return xr, nil
}

// MultiXR is a stack of n models in the style of
// example/stacks/multi-model.yaml: shared engine defaults at the top, and
// models that override some of them (tools, GPU memory, tensor parallelism,
// resources, env, replicas, a chat template).
func MultiXR(n int) map[string]any {
	models := make([]any, 0, n)
	for i := range n {
		m := map[string]any{
			"name":     fmt.Sprintf("model-%02d", i),
			"modelURL": fmt.Sprintf("org-%d/Model-%02d-8B-Instruct", i%4, i),
		}
		if i%2 == 0 {
			m["maxModelLen"] = int64(8192)
		}
		if i%3 == 1 {
			m["enableTool"] = true
			m["toolCallParser"] = "hermes"
		}
		if i%4 == 3 {
			m["replicas"] = int64(2)
			m["storage"] = map[string]any{"accessModes": []any{"ReadWriteMany"}}
		}
		if i%5 == 2 {
			m["vllmConfig"] = map[string]any{"gpuMemoryUtilization": "0.8", "tensorParallelSize": int64(2)}
			m["resources"] = map[string]any{"gpu": "2", "memory": "32Gi"}
			m["env"] = []any{map[string]any{"name": "VLLM_LOGGING_LEVEL", "value": "DEBUG"}}
		}
		if i%8 == 5 {
			m["chatTemplate"] = chatTemplate
		}
		models = append(models, m)
	}
	return map[string]any{
		"apiVersion": "serving.vllm.ai/v1alpha1",
		"kind":       "ProductionStack",
		"metadata":   map[string]any{"name": fmt.Sprintf("multi-%d", n), "namespace": Namespace},
		"spec": map[string]any{
			"vllmConfig": map[string]any{
				"image":                "vllm/vllm-openai:v0.8.3",
				"gpuMemoryUtilization": "0.9",
				"hfTokenSecret":        map[string]any{"name": "huggingface-token"},
			},
			"resources": map[string]any{"cpu": "4", "memory": "16Gi", "gpu": "1"},
			"storage":   map[string]any{"size": "100Gi", "storageClassName": "fast-ssd"},
			"env":       []any{map[string]any{"name": "VLLM_LOGGING_LEVEL", "value": "INFO"}},
			"routerConfig": map[string]any{
				"routerType": "roundrobin",
			},
			"models": models,
		},
	}
}

const chatTemplate = `{% for message in messages %}{% if message['role'] == 'system' %}{{ '<|system|>\n' + message['content'] + '<|end|>\n' }}` +
	`{% elif message['role'] == 'user' %}{{ '<|user|>\n' + message['content'] + '<|end|>\n' }}` +
	`{% elif message['role'] == 'assistant' %}{{ '<|assistant|>\n' + message['content'] + '<|end|>\n' }}{% endif %}{% endfor %}` +
	`{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}`

// Input is the function's Input of example/composition.yaml.
func Input() map[string]any {
	return map[string]any{
		"apiVersion": "vllmstack.fn.crossplane.io/v1beta1",
		"kind":       "Input",
		"router":     map[string]any{"image": "lmcache/lmstack-router", "tag": "v0.1.12"},
	}
}

// Request is the first call of a reconcile of a new stack, as Crossplane's
// function pipeline builds it: the XR observed, nothing composed yet, empty
// desired state and context.
func Request(xr, input map[string]any) (*fnv1.RunFunctionRequest, error) {
	oxr, err := structpb.NewStruct(xr)
	if err != nil {
		return nil, err
	}
	r := &fnv1.RunFunctionRequest{
		Meta: &fnv1.RequestMeta{Tag: "bench", Capabilities: []fnv1.Capability{
			fnv1.Capability_CAPABILITY_CAPABILITIES, fnv1.Capability_CAPABILITY_REQUIRED_RESOURCES,
			fnv1.Capability_CAPABILITY_CREDENTIALS, fnv1.Capability_CAPABILITY_CONDITIONS,
			fnv1.Capability_CAPABILITY_REQUIRED_SCHEMAS,
		}},
		Observed:    &fnv1.State{Composite: &fnv1.Resource{Resource: oxr}},
		Desired:     &fnv1.State{},
		Context:     &structpb.Struct{Fields: map[string]*structpb.Value{}},
		Credentials: map[string]*fnv1.Credentials{},
	}
	if input != nil {
		if r.Input, err = structpb.NewStruct(input); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Serving returns req as Crossplane sends it once the stack serves (the last
// call of a reconcile, with what the function requires of it): it runs
// the function (run) and feeds what it composed back as observed until the
// composed objects stop changing, as reconciles do (the router's RoleBinding
// is composed once its Role is observed). Its response is that of the last
// request returned.
func Serving(req *fnv1.RunFunctionRequest, run func(*fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error)) (*fnv1.RunFunctionRequest, *fnv1.RunFunctionResponse, error) {
	obs := req
	rsp, err := run(obs)
	for range 3 {
		if err != nil {
			return nil, nil, err
		}
		if obs, err = Observed(req, rsp); err != nil {
			return nil, nil, err
		}
		before := len(rsp.GetDesired().GetResources())
		if rsp, err = run(obs); err == nil && len(rsp.GetDesired().GetResources()) == before {
			// The last call of a reconcile carries what the function
			// required; a serving stack requires nothing (issue 34), so
			// its one call carries no pods.
			for name := range obs.GetRequiredResources() {
				if _, ok := rsp.GetRequirements().GetResources()[name]; !ok {
					delete(obs.RequiredResources, name)
				}
			}
			return obs, rsp, nil
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return nil, nil, fmt.Errorf("the composed objects did not settle after 3 reconciles")
}

// Observed returns req as Crossplane sends it once the stack serves: every
// object of rsp (the function's response to req) exists and is ready as the
// API server returns it, the XR carries the status the function wrote and
// Crossplane's own fields, and the pods the function required are sent
// under their requirements.
func Observed(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse) (*fnv1.RunFunctionRequest, error) {
	xr := req.GetObserved().GetComposite().GetResource().AsMap()
	xrMeta := xr["metadata"].(map[string]any)
	xrName, _ := xrMeta["name"].(string)
	xrUID := uid("xr/" + xrName)
	owner := map[string]any{
		"apiVersion": xr["apiVersion"], "kind": xr["kind"], "name": xrName, "uid": xrUID,
		"controller": true, "blockOwnerDeletion": true,
	}

	out := &fnv1.RunFunctionRequest{
		Meta:              req.GetMeta(),
		Input:             req.GetInput(),
		Desired:           &fnv1.State{},
		Context:           &structpb.Struct{Fields: map[string]*structpb.Value{}},
		Credentials:       map[string]*fnv1.Credentials{},
		Observed:          &fnv1.State{Resources: map[string]*fnv1.Resource{}},
		RequiredResources: map[string]*fnv1.Resources{},
	}

	var pods []map[string]any
	var refs []any
	keys := slices.Sorted(maps.Keys(rsp.GetDesired().GetResources()))
	for i, key := range keys {
		d := rsp.GetDesired().GetResources()[key].GetResource().AsMap()
		o := observe(d, key, xrName, owner, i)
		s, err := structpb.NewStruct(o)
		if err != nil {
			return nil, fmt.Errorf("observed %s: %w", key, err)
		}
		out.Observed.Resources[key] = &fnv1.Resource{Resource: s, ConnectionDetails: map[string][]byte{}}
		m := o["metadata"].(map[string]any)
		refs = append(refs, map[string]any{"apiVersion": o["apiVersion"], "kind": o["kind"], "name": m["name"]})
		if o["kind"] == "Deployment" {
			pods = append(pods, podsOf(o)...)
		}
	}

	// The XR as the API server stores it after a few reconciles.
	status, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
	}
	var conds []any
	for _, c := range []string{"Synced", "Ready"} {
		conds = append(conds, map[string]any{"type": c, "status": "True", "reason": map[string]string{"Synced": "ReconcileSuccess", "Ready": "Available"}[c], "lastTransitionTime": updated, "observedGeneration": int64(1)})
	}
	for _, c := range rsp.GetConditions() {
		conds = append(conds, map[string]any{"type": c.GetType(), "status": "True", "reason": c.GetReason(), "message": c.GetMessage(), "lastTransitionTime": updated, "observedGeneration": int64(1)})
	}
	status["conditions"] = conds
	xr["status"] = status
	spec := xr["spec"].(map[string]any)
	spec["crossplane"] = map[string]any{
		"compositionRef":          map[string]any{"name": "vllm-stack"},
		"compositionRevisionRef":  map[string]any{"name": "vllm-stack-5c1d7e2"},
		"compositionUpdatePolicy": "Automatic",
		"resourceRefs":            refs,
	}
	xrMeta["uid"] = xrUID
	xrMeta["resourceVersion"] = "48213"
	xrMeta["generation"] = int64(1)
	xrMeta["creationTimestamp"] = created
	xrMeta["finalizers"] = []any{"composite.apiextensions.crossplane.io"}
	xrMeta["labels"] = map[string]any{"crossplane.io/composite": xrName}
	xrMeta["managedFields"] = []any{
		managedField("kubectl-client-side-apply", "Update", "serving.vllm.ai/v1alpha1", "", map[string]any{
			"f:metadata": map[string]any{"f:annotations": map[string]any{".": map[string]any{}, "f:kubectl.kubernetes.io/last-applied-configuration": map[string]any{}}},
			"f:spec":     fieldsV1(xr["spec"], 1),
		}),
		managedField("apiextensions.crossplane.io/composite", "Apply", "serving.vllm.ai/v1alpha1", "", map[string]any{
			"f:metadata": map[string]any{"f:labels": map[string]any{"f:crossplane.io/composite": map[string]any{}}},
			"f:spec":     map[string]any{"f:crossplane": fieldsV1(spec["crossplane"], 1)},
		}),
		managedField("apiextensions.crossplane.io/composite", "Apply", "serving.vllm.ai/v1alpha1", "status", map[string]any{
			"f:status": fieldsV1(status, 1),
		}),
	}
	oxr, err := structpb.NewStruct(xr)
	if err != nil {
		return nil, fmt.Errorf("observed XR: %w", err)
	}
	out.Observed.Composite = &fnv1.Resource{Resource: oxr, ConnectionDetails: map[string][]byte{}}

	// Crossplane sends, under each requirement, the pods its selector matches.
	for name, sel := range rsp.GetRequirements().GetResources() {
		items := []*fnv1.Resource{}
		for _, p := range pods {
			if matches(p, sel) {
				s, err := structpb.NewStruct(p)
				if err != nil {
					return nil, fmt.Errorf("pod: %w", err)
				}
				items = append(items, &fnv1.Resource{Resource: s})
			}
		}
		out.RequiredResources[name] = &fnv1.Resources{Items: items}
	}
	return out, nil
}

func matches(pod map[string]any, sel *fnv1.ResourceSelector) bool {
	m := pod["metadata"].(map[string]any)
	if sel.GetKind() != "Pod" || (sel.Namespace != nil && sel.GetNamespace() != m["namespace"]) {
		return false
	}
	labels, _ := m["labels"].(map[string]any)
	for k, v := range sel.GetMatchLabels().GetLabels() {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// observe turns a desired object into the object the API server returns:
// server metadata, Crossplane's labels and owner reference, defaulted
// fields, status and managedFields.
func observe(d map[string]any, key, xrName string, owner map[string]any, i int) map[string]any {
	o := deepCopy(d).(map[string]any)
	kind, _ := o["kind"].(string)
	apiVersion, _ := o["apiVersion"].(string)
	m := o["metadata"].(map[string]any)
	name, _ := m["name"].(string)

	applied := deepCopy(o).(map[string]any) // what Crossplane applies
	am := applied["metadata"].(map[string]any)
	am["annotations"] = map[string]any{"crossplane.io/composition-resource-name": key}
	labels := map[string]any{"crossplane.io/composite": xrName}
	if l, ok := am["labels"].(map[string]any); ok {
		maps.Copy(labels, l)
	}
	am["labels"] = labels
	am["ownerReferences"] = []any{owner}

	maps.Copy(m, am)
	m["uid"] = uid(kind + "/" + name)
	m["resourceVersion"] = fmt.Sprint(48300 + i*7)
	m["creationTimestamp"] = created
	fields := []any{managedField("apiextensions.crossplane.io/composed/"+hash(xrName)[:16], "Apply", apiVersion, "", fieldsV1(applied, 0))}

	switch kind {
	case "Deployment":
		m["generation"] = int64(1)
		m["annotations"].(map[string]any)["deployment.kubernetes.io/revision"] = "1"
		spec := o["spec"].(map[string]any)
		setDefault(spec, "progressDeadlineSeconds", int64(600))
		setDefault(spec, "revisionHistoryLimit", int64(10))
		setDefault(spec, "replicas", int64(1))
		strategy := spec["strategy"].(map[string]any)
		if strategy["type"] == "RollingUpdate" {
			setDefault(strategy, "rollingUpdate", map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"})
		}
		tmpl := spec["template"].(map[string]any)
		tmpl["metadata"].(map[string]any)["creationTimestamp"] = nil
		defaultPodSpec(tmpl["spec"].(map[string]any))
		replicas := toInt(spec["replicas"])
		status := map[string]any{
			"observedGeneration": int64(1), "replicas": replicas, "updatedReplicas": replicas,
			"readyReplicas": replicas, "availableReplicas": replicas,
			"conditions": []any{
				map[string]any{
					"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
					"message": "Deployment has minimum availability.", "lastUpdateTime": updated, "lastTransitionTime": updated,
				},
				map[string]any{
					"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
					"message":        fmt.Sprintf("ReplicaSet %q has successfully progressed.", name+"-"+templateHash(name)),
					"lastUpdateTime": updated, "lastTransitionTime": created,
				},
			},
		}
		o["status"] = status
		fields = append(fields,
			managedField("kube-controller-manager", "Update", apiVersion, "", map[string]any{
				"f:metadata": map[string]any{"f:annotations": map[string]any{"f:deployment.kubernetes.io/revision": map[string]any{}}},
			}),
			managedField("kube-controller-manager", "Update", apiVersion, "status", map[string]any{"f:status": fieldsV1(status, 1)}))
	case "Service":
		spec := o["spec"].(map[string]any)
		ip := fmt.Sprintf("10.96.%d.%d", 100+i/250, 1+i%250)
		spec["clusterIP"], spec["clusterIPs"] = ip, []any{ip}
		spec["internalTrafficPolicy"] = "Cluster"
		spec["ipFamilies"] = []any{"IPv4"}
		spec["ipFamilyPolicy"] = "SingleStack"
		spec["sessionAffinity"] = "None"
		o["status"] = map[string]any{"loadBalancer": map[string]any{}}
	case "PersistentVolumeClaim":
		m["finalizers"] = []any{"kubernetes.io/pvc-protection"}
		maps.Copy(m["annotations"].(map[string]any), map[string]any{
			"pv.kubernetes.io/bind-completed":               "yes",
			"pv.kubernetes.io/bound-by-controller":          "yes",
			"volume.beta.kubernetes.io/storage-provisioner": "pd.csi.storage.gke.io",
			"volume.kubernetes.io/storage-provisioner":      "pd.csi.storage.gke.io",
		})
		spec := o["spec"].(map[string]any)
		spec["volumeName"] = "pvc-" + uid("pv/"+name)
		spec["volumeMode"] = "Filesystem"
		size := spec["resources"].(map[string]any)["requests"].(map[string]any)["storage"]
		status := map[string]any{"phase": "Bound", "accessModes": spec["accessModes"], "capacity": map[string]any{"storage": size}}
		o["status"] = status
		fields = append(fields,
			managedField("kube-controller-manager", "Update", apiVersion, "", map[string]any{
				"f:metadata": map[string]any{"f:annotations": map[string]any{
					"f:pv.kubernetes.io/bind-completed": map[string]any{}, "f:pv.kubernetes.io/bound-by-controller": map[string]any{},
					"f:volume.beta.kubernetes.io/storage-provisioner": map[string]any{}, "f:volume.kubernetes.io/storage-provisioner": map[string]any{},
				}},
				"f:spec": map[string]any{"f:volumeName": map[string]any{}},
			}),
			managedField("kube-controller-manager", "Update", apiVersion, "status", map[string]any{"f:status": fieldsV1(status, 1)}))
	}
	m["managedFields"] = fields
	return o
}

// defaultPodSpec sets the fields the API server defaults in a pod spec.
func defaultPodSpec(spec map[string]any) {
	setDefault(spec, "dnsPolicy", "ClusterFirst")
	setDefault(spec, "restartPolicy", "Always")
	setDefault(spec, "schedulerName", "default-scheduler")
	setDefault(spec, "securityContext", map[string]any{})
	setDefault(spec, "terminationGracePeriodSeconds", int64(30))
	for _, list := range []string{"initContainers", "containers"} {
		cs, _ := spec[list].([]any)
		for _, c := range cs {
			c := c.(map[string]any)
			setDefault(c, "terminationMessagePath", "/dev/termination-log")
			setDefault(c, "terminationMessagePolicy", "File")
			setDefault(c, "imagePullPolicy", "IfNotPresent")
			setDefault(c, "resources", map[string]any{})
			for _, p := range []string{"startupProbe", "readinessProbe", "livenessProbe"} {
				if probe, ok := c[p].(map[string]any); ok {
					setDefault(probe, "timeoutSeconds", int64(1))
					setDefault(probe, "successThreshold", int64(1))
					setDefault(probe, "failureThreshold", int64(3))
					setDefault(probe, "periodSeconds", int64(10))
				}
			}
			ports, _ := c["ports"].([]any)
			for _, p := range ports {
				setDefault(p.(map[string]any), "protocol", "TCP")
			}
		}
	}
	vols, _ := spec["volumes"].([]any)
	for _, v := range vols {
		if cm, ok := v.(map[string]any)["configMap"].(map[string]any); ok {
			setDefault(cm, "defaultMode", int64(420))
		}
	}
}

// podsOf returns the running, ready pods of an observed Deployment, as the
// API server returns them.
func podsOf(d map[string]any) []map[string]any {
	dm := d["metadata"].(map[string]any)
	name, ns := dm["name"].(string), dm["namespace"]
	spec := d["spec"].(map[string]any)
	tmpl := spec["template"].(map[string]any)
	th := templateHash(name)
	rs := name + "-" + th
	var pods []map[string]any
	for r := range int(toInt(spec["replicas"])) {
		podName := rs + "-" + hash(fmt.Sprint(name, r))[:5]
		labels := map[string]any{"pod-template-hash": th}
		if l, ok := tmpl["metadata"].(map[string]any)["labels"].(map[string]any); ok {
			maps.Copy(labels, l)
		}
		ps := deepCopy(tmpl["spec"]).(map[string]any)
		ps["nodeName"] = fmt.Sprintf("gpu-node-%d", r)
		setDefault(ps, "serviceAccountName", "default")
		setDefault(ps, "serviceAccount", ps["serviceAccountName"])
		ps["enableServiceLinks"] = true
		ps["preemptionPolicy"] = "PreemptLowerPriority"
		ps["priority"] = int64(0)
		ps["tolerations"] = append(anyList(ps["tolerations"]),
			map[string]any{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": int64(300)},
			map[string]any{"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": int64(300)})
		if ps["automountServiceAccountToken"] != false {
			token := "kube-api-access-" + hash(podName)[:5]
			ps["volumes"] = append(anyList(ps["volumes"]), map[string]any{"name": token, "projected": map[string]any{
				"defaultMode": int64(420),
				"sources": []any{
					map[string]any{"serviceAccountToken": map[string]any{"expirationSeconds": int64(3607), "path": "token"}},
					map[string]any{"configMap": map[string]any{"name": "kube-root-ca.crt", "items": []any{map[string]any{"key": "ca.crt", "path": "ca.crt"}}}},
					map[string]any{"downwardAPI": map[string]any{"items": []any{map[string]any{"path": "namespace", "fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.namespace"}}}}},
				},
			}})
			for _, c := range anyList(ps["containers"]) {
				c := c.(map[string]any)
				c["volumeMounts"] = append(anyList(c["volumeMounts"]), map[string]any{"name": token, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true})
			}
		}
		var statuses []any
		for _, c := range anyList(ps["containers"]) {
			c := c.(map[string]any)
			statuses = append(statuses, map[string]any{
				"name": c["name"], "image": c["image"], "imageID": "docker.io/library/image@sha256:" + hash(fmt.Sprint(c["image"])),
				"containerID": "containerd://" + hash(podName+fmt.Sprint(c["name"])), "ready": true, "started": true, "restartCount": int64(0),
				"state":        map[string]any{"running": map[string]any{"startedAt": started}},
				"volumeMounts": c["volumeMounts"],
			})
		}
		ip := fmt.Sprintf("10.244.%d.%d", r, len(name)+r)
		status := map[string]any{
			"phase": "Running", "hostIP": "10.0.0.1" + fmt.Sprint(r), "hostIPs": []any{map[string]any{"ip": "10.0.0.1" + fmt.Sprint(r)}},
			"podIP": ip, "podIPs": []any{map[string]any{"ip": ip}}, "qosClass": "Burstable", "startTime": created,
			"conditions": []any{
				map[string]any{"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": started, "lastProbeTime": nil},
				map[string]any{"type": "Initialized", "status": "True", "lastTransitionTime": created, "lastProbeTime": nil},
				map[string]any{"type": "Ready", "status": "True", "lastTransitionTime": updated, "lastProbeTime": nil},
				map[string]any{"type": "ContainersReady", "status": "True", "lastTransitionTime": updated, "lastProbeTime": nil},
				map[string]any{"type": "PodScheduled", "status": "True", "lastTransitionTime": created, "lastProbeTime": nil},
			},
			"containerStatuses": statuses,
		}
		meta := map[string]any{
			"name": podName, "generateName": rs + "-", "namespace": ns, "labels": labels,
			"uid": uid("pod/" + podName), "resourceVersion": fmt.Sprint(48400 + r), "creationTimestamp": created,
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": uid("rs/" + rs), "controller": true, "blockOwnerDeletion": true}},
		}
		if a, ok := tmpl["metadata"].(map[string]any)["annotations"]; ok {
			meta["annotations"] = a
		}
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": ps, "status": status}
		meta["managedFields"] = []any{
			managedField("kube-controller-manager", "Update", "v1", "", map[string]any{
				"f:metadata": fieldsV1(map[string]any{"generateName": "", "labels": labels, "ownerReferences": meta["ownerReferences"]}, 1),
				"f:spec":     fieldsV1(tmpl["spec"], 1),
			}),
			managedField("kubelet", "Update", "v1", "status", map[string]any{"f:status": fieldsV1(status, 1)}),
		}
		pods = append(pods, pod)
	}
	return pods
}

func managedField(manager, operation, apiVersion, subresource string, fields map[string]any) map[string]any {
	f := map[string]any{
		"manager": manager, "operation": operation, "apiVersion": apiVersion, "time": updated,
		"fieldsType": "FieldsV1", "fieldsV1": fields,
	}
	if subresource != "" {
		f["subresource"] = subresource
	}
	return f
}

// fieldsV1 is the server-side apply field set of v, in the API server's
// FieldsV1 format: "f:<field>" for fields, "k:{...}" for items of lists
// keyed by name, port, mount path or type, "." for an owned map.
func fieldsV1(v any, depth int) map[string]any {
	out := map[string]any{}
	switch t := v.(type) {
	case map[string]any:
		if depth > 1 {
			out["."] = map[string]any{}
		}
		for k, e := range t {
			if k == "status" && depth == 0 || k == "creationTimestamp" {
				continue
			}
			out["f:"+k] = fieldsV1(e, depth+1)
		}
	case []any:
		for _, e := range t {
			m, ok := e.(map[string]any)
			if !ok {
				return map[string]any{} // a list of scalars is atomic
			}
			key := listKey(m)
			if key == "" {
				return map[string]any{}
			}
			f := fieldsV1(m, 2)
			out["k:"+key] = f
		}
	}
	return out
}

func listKey(m map[string]any) string {
	switch {
	case m["uid"] != nil:
		return fmt.Sprintf(`{"uid":%q}`, m["uid"])
	case m["containerPort"] != nil:
		return fmt.Sprintf(`{"containerPort":%v,"protocol":"TCP"}`, m["containerPort"])
	case m["port"] != nil:
		return fmt.Sprintf(`{"port":%v,"protocol":"TCP"}`, m["port"])
	case m["mountPath"] != nil:
		return fmt.Sprintf(`{"mountPath":%q}`, m["mountPath"])
	case m["name"] != nil:
		return fmt.Sprintf(`{"name":%q}`, m["name"])
	case m["type"] != nil:
		return fmt.Sprintf(`{"type":%q}`, m["type"])
	case m["ip"] != nil:
		return fmt.Sprintf(`{"ip":%q}`, m["ip"])
	}
	return ""
}

// toInt reads a number of a structpb-decoded object (a float64) or of one
// built here (an int64).
func toInt(v any) int64 {
	switch n := v.(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	}
	return 0
}

func setDefault(m map[string]any, k string, v any) {
	if _, ok := m[k]; !ok {
		m[k] = v
	}
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// uid is a UUID derived from s.
func uid(s string) string {
	h := hash(s)
	return strings.Join([]string{h[:8], h[8:12], h[12:16], h[16:20], h[20:32]}, "-")
}

// templateHash is a pod-template-hash as the Deployment controller makes it.
func templateHash(name string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	h := sha256.Sum256([]byte("template/" + name))
	b := make([]byte, 10)
	for i := range b {
		b[i] = alphabet[int(h[i])%len(alphabet)]
	}
	return string(b)
}
