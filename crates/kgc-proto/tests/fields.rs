//! `prune_unknown_fields`: the unknown fields kube-apiserver's strict decoding reports for JSON
//! objects of built-in kinds, with upstream's paths, and their removal.

use std::path::Path;

use kgc_proto::prune_unknown_fields;
use proptest::prelude::*;
use serde_json::{Value, json};

/// Runs the function on a copy of `obj` and returns the paths and the pruned copy.
fn prune(obj: &Value) -> (Vec<String>, Value) {
    let api_version = obj["apiVersion"].as_str().unwrap().to_owned();
    let kind = obj["kind"].as_str().unwrap().to_owned();
    let mut pruned = obj.clone();
    let unknown = prune_unknown_fields(&api_version, &kind, &mut pruned)
        .unwrap_or_else(|| panic!("{api_version} {kind} is not a known built-in"));
    (unknown, pruned)
}

/// Asserts that `obj` has no unknown fields and comes back unchanged.
fn assert_clean(name: &str, obj: &Value) {
    let (unknown, pruned) = prune(obj);
    assert!(
        unknown.is_empty(),
        "{name}: unexpected unknown fields {unknown:?}"
    );
    assert_eq!(
        &pruned, obj,
        "{name}: a valid object must come back unchanged"
    );
}

/// Asserts the unknown fields of `obj`, and that pruning removed them (and nothing else).
fn assert_unknown(obj: Value, expected: &[&str], expected_pruned: Value) {
    let (unknown, pruned) = prune(&obj);
    assert_eq!(unknown, expected);
    assert_eq!(pruned, expected_pruned);
    // Pruning is idempotent: what is left is clean.
    assert_clean("pruned", &pruned);
}

