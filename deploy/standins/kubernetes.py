"""kubectl stand-in: rendered manifests' containers as a kubelet would run them (see __main__)."""

import base64
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

from common import (
    MAX_JOBS,
    PACKAGE,
    ROOT,
    die,
    exit_status,
    map_network,
    running_pid,
    start_supervised,
    state_dir,
    stop,
    wait_until,
)


def k8s_state(*parts):
    return state_dir("k8s", *parts)


def pod_specs(objects):
    """(pod name, namespace, pod spec, pod labels, extra env) for every pod the objects make."""
    for o in objects:
        kind, meta = o.get("kind"), o.get("metadata", {})
        name, ns = meta.get("name"), meta.get("namespace", "default")
        spec = o.get("spec", {})
        if kind == "StatefulSet":
            for i in range(spec.get("replicas", 1)):
                yield f"{name}-{i}", ns, spec["template"]["spec"], o, {}
        elif kind == "Deployment":
            for i in range(min(spec.get("replicas", 1), MAX_JOBS or 1 << 30)):
                yield f"{name}-standin-{i}", ns, spec["template"]["spec"], o, {}
        elif kind == "Job":
            for i in range(min(spec.get("parallelism", 1), MAX_JOBS or 1 << 30)):
                yield (
                    f"{name}-{i}",
                    ns,
                    spec["template"]["spec"],
                    o,
                    {"JOB_COMPLETION_INDEX": str(i)},
                )


def quantity(q):
    q = str(q)
    if q.endswith("m"):
        return float(q[:-1]) / 1000
    return float(q)


def container_env(pod, ns, container):
    env = {}
    expand = lambda s: re.sub(  # noqa: E731
        r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
        lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
        s,
    )
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = expand(str(e["value"]))
            continue
        vf = e.get("valueFrom", {})
        if "fieldRef" in vf:
            env[e["name"]] = {"metadata.name": pod, "metadata.namespace": ns}[
                vf["fieldRef"]["fieldPath"]
            ]
        elif "resourceFieldRef" in vf:
            r = vf["resourceFieldRef"]
            kind, res = r["resource"].split(".")
            value = quantity(container["resources"][kind][res]) / quantity(r.get("divisor", "1"))
            env[e["name"]] = str(math.ceil(value))
        elif "secretKeyRef" in vf:
            ref = vf["secretKeyRef"]
            env[e["name"]] = open(
                os.path.join(k8s_state("secrets", ns, ref["name"]), ref["key"])
            ).read()
        else:
            die(f"env {e['name']}: valueFrom {list(vf)} is not supported by the stand-in")
    return env, expand


def pod_mounts(pod, ns, spec, owner, container):
    """[(mountPath, host directory, secret name or None)], longest mountPath first."""
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    claims = {t["metadata"]["name"] for t in owner.get("spec", {}).get("volumeClaimTemplates", [])}
    mounts = []
    for m in container.get("volumeMounts", []):
        name = m["name"]
        if name in claims:
            host, secret = k8s_state("pvc", f"{name}-{pod}"), None
        elif "emptyDir" in volumes.get(name, {}):
            host, secret = k8s_state("pods", pod, name), None
        elif "secret" in volumes.get(name, {}):
            sec = volumes[name]["secret"]
            secret = (sec["secretName"], sec.get("optional", False), sec.get("items"))
            if sec.get("items"):
                host = k8s_state("pods", pod, name)
            else:
                host = os.path.join(ROOT, "run/standins/k8s/secrets", ns, sec["secretName"])
        else:
            die(f"pod {pod}: volume {name} is of a kind the stand-in does not support")
        mounts.append((m["mountPath"].rstrip("/"), host, secret))
    return sorted(mounts, key=lambda t: -len(t[0]))


def map_container_path(mounts, arg):
    for path, host, _ in mounts:
        if arg == path or arg.startswith(path + "/"):
            return host + arg[len(path) :]
    return arg


def load_pods():
    path = os.path.join(k8s_state(), "pods.json")
    return json.load(open(path)) if os.path.exists(path) else {}


def save_pods(pods):
    path = os.path.join(k8s_state(), "pods.json")
    with open(path + ".tmp", "w") as f:
        json.dump(pods, f)
    os.rename(path + ".tmp", path)


def kubelet(args):
    """`python3 deploy/standins kubelet POD`: waits for the pod's Secrets, then runs it."""
    pods = load_pods()
    p = pods[args[0]]
    mounts = [tuple(m) for m in p["mounts"]]
    secrets_dir = os.path.join(ROOT, "run/standins/k8s/secrets", p["namespace"])
    while True:
        missing = [
            s[0]
            for _, _, s in mounts
            if s and not s[1] and not os.path.isdir(os.path.join(secrets_dir, s[0]))
        ]
        if not missing:
            break
        time.sleep(0.2)  # CreateContainerConfigError: secret not found; the kubelet retries
    for _, host, s in mounts:
        if s and s[2]:
            for item in s[2]:
                shutil.copyfile(
                    os.path.join(secrets_dir, s[0], item["key"]), os.path.join(host, item["path"])
                )
    os.execvpe(p["argv"][0], p["argv"], p["env"])


