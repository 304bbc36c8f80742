#!/usr/bin/env python3
"""Stand-ins for what deploy/check.sh cannot run here: systemd, Slurm, HTCondor, Kubernetes, Docker.

deploy/check.sh runs the quick starts of deploy/*/README.md as written, against the built
`grind` and `grind-worker`. Some of their commands belong to programs that need root and a
running systemd, a scheduler or a cluster. For those the check puts a directory first on PATH
in which each such name runs this file (`standins.py NAME ARGS...`). A stand-in does what its
program would do to start, stop and inspect the grind processes, reading the deploy files
themselves, and nothing else:

systemctl, systemd-run, journalctl
    Unit files are read from the machine's /etc/systemd/system (where the README's `install`
    commands put them), drop-ins from UNIT.d/*.conf. Environment=, EnvironmentFile=,
    LoadCredential= (copied into the credentials directory %d), StateDirectory= (with
    DynamicUser=yes under /var/lib/private, linked from /var/lib), UMask= and the specifiers
    %S %d %i %I %n %N %p %H %t %% are resolved as systemd does; ExecStart= is split into words
    and `$VAR` (a word of its own: split at whitespace), `${VAR}` (one word) and `$$` are
    expanded as systemd.service(5) says. Not exercised: the sandbox (DynamicUser's user,
    Protect*=, SystemCallFilter=, ...), CPU and I/O priorities, Restart= policies, timers,
    journald (`journalctl -f` prints the log so far and returns).
sbatch, srun, scancel, squeue
    The job script runs as Slurm's batch step would: the submitter's environment
    (--export=ALL), SLURM_JOB_ID, SLURM_ARRAY_JOB_ID, SLURM_ARRAY_TASK_ID,
    SLURM_CPUS_PER_TASK, the output file of #SBATCH --output, in the submit directory.
    scancel sends SIGTERM to every process of the job, SIGKILL after 30 s (KillWait).
condor_submit, condor_rm, condor_q
    The submit file, with -append lines inserted before `queue`, is read by HTCondor's own
    parser (the htcondor bindings); each job runs its executable in a scratch directory that
    holds copies of transfer_input_files (without their executable bits, as file transfer may
    drop them), with only the job's `environment`. condor_rm sends RemoveKillSig to the job's
    process alone, SIGKILL after JobMaxVacateTime.
docker compose
    The project as the real compose renders it (`config --format json`): `up` starts each
    service's command in dependency order (waiting for completion or for the published port),
    with its environment, `deploy.replicas` copies, named volumes and tmpfs as directories,
    secrets as their files; container paths in commands, scripts and values are read in those.
    `run`, `exec`, `ps`, `logs` (not followed), `cp` and `down`/`stop` (stop_signal, SIGKILL
    after stop_grace_period) work on those. Not exercised: the image (its programs are the
    built binaries in GRIND_STANDIN_IMAGE_BIN), networks, read_only, cap_drop, restart
    policies, healthcheck commands (the published port answering stands in).
kubectl
    `apply -k`/`create -k` render with the real kubectl (kustomize) and start each pod's
    container: command and args with Kubernetes' $(VAR) expansion, env from value, fieldRef
    (metadata.name, metadata.namespace), resourceFieldRef (rounded up) and secretKeyRef;
    volumes (PVC, emptyDir, Secret) are directories, and paths under a container's
    mountPaths are read in them. A pod whose Secret volume does not exist yet waits for it
    (CreateContainerConfigError). `exec`, `create secret generic --from-file`, `get secret
    -o jsonpath`, `rollout status` (TCP readiness), `delete` (SIGTERM, SIGKILL after
    terminationGracePeriodSeconds) and `port-forward` (a no-op: pods share this machine's
    network) work on those. Not exercised: the scheduler, probes other than readiness as a
    TCP check, securityContext, resource limits, images (the image's programs are the built
    binaries in GRIND_STANDIN_IMAGE_BIN).

Environment: GRIND_STANDIN_ROOT, the machine's root: every absolute path under /etc,
/usr/local, /var/lib, /root and /run is read under it (also for Kubernetes' cluster state);
GRIND_STANDIN_PIDS, a file that gets the process group of everything started, for cleanup;
GRIND_STANDIN_MAX_JOBS, how many tasks or jobs of an array, cluster, Deployment or Job are run
(the rest are left queued); GRIND_STANDIN_CPUS, the CPUs a Slurm task gets at most; GRIND_STANDIN_KUBECTL
(the real kubectl) and GRIND_STANDIN_COMPOSE (the real docker-compose), GRIND_STANDIN_IMAGE_BIN
(the image's programs), GRIND_STANDIN_HOSTS ("name=host ...": what a Service or compose
service name resolves to) and GRIND_STANDIN_PORTS ("container=host ..."), for kubectl and
docker.
"""

