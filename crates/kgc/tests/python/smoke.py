"""Smoke test of the official Kubernetes Python client against `kgc serve`.

Run by crates/kgc/tests/python_client.rs as `python3 smoke.py KUBECONFIG NAMESPACE`; needs
`pip install kubernetes==37.0.2`. Exercises create, get, list, watch (a stream with a timeout),
patch (strategic, merge, JSON), the scale subresource, delete with each propagation policy, and a
custom resource through CustomObjectsApi. Prints one line per step and `OK` at the end; any
failed expectation raises, so the exit status is non-zero.
"""

import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

KUBECONFIG, NS = sys.argv[1], sys.argv[2]
DEADLINE = 20.0


def step(msg):
    print(msg, flush=True)


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def eventually(what, fn):
    """Polls fn() until it returns a truthy value, for up to DEADLINE seconds."""
    until = time.monotonic() + DEADLINE
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > until:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def status_of(fn, *args, **kwargs):
    """The HTTP status of a call that must fail with an ApiException."""
    try:
        fn(*args, **kwargs)
    except ApiException as e:
        return e.status
    raise AssertionError(f"{fn.__name__}{args} unexpectedly succeeded")


def gone(fn, *args):
    try:
        fn(*args)
        return False
    except ApiException as e:
        if e.status == 404:
            return True
        raise


api = config.new_client_from_config(config_file=KUBECONFIG, context="kgc")
core = client.CoreV1Api(api)
apps = client.AppsV1Api(api)
ext = client.ApiextensionsV1Api(api)
custom = client.CustomObjectsApi(api)
meta = client.V1ObjectMeta

# --- namespace and ConfigMap CRUD --------------------------------------------------------------
core.create_namespace(client.V1Namespace(metadata=meta(name=NS)))
expect(core.read_namespace(NS).status.phase == "Active", "namespace not Active")
cm = core.create_namespaced_config_map(
    NS, client.V1ConfigMap(metadata=meta(name="cm1", labels={"app": "py"}), data={"a": "1"})
)
expect(cm.metadata.uid and cm.metadata.resource_version, f"created: {cm.metadata}")
expect(core.read_namespaced_config_map("cm1", NS).data == {"a": "1"}, "read back")
expect(status_of(core.create_namespaced_config_map, NS, client.V1ConfigMap(metadata=meta(name="cm1"))) == 409,
       "a second create must be 409 AlreadyExists")
step("create and read")

listed = core.list_namespaced_config_map(NS, label_selector="app=py")
expect([i.metadata.name for i in listed.items] == ["cm1"], f"list: {listed.items}")
list_rv = listed.metadata.resource_version
expect(list_rv, "the list has no resourceVersion")
step("list with a label selector")

# --- patches ---------------------------------------------------------------------------------
p = core.patch_namespaced_config_map("cm1", NS, {"data": {"b": "2"}})  # strategic merge
expect(p.data == {"a": "1", "b": "2"}, f"strategic: {p.data}")
p = core.patch_namespaced_config_map(
    "cm1", NS, {"data": {"a": None}}, _content_type="application/merge-patch+json"
)
expect(p.data == {"b": "2"}, f"merge: {p.data}")
p = core.patch_namespaced_config_map(
    "cm1", NS, [{"op": "add", "path": "/data/c", "value": "3"}]
)  # a list: JSON patch
expect(p.data == {"b": "2", "c": "3"}, f"json: {p.data}")
step("patch: strategic, merge, json")

# --- watch: a stream with a timeout, from the list's resourceVersion ---------------------------
core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=meta(name="cm2", labels={"app": "py"})))
core.patch_namespaced_config_map("cm2", NS, {"data": {"x": "1"}})
core.delete_namespaced_config_map("cm2", NS)
seen = []
w = watch.Watch()
for ev in w.stream(core.list_namespaced_config_map, NS, label_selector="app=py",
                   resource_version=list_rv, timeout_seconds=10):
    seen.append((ev["type"], ev["object"].metadata.name))
    if seen[-1] == ("DELETED", "cm2"):
        w.stop()
cm2 = [e for e in seen if e[1] == "cm2"]
expect(cm2 == [("ADDED", "cm2"), ("MODIFIED", "cm2"), ("DELETED", "cm2")], f"watch events: {seen}")
# A quiet watch ends by itself when timeoutSeconds runs out.
t0 = time.monotonic()
quiet = list(watch.Watch().stream(core.list_namespaced_config_map, NS, field_selector="metadata.name=nothing",
                                  timeout_seconds=1))
expect(quiet == [], f"events on a quiet watch: {quiet}")
expect(time.monotonic() - t0 < 10, "the server did not honour timeoutSeconds")
step("watch")

# --- deployments and the scale subresource -----------------------------------------------------
apps.create_namespaced_deployment(NS, {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d1"},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d1"}},
             "template": {"metadata": {"labels": {"app": "d1"}},
                          "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
scale = apps.read_namespaced_deployment_scale("d1", NS)
expect(scale.kind == "Scale" and scale.spec.replicas == 1, f"scale: {scale}")
apps.patch_namespaced_deployment_scale("d1", NS, {"spec": {"replicas": 3}})
expect(apps.read_namespaced_deployment("d1", NS).spec.replicas == 3, "scaled")
step("scale subresource")

# --- delete with a propagation policy --------------------------------------------------------
def family(suffix):
    parent = core.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=meta(name=f"parent-{suffix}")))
    owner = client.V1OwnerReference(api_version="v1", kind="ConfigMap", name=parent.metadata.name,
                                    uid=parent.metadata.uid)
    core.create_namespaced_config_map(
        NS, client.V1ConfigMap(metadata=meta(name=f"child-{suffix}", owner_references=[owner])))
    return f"parent-{suffix}", f"child-{suffix}"

