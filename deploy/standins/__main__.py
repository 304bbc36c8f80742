"""Stand-ins for what deploy/check.sh cannot run: systemd, Slurm, HTCondor, Kubernetes, Docker.

deploy/check.sh runs the quick starts of deploy/*/README.md as written, against the built
`grind` and `grind-worker`. Some of their commands belong to programs that need root and a
running systemd, a scheduler, a cluster or a Docker daemon. For those the check puts a
directory first on PATH in which each such name runs this package (`python3 deploy/standins
NAME ARGS...`). A stand-in does what its program would do to start, stop and inspect the
grind processes, reading the deploy files themselves, and nothing else. One module each:
systemd.py, slurm.py, condor.py, kubernetes.py, compose.py; common.py holds the machine's
root, the path mapping and the supervised processes.

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
/usr/local, /var/lib, /root and /run is read under it (also for the stand-ins' own state);
GRIND_STANDIN_PIDS, a file that gets the process group of everything started, for cleanup;
GRIND_STANDIN_MAX_JOBS, how many tasks or jobs of an array, cluster, Deployment or Job are run
(the rest are left queued); GRIND_STANDIN_CPUS, the CPUs a Slurm task gets at most;
GRIND_STANDIN_KUBECTL (the real kubectl) and GRIND_STANDIN_COMPOSE (the real docker-compose);
GRIND_STANDIN_IMAGE_BIN (the image's programs); GRIND_STANDIN_HOSTS ("name=host ...": what a
Service or compose service name resolves to) and GRIND_STANDIN_PORTS ("container=host ...").
"""

import sys

from common import die, map_paths, supervise
from compose import docker
from condor import condor_q, condor_rm, condor_submit
from kubernetes import kubectl, kubelet
from slurm import sbatch, scancel, squeue, srun
from systemd import journalctl, systemctl, systemd_run


def main():
    if len(sys.argv) < 2:
        die("usage: standins PROGRAM ARGS...", 2)
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