/// Every kind kgc serves (kgc-meta's built-in catalog), apiextensions aside.
const SERVED: &[(&str, &str)] = &[
    ("v1", "Pod"),
    ("v1", "Service"),
    ("v1", "ReplicationController"),
    ("v1", "Namespace"),
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Endpoints"),
    ("v1", "ServiceAccount"),
    ("v1", "PersistentVolume"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Node"),
    ("v1", "Event"),
    ("v1", "LimitRange"),
    ("v1", "ResourceQuota"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "ControllerRevision"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("coordination.k8s.io/v1", "Lease"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("networking.k8s.io/v1", "Ingress"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
    ("policy/v1", "PodDisruptionBudget"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("discovery.k8s.io/v1", "EndpointSlice"),
    ("events.k8s.io/v1", "Event"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
];

/// Realistic, fully valid objects of every served kind (Kubernetes 1.32 field sets), rich enough
/// to touch most of each type: `kubectl create … --dry-run=client -o json` shapes plus the
/// optional fields users and controllers set, `status` included.
const MANIFESTS: &str = r##"{
"pod": {
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}, "annotations": {"a": "b"}, "creationTimestamp": null, "generateName": "web-", "uid": "0b5a1c1e-1111-2222-3333-444455556666", "resourceVersion": "42", "generation": 1, "finalizers": ["example.com/f"], "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "0b5a1c1e-1111-2222-3333-444455556667", "controller": true, "blockOwnerDeletion": true}], "managedFields": [{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]},
  "spec": {"volumes": [{"name": "cfg", "configMap": {"name": "cm", "items": [{"key": "a", "path": "a.txt", "mode": 420}], "defaultMode": 420, "optional": true}}, {"name": "sec", "secret": {"secretName": "s", "defaultMode": 256}}, {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}}, {"name": "host", "hostPath": {"path": "/var/log", "type": "Directory"}}, {"name": "data", "persistentVolumeClaim": {"claimName": "data", "readOnly": false}}, {"name": "proj", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"audience": "api", "expirationSeconds": 3607, "path": "token"}}, {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}, {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}, {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"metadata": {"labels": {"x": "y"}}, "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}}}}}, {"name": "nfs", "nfs": {"server": "nfs.example.com", "path": "/exports", "readOnly": true}}, {"name": "csi", "csi": {"driver": "csi.example.com", "volumeAttributes": {"k": "v"}, "nodePublishSecretRef": {"name": "s"}}}, {"name": "img", "image": {"reference": "registry.example.com/data:1", "pullPolicy": "IfNotPresent"}}], "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "true"], "restartPolicy": "Always"}], "containers": [{"name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent", "args": ["-g", "daemon off;"], "workingDir": "/", "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP", "hostPort": 8080, "hostIP": "0.0.0.0"}], "env": [{"name": "A", "value": "1"}, {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}, {"name": "CPU", "valueFrom": {"resourceFieldRef": {"containerName": "web", "resource": "limits.cpu", "divisor": "1m"}}}, {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": true}}}, {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}], "envFrom": [{"prefix": "P_", "configMapRef": {"name": "cm"}}, {"secretRef": {"name": "s", "optional": true}}], "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": 0.25, "memory": "64Mi"}, "claims": [{"name": "gpu"}]}, "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}], "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": true, "subPath": "a", "mountPropagation": "None", "recursiveReadOnly": "Disabled"}], "volumeDevices": [{"name": "blk", "devicePath": "/dev/xvda"}], "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP", "httpHeaders": [{"name": "X", "value": "y"}]}, "initialDelaySeconds": 3, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3, "terminationGracePeriodSeconds": 30}, "readinessProbe": {"tcpSocket": {"port": 80}}, "startupProbe": {"exec": {"command": ["cat", "/tmp/ready"]}}, "lifecycle": {"postStart": {"exec": {"command": ["true"]}}, "preStop": {"sleep": {"seconds": 5}}}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": true, "readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false, "privileged": false, "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}, "appArmorProfile": {"type": "RuntimeDefault"}, "procMount": "Default", "seLinuxOptions": {"level": "s0:c123,c456"}, "windowsOptions": {"runAsUserName": "ContainerUser"}}, "stdin": false, "stdinOnce": false, "tty": false}, {"name": "grpc", "image": "grpc", "livenessProbe": {"grpc": {"port": 9000, "service": "health"}}}], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "activeDeadlineSeconds": 600, "dnsPolicy": "ClusterFirst", "nodeSelector": {"kubernetes.io/os": "linux"}, "serviceAccountName": "default", "serviceAccount": "default", "automountServiceAccountToken": false, "nodeName": "n1", "hostNetwork": false, "hostPID": false, "hostIPC": false, "shareProcessNamespace": true, "securityContext": {"fsGroup": 2000, "fsGroupChangePolicy": "OnRootMismatch", "supplementalGroups": [3000], "supplementalGroupsPolicy": "Merge", "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}], "seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}, "imagePullSecrets": [{"name": "reg"}], "hostname": "web", "subdomain": "svc", "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}], "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}, "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}]}, "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname", "namespaces": ["default"], "namespaceSelector": {}, "matchLabelKeys": ["pod-template-hash"]}]}, "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}, "topologyKey": "zone"}}]}}, "schedulerName": "default-scheduler", "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}], "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["foo.local"]}], "priorityClassName": "high", "priority": 1000, "preemptionPolicy": "PreemptLowerPriority", "dnsConfig": {"nameservers": ["1.1.1.1"], "searches": ["svc.cluster.local"], "options": [{"name": "ndots", "value": "2"}]}, "readinessGates": [{"conditionType": "example.com/ready"}], "runtimeClassName": "runc", "enableServiceLinks": true, "overhead": {"cpu": "10m"}, "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "web"}}, "minDomains": 2, "nodeAffinityPolicy": "Honor", "nodeTaintsPolicy": "Ignore", "matchLabelKeys": ["pod-template-hash"]}], "setHostnameAsFQDN": false, "os": {"name": "linux"}, "hostUsers": true, "schedulingGates": [{"name": "example.com/gate"}], "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}], "resources": {"limits": {"cpu": "1"}}},
  "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2024-01-01T00:00:00Z"}], "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "podIP": "10.1.0.5", "podIPs": [{"ip": "10.1.0.5"}], "startTime": "2024-01-01T00:00:00Z", "qosClass": "Burstable", "containerStatuses": [{"name": "web", "state": {"running": {"startedAt": "2024-01-01T00:00:01Z"}}, "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": null, "finishedAt": null, "containerID": "containerd://x"}}, "ready": true, "restartCount": 1, "image": "nginx:1.27", "imageID": "docker.io/library/nginx@sha256:0", "containerID": "containerd://y", "started": true, "allocatedResources": {"cpu": "250m"}, "resources": {"requests": {"cpu": "250m"}}, "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": true}], "user": {"linux": {"uid": 1000, "gid": 1000, "supplementalGroups": [1000]}}}]}
},
"service": {
  "apiVersion": "v1",
  "kind": "Service",
  "metadata": {"name": "web", "labels": {"app": "web"}},
  "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "ports": [{"name": "http", "protocol": "TCP", "appProtocol": "http", "port": 80, "targetPort": "http", "nodePort": 30080}], "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack", "externalIPs": ["1.2.3.4"], "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}, "loadBalancerSourceRanges": ["0.0.0.0/0"], "externalTrafficPolicy": "Local", "healthCheckNodePort": 31000, "publishNotReadyAddresses": true, "allocateLoadBalancerNodePorts": true, "loadBalancerClass": "example.com/lb", "internalTrafficPolicy": "Cluster", "trafficDistribution": "PreferClose"},
  "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4", "ipMode": "VIP", "ports": [{"port": 80, "protocol": "TCP"}]}]}, "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "R", "message": "m", "observedGeneration": 1}]}
},
"replicationcontroller": {
  "apiVersion": "v1",
  "kind": "ReplicationController",
  "metadata": {"name": "rc"},
  "spec": {"replicas": 2, "minReadySeconds": 5, "selector": {"app": "rc"}, "template": {"metadata": {"labels": {"app": "rc"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
  "status": {"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 2, "observedGeneration": 1}
},
"namespace": {
  "apiVersion": "v1",
  "kind": "Namespace",
  "metadata": {"name": "ns1", "creationTimestamp": null},
  "spec": {"finalizers": ["kubernetes"]},
  "status": {"phase": "Active", "conditions": [{"type": "NamespaceDeletionDiscoveryFailure", "status": "False", "lastTransitionTime": null, "reason": "r", "message": "m"}]}
},
"configmap": {
  "apiVersion": "v1",
  "kind": "ConfigMap",
  "metadata": {"name": "cm", "creationTimestamp": null},
  "data": {"a": "b"},
  "binaryData": {"bin": "AP/+"},
  "immutable": false
},
"secret": {
  "apiVersion": "v1",
  "kind": "Secret",
  "metadata": {"name": "s"},
  "type": "Opaque",
  "data": {"pw": "cEBzcw=="},
  "stringData": {"user": "admin"},
  "immutable": true
},
"endpoints": {
  "apiVersion": "v1",
  "kind": "Endpoints",
  "metadata": {"name": "web"},
  "subsets": [{"addresses": [{"ip": "10.1.0.5", "hostname": "web-0", "nodeName": "n1", "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-0", "uid": "u", "apiVersion": "v1", "resourceVersion": "1", "fieldPath": "spec"}}], "notReadyAddresses": [{"ip": "10.1.0.6"}], "ports": [{"name": "http", "port": 80, "protocol": "TCP", "appProtocol": "http"}]}]
},
"serviceaccount": {
  "apiVersion": "v1",
  "kind": "ServiceAccount",
  "metadata": {"name": "sa"},
  "secrets": [{"name": "sa-token", "kind": "Secret", "namespace": "default", "apiVersion": "v1"}],
  "imagePullSecrets": [{"name": "reg"}],
  "automountServiceAccountToken": false
},
"persistentvolume": {
  "apiVersion": "v1",
  "kind": "PersistentVolume",
  "metadata": {"name": "pv1"},
  "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "manual", "volumeMode": "Filesystem", "mountOptions": ["hard"], "hostPath": {"path": "/mnt/data"}, "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data", "uid": "u", "apiVersion": "v1", "resourceVersion": "1"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}, "volumeAttributesClassName": "gold"},
  "status": {"phase": "Bound", "message": "m", "reason": "r", "lastPhaseTransitionTime": "2024-01-01T00:00:00Z"}
},
"persistentvolume_csi": {
  "apiVersion": "v1",
  "kind": "PersistentVolume",
  "metadata": {"name": "pv2"},
  "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteMany"], "csi": {"driver": "csi.example.com", "volumeHandle": "vol-1", "fsType": "ext4", "readOnly": false, "volumeAttributes": {"a": "b"}, "controllerExpandSecretRef": {"name": "s", "namespace": "kube-system"}, "nodeStageSecretRef": {"name": "s", "namespace": "kube-system"}}}
},
"persistentvolumeclaim": {
  "apiVersion": "v1",
  "kind": "PersistentVolumeClaim",
  "metadata": {"name": "data"},
  "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}, "limits": {"storage": "2Gi"}}, "storageClassName": "standard", "volumeMode": "Filesystem", "selector": {"matchLabels": {"tier": "db"}}, "volumeName": "pv1", "dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"}, "dataSourceRef": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap", "namespace": "default"}, "volumeAttributesClassName": "gold"},
  "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}, "conditions": [{"type": "Resizing", "status": "True", "lastProbeTime": null, "lastTransitionTime": null}], "allocatedResources": {"storage": "1Gi"}, "allocatedResourceStatuses": {"storage": "ControllerResizeInProgress"}, "currentVolumeAttributesClassName": "gold", "modifyVolumeStatus": {"targetVolumeAttributesClassName": "gold", "status": "Pending"}}
},
"node": {
  "apiVersion": "v1",
  "kind": "Node",
  "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
  "spec": {"podCIDR": "10.1.0.0/24", "podCIDRs": ["10.1.0.0/24"], "providerID": "kind://n1", "unschedulable": true, "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule", "timeAdded": null}], "configSource": {"configMap": {"namespace": "kube-system", "name": "kubelet", "kubeletConfigKey": "kubelet"}}, "externalID": "x"},
  "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}, "allocatable": {"cpu": "3800m"}, "phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "KubeletReady", "message": "ok"}], "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}], "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}, "nodeInfo": {"machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "6", "osImage": "Debian", "containerRuntimeVersion": "containerd://1.7", "kubeletVersion": "v1.32.0", "kubeProxyVersion": "", "operatingSystem": "linux", "architecture": "amd64"}, "images": [{"names": ["nginx:1.27"], "sizeBytes": 1000}], "volumesInUse": ["kubernetes.io/csi/x"], "volumesAttached": [{"name": "kubernetes.io/csi/x", "devicePath": "/dev/x"}], "config": {"assigned": {"configMap": {"namespace": "kube-system", "name": "kubelet", "kubeletConfigKey": "kubelet"}}, "error": ""}, "runtimeHandlers": [{"name": "runc", "features": {"recursiveReadOnlyMounts": true, "userNamespaces": true}}], "features": {"supplementalGroupsPolicy": true}}
},
"event": {
  "apiVersion": "v1",
  "kind": "Event",
  "metadata": {"name": "web.17a", "namespace": "default"},
  "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web", "uid": "u", "apiVersion": "v1", "resourceVersion": "1", "fieldPath": "spec.containers{web}"},
  "reason": "Pulled",
  "message": "pulled",
  "source": {"component": "kubelet", "host": "n1"},
  "firstTimestamp": "2024-01-01T00:00:00Z",
  "lastTimestamp": "2024-01-01T00:00:00Z",
  "count": 1,
  "type": "Normal",
  "eventTime": null,
  "series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:00.000000Z"},
  "action": "Pull",
  "related": {"kind": "Node", "name": "n1"},
  "reportingComponent": "kubelet",
  "reportingInstance": "n1"
},
"limitrange": {
  "apiVersion": "v1",
  "kind": "LimitRange",
  "metadata": {"name": "lr"},
  "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m"}, "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "200m"}, "maxLimitRequestRatio": {"cpu": "10"}}]}
},
"resourcequota": {
  "apiVersion": "v1",
  "kind": "ResourceQuota",
  "metadata": {"name": "q"},
  "spec": {"hard": {"cpu": "1500m", "pods": "10"}, "scopes": ["BestEffort"], "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}},
  "status": {"hard": {"pods": "10"}, "used": {"pods": "1"}}
},
"deployment": {
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": "web", "labels": {"app": "web"}, "creationTimestamp": null},
  "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}, "creationTimestamp": null}, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}], "resources": {}}]}}, "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": 1}}, "minReadySeconds": 0, "revisionHistoryLimit": 10, "paused": false, "progressDeadlineSeconds": 600},
  "status": {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3, "unavailableReplicas": 0, "conditions": [{"type": "Available", "status": "True", "lastUpdateTime": "2024-01-01T00:00:00Z", "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "MinimumReplicasAvailable", "message": "ok"}], "collisionCount": 0}
},
"replicaset": {
  "apiVersion": "apps/v1",
  "kind": "ReplicaSet",
  "metadata": {"name": "web-abc"},
  "spec": {"replicas": 1, "minReadySeconds": 0, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
  "status": {"replicas": 1, "fullyLabeledReplicas": 1, "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 1, "conditions": [{"type": "ReplicaFailure", "status": "False", "lastTransitionTime": null}]}
},
"statefulset": {
  "apiVersion": "apps/v1",
  "kind": "StatefulSet",
  "metadata": {"name": "db"},
  "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "db", "image": "postgres", "volumeMounts": [{"name": "data", "mountPath": "/var/lib/postgresql"}]}]}}, "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Pending"}}], "podManagementPolicy": "Parallel", "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}}, "revisionHistoryLimit": 10, "minReadySeconds": 0, "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"}, "ordinals": {"start": 0}},
  "status": {"observedGeneration": 1, "replicas": 3, "readyReplicas": 3, "currentReplicas": 3, "updatedReplicas": 3, "currentRevision": "db-1", "updateRevision": "db-1", "collisionCount": 0, "availableReplicas": 3}
},
"daemonset": {
  "apiVersion": "apps/v1",
  "kind": "DaemonSet",
  "metadata": {"name": "agent"},
  "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"hostNetwork": true, "containers": [{"name": "a", "image": "agent"}]}}, "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}, "minReadySeconds": 0, "revisionHistoryLimit": 10},
  "status": {"currentNumberScheduled": 1, "numberMisscheduled": 0, "desiredNumberScheduled": 1, "numberReady": 1, "observedGeneration": 1, "updatedNumberScheduled": 1, "numberAvailable": 1, "numberUnavailable": 0, "collisionCount": 0}
},
"controllerrevision": {
  "apiVersion": "apps/v1",
  "kind": "ControllerRevision",
  "metadata": {"name": "db-1"},
  "data": {"spec": {"template": {"$patch": "replace", "anything": {"goes": ["here", 1, null]}}}},
  "revision": 1
},
"job": {
  "apiVersion": "batch/v1",
  "kind": "Job",
  "metadata": {"name": "j1", "creationTimestamp": null},
  "spec": {"parallelism": 1, "completions": 1, "activeDeadlineSeconds": 600, "backoffLimit": 6, "backoffLimitPerIndex": 1, "maxFailedIndexes": 1, "completionMode": "Indexed", "suspend": false, "ttlSecondsAfterFinished": 100, "manualSelector": false, "podReplacementPolicy": "Failed", "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}}, {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}, "successPolicy": {"rules": [{"succeededIndexes": "0-2", "succeededCount": 1}]}, "managedBy": "kubernetes.io/job-controller", "template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": [{"name": "j1", "image": "busybox", "command": ["echo", "hi"], "resources": {}}], "restartPolicy": "Never"}}},
  "status": {"startTime": "2024-01-01T00:00:00Z", "completionTime": null, "active": 0, "succeeded": 1, "failed": 0, "terminating": 0, "ready": 0, "completedIndexes": "0", "failedIndexes": "", "uncountedTerminatedPods": {"succeeded": [], "failed": []}, "conditions": [{"type": "Complete", "status": "True", "lastProbeTime": null, "lastTransitionTime": null}]}
},
"cronjob": {
  "apiVersion": "batch/v1",
  "kind": "CronJob",
  "metadata": {"name": "cj1"},
  "spec": {"schedule": "*/5 * * * *", "timeZone": "Etc/UTC", "startingDeadlineSeconds": 10, "concurrencyPolicy": "Forbid", "suspend": false, "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1, "jobTemplate": {"metadata": {"name": "cj1", "creationTimestamp": null}, "spec": {"template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": [{"name": "cj1", "image": "busybox", "command": ["date"], "resources": {}}], "restartPolicy": "OnFailure"}}}}},
  "status": {"active": [{"kind": "Job", "namespace": "default", "name": "cj1-1", "uid": "u", "apiVersion": "batch/v1", "resourceVersion": "1"}], "lastScheduleTime": null, "lastSuccessfulTime": null}
},
"hpa": {
  "apiVersion": "autoscaling/v2",
  "kind": "HorizontalPodAutoscaler",
  "metadata": {"name": "web"},
  "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 10, "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}, {"type": "Pods", "pods": {"metric": {"name": "qps", "selector": {"matchLabels": {"a": "b"}}}, "target": {"type": "AverageValue", "averageValue": "1k"}}}, {"type": "Object", "object": {"describedObject": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"}, "metric": {"name": "rps"}, "target": {"type": "Value", "value": "10k"}}}, {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "30"}}}, {"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "web", "target": {"type": "Utilization", "averageUtilization": 60}}}], "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}, "scaleDown": {"stabilizationWindowSeconds": 300}}},
  "status": {"observedGeneration": 1, "lastScaleTime": null, "currentReplicas": 1, "desiredReplicas": 1, "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 10, "averageValue": "10m"}}}], "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": null, "reason": "r", "message": "m"}]}
},
"lease": {
  "apiVersion": "coordination.k8s.io/v1",
  "kind": "Lease",
  "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
  "spec": {"holderIdentity": "n1_x", "leaseDurationSeconds": 15, "acquireTime": "2024-01-01T00:00:00.000000Z", "renewTime": "2024-01-01T00:00:10.123456Z", "leaseTransitions": 1, "strategy": "OldestEmulationVersion", "preferredHolder": "n2"}
},
"csr": {
  "apiVersion": "certificates.k8s.io/v1",
  "kind": "CertificateSigningRequest",
  "metadata": {"name": "csr1"},
  "spec": {"request": "LS0tLS1CRUdJTg==", "signerName": "kubernetes.io/kube-apiserver-client", "expirationSeconds": 86400, "usages": ["client auth"], "username": "alice", "uid": "u", "groups": ["system:authenticated"], "extra": {"scopes": ["a", "b"]}},
  "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "AutoApproved", "message": "ok", "lastUpdateTime": null, "lastTransitionTime": null}], "certificate": "LS0tLS1CRUdJTg=="}
},
"role": {
  "apiVersion": "rbac.authorization.k8s.io/v1",
  "kind": "Role",
  "metadata": {"name": "r1", "creationTimestamp": null},
  "rules": [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list", "watch"], "resourceNames": ["x"]}]
},
"rolebinding": {
  "apiVersion": "rbac.authorization.k8s.io/v1",
  "kind": "RoleBinding",
  "metadata": {"name": "rb1"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r1"},
  "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa1", "namespace": "default"}]
},
"clusterrole": {
  "apiVersion": "rbac.authorization.k8s.io/v1",
  "kind": "ClusterRole",
  "metadata": {"name": "cr1"},
  "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}, {"nonResourceURLs": ["/logs/*"], "verbs": ["get"]}],
  "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}]}
},
"clusterrolebinding": {
  "apiVersion": "rbac.authorization.k8s.io/v1",
  "kind": "ClusterRoleBinding",
  "metadata": {"name": "crb1"},
  "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cr1"},
  "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "ops"}]
},
"ingress": {
  "apiVersion": "networking.k8s.io/v1",
  "kind": "Ingress",
  "metadata": {"name": "ing1", "annotations": {"a": "b"}},
  "spec": {"ingressClassName": "nginx", "defaultBackend": {"service": {"name": "defsvc", "port": {"name": "http"}}}, "tls": [{"hosts": ["foo.com"], "secretName": "my-cert"}], "rules": [{"host": "foo.com", "http": {"paths": [{"path": "/bar", "pathType": "Prefix", "backend": {"service": {"name": "svc1", "port": {"number": 8080}}}}, {"path": "/res", "pathType": "ImplementationSpecific", "backend": {"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "static"}}}]}}]},
  "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4", "hostname": "lb", "ports": [{"port": 80, "protocol": "TCP", "error": "e"}]}]}}
},
"networkpolicy": {
  "apiVersion": "networking.k8s.io/v1",
  "kind": "NetworkPolicy",
  "metadata": {"name": "np"},
  "spec": {"podSelector": {"matchLabels": {"role": "db"}}, "policyTypes": ["Ingress", "Egress"], "ingress": [{"from": [{"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}}, {"namespaceSelector": {"matchLabels": {"project": "p"}}}, {"podSelector": {"matchLabels": {"role": "frontend"}}}], "ports": [{"protocol": "TCP", "port": 6379}]}], "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}], "ports": [{"protocol": "TCP", "port": 5978, "endPort": 6000}]}]}
},
"pdb": {
  "apiVersion": "policy/v1",
  "kind": "PodDisruptionBudget",
  "metadata": {"name": "pdb1"},
  "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
  "status": {"observedGeneration": 1, "disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3, "disruptedPods": {"web-0": "2024-01-01T00:00:00Z"}, "conditions": [{"type": "DisruptionAllowed", "status": "True", "observedGeneration": 1, "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "SufficientPods", "message": ""}]}
},
"storageclass": {
  "apiVersion": "storage.k8s.io/v1",
  "kind": "StorageClass",
  "metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
  "provisioner": "csi.example.com",
  "parameters": {"type": "ssd"},
  "reclaimPolicy": "Delete",
  "mountOptions": ["discard"],
  "allowVolumeExpansion": true,
  "volumeBindingMode": "WaitForFirstConsumer",
  "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": ["a"]}]}]
},
"endpointslice": {
  "apiVersion": "discovery.k8s.io/v1",
  "kind": "EndpointSlice",
  "metadata": {"name": "web-abc", "labels": {"kubernetes.io/service-name": "web"}},
  "addressType": "IPv4",
  "endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": true, "serving": true, "terminating": false}, "hostname": "web-0", "nodeName": "n1", "zone": "a", "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-0", "uid": "u"}, "deprecatedTopology": {"k": "v"}, "hints": {"forZones": [{"name": "a"}]}}],
  "ports": [{"name": "http", "protocol": "TCP", "port": 80, "appProtocol": "http"}]
},
"events_event": {
  "apiVersion": "events.k8s.io/v1",
  "kind": "Event",
  "metadata": {"name": "web.17b", "namespace": "default"},
  "eventTime": "2024-01-01T00:00:00.000000Z",
  "series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:00.000000Z"},
  "reportingController": "kubelet",
  "reportingInstance": "n1",
  "action": "Pull",
  "reason": "Pulled",
  "regarding": {"kind": "Pod", "namespace": "default", "name": "web", "fieldPath": "spec.containers{web}"},
  "related": {"kind": "Node", "name": "n1"},
  "note": "pulled",
  "type": "Normal",
  "deprecatedSource": {"component": "kubelet", "host": "n1"},
  "deprecatedFirstTimestamp": null,
  "deprecatedLastTimestamp": null,
  "deprecatedCount": 1
},
"priorityclass": {
  "apiVersion": "scheduling.k8s.io/v1",
  "kind": "PriorityClass",
  "metadata": {"name": "high"},
  "value": 1000,
  "globalDefault": false,
  "description": "high",
  "preemptionPolicy": "Never"
}
}"##;

fn manifests() -> Vec<(String, Value)> {
    let Value::Object(map) = serde_json::from_str::<Value>(MANIFESTS).unwrap() else {
        panic!("MANIFESTS is an object");
    };
    map.into_iter().collect()
}

#[test]
fn every_served_kind_is_known() {
    for &(api_version, kind) in SERVED {
        let mut obj = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}});
        assert_eq!(
            prune_unknown_fields(api_version, kind, &mut obj),
            Some(vec![]),
            "{api_version} {kind}"
        );
    }
}

#[test]
fn every_served_kind_has_a_realistic_manifest_without_unknown_fields() {
    let manifests = manifests();
    for &(api_version, kind) in SERVED {
        assert!(
            manifests
                .iter()
                .any(|(_, m)| m["apiVersion"] == api_version && m["kind"] == kind),
            "no manifest for {api_version} {kind}"
        );
    }
    for (name, manifest) in &manifests {
        assert_clean(name, manifest);
    }
}

#[test]
fn every_kubectl_fixture_has_no_unknown_fields() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|ext| ext == "json") {
            let obj: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            assert_clean(&path.display().to_string(), &obj);
            count += 1;
        }
    }
    assert!(count >= 30, "only {count} fixtures");
}

#[test]
fn custom_resources_and_unknown_kinds_are_not_handled() {
    for (api_version, kind) in [
        ("example.com/v1", "Widget"),
        // Not in kubectl 1.32's binary, so not in the schema: callers get `None` for CRDs.
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("apps/v2", "Deployment"),
        ("v1", "Deployment"),
        ("v1", "pod"),
        ("", ""),
    ] {
        let mut obj = json!({"apiVersion": api_version, "kind": kind, "bogus": 1});
        let before = obj.clone();
        assert_eq!(prune_unknown_fields(api_version, kind, &mut obj), None);
        assert_eq!(obj, before, "untouched");
    }
}

#[test]
fn unknown_top_level_field() {
    assert_unknown(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}, "bogus": {"x": 1}}),
        &["bogus"],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}}),
    );
}

#[test]
fn unknown_fields_are_reported_whatever_their_value() {
    for value in [
        json!(null),
        json!(1),
        json!("s"),
        json!([]),
        json!({}),
        json!([{"a": 1}]),
    ] {
        assert_unknown(
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "bogus": value}),
            &["bogus"],
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}),
        );
    }
}

#[test]
fn unknown_fields_nested_in_spec_and_in_list_items() {
    // The error kube-apiserver gives for this body: `Deployment in version "v1" cannot be handled
    // as a Deployment: strict decoding error: unknown field "spec.bogus", unknown field
    // "spec.template.spec.containers[0].bogus"`.
    assert_unknown(
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {
                "bogus": true,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [
                        {"name": "a", "image": "nginx", "bogus": 1},
                        {"name": "b", "image": "nginx", "ports": [{"containerPort": 80}, {"containerPort": 81, "bogus": 2}]}
                    ]}
                }
            }
        }),
        &[
            "spec.bogus",
            "spec.template.spec.containers[0].bogus",
            "spec.template.spec.containers[1].ports[1].bogus",
        ],
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [
                        {"name": "a", "image": "nginx"},
                        {"name": "b", "image": "nginx", "ports": [{"containerPort": 80}, {"containerPort": 81}]}
                    ]}
                }
            }
        }),
    );
}

#[test]
fn upstream_field_validation_integration_body() {
    // kubernetes test/integration/apiserver/field_validation_test.go's `invalidBodyJSON`
    // (duplicates aside: a serde_json value has none left).
    assert_unknown(
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "nginx"}},
            "spec": {
                "unknown1": "val1", "unknownDupe": "valDupe2", "paused": false,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [
                    {"name": "nginx", "image": "nginx:latest", "unknownNested": "val1", "imagePullPolicy": "Never"}
                ]}}
            }
        }),
        &[
            "spec.template.spec.containers[0].unknownNested",
            "spec.unknown1",
            "spec.unknownDupe",
        ],
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "nginx"}},
            "spec": {
                "paused": false,
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [
                    {"name": "nginx", "image": "nginx:latest", "imagePullPolicy": "Never"}
                ]}}
            }
        }),
    );
}

#[test]
fn unknown_field_inside_a_map_value_struct() {
    // map[QualifiedName]DeviceAttribute / map[QualifiedName]DeviceCapacity: the map key joins the
    // path like a field name.
    assert_unknown(
        json!({
            "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0", "basic": {
                    "attributes": {"gpu.example.com/model": {"string": "a100", "bogus": 1}, "index": {"int": 0}},
                    "capacity": {"memory": {"value": "40Gi", "valu": "x"}}
                }}]}
        }),
        &[
            "spec.devices[0].basic.attributes.gpu.example.com/model.bogus",
            "spec.devices[0].basic.capacity.memory.valu",
        ],
        json!({
            "apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0", "basic": {
                    "attributes": {"gpu.example.com/model": {"string": "a100"}, "index": {"int": 0}},
                    "capacity": {"memory": {"value": "40Gi"}}
                }}]}
        }),
    );
}

#[test]
fn maps_of_scalars_have_no_unknown_fields() {
    assert_clean(
        "labels",
        &json!({
            "apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": "q", "labels": {"bogus": "x"}, "annotations": {"spec.bogus": "y"}},
            "spec": {"hard": {"bogus": "1", "requests.storage": "0.5Ti"}}
        }),
    );
}

#[test]
fn inline_structs_contribute_their_fields() {
    assert_unknown(
        json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {
                "volumes": [
                    {"name": "a", "configMap": {"name": "cm"}},
                    {"name": "b", "bogus": {}, "secret": {"secretName": "s", "bogus": 1}},
                    // The Go name of the embedded struct is not a JSON field.
                    {"name": "c", "VolumeSource": {"emptyDir": {}}}
                ],
                "containers": [{
                    "name": "c", "image": "i",
                    "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "bogus": 1}}}],
                    "livenessProbe": {"httpGet": {"port": 80}, "periodSeconds": 5, "bogus": 1, "ProbeHandler": {}},
                    "lifecycle": {"preStop": {"exec": {"command": ["x"]}, "bogus": 1}}
                }],
                "ephemeralContainers": [{"name": "dbg", "image": "busybox", "targetContainerName": "c", "bogus": 1}]
            }
        }),
        &[
            "spec.containers[0].env[0].valueFrom.secretKeyRef.bogus",
            "spec.containers[0].lifecycle.preStop.bogus",
            "spec.containers[0].livenessProbe.ProbeHandler",
            "spec.containers[0].livenessProbe.bogus",
            "spec.ephemeralContainers[0].bogus",
            "spec.volumes[1].bogus",
            "spec.volumes[1].secret.bogus",
            "spec.volumes[2].VolumeSource",
        ],
        json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {
                "volumes": [
                    {"name": "a", "configMap": {"name": "cm"}},
                    {"name": "b", "secret": {"secretName": "s"}},
                    {"name": "c"}
                ],
                "containers": [{
                    "name": "c", "image": "i",
                    "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                    "livenessProbe": {"httpGet": {"port": 80}, "periodSeconds": 5},
                    "lifecycle": {"preStop": {"exec": {"command": ["x"]}}}
                }],
                "ephemeralContainers": [{"name": "dbg", "image": "busybox", "targetContainerName": "c"}]
            }
        }),
    );
}

#[test]
fn inline_structs_of_other_kinds() {
    assert_clean(
        "pv hostPath, ingress http",
        &json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv"},
                "spec": {"hostPath": {"path": "/x"}, "capacity": {"storage": "1Gi"}}}),
    );
    assert_unknown(
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"},
               "spec": {"rules": [{"host": "a", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "s", "port": {"number": 80, "nmber": 1}}}}]}, "IngressRuleValue": {}}]}}),
        &[
            "spec.rules[0].IngressRuleValue",
            "spec.rules[0].http.paths[0].backend.service.port.nmber",
        ],
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"},
               "spec": {"rules": [{"host": "a", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}}]}}),
    );
}

#[test]
fn opaque_fields_allow_anything() {
    assert_clean(
        "controllerrevision data (RawExtension)",
        &json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "r"}, "revision": 2,
                "data": {"bogus": {"nested": [{"anything": true}]}, "spec": {"template": {"spec": {"bogus": 1}}}}}),
    );
    assert_clean(
        "managedFields fieldsV1",
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm", "managedFields": [{"manager": "m", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:a": {}}, "bogus": [1, 2]}}]}}),
    );
    // Quantity, IntOrString, Time, MicroTime and []byte are scalars: a wrong JSON type there is a
    // type error for others to report, never an unknown field.
    assert_clean(
        "scalars holding objects",
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "creationTimestamp": {"bogus": 1}, "labels": {"a": {"bogus": 1}}},
                "spec": {"strategy": {"rollingUpdate": {"maxSurge": {"bogus": 1}}},
                         "template": {"spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": {"bogus": 1}}}, "command": [{"bogus": 1}]}]}}}}),
    );
    assert_clean(
        "lease microtime",
        &json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {"renewTime": {"bogus": 1}}}),
    );
    assert_clean(
        "csr extra (map of []string)",
        &json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": "c"},
                "spec": {"request": "", "signerName": "s", "extra": {"k": [{"bogus": 1}], "j": {"bogus": 1}}}}),
    );
}

#[test]
fn metadata_typos() {
    assert_unknown(
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": "ds", "labelz": {"a": "b"}, "namespace": "default", "clusterName": "c"},
               "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}, "annotation": {}, "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u", "controler": true}]}, "spec": {"containers": []}}}}),
        &[
            "metadata.clusterName",
            "metadata.labelz",
            "spec.template.metadata.annotation",
            "spec.template.metadata.ownerReferences[0].controler",
        ],
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
               "metadata": {"name": "ds", "namespace": "default"},
               "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}, "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "u"}]}, "spec": {"containers": []}}}}),
    );
}

#[test]
fn type_meta_is_known_only_where_go_embeds_it() {
    assert_unknown(
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
               "spec": {"selector": {"matchLabels": {"a": "b"}},
                        "template": {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}},
                        // A PersistentVolumeClaim embeds TypeMeta wherever it appears.
                        "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": {}}]}}),
        &["spec.template.apiVersion", "spec.template.kind"],
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
               "spec": {"selector": {"matchLabels": {"a": "b"}},
                        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": []}},
                        "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": {}}]}}),
    );
}

#[test]
fn names_match_case_sensitively() {
    assert_unknown(
        json!({"apiVersion": "v1", "kind": "Namespace", "Metadata": {"name": "x"}, "metadata": {"Name": "y"}, "Kind": "Namespace"}),
        &["Kind", "Metadata", "metadata.Name"],
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {}}),
    );
}

#[test]
fn odd_keys_are_reported_verbatim() {
    assert_unknown(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "": 1, "a.b": 2, "metadata": {"": 3, "x\"y": 4}}),
        &["", "a.b", "metadata.", "metadata.x\"y"],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
    );
}

#[test]
fn status_is_known_where_the_kind_has_it() {
    assert_clean(
        "pod status",
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}, "status": {"phase": "Pending"}}),
    );
    assert_unknown(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "status": {}, "spec": {}}),
        &["spec", "status"],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
    );
}

#[test]
fn wrong_json_types_are_not_unknown_fields() {
    for obj in [
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": "x", "spec": [1, {"bogus": 1}]}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": {"bogus": {"bogus": 1}}}}}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": {"spec": {"containers": [null, 1, "x", [{"bogus": 1}]]}}}}),
        json!({"apiVersion": "v1", "kind": "Pod", "spec": {"nodeSelector": [{"bogus": 1}], "overhead": "x"}}),
    ] {
        assert_clean("type errors", &obj);
    }
    for mut obj in [json!(null), json!([{"bogus": 1}]), json!("x"), json!(1)] {
        let before = obj.clone();
        assert_eq!(prune_unknown_fields("v1", "Pod", &mut obj), Some(vec![]));
        assert_eq!(obj, before);
    }
}

#[test]
fn a_fixture_with_typos_everywhere() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pod-debug-copy.json");
    let clean: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut dirty = clean.clone();
    dirty["spec"]["containers"][0]["imagePullPolicyy"] = json!("Always");
    dirty["spec"]["bogus"] = json!(1);
    dirty["status"]["bogus"] = json!(1);
    let (unknown, pruned) = prune(&dirty);
    assert_eq!(
        unknown,
        [
            "spec.bogus",
            "spec.containers[0].imagePullPolicyy",
            "status.bogus"
        ]
    );
    assert_eq!(pruned, clean);
}

/// Arbitrary JSON, objects keyed by a mix of real field names and junk.
fn arbitrary_json() -> impl Strategy<Value = Value> {
    let key = prop_oneof![
        Just("metadata".to_owned()),
        Just("spec".to_owned()),
        Just("status".to_owned()),
        Just("template".to_owned()),
        Just("containers".to_owned()),
        Just("volumes".to_owned()),
        Just("labels".to_owned()),
        Just("data".to_owned()),
        Just("apiVersion".to_owned()),
        Just("kind".to_owned()),
        Just("name".to_owned()),
        Just("configMap".to_owned()),
        Just("httpGet".to_owned()),
        Just("jobTemplate".to_owned()),
        Just("rules".to_owned()),
        Just("subjects".to_owned()),
        "[a-zA-Z.]{0,8}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z]{0,5}".prop_map(Value::String),
    ];
    leaf.prop_recursive(8, 128, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Never panics; what is left after pruning is clean and unchanged by a second pass; every
    /// reported path is distinct.
    #[test]
    fn arbitrary_json_never_panics(kind in 0..SERVED.len(), obj in arbitrary_json()) {
        let (api_version, kind) = SERVED[kind];
        let mut pruned = obj.clone();
        let unknown = prune_unknown_fields(api_version, kind, &mut pruned).unwrap();
        let mut distinct = unknown.clone();
        distinct.sort();
        distinct.dedup();
        prop_assert_eq!(distinct.len(), unknown.len());
        prop_assert_eq!(unknown.is_empty(), pruned == obj);
        let mut again = pruned.clone();
        prop_assert_eq!(prune_unknown_fields(api_version, kind, &mut again), Some(vec![]));
        prop_assert_eq!(again, pruned);
    }

    /// Arbitrary JSON grafted anywhere into a valid manifest never panics either.
    #[test]
    fn grafts_into_valid_manifests_never_panic(
        which in any::<prop::sample::Index>(),
        path in prop::collection::vec(any::<prop::sample::Index>(), 0..8),
        key in "[a-zA-Z]{1,8}",
        graft in arbitrary_json(),
    ) {
        let manifests = manifests();
        let (_, manifest) = &manifests[which.index(manifests.len())];
        let mut obj = manifest.clone();
        // Walk down by the sampled indices, building a JSON pointer.
        let mut pointer = String::new();
        let mut at = &obj;
        for step in &path {
            let next = match at {
                Value::Object(map) if !map.is_empty() => {
                    map.iter().nth(step.index(map.len())).map(|(k, v)| {
                        (k.replace('~', "~0").replace('/', "~1"), v)
                    })
                }
                Value::Array(items) if !items.is_empty() => {
                    let i = step.index(items.len());
                    Some((i.to_string(), &items[i]))
                }
                _ => None,
            };
            let Some((segment, next)) = next else { break };
            pointer.push('/');
            pointer.push_str(&segment);
            at = next;
        }
        let target = obj.pointer_mut(&pointer).unwrap();
        if let Value::Object(map) = target {
            map.insert(key, graft);
        }
        let (unknown, pruned) = prune(&obj);
        prop_assert_eq!(unknown.is_empty(), pruned == obj);
        let mut again = pruned.clone();
        let api_version = pruned["apiVersion"].as_str().unwrap().to_owned();
        let kind = pruned["kind"].as_str().unwrap().to_owned();
        prop_assert_eq!(prune_unknown_fields(&api_version, &kind, &mut again), Some(vec![]));
    }
}