import base64
import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

ROOT = os.environ.get("GRIND_STANDIN_ROOT", "")
MAX_JOBS = int(os.environ.get("GRIND_STANDIN_MAX_JOBS", "0"))
MAPPED = re.compile(r"(?<![^\s=:'\"(-])/(?:etc|usr/local|var/lib|root|run)(?=/|\b)")


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


# ------------------------------------------------------------------------- supervision
# `standins.py supervise BASE CWD -- ARGV...` runs ARGV in its own process group with the
# environment it was given, writes BASE.pid when it has started and BASE.status (the exit
# code; 128+N for signal N) when it ends; output goes to BASE.log unless told otherwise.


def supervise(argv):
    base, cwd, out = argv[0], argv[1], argv[2]
    cmd = argv[4:]
    log = open(out or base + ".log", "ab")
    try:
        # Its own process group, so that a stop can reach every process it starts.
        child = subprocess.Popen(
            cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
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
        [sys.executable, os.path.abspath(__file__), "supervise", base, cwd, out or "", "--"] + cmd,
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
    if not wait_until(lambda: os.path.exists(base + ".pid") or os.path.exists(base + ".status"), 10):
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


# ------------------------------------------------------------------------- systemd


def unit_names(name):
    """(full unit name, file to load, instance)."""
    if not re.search(r"\.(service|timer|socket|target)$", name):
        name += ".service"
    prefix, suffix = name.rsplit(".", 1)
    if "@" in prefix:
        template, instance = prefix.split("@", 1)
        return name, f"{template}@.{suffix}", instance
    return name, name, ""


def seconds(value, default):
    """A systemd time span ("30s", "1min 30s", "90") in seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*(min|ms|h|s|m)?", value or "")
    if not parts:
        return default
    return sum(float(n) * {"ms": 0.001, "s": 1, "min": 60, "m": 60, "h": 3600}[u or "s"] for n, u in parts)


class Unit:
    """One unit as systemd loads it: the file, then drop-ins; empty assignments reset lists."""

    LISTS = {
        "ExecStart", "Environment", "EnvironmentFile", "LoadCredential", "StateDirectory",
        "RestartPreventExitStatus",
    }

    def __init__(self, name):
        self.name, fname, self.instance = unit_names(name)
        d = map_paths("/etc/systemd/system")
        path = os.path.join(d, fname)
        if not os.path.exists(path):
            die(f"Unit {self.name} not found (no {path}).", 5)
        self.values = {}
        files = [path]
        dropins = os.path.join(d, self.name + ".d")
        if os.path.isdir(dropins):
            files += sorted(os.path.join(dropins, f) for f in os.listdir(dropins) if f.endswith(".conf"))
        for f in files:
            self._read(f)

    def _read(self, path):
        section, pending = None, ""
        for raw in open(path).read().split("\n"):
            line = pending + raw.strip()
            pending = ""
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            if not line or line[0] in "#;":
                continue
            if line.startswith("["):
                section = line.strip("[]")
                continue
            key, _, value = line.partition("=")
            key, value = f"{section}.{key.strip()}", map_paths(value.strip())
            if key.split(".", 1)[1] in self.LISTS:
                if value == "":
                    self.values[key] = []
                else:
                    self.values.setdefault(key, []).append(value)
            else:
                self.values[key] = value

    def get(self, key, default=""):
        return self.values.get("Service." + key, default)

    def specifiers(self, text):
        prefix = self.name.rsplit(".", 1)[0].split("@")[0]
        table = {
            "%": "%",
            "i": self.instance,
            "I": self.instance,
            "n": self.name,
            "N": self.name.rsplit(".", 1)[0],
            "p": prefix,
            "H": socket.gethostname(),
            "S": os.path.join(ROOT, "var/lib"),
            "t": os.path.join(ROOT, "run"),
            "d": self.credentials_dir(),
        }

        def one(m):
            if m.group(1) not in table:
                die(f"{self.name}: specifier %{m.group(1)} is not supported by the stand-in")
            return table[m.group(1)]

        return re.sub(r"%(.)", one, text)

    def credentials_dir(self):
        return os.path.join(ROOT, "run", "credentials", self.name)

    def environment(self):
        env = {
            "PATH": ":".join(map_paths(p) for p in ("/usr/local/sbin", "/usr/local/bin"))
            + ":/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8",
            "HOME": "/",
        }
        for line in self.get("Environment", []):
            for item in shlex.split(self.specifiers(line)):
                k, _, v = item.partition("=")
                env[k] = v
        # EnvironmentFile= settings override Environment= ones.
        for spec in self.get("EnvironmentFile", []):
            spec = self.specifiers(spec)
            optional = spec.startswith("-")
            path = spec.lstrip("-")
            if not os.path.exists(path):
                if optional:
                    continue
                die(f"{self.name}: failed to load environment file {path}", 1)
            env.update(read_env_file(path))
        return env

    def prepare(self, env):
        """Credentials and state directories, as systemd makes them before ExecStart=."""
        creds = self.get("LoadCredential", [])
        if creds:
            d = self.credentials_dir()
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            for spec in creds:
                ident, _, src = self.specifiers(spec).partition(":")
                if not os.path.isfile(src):
                    die(f"{self.name}: failed to set up credentials: {src}: no such file (status 243/CREDENTIALS)")
                shutil.copyfile(src, os.path.join(d, ident))
                os.chmod(os.path.join(d, ident), 0o400)
            os.chmod(d, 0o500)
            env["CREDENTIALS_DIRECTORY"] = d
        names = " ".join(self.get("StateDirectory", [])).split()
        if names:
            mode = int(self.get("StateDirectoryMode", "0755"), 8)
            env["STATE_DIRECTORY"] = ":".join(
                make_state_dir(n, mode, self.get("DynamicUser") == "yes") for n in names
            )

    def argv(self, line, env):
        line = self.specifiers(line).lstrip("-@:+!")
        words = []
        for word in shlex.split(line):
            m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
            if m:
                words += env.get(m.group(1), "").split()
                continue
            words.append(
                re.sub(
                    r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}",
                    lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), ""),
                    word,
                )
            )
        return words


def make_state_dir(name, mode, dynamic_user):
    link = os.path.join(ROOT, "var/lib", name)
    if dynamic_user:
        real = os.path.join(ROOT, "var/lib/private", name)
        os.makedirs(real, exist_ok=True)
        os.chmod(os.path.dirname(real), 0o700)
        if not os.path.islink(link):
            os.symlink(os.path.join("private", name), link)
    else:
        real = link
        os.makedirs(real, exist_ok=True)
    os.chmod(real, mode)
    return link


def read_env_file(path):
    env, pending = {}, ""
    for raw in open(path).read().split("\n"):
        line = pending + raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        if not line or line[0] in "#;" or "=" not in line:
            continue
        k, _, v = line.partition("=")
        v = v.strip()
        if v[:1] in "'\"" and v.endswith(v[:1]) and len(v) >= 2:
            v = shlex.split(v)[0]
        env[k.strip()] = map_paths(v)
    return env


def systemctl(args):
    args = [a for a in args if a not in ("--no-pager", "-q", "--quiet", "--system")]
    if not args:
        die("usage: systemctl COMMAND [UNIT...]", 2)
    cmd, rest = args[0], args[1:]
    base = lambda name: os.path.join(state_dir("systemd"), unit_names(name)[0])  # noqa: E731
    if cmd == "daemon-reload":
        return 0
    if cmd == "enable":
        if "--now" not in rest:
            return 0  # the [Install] symlinks: not exercised
        return systemctl(["start"] + [u for u in rest if u != "--now"])
    if cmd in ("start", "restart"):
        for name in rest:
            if unit_names(name)[0].endswith(".timer"):
                continue  # a started timer does nothing until it elapses
            unit = Unit(name)
            if cmd == "restart":
                stop_unit(unit, base(name))
            if running_pid(base(name)) is None and start_unit(unit, base(name)) != 0:
                print(f"Job for {unit.name} failed because the control process exited with error code.",
                      file=sys.stderr)
                return 1
        return 0
    if cmd == "stop":
        for name in rest:
            stop_unit(Unit(name), base(name))
        return 0
    if cmd in ("status", "is-active"):
        code = 0
        for name in rest:
            full = unit_names(name)[0]
            pid, status = running_pid(base(name)), exit_status(base(name))
            if pid is not None:
                state = f"active (running); Main PID: {pid}"
            elif status is None:
                state, code = "inactive (dead)", 3
            else:
                result = "dead" if status == 0 else "failed"
                state, code = f"{'inactive' if status == 0 else 'failed'} ({result}); status={status}", 3
            if cmd == "status":
                print(f"* {full}\n     Active: {state}")
                log = base(name) + ".log"
                if os.path.exists(log):
                    for line in open(log, errors="replace").read().splitlines()[-10:]:
                        print(f"  {line}")
            else:
                print(state.split(" ", 1)[0])
        return code
    if cmd == "show":
        props, value_only, names = [], False, []
        it = iter(rest)
        for a in it:
            if a == "-p":
                props += next(it).split(",")
            elif a.startswith("--property="):
                props += a.split("=", 1)[1].split(",")
            elif a == "--value":
                value_only = True
            else:
                names.append(a)
        for name in names:
            pid, status = running_pid(base(name)), exit_status(base(name))
            values = {
                "MainPID": str(pid or 0),
                "ExecMainStatus": str(status if status is not None else 0),
                "ActiveState": "active" if pid else ("inactive" if status in (None, 0) else "failed"),
            }
            for p in props:
                print(values[p] if value_only else f"{p}={values[p]}")
        return 0
    die(f"systemctl {cmd} is not supported by the stand-in", 2)


def start_unit(unit, base):
    env = unit.environment()
    unit.prepare(env)
    lines = unit.get("ExecStart", [])
    if not lines:
        die(f"{unit.name} has no ExecStart=")
    umask = int(unit.get("UMask", "0022"), 8)
    cwd = ROOT
    if unit.get("Type") == "oneshot":
        for line in lines:
            argv = unit.argv(line, env)
            with open(base + ".log", "ab") as log:
                code = subprocess.call(argv, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                       preexec_fn=lambda: os.umask(umask))
            with open(base + ".status", "w") as f:
                f.write(f"{code}\n")
            if code != 0:
                return code
        return 0
    argv = unit.argv(lines[0], env)
    start_supervised(base, argv, env, cwd, umask=umask)
    return 0


def stop_unit(unit, base):
    sig = signum(unit.get("KillSignal", "SIGTERM"))
    # KillMode=mixed and control-group: the main process gets the signal; SIGKILL to all after
    # TimeoutStopSec= (default 90 s).
    stop(base, sig, seconds(unit.get("TimeoutStopSec"), 90), group=unit.get("KillMode") == "control-group")


def systemd_run(args):
    props, i = {}, 0
    while i < len(args) and args[i] != "--" and args[i].startswith("-"):
        a = args[i]
        if a.startswith("--property="):
            k, _, v = a.split("=", 1)[1].partition("=")
            props[k] = v
        elif a in ("-p", "--property"):
            i += 1
            k, _, v = args[i].partition("=")
            props[k] = v
        elif a not in ("--quiet", "-q", "--wait", "--pipe", "-P", "--collect", "-G"):
            die(f"systemd-run option {a} is not supported by the stand-in", 2)
        i += 1
    if i < len(args) and args[i] == "--":
        i += 1
    cmd = [map_paths(a) for a in args[i:]]
    if not cmd:
        die("systemd-run: no command", 2)
    for name in props.get("StateDirectory", "").split():
        make_state_dir(name, 0o755, props.get("DynamicUser") == "yes")
    umask = int(props.get("UMask", "0022"), 8)
    env = dict(os.environ)
    return subprocess.call(cmd, cwd=ROOT, env=env, preexec_fn=lambda: os.umask(umask))


def journalctl(args):
    units = [args[i + 1] for i, a in enumerate(args) if a == "-u"]
    for name in units:
        log = os.path.join(state_dir("systemd"), unit_names(name)[0] + ".log")
        if os.path.exists(log):
            sys.stdout.write(open(log, errors="replace").read())
    return 0  # -f: the log so far, not followed


# ------------------------------------------------------------------------- Slurm


def next_id(kind, first):
    path = os.path.join(state_dir(kind), "next-id")
    n = int(open(path).read()) if os.path.exists(path) else first
    with open(path, "w") as f:
        f.write(f"{n + 1}\n")
    return n


def parse_array(spec):
    spec = spec.split("%", 1)[0]
    out = []
    for part in spec.split(","):
        step = 1
        if ":" in part:
            part, s = part.split(":")
            step = int(s)
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1, step))
    return out


def sbatch(args):
    opts, i = {}, 0
    while i < len(args) and args[i].startswith("-"):
        a = args[i]
        if a.startswith("--") and "=" in a:
            k, v = a[2:].split("=", 1)
        else:
            k, v = {"-p": "partition", "-A": "account", "-t": "time", "-c": "cpus-per-task",
                    "-a": "array", "-o": "output", "-J": "job-name"}.get(a, a.lstrip("-")), args[i + 1]
            i += 1
        opts[k] = v
        i += 1
    if i >= len(args):
        die("sbatch: no job script", 2)
    script = args[i]
    directives = {}
    for line in open(script).read().split("\n")[1:]:
        if line.startswith("#SBATCH"):
            m = re.match(r"#SBATCH\s+--([a-z-]+)(?:=(\S+))?", line)
            if m:
                directives[m.group(1)] = m.group(2) or ""
        elif line.strip() and not line.startswith("#"):
            break
    directives.update(opts)  # the command line wins
    job = next_id("slurm", 4242)
    tasks = parse_array(directives["array"]) if "array" in directives else [None]
    cpus = int(directives.get("cpus-per-task", "1"))
    cpus = min(cpus, int(os.environ.get("GRIND_STANDIN_CPUS", cpus)))
    limit = int(os.environ.get("GRIND_STANDIN_MAX_JOBS", len(tasks)))
    out_pattern = directives.get("output", "slurm-%A_%a.out" if tasks != [None] else "slurm-%j.out")
    cwd = os.getcwd()
    for n, task in enumerate(tasks[:limit]):
        env = dict(os.environ)
        job_id = job + n
        env.update(SLURM_JOB_ID=str(job_id), SLURM_JOB_NAME=directives.get("job-name", "sbatch"),
                   SLURM_CPUS_PER_TASK=str(cpus), SLURM_SUBMIT_DIR=cwd,
                   SLURMD_NODENAME=socket.gethostname().split(".")[0])
        if task is not None:
            env.update(SLURM_ARRAY_JOB_ID=str(job), SLURM_ARRAY_TASK_ID=str(task))
        out = out_pattern.replace("%A", str(job)).replace("%a", str(task)).replace("%j", str(job_id))
        base = os.path.join(state_dir("slurm"), f"{job}_{task}" if task is not None else str(job))
        start_supervised(base, [os.path.abspath(script)], env, cwd, out=os.path.join(cwd, out))
    print(f"Submitted batch job {job}")
    return 0


def srun(args):
    """A one-off step on a compute node: here, this machine."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-N", "-n", "-t", "-c", "-p", "-A", "-J", "-w") else 1
    return subprocess.call(args[i:])


