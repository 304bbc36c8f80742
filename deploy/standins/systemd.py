"""systemctl, systemd-run and journalctl stand-ins: units as systemd runs them (see __main__)."""

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys

from common import (
    ROOT,
    die,
    exit_status,
    map_paths,
    running_pid,
    seconds,
    signum,
    start_supervised,
    state_dir,
    stop,
)


def unit_names(name):
    """(full unit name, file to load, instance)."""
    if not re.search(r"\.(service|timer|socket|target)$", name):
        name += ".service"
    prefix, suffix = name.rsplit(".", 1)
    if "@" in prefix:
        template, instance = prefix.split("@", 1)
        return name, f"{template}@.{suffix}", instance
    return name, name, ""


class Unit:
    """One unit as systemd loads it: the file, then drop-ins; empty assignments reset lists."""

    LISTS = {
        "ExecStart",
        "Environment",
        "EnvironmentFile",
        "LoadCredential",
        "StateDirectory",
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
            files += sorted(
                os.path.join(dropins, f) for f in os.listdir(dropins) if f.endswith(".conf")
            )
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
                    die(
                        f"{self.name}: failed to set up credentials: {src}: no such file "
                        "(status 243/CREDENTIALS)"
                    )
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
                print(
                    f"Job for {unit.name} failed because the control process exited with "
                    "error code.",
                    file=sys.stderr,
                )
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
                state, code = (
                    f"{'inactive' if status == 0 else 'failed'} ({result}); status={status}",
                    3,
                )
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
                "ActiveState": "active"
                if pid
                else ("inactive" if status in (None, 0) else "failed"),
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
                code = subprocess.call(
                    argv,
                    env=env,
                    cwd=cwd,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    preexec_fn=lambda: os.umask(umask),
                )
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
    stop(
        base,
        sig,
        seconds(unit.get("TimeoutStopSec"), 90),
        group=unit.get("KillMode") == "control-group",
    )


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
