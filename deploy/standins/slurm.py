"""sbatch, srun, scancel and squeue stand-ins: job scripts as Slurm runs them (see __main__)."""

import os
import re
import signal
import socket
import subprocess

from common import (
    die,
    next_id,
    running_pid,
    start_supervised,
    state_dir,
    stop,
    supervised_jobs,
)


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
            k, v = (
                {
                    "-p": "partition",
                    "-A": "account",
                    "-t": "time",
                    "-c": "cpus-per-task",
                    "-a": "array",
                    "-o": "output",
                    "-J": "job-name",
                }.get(a, a.lstrip("-")),
                args[i + 1],
            )
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
    out_pattern = directives.get(
        "output", "slurm-%A_%a.out" if tasks != [None] else "slurm-%j.out"
    )
    cwd = os.getcwd()
    for n, task in enumerate(tasks[:limit]):
        env = dict(os.environ)
        job_id = job + n
        env.update(
            SLURM_JOB_ID=str(job_id),
            SLURM_JOB_NAME=directives.get("job-name", "sbatch"),
            SLURM_CPUS_PER_TASK=str(cpus),
            SLURM_SUBMIT_DIR=cwd,
            SLURMD_NODENAME=socket.gethostname().split(".")[0],
        )
        if task is not None:
            env.update(SLURM_ARRAY_JOB_ID=str(job), SLURM_ARRAY_TASK_ID=str(task))
        out = (
            out_pattern.replace("%A", str(job)).replace("%a", str(task)).replace("%j", str(job_id))
        )
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
    return supervised_jobs("slurm", "_", selector)


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