def kubectl(args):
    ns, rest, i = "default", [], 0
    while i < len(args):
        if args[i] in ("-n", "--namespace"):
            ns = args[i + 1]
            i += 2
        elif args[i].startswith("--namespace="):
            ns = args[i].split("=", 1)[1]
            i += 1
        else:
            rest.append(args[i])
            i += 1
    if not rest:
        die("usage: kubectl COMMAND", 2)
    cmd, rest = rest[0], rest[1:]
    real = os.environ.get("GRIND_STANDIN_KUBECTL", "")
    if cmd == "kustomize":
        return subprocess.call([real, "kustomize"] + rest)
    if cmd in ("apply", "create") and rest[:1] == ["-k"]:
        import yaml  # noqa: PLC0415

        rendered = subprocess.run(
            [real, "kustomize", rest[1]], check=True, capture_output=True, text=True
        ).stdout
        objects = [o for o in yaml.safe_load_all(map_network(rendered)) if o]
        pods = load_pods()
        image_bin = os.environ["GRIND_STANDIN_IMAGE_BIN"]
        for o in objects:
            done = "created" if cmd == "create" else "configured"
            print(f"{o['kind'].lower()}/{o['metadata']['name']} {done}")
        for pod, pns, spec, owner, extra in pod_specs(objects):
            if pod in pods and running_pid(os.path.join(k8s_state(), pod)) is not None:
                continue
            c = spec["containers"][0]
            mounts = pod_mounts(pod, pns, spec, owner, c)
            env, expand = container_env(pod, pns, c)
            env.update(extra)
            argv = [expand(a) for a in c.get("command", []) + c.get("args", [])]
            argv = [map_container_path(mounts, a) for a in argv]
            env = {k: map_container_path(mounts, v) for k, v in env.items()}
            env["PATH"] = image_bin + ":/usr/bin:/bin"
            env["HOSTNAME"] = pod
            pods[pod] = {
                "namespace": pns,
                "argv": argv,
                "env": env,
                "mounts": mounts,
                "grace": spec.get("terminationGracePeriodSeconds", 30),
                "owner": f"{owner['kind'].lower()}/{owner['metadata']['name']}",
                "ports": [p["containerPort"] for p in c.get("ports", [])],
            }
            save_pods(pods)
            start_supervised(
                os.path.join(k8s_state(), pod),
                [sys.executable, "-B", PACKAGE, "kubelet", pod],
                dict(os.environ),
                ROOT,
            )
        return 0
    if cmd == "rollout" and rest[0] == "status":
        kind, name = rest[1].split("/")
        pods = {k: v for k, v in load_pods().items() if v["owner"] == f"{kind}/{name}"}

        def ready():
            for p in pods.values():
                port = int(map_network(f":{p['ports'][0]}")[1:]) if p["ports"] else None
                if port is None:
                    continue
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                except OSError:
                    return False
            return True

        if not wait_until(ready, 60):
            die(f"{kind}/{name}: not ready within 60 s")
        print(f'{kind} "{name}" successfully rolled out')
        return 0
    if cmd == "exec":
        interactive = False
        while rest[0].startswith("-") and rest[0] != "--":
            interactive |= rest[0] in ("-i", "-it", "-ti", "--stdin")
            rest = rest[1:]
        pod = rest[0]
        argv = rest[rest.index("--") + 1 :]
        p = load_pods().get(pod)
        if p is None or running_pid(os.path.join(k8s_state(), pod)) is None:
            die(f'pod "{pod}" is not running')
        mounts = [tuple(m) for m in p["mounts"]]
        argv = [map_container_path(mounts, map_network(a)) for a in argv]
        return subprocess.call(
            argv, env=p["env"], cwd=ROOT, stdin=None if interactive else subprocess.DEVNULL
        )
    if cmd == "create" and rest[:2] == ["secret", "generic"]:
        name = rest[2]
        target = os.path.join(k8s_state("secrets", ns), name)
        if os.path.exists(target):
            die(f'secrets "{name}" already exists')
        tmp = target + ".tmp"
        os.makedirs(tmp)
        for a in rest[3:]:
            if a.startswith("--from-file="):
                key, _, src = a.split("=", 1)[1].partition("=")
                data = (
                    sys.stdin.buffer.read()
                    if src in ("/dev/stdin", "-")
                    else open(src, "rb").read()
                )
                with open(os.path.join(tmp, key), "wb") as f:
                    f.write(data)
        os.rename(tmp, target)
        print(f"secret/{name} created")
        return 0
    if cmd == "get" and rest[0] == "secret":
        name = rest[1]
        m = re.fullmatch(r"jsonpath=\{\.data\.([A-Za-z0-9._-]+)\}", rest[rest.index("-o") + 1])
        if not m:
            die("only -o jsonpath='{.data.KEY}' is supported", 2)
        data = open(os.path.join(k8s_state("secrets", ns), name, m.group(1)), "rb").read()
        sys.stdout.write(base64.b64encode(data).decode())
        return 0
    if cmd == "get" and rest[0] == "pods":
        print("NAME  STATUS")
        for pod in load_pods():
            b = os.path.join(k8s_state(), pod)
            st = "Running" if running_pid(b) is not None else f"Exited({exit_status(b)})"
            print(f"{pod}  {st}")
        return 0
    if cmd == "port-forward":
        return 0  # pods share this machine's network
    if cmd == "delete":
        targets = [r for r in rest if "/" in r]
        if len(rest) == 2 and "/" not in rest[0]:  # delete KIND NAME
            targets = [f"{rest[0]}/{rest[1]}"]
        pods = load_pods()
        chosen = [(pod, p) for pod, p in pods.items() if p["owner"] in targets]
        for pod, _ in chosen:
            pid = running_pid(os.path.join(k8s_state(), pod))
            if pid is not None:
                os.kill(pid, signal.SIGTERM)
        for pod, p in chosen:
            stop(os.path.join(k8s_state(), pod), 0, p["grace"])
        for t in targets:
            print(f'{t.split("/")[0]} "{t.split("/")[1]}" deleted')
        return 0
    die(f"kubectl {cmd} {' '.join(rest[:1])} is not supported by the stand-in", 2)