def slurm_tasks(selector=None):
    d = state_dir("slurm")
    for f in sorted(os.listdir(d)):
        if f.endswith(".pid"):
            name = f[:-4]
            if selector is None or name == selector or name.split("_")[0] == selector:
                yield name, os.path.join(d, name)


def scancel(args):
    bases = [b for a in args if not a.startswith("-") for _, b in slurm_tasks(a)]
    for b in bases:
        pid = running_pid(b)
        if pid is not None:
            os.killpg(pid, signal.SIGTERM)  # every process of the job
    for b in bases:
        stop(b, 0, 30)  # KillWait
    return 0


def squeue(args):
    print("JOBID  NAME  STATE")
    for name, b in slurm_tasks():
        if running_pid(b) is not None:
            print(f"{name}  grind-worker  RUNNING")
    return 0


# ------------------------------------------------------------------------- HTCondor


def condor_submit(args):
    import warnings  # noqa: PLC0415

    os.environ.setdefault("CONDOR_CONFIG", "/dev/null")  # no pool here: condor_submit's defaults
    warnings.simplefilter("ignore")
    import htcondor  # noqa: PLC0415 (only the HTCondor stand-in needs the bindings)

    appends, files, i = [], [], 0
    while i < len(args):
        if args[i] in ("-append", "-a"):
            appends.append(args[i + 1])
            i += 2
        else:
            files.append(args[i])
            i += 1
    text = open(files[0]).read()
    lines = text.rstrip("\n").split("\n")
    q = max(n for n, line in enumerate(lines) if re.match(r"\s*queue\b", line))
    text = "\n".join(lines[:q] + appends + lines[q:]) + "\n"
    cluster = next_id("condor", 17)
    ads = list(htcondor.Submit(text).jobs(clusterid=cluster))
    limit = int(os.environ.get("GRIND_STANDIN_MAX_JOBS", len(ads)))
    for ad in ads[:limit]:
        proc = ad["ProcId"]
        iwd = ad["Iwd"]
        scratch = os.path.join(state_dir("condor", "execute"), f"dir_{cluster}.{proc}")
        os.makedirs(scratch)
        for f in [x.strip() for x in str(ad.get("TransferInput", "")).split(",") if x.strip()]:
            shutil.copyfile(os.path.join(iwd, f), os.path.join(scratch, os.path.basename(f)))
        exe = os.path.join(scratch, os.path.basename(ad["Cmd"]))
        shutil.copyfile(ad["Cmd"], exe)
        os.chmod(exe, 0o755)
        env = {"PATH": "/usr/bin:/bin", "_CONDOR_SCRATCH_DIR": scratch}
        for item in shlex.split(str(ad.get("Environment", ""))):
            k, _, v = item.partition("=")
            env[k] = v
        base = os.path.join(state_dir("condor"), f"{cluster}.{proc}")
        with open(base + ".ad", "w") as f:
            json.dump({k: ad.get(k) for k in ("RemoveKillSig", "KillSig", "JobMaxVacateTime")}, f)
        err = os.path.join(iwd, ad["Err"])
        start_supervised(base, [exe] + shlex.split(str(ad.get("Arguments", ""))), env, scratch, out=err)
    print(f"Submitting job(s){'.' * len(ads)}\n{len(ads)} job(s) submitted to cluster {cluster}.")
    return 0


