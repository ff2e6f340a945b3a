# The official Kubernetes Python client against the API server: list, create without apiVersion/kind (the
# client leaves them to the server), patch, and a watch stream that sees ADDED, MODIFIED and DELETED.
# Prints one JSON line per step; the test asserts on them.
import json
import sys
import threading
import time

from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()


def out(step, value):
    print(json.dumps({"step": step, "value": value}), flush=True)


out("namespaces", sorted(ns.metadata.name for ns in v1.list_namespace().items))

events = []
ready = threading.Event()


def watcher():
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_config_map, namespace="default", timeout_seconds=20):
        events.append((ev["type"], ev["object"].metadata.name, (ev["object"].data or {}).get("k")))
        ready.set()
        if ev["type"] == "DELETED":
            w.stop()


rv = v1.list_namespaced_config_map("default").metadata.resource_version
t = threading.Thread(target=watcher)
t.start()
time.sleep(0.5)
created = v1.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py"), data={"k": "1"}))
out("created", [created.api_version, created.kind, created.metadata.name, created.metadata.namespace])
patched = v1.patch_namespaced_config_map("py", "default", {"data": {"k": "2"}})
out("patched", patched.data)
v1.delete_namespaced_config_map("py", "default")
t.join(25)
out("events", events)
try:
    v1.read_namespaced_config_map("py", "default")
    out("after-delete", "still there")
except client.exceptions.ApiException as e:
    out("after-delete", [e.status, json.loads(e.body)["reason"]])
