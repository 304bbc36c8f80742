"""What the stand-ins share: the machine's root, paths, supervised processes (see __main__)."""

import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.environ.get("GRIND_STANDIN_ROOT", "")
MAX_JOBS = int(os.environ.get("GRIND_STANDIN_MAX_JOBS", "0"))
MAPPED = re.compile(r"(?<![^\s=:'\"(-])/(?:etc|usr/local|var/lib|root|run)(?=/|\b)")
# The package directory: `python3 deploy/standins NAME ...` runs __main__.py.
PACKAGE = os.path.dirname(os.path.abspath(__file__))


def die(msg, code=1):
    print(f"{os.path.basename(sys.argv[0])} (stand-in): {msg}", file=sys.stderr)
    sys.exit(code)


def map_paths(text):
    """The machine's /etc, /usr/local, /var/lib, /root and /run, read under ROOT."""
    if not ROOT:
        die("GRIND_STANDIN_ROOT is not set")
    return MAPPED.sub(lambda m: ROOT + m.group(0), text)


def state_dir(*parts):
    d = os.path.join(ROOT, "run", "standins", *parts)
    os.makedirs(d, exist_ok=True)
    return d


def wait_until(cond, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# `python3 deploy/standins supervise BASE CWD -- ARGV...` runs ARGV in its own process group
# with the environment it was given, writes BASE.pid when it has started and BASE.status (the exit
# code; 128+N for signal N) when it ends; output goes to BASE.log unless told otherwise.


def supervise(argv):
    base, cwd, out = argv[0], argv[1], argv[2]
    cmd = argv[4:]
    log = open(out or base + ".log", "ab")
    try:
        # Its own process group, so that a stop can reach every process it starts.
        child = subprocess.Popen(
            cmd,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as e:
        log.write(f"standins: cannot start {cmd[0]}: {e}\n".encode())
        with open(base + ".status", "w") as f:
            f.write("203\n")  # systemd's EXIT_EXEC
        return 0
    pids = os.environ.get("GRIND_STANDIN_PIDS")
    if pids:
        with open(pids, "a") as f:
            f.write(f"{child.pid}\n")
    with open(base + ".pid.tmp", "w") as f:
        f.write(f"{child.pid}\n")
    os.rename(base + ".pid.tmp", base + ".pid")
    code = child.wait()
    with open(base + ".status.tmp", "w") as f:
        f.write(f"{128 - code if code < 0 else code}\n")
    os.rename(base + ".status.tmp", base + ".status")
    return 0


def start_supervised(base, cmd, env, cwd, out=None, umask=None):
    """Starts CMD under a detached supervisor; returns the process's pid once it runs."""
    for suffix in (".pid", ".status"):
        if os.path.exists(base + suffix):
            os.remove(base + suffix)

    def pre():
        if umask is not None:
            os.umask(umask)

    sup = subprocess.Popen(
        [sys.executable, "-B", PACKAGE, "supervise", base, cwd, out or "", "--"] + cmd,
        env=env,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=pre,
    )
    pids = os.environ.get("GRIND_STANDIN_PIDS")
    if pids:
        with open(pids, "a") as f:
            f.write(f"{sup.pid}\n")
    if not wait_until(
        lambda: os.path.exists(base + ".pid") or os.path.exists(base + ".status"), 10
    ):
        die(f"{cmd[0]} did not start within 10 s")
    if os.path.exists(base + ".pid"):
        return int(open(base + ".pid").read())
    return None


def running_pid(base):
    if os.path.exists(base + ".pid") and not os.path.exists(base + ".status"):
        pid = int(open(base + ".pid").read())
        if alive(pid):
            return pid
    return None


def exit_status(base):
    try:
        return int(open(base + ".status").read())
    except OSError:
        return None


def stop(base, sig, grace, group=False):
    """Sends SIG (to the process group when GROUP), SIGKILL to the group after GRACE s."""
    pid = running_pid(base)
    if pid is None:
        return
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass
    if not wait_until(lambda: exit_status(base) is not None, grace):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        wait_until(lambda: exit_status(base) is not None, 5)


def signum(name):
    name = str(name).upper()
    return getattr(signal, name if name.startswith("SIG") else "SIG" + name)


def seconds(value, default):
    """A systemd time span ("30s", "1min 30s", "90") in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*(min|ms|h|s|m)?", value or "")
    if not parts:
        return default
    return sum(
        float(n) * {"ms": 0.001, "s": 1, "min": 60, "m": 60, "h": 3600}[u or "s"] for n, u in parts
    )


def supervised_jobs(kind, separator, selector=None):
    """(name, state path) of every job `kind` started; `selector` picks one job by name, or
    every job of a cluster/array by the part of the name before `separator`."""
    d = state_dir(kind)
    for f in sorted(os.listdir(d)):
        if f.endswith(".pid"):
            name = f[:-4]
            if selector is None or name == selector or name.split(separator)[0] == selector:
                yield name, os.path.join(d, name)


def next_id(kind, first):
    path = os.path.join(state_dir(kind), "next-id")
    n = int(open(path).read()) if os.path.exists(path) else first
    with open(path, "w") as f:
        f.write(f"{n + 1}\n")
    return n


def map_network(text):
    """A Service name resolves to GRIND_STANDIN_HOSTS' host, a container port to a host port."""
    for pair in os.environ.get("GRIND_STANDIN_HOSTS", "").split():
        svc, host = pair.split("=")
        text = re.sub(rf"(?<=//){re.escape(svc)}(?=[:/]|$)", host, text)
    for pair in os.environ.get("GRIND_STANDIN_PORTS", "").split():
        c, h = pair.split("=")
        text = re.sub(rf":{c}\b", f":{h}", text)
    return text