def condor_jobs(selector=None):
    d = state_dir("condor")
    for f in sorted(os.listdir(d)):
        if f.endswith(".pid"):
            name = f[:-4]
            if selector is None or name == selector or name.split(".")[0] == selector:
                yield name, os.path.join(d, name)


def condor_rm(args):
    for sel in args:
        for _, b in condor_jobs(sel):
            ad = json.load(open(b + ".ad"))
            pid = running_pid(b)
            if pid is not None:
                os.kill(pid, signum(ad.get("RemoveKillSig") or ad.get("KillSig") or "SIGTERM"))
        print(f"All jobs in cluster {sel} have been marked for removal")
    for sel in args:
        for _, b in condor_jobs(sel):
            ad = json.load(open(b + ".ad"))
            stop(b, 0, float(ad.get("JobMaxVacateTime") or 10))
    return 0


def condor_q(args):
    print(" ID      OWNER  STATUS")
    for name, b in condor_jobs():
        if running_pid(b) is not None:
            print(f" {name}  you    R")
    return 0


# ------------------------------------------------------------------------- Kubernetes


def k8s_state(*parts):
    return state_dir("k8s", *parts)


def k8s_map(text):
    """A Service name resolves to GRIND_STANDIN_HOSTS' host, a container port to a host port."""
    for pair in os.environ.get("GRIND_STANDIN_HOSTS", "").split():
        svc, host = pair.split("=")
        text = re.sub(rf"(?<=//){re.escape(svc)}(?=[:/]|$)", host, text)
    for pair in os.environ.get("GRIND_STANDIN_PORTS", "").split():
        c, h = pair.split("=")
        text = re.sub(rf":{c}\b", f":{h}", text)
    return text


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
                yield f"{name}-{i}", ns, spec["template"]["spec"], o, {"JOB_COMPLETION_INDEX": str(i)}


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
            env[e["name"]] = {"metadata.name": pod, "metadata.namespace": ns}[vf["fieldRef"]["fieldPath"]]
        elif "resourceFieldRef" in vf:
            r = vf["resourceFieldRef"]
            kind, res = r["resource"].split(".")
            value = quantity(container["resources"][kind][res]) / quantity(r.get("divisor", "1"))
            env[e["name"]] = str(math.ceil(value))
        elif "secretKeyRef" in vf:
            ref = vf["secretKeyRef"]
            env[e["name"]] = open(os.path.join(k8s_state("secrets", ns, ref["name"]), ref["key"])).read()
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
            return host + arg[len(path):]
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
    """`standins.py kubelet POD`: waits for the pod's Secrets, then runs its container."""
    pods = load_pods()
    p = pods[args[0]]
    mounts = [tuple(m) for m in p["mounts"]]
    secrets_dir = os.path.join(ROOT, "run/standins/k8s/secrets", p["namespace"])
    while True:
        missing = [s[0] for _, _, s in mounts if s and not s[1] and not os.path.isdir(os.path.join(secrets_dir, s[0]))]
        if not missing:
            break
        time.sleep(0.2)  # CreateContainerConfigError: secret not found; the kubelet retries
    for _, host, s in mounts:
        if s and s[2]:
            for item in s[2]:
                shutil.copyfile(os.path.join(secrets_dir, s[0], item["key"]), os.path.join(host, item["path"]))
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

        rendered = subprocess.run([real, "kustomize", rest[1]], check=True, capture_output=True, text=True).stdout
        objects = [o for o in yaml.safe_load_all(k8s_map(rendered)) if o]
        pods = load_pods()
        image_bin = os.environ["GRIND_STANDIN_IMAGE_BIN"]
        for o in objects:
            print(f"{o['kind'].lower()}/{o['metadata']['name']} {'created' if cmd == 'create' else 'configured'}")
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
            start_supervised(os.path.join(k8s_state(), pod), [sys.executable, os.path.abspath(__file__), "kubelet", pod],
                             dict(os.environ), ROOT)
        return 0
    if cmd == "rollout" and rest[0] == "status":
        kind, name = rest[1].split("/")
        pods = {k: v for k, v in load_pods().items() if v["owner"] == f"{kind}/{name}"}

        def ready():
            for p in pods.values():
                port = int(k8s_map(f":{p['ports'][0]}")[1:]) if p["ports"] else None
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
        argv = rest[rest.index("--") + 1:]
        p = load_pods().get(pod)
        if p is None or running_pid(os.path.join(k8s_state(), pod)) is None:
            die(f'pod "{pod}" is not running')
        mounts = [tuple(m) for m in p["mounts"]]
        argv = [map_container_path(mounts, k8s_map(a)) for a in argv]
        return subprocess.call(argv, env=p["env"], cwd=ROOT, stdin=None if interactive else subprocess.DEVNULL)
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
                data = sys.stdin.buffer.read() if src in ("/dev/stdin", "-") else open(src, "rb").read()
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
        for pod, p in chosen:
            pid = running_pid(os.path.join(k8s_state(), pod))
            if pid is not None:
                os.kill(pid, signal.SIGTERM)
        for pod, p in chosen:
            stop(os.path.join(k8s_state(), pod), 0, p["grace"])
        for t in targets:
            print(f'{t.split("/")[0]} "{t.split("/")[1]}" deleted')
        return 0
    die(f"kubectl {cmd} {' '.join(rest[:1])} is not supported by the stand-in", 2)