parent, child = family("bg")
core.delete_namespaced_config_map(parent, NS, propagation_policy="Background")
eventually("the background-deleted parent", lambda: gone(core.read_namespaced_config_map, parent, NS))
eventually("the collector to delete the child", lambda: gone(core.read_namespaced_config_map, child, NS))

parent, child = family("fg")
core.delete_namespaced_config_map(parent, NS, body=client.V1DeleteOptions(propagation_policy="Foreground"))
eventually("the foreground-deleted parent", lambda: gone(core.read_namespaced_config_map, parent, NS))
expect(gone(core.read_namespaced_config_map, child, NS), "foreground: the parent went before its child")

parent, child = family("orphan")
core.delete_namespaced_config_map(parent, NS, propagation_policy="Orphan")
eventually("the orphaning parent", lambda: gone(core.read_namespaced_config_map, parent, NS))
orphan = core.read_namespaced_config_map(child, NS)
expect(not orphan.metadata.owner_references, f"orphan still owned: {orphan.metadata.owner_references}")
step("delete: Background, Foreground, Orphan")

# --- a custom resource through CustomObjectsApi ------------------------------------------------
ext.create_custom_resource_definition({
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "snakes.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "snakes", "singular": "snake", "kind": "Snake"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"length": {"type": "integer"}}},
                               "status": {"type": "object", "properties": {"molts": {"type": "integer"}}}}}}}]}})


def established():
    crd = ext.read_custom_resource_definition("snakes.example.com")
    return any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))


eventually("the CRD to be Established", established)
G, V, P = "example.com", "v1", "snakes"
s1 = custom.create_namespaced_custom_object(G, V, NS, P, {
    "apiVersion": "example.com/v1", "kind": "Snake", "metadata": {"name": "s1"}, "spec": {"length": 3}})
expect(s1["metadata"]["uid"] and s1["spec"] == {"length": 3}, f"created CR: {s1}")
got = custom.get_namespaced_custom_object(G, V, NS, P, "s1")
expect(got["kind"] == "Snake" and got["metadata"]["generation"] == 1, f"got: {got}")
items = custom.list_namespaced_custom_object(G, V, NS, P)["items"]
expect([i["metadata"]["name"] for i in items] == ["s1"], f"list: {items}")
expect(len(custom.list_cluster_custom_object(G, V, P)["items"]) == 1, "cluster-wide list")
cr_rv = custom.list_namespaced_custom_object(G, V, NS, P)["metadata"]["resourceVersion"]
patched = custom.patch_namespaced_custom_object(G, V, NS, P, "s1", {"spec": {"length": 4}})  # merge patch
expect(patched["spec"] == {"length": 4} and patched["metadata"]["generation"] == 2, f"patched: {patched}")
st = custom.patch_namespaced_custom_object_status(G, V, NS, P, "s1", {"status": {"molts": 1}})
expect(st["status"] == {"molts": 1} and st["metadata"]["generation"] == 2, f"status: {st}")
expect(status_of(custom.patch_namespaced_custom_object, G, V, NS, P, "s1", {"spec": {"length": 5}},
                 _content_type="application/strategic-merge-patch+json") == 415,
       "strategic merge patch on a custom resource must be 415")
# Background: no finalizer, so the object goes at once. (Foreground would wait for the collector,
# which, like upstream's, notices a new resource type only at its next discovery resync.)
custom.delete_namespaced_custom_object(G, V, NS, P, "s1", propagation_policy="Background")
eventually("the CR to be deleted", lambda: gone(custom.get_namespaced_custom_object, G, V, NS, P, "s1"))
events = []
w = watch.Watch()
for ev in w.stream(custom.list_namespaced_custom_object, G, V, NS, P, resource_version=cr_rv, timeout_seconds=10):
    events.append(ev["type"])
    if ev["type"] == "DELETED":
        w.stop()
# spec patch, status patch, delete.
expect(events == ["MODIFIED", "MODIFIED", "DELETED"], f"CR watch events: {events}")
ext.delete_custom_resource_definition("snakes.example.com")
eventually("the CRD to be deleted", lambda: gone(ext.read_custom_resource_definition, "snakes.example.com"))
step("custom resources")

# --- names with a colon: the client percent-encodes `:` in paths (`system%3A…`) --------------
rbac = client.RbacAuthorizationV1Api(api)
basic = rbac.read_cluster_role("system:basic-user")
expect(basic.metadata.name == "system:basic-user", f"read system:basic-user: {basic.metadata}")
role = f"system:kgc-smoke-{NS}"
rbac.create_cluster_role(client.V1ClusterRole(metadata=client.V1ObjectMeta(name=role), rules=[
    client.V1PolicyRule(api_groups=[""], resources=["configmaps"], verbs=["get"])]))
expect(rbac.read_cluster_role(role).metadata.name == role, f"read {role}")
patched = rbac.patch_cluster_role(role, {"metadata": {"labels": {"smoke": "yes"}}})
expect(patched.metadata.labels == {"smoke": "yes"}, f"patched {role}: {patched.metadata}")
rbac.delete_cluster_role(role)
expect(gone(rbac.read_cluster_role, role), f"{role} must be gone")
step("names with a colon")

# --- version and discovery (the client asks for /version/, with the slash) -------------------
groups = [g.name for g in client.ApisApi(api).get_api_versions().groups]
expect("apps" in groups and "apiextensions.k8s.io" in groups, f"groups: {groups}")
v = client.VersionApi(api).get_code()
expect(v.major == "1" and v.minor == "32", f"/version: {v}")
step("version and discovery")

print("OK", flush=True)
