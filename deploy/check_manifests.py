#!/usr/bin/env python3
"""Cross-reference checks on rendered grind Kubernetes manifests (run by deploy/check.sh).

The JSON schemas (kubernetes-validate) check each object alone; this checks what the API
server or kubelet would only reject at apply or run time, and grind's own rules:
selectors match pod labels, Services point at named ports, StatefulSets at a headless
Service, volumes and Secrets exist, pods pass the "restricted" Pod Security Standard the
namespace enforces, workers get time to checkpoint on SIGTERM.

usage: check_manifests.py SECRETS_YAML RENDERED_YAML... (one rendered kustomization each;
objects of earlier files, e.g. the base's PriorityClass, are visible to later ones)
"""
import sys

import yaml

KNOWN_BINARIES = {"grind", "grind-worker"}
WORKLOAD_KINDS = {"Deployment", "StatefulSet", "Job"}
ALLOWED_VOLUME_TYPES = {"secret", "emptyDir", "persistentVolumeClaim", "configMap", "projected",
                        "downwardAPI", "ephemeral", "csi"}
# Worker: ~5 s to checkpoint and release; coordinator: finish a commit and close the store.
MIN_GRACE = {"grind-worker": 15, "grind": 30}


def load(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def pod_template(obj):
    return obj["spec"]["template"]


def check_pod(where, tmpl, secrets, priority_classes, errors):
    meta = tmpl.get("metadata", {})
    spec = tmpl["spec"]
    labels = meta.get("labels", {})
    if not labels:
        errors.append(f"{where}: pod template has no labels")
    psc = spec.get("securityContext", {})
    if psc.get("runAsNonRoot") is not True:
        errors.append(f"{where}: pod securityContext.runAsNonRoot must be true")
    if psc.get("seccompProfile", {}).get("type") not in ("RuntimeDefault", "Localhost"):
        errors.append(f"{where}: pod seccompProfile must be RuntimeDefault (restricted PSS)")
    if spec.get("automountServiceAccountToken") is not False:
        errors.append(f"{where}: automountServiceAccountToken should be false (grind needs no API access)")
    pcn = spec.get("priorityClassName")
    if pcn and pcn not in priority_classes:
        errors.append(f"{where}: priorityClassName {pcn!r} is not defined in the manifests")

    volumes = {}
    for v in spec.get("volumes", []):
        if v["name"] in volumes:
            errors.append(f"{where}: volume {v['name']!r} defined twice")
        volumes[v["name"]] = v
        kinds = set(v) - {"name"}
        if not kinds <= ALLOWED_VOLUME_TYPES:
            errors.append(f"{where}: volume {v['name']!r} of type {kinds} is not allowed by restricted PSS")
        if "secret" in v:
            name = v["secret"]["secretName"]
            if name not in secrets:
                errors.append(f"{where}: volume {v['name']!r} uses Secret {name!r}, "
                              f"not one of the documented Secrets {sorted(secrets)}")
            for item in v["secret"].get("items", []):
                if name in secrets and item["key"] not in secrets[name]:
                    errors.append(f"{where}: Secret {name!r} has no key {item['key']!r}")

    containers = spec.get("containers", [])
    if not containers:
        errors.append(f"{where}: no containers")
    used_volumes = set()
    for c in containers:
        cw = f"{where} container {c['name']!r}"
        cmd = c.get("command") or []
        if not cmd or cmd[0] not in KNOWN_BINARIES:
            errors.append(f"{cw}: command must start with one of {sorted(KNOWN_BINARIES)}, got {cmd}")
        binary = cmd[0] if cmd else None
        grace = spec.get("terminationGracePeriodSeconds", 30)
        if binary in MIN_GRACE and grace < MIN_GRACE[binary]:
            errors.append(f"{cw}: terminationGracePeriodSeconds {grace} < {MIN_GRACE[binary]}")
        if not str(c.get("image", "")).startswith("grind"):
            errors.append(f"{cw}: image {c.get('image')!r} is not the grind image (kustomize images: name grind)")
        csc = c.get("securityContext", {})
        if csc.get("allowPrivilegeEscalation") is not False:
            errors.append(f"{cw}: allowPrivilegeEscalation must be false (restricted PSS)")
        if "ALL" not in csc.get("capabilities", {}).get("drop", []):
            errors.append(f"{cw}: capabilities must drop ALL (restricted PSS)")
        if csc.get("readOnlyRootFilesystem") is not True:
            errors.append(f"{cw}: readOnlyRootFilesystem should be true")
        req = c.get("resources", {}).get("requests", {})
        if "cpu" not in req or "memory" not in req:
            errors.append(f"{cw}: resources.requests needs cpu and memory")
        env_names = [e["name"] for e in c.get("env", [])]
        dupes = {n for n in env_names if env_names.count(n) > 1}
        if dupes:
            errors.append(f"{cw}: env defined twice: {sorted(dupes)}")
        for e in c.get("env", []):
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref and ref["name"] not in secrets:
                errors.append(f"{cw}: env {e['name']} uses unknown Secret {ref['name']!r}")
            rf = e.get("valueFrom", {}).get("resourceFieldRef")
            if rf and rf.get("containerName", c["name"]) != c["name"]:
                errors.append(f"{cw}: env {e['name']} reads resources of another container")
        # $(VAR) in args must name a variable the container defines (or the Job controller adds).
        defined = set(env_names) | {"JOB_COMPLETION_INDEX"}
        for a in c.get("args", []) + cmd:
            s = str(a)
            i = s.find("$(")
            while i != -1:
                j = s.find(")", i)
                var = s[i + 2:j]
                if var not in defined:
                    errors.append(f"{cw}: argument {s!r} references undefined variable {var}")
                i = s.find("$(", j)
        port_names = {p.get("name") for p in c.get("ports", [])}
        port_numbers = {p["containerPort"] for p in c.get("ports", [])}
        for probe_name in ("startupProbe", "livenessProbe", "readinessProbe"):
            probe = c.get(probe_name)
            if not probe:
                continue
            for kind in ("grpc", "tcpSocket", "httpGet"):
                if kind in probe:
                    port = probe[kind]["port"]
                    if isinstance(port, str) and port not in port_names:
                        errors.append(f"{cw}: {probe_name} uses unknown port name {port!r}")
                    if isinstance(port, int) and port not in port_numbers:
                        errors.append(f"{cw}: {probe_name} port {port} is not a containerPort")
        if binary == "grind" and cmd[1:2] == ["serve"]:
            for probe_name in ("livenessProbe", "readinessProbe"):
                if probe_name not in c:
                    errors.append(f"{cw}: the coordinator needs a {probe_name}")
        for m in c.get("volumeMounts", []):
            used_volumes.add(m["name"])
            if m["name"] not in volumes and m["name"] not in TEMPLATE_CLAIMS.get(id(tmpl), set()):
                errors.append(f"{cw}: volumeMount {m['name']!r} has no volume")
    for name in volumes:
        if name not in used_volumes:
            errors.append(f"{where}: volume {name!r} is never mounted")
    return labels


TEMPLATE_CLAIMS = {}


def check_set(path, objs, secrets, priority_classes, errors):
    services = [o for o in objs if o["kind"] == "Service"]
    workloads = [o for o in objs if o["kind"] in WORKLOAD_KINDS]
    namespaces = {o["metadata"].get("namespace") for o in objs
                  if o["kind"] not in ("Namespace", "PriorityClass")}
    if namespaces != {"grind"}:
        errors.append(f"{path}: namespaced objects must all be in namespace grind, found {namespaces}")
    pod_labels = []
    for w in workloads:
        where = f"{path}: {w['kind']}/{w['metadata']['name']}"
        tmpl = pod_template(w)
        if w["kind"] == "StatefulSet":
            TEMPLATE_CLAIMS[id(tmpl)] = {c["metadata"]["name"] for c in w["spec"].get("volumeClaimTemplates", [])}
            if w["spec"].get("replicas", 1) != 1:
                errors.append(f"{where}: the coordinator must run exactly one replica (one SQLite writer)")
            svc = [s for s in services if s["metadata"]["name"] == w["spec"].get("serviceName")]
            if not svc or svc[0]["spec"].get("clusterIP") != "None":
                errors.append(f"{where}: serviceName {w['spec'].get('serviceName')!r} is not a headless Service here")
        labels = check_pod(where, tmpl, secrets, priority_classes, errors)
        if w["kind"] in ("Deployment", "StatefulSet"):
            sel = w["spec"]["selector"].get("matchLabels", {})
            if not sel or any(labels.get(k) != v for k, v in sel.items()):
                errors.append(f"{where}: selector {sel} does not match the pod labels {labels}")
        if w["kind"] == "Job":
            spec = w["spec"]
            if spec.get("completionMode") != "Indexed":
                errors.append(f"{where}: the batch Job must be completionMode: Indexed")
            if spec.get("podFailurePolicy") and tmpl["spec"].get("restartPolicy") != "Never":
                errors.append(f"{where}: podFailurePolicy needs restartPolicy: Never")
        pod_labels.append((labels, tmpl))
    for s in services:
        where = f"{path}: Service/{s['metadata']['name']}"
        sel = s["spec"].get("selector", {})
        targets = [t for labels, t in pod_labels if sel and all(labels.get(k) == v for k, v in sel.items())]
        if not targets:
            errors.append(f"{where}: selector {sel} matches no pod template")
        for p in s["spec"].get("ports", []):
            tp = p.get("targetPort", p["port"])
            for t in targets:
                ports = [cp for c in t["spec"]["containers"] for cp in c.get("ports", [])]
                if isinstance(tp, str) and tp not in {cp.get("name") for cp in ports}:
                    errors.append(f"{where}: targetPort {tp!r} is not a named container port")
                if isinstance(tp, int) and tp not in {cp["containerPort"] for cp in ports}:
                    errors.append(f"{where}: targetPort {tp} is not a container port")


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    secrets = {}
    for o in load(argv[1]):
        if o["kind"] == "Secret":
            secrets[o["metadata"]["name"]] = set(o.get("stringData", {})) | set(o.get("data", {}))
    errors = []
    priority_classes = set()
    for path in argv[2:]:
        objs = load(path)
        priority_classes |= {o["metadata"]["name"] for o in objs if o["kind"] == "PriorityClass"}
        check_set(path, objs, secrets, priority_classes, errors)
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