# ------------------------------------------------------------------------- Docker Compose


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
    out = subprocess.run([real] + files + ["config", "--format", "json"], check=True, capture_output=True, text=True)
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
    env = {k: map_container_text(mounts, k8s_map(v)) for k, v in (svc.get("environment") or {}).items() if v}
    env["PATH"] = os.environ["GRIND_STANDIN_IMAGE_BIN"] + ":/usr/bin:/bin"
    cmd = [map_container_text(mounts, k8s_map(a)) for a in cmd]
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
            for dep in (config["services"][name].get("depends_on") or {}):
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
                                socket.create_connection(("127.0.0.1", int(p["published"])), timeout=1).close()
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
                    wait_until(lambda: exit_status(base) is not None, 60)
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
                for line in open(log, errors="replace").read().splitlines() if os.path.exists(log) else []:
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
            stop(os.path.join(compose_state(), cname), 0, seconds(svc.get("stop_grace_period"), 10))
            print(f" Container grind-{cname}  Stopped")
        return 0
    die(f"docker compose {cmd} is not supported by the stand-in", 2)


def main():
    if len(sys.argv) < 2:
        die("usage: standins.py PROGRAM ARGS...", 2)
    prog, args = sys.argv[1], sys.argv[2:]
    sys.argv[0] = prog
    table = {
        "supervise": supervise,
        "map-paths": lambda a: sys.stdout.write(map_paths(sys.stdin.read())) and 0,
        "systemctl": systemctl,
        "systemd-run": systemd_run,
        "journalctl": journalctl,
        "sbatch": sbatch,
        "srun": srun,
        "scancel": scancel,
        "squeue": squeue,
        "condor_submit": condor_submit,
        "condor_rm": condor_rm,
        "condor_q": condor_q,
        "kubectl": kubectl,
        "docker": docker,
        "kubelet": kubelet,
    }
    if prog not in table:
        die(f"unknown stand-in {prog}", 2)
    sys.exit(table[prog](args) or 0)


if __name__ == "__main__":
    main()
