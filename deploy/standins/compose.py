"""docker compose stand-in: a project's services as containers would run them (see __main__)."""

import json
import os
import re
import shutil
import socket
import subprocess

from common import (
    ROOT,
    die,
    exit_status,
    map_network,
    running_pid,
    seconds,
    signum,
    start_supervised,
    state_dir,
    stop,
    wait_until,
)


def compose_state(*parts):
    return state_dir("compose", *parts)


def compose_config(args):
    """The project as the real compose renders it (`config --format json`)."""
    files = []
    i = 0
    while i < len(args):
        if args[i] == "-f":
            files += ["-f", args[i + 1]]
            i += 2
        else:
            break
    real = os.environ["GRIND_STANDIN_COMPOSE"]
    out = subprocess.run(
        [real] + files + ["config", "--format", "json"], check=True, capture_output=True, text=True
    )
    return json.loads(out.stdout), args[i:]


def container_mounts(config, svc):
    """[(container path, host path)], longest first: named volumes are directories, bind
    mounts their source, secrets their file at /run/secrets/NAME."""
    mounts = []
    for v in svc.get("volumes", []):
        host = v["source"] if v["type"] == "bind" else compose_state("volumes", v["source"])
        mounts.append((v["target"].rstrip("/"), host))
    for t in svc.get("tmpfs", []):
        mounts.append((t.rstrip("/"), compose_state("tmpfs", t.strip("/").replace("/", "_"))))
    # (compose_state creates the directories of volumes and tmpfs mounts.)
    for sec in svc.get("secrets", []):
        target = sec.get("target") or f"/run/secrets/{sec['source']}"
        mounts.append((target, config["secrets"][sec["source"]]["file"]))
    return sorted(mounts, key=lambda m: -len(m[0]))


def map_container_text(mounts, text):
    """Every container path in TEXT (an argument, a script, a value) read on the host, in one
    pass (a host path is never mapped again)."""
    if not mounts:
        return text
    table = dict(mounts)
    alternation = "|".join(re.escape(path) for path, _ in mounts)
    return re.sub(rf"(?<![\w./-])({alternation})(?=/|\b|$)", lambda m: table[m.group(1)], text)


def container_process(config, name, argv=None):
    svc = config["services"][name]
    mounts = container_mounts(config, svc)
    cmd = [a.replace("$$", "$") for a in (argv or svc.get("command") or [])]
    env = {
        k: map_container_text(mounts, map_network(v))
        for k, v in (svc.get("environment") or {}).items()
        if v
    }
    env["PATH"] = os.environ["GRIND_STANDIN_IMAGE_BIN"] + ":/usr/bin:/bin"
    cmd = [map_container_text(mounts, map_network(a)) for a in cmd]
    return cmd, env, svc


def compose_containers():
    path = os.path.join(compose_state(), "containers.json")
    return json.load(open(path)) if os.path.exists(path) else {}


def save_compose_containers(c):
    path = os.path.join(compose_state(), "containers.json")
    with open(path, "w") as f:
        json.dump(c, f)


def docker(args):
    if args[:1] != ["compose"]:
        die(f"docker {' '.join(args[:1])} is not supported by the stand-in (docker compose is)", 2)
    config, rest = compose_config(args[1:])
    if not rest:
        die("usage: docker compose COMMAND", 2)
    cmd, rest = rest[0], rest[1:]
    containers = compose_containers()
    if cmd == "run":
        while rest and rest[0].startswith("-"):
            rest = rest[1:]
        argv, env, _ = container_process(config, rest[0], rest[1:])
        return subprocess.call(argv, env=env, cwd=ROOT, stdin=subprocess.DEVNULL)
    if cmd == "up":
        order = []

        def visit(name):
            for dep in config["services"][name].get("depends_on") or {}:
                visit(dep)
            if name not in order:
                order.append(name)

        for name in config["services"]:
            visit(name)
        for name in order:
            svc = config["services"][name]
            deps = svc.get("depends_on") or {}
            for dep, how in deps.items():
                cond = how.get("condition")
                if cond == "service_completed_successfully":
                    st = exit_status(os.path.join(compose_state(), f"{dep}-1"))
                    if st != 0:
                        die(f"service {dep} didn't complete successfully: exit {st}")
                elif cond == "service_healthy":
                    ports = [p for p in config["services"][dep].get("ports", [])]

                    def healthy(ports=ports):
                        for p in ports:
                            try:
                                socket.create_connection(
                                    ("127.0.0.1", int(p["published"])), timeout=1
                                ).close()
                            except OSError:
                                return False
                        return True

                    if not wait_until(healthy, 60):
                        die(f"dependency failed to start: container {dep} is unhealthy")
            argv, env, _ = container_process(config, name)
            replicas = int((svc.get("deploy") or {}).get("replicas", 1))
            for n in range(1, replicas + 1):
                cname = f"{name}-{n}"
                base = os.path.join(compose_state(), cname)
                if running_pid(base) is not None:
                    continue
                containers[cname] = {"service": name}
                save_compose_containers(containers)
                print(f" Container grind-{cname}  Started")
                start_supervised(base, argv, env, ROOT)
                if name == "tls-init":
                    wait_until(lambda b=base: exit_status(b) is not None, 60)
        return 0
    if cmd == "ps":
        print("NAME  STATUS")
        for cname in containers:
            b = os.path.join(compose_state(), cname)
            st = "Up" if running_pid(b) is not None else f"Exited ({exit_status(b)})"
            print(f"grind-{cname}  {st}")
        return 0
    if cmd == "logs":
        names = [a for a in rest if not a.startswith("-")]
        for cname in containers:
            if not names or containers[cname]["service"] in names:
                log = os.path.join(compose_state(), cname + ".log")
                for line in (
                    open(log, errors="replace").read().splitlines() if os.path.exists(log) else []
                ):
                    print(f"{cname}  | {line}")
        return 0  # -f: the logs so far, not followed
    if cmd == "exec":
        while rest and rest[0].startswith("-"):
            rest = rest[1:]
        if running_pid(os.path.join(compose_state(), f"{rest[0]}-1")) is None:
            die(f"service {rest[0]} is not running")
        argv, env, _ = container_process(config, rest[0], rest[1:])
        return subprocess.call(argv, env=env, cwd=ROOT, stdin=subprocess.DEVNULL)
    if cmd == "cp":
        service, _, path = rest[0].partition(":")
        mounts = container_mounts(config, config["services"][service])
        shutil.copyfile(map_container_text(mounts, path), rest[1])
        return 0
    if cmd in ("down", "stop"):
        names = [a for a in rest if not a.startswith("-")]
        chosen = [c for c in containers if not names or containers[c]["service"] in names]
        for cname in chosen:
            svc = config["services"][containers[cname]["service"]]
            pid = running_pid(os.path.join(compose_state(), cname))
            if pid is not None:
                os.kill(pid, signum(svc.get("stop_signal", "SIGTERM")))
        for cname in chosen:
            svc = config["services"][containers[cname]["service"]]
            stop(
                os.path.join(compose_state(), cname), 0, seconds(svc.get("stop_grace_period"), 10)
            )
            print(f" Container grind-{cname}  Stopped")
        return 0
    die(f"docker compose {cmd} is not supported by the stand-in", 2)
