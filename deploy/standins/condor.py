"""condor_submit, condor_rm, condor_q stand-ins: jobs as a starter runs them (see __main__)."""

import json
import os
import re
import shlex
import shutil

from common import (
    next_id,
    running_pid,
    signum,
    start_supervised,
    state_dir,
    stop,
    supervised_jobs,
)


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
        start_supervised(
            base, [exe] + shlex.split(str(ad.get("Arguments", ""))), env, scratch, out=err
        )
    print(f"Submitting job(s){'.' * len(ads)}\n{len(ads)} job(s) submitted to cluster {cluster}.")
    return 0


def condor_jobs(selector=None):
    return supervised_jobs("condor", ".", selector)


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
