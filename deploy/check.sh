#!/usr/bin/env bash
# deploy/check.sh: offline checks of every deployment file under deploy/ (and .dockerignore),
# then every quick start (README.md's "Across machines" and "Your own solver", deploy/*/README.md) run as written
# against the built binaries, with deploy/standins/ for systemd, Slurm, HTCondor, kubectl
# and docker compose (deploy/README.md, "Checking these files", lists what stands in for what).
#
#   bash deploy/check.sh
#
# Each check prints PASS, FAIL (with the findings) or SKIP (with the reason); the last line
# is "deploy-check: N passed, N failed, N skipped". Exit status 1 on any FAIL. A check is
# skipped only when its tool cannot be had on this machine; under CI=true a skip fails the
# run too, unless GRIND_DEPLOY_CHECK_ALLOW_SKIP=1.
#
# Tools come from PyPI, pinned in deploy/check-requirements.txt, into a private virtualenv
# created once per machine (GRIND_DEPLOY_CHECK_VENV, default ~/.cache/grind-deploy-check/);
# systemd-analyze comes from the system (Debian: apt-get install systemd).
#
# The CLI check reads `--help` of the built binaries (GRIND_BIN_DIR, else target/debug or
# target/release) to make sure every flag the deploy files use exists: run it after
# `cargo build --workspace`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
DEPLOY=$ROOT/deploy
K8S_VERSIONS=(1.30.0 1.37.0) # oldest and newest Kubernetes the manifests are checked against

WORK=$(mktemp -d "${TMPDIR:-/tmp}/grind-deploy-check.XXXXXX")
BG_PIDS=()
cleanup() {
    local pid
    for pid in "${BG_PIDS[@]}"; do
        kill -KILL "$pid" 2>/dev/null || true
    done
    kill_stub
    if [[ -s $WORK/standin-pids ]]; then
        while read -r pid; do
            kill -KILL -- "-$pid" 2>/dev/null || true
            kill -KILL "$pid" 2>/dev/null || true
        done <"$WORK/standin-pids"
    fi
    rm -rf "$WORK"
}
# The stand-in worker of the Slurm and HTCondor tests records "PID PPID" here.
kill_stub() {
    if [[ -s $WORK/stub/pid ]]; then
        kill -KILL "$(cut -d' ' -f1 "$WORK/stub/pid")" 2>/dev/null || true
        rm -f "$WORK/stub/pid"
    fi
}
trap cleanup EXIT

passed=0
failed=0
skipped=0
pass() {
    passed=$((passed + 1))
    printf 'PASS  %s\n' "$1"
}
fail() {
    failed=$((failed + 1))
    printf 'FAIL  %s\n' "$1"
    if [[ -n ${2:-} && -s $2 ]]; then
        sed 's/^/      /' "$2"
    fi
}
skip() {
    skipped=$((skipped + 1))
    printf 'SKIP  %s: %s\n' "$1" "$2"
}

# run NAME COMMAND...: PASS when the command exits 0 and prints nothing, else FAIL with its output.
run() {
    local name=$1 out=$WORK/out.txt
    shift
    if "$@" >"$out" 2>&1 && [[ ! -s $out ]]; then
        pass "$name"
    else
        fail "$name" "$out"
    fi
}

# run_rc NAME COMMAND...: PASS when the command exits 0 (its output is ignored then).
run_rc() {
    local name=$1 out=$WORK/out.txt
    shift
    if "$@" >"$out" 2>&1; then
        pass "$name"
    else
        fail "$name" "$out"
    fi
}

# ----------------------------------------------------------------------------- tools
REQUIREMENTS=$DEPLOY/check-requirements.txt
CACHE_DIR=${GRIND_DEPLOY_CHECK_VENV:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/grind-deploy-check}
VENV=""
tools_reason=""
setup_venv() {
    if ! command -v python3 >/dev/null 2>&1; then
        tools_reason="python3 is not installed"
        return 1
    fi
    local stamp
    stamp=$({
        cat "$REQUIREMENTS"
        python3 -c 'import sys; print(sys.version)'
    } | sha256sum | cut -c1-16)
    VENV=$CACHE_DIR/venv-$stamp
    if [[ -f $VENV/.complete ]]; then
        return 0
    fi
    mkdir -p "$CACHE_DIR"
    # One installer at a time (two checks started together share the virtualenv).
    if command -v flock >/dev/null 2>&1; then
        exec 9>"$CACHE_DIR/.lock"
        flock 9
        if [[ -f $VENV/.complete ]]; then
            return 0
        fi
    fi
    echo "deploy-check: installing pinned tools into $VENV (once per machine)"
    rm -rf "$VENV"
    if ! python3 -m venv "$VENV" >"$WORK/venv.log" 2>&1; then
        # Debian's own python3 needs python3-venv for this.
        if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1 &&
            { apt-get install -y --no-install-recommends python3-venv ||
                { apt-get update && apt-get install -y --no-install-recommends python3-venv; }; } \
                >>"$WORK/venv.log" 2>&1; then
            rm -rf "$VENV"
            python3 -m venv "$VENV" >>"$WORK/venv.log" 2>&1 || true
        fi
        if [[ ! -x $VENV/bin/pip ]]; then
            tools_reason="python3 -m venv failed: $(tail -n 1 "$WORK/venv.log")"
            return 1
        fi
    fi
    if ! "$VENV/bin/pip" install --disable-pip-version-check --quiet -r "$REQUIREMENTS" \
        >"$WORK/pip.log" 2>&1; then
        tools_reason="pip install -r deploy/check-requirements.txt failed: $(tail -n 1 "$WORK/pip.log")"
        return 1
    fi
    touch "$VENV/.complete"
    exec 9>&- # release the lock (children must not hold it)
}
if setup_venv; then
    PATH=$VENV/bin:$PATH
    PY=$VENV/bin/python
else
    echo "deploy-check: no tools: $tools_reason"
    VENV=""
    PY=""
fi
have() { [[ -n $VENV && -x $VENV/bin/$1 ]]; }

if ! command -v systemd-analyze >/dev/null 2>&1 && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "deploy-check: installing systemd (for systemd-analyze)"
    if ! { apt-get install -y --no-install-recommends systemd || {
        apt-get update && apt-get install -y --no-install-recommends systemd
    }; } >"$WORK/apt.log" 2>&1; then
        echo "deploy-check: apt-get install systemd failed: $(tail -n 1 "$WORK/apt.log")"
    fi
fi

# ----------------------------------------------------------------------------- shell scripts
mapfile -t SCRIPTS < <(
    find "$DEPLOY" -type f ! -name '*.md' -print0 | sort -z |
        while IFS= read -r -d '' f; do
            if head -n 1 "$f" | grep -Eq '^#!(/usr/bin/env (ba)?sh|/bin/(ba)?sh)'; then
                printf '%s\n' "$f"
            fi
        done
)
for f in "${SCRIPTS[@]}"; do
    rel=${f#"$ROOT"/}
    if head -n 1 "$f" | grep -q bash; then
        run "bash -n $rel" bash -n "$f"
    else
        run "sh -n $rel (dash)" sh -n "$f"
    fi
    if [[ -x $f ]]; then
        pass "executable bit: $rel"
    else
        echo "$rel is not executable (chmod +x)" >"$WORK/x.txt"
        fail "executable bit: $rel" "$WORK/x.txt"
    fi
done
if have shellcheck; then
    run "shellcheck (${#SCRIPTS[@]} scripts: ${SCRIPTS[*]#"$ROOT"/})" \
        shellcheck --external-sources --severity=style --format=gcc "${SCRIPTS[@]}"
else
    skip "shellcheck" "${tools_reason:-shellcheck missing from the virtualenv}"
fi

# ----------------------------------------------------------------------------- systemd
UNITS_DIR=$DEPLOY/systemd
if command -v systemd-analyze >/dev/null 2>&1; then
    # The units name /usr/local/bin/grind and grind-worker, and systemd-analyze verify
    # insists that ExecStart= binaries exist: verify copies that point at stub executables.
    mkdir -p "$WORK/bin" "$WORK/units"
    for b in grind grind-worker; do
        printf '#!/bin/sh\nexit 0\n' >"$WORK/bin/$b"
        chmod +x "$WORK/bin/$b"
    done
    for u in "$UNITS_DIR"/*.service "$UNITS_DIR"/*.timer; do
        sed "s#/usr/local/bin/#$WORK/bin/#g" "$u" >"$WORK/units/$(basename "$u")"
    done
    for u in "$WORK"/units/*; do
        name=$(basename "$u")
        target=$u
        # A template is verified through an instance: systemd loads foo@.service for it.
        [[ $name == *@.service ]] && target=$WORK/units/${name%@.service}@main.service
        run "systemd-analyze verify deploy/systemd/$name" \
            env SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no "$target"
        if [[ $name == *.service ]]; then
            # Exposure score 0-10 (lower is safer): the units must stay "OK" (<= 2.0).
            run_rc "systemd-analyze security deploy/systemd/$name (exposure <= 2.0)" \
                systemd-analyze security --offline=yes --threshold=20 --no-pager "$target"
        fi
    done
    # grind-as-coordinator hands its --property= settings to systemd-run: verify them as a unit.
    {
        printf '[Service]\nType=oneshot\nExecStart=%s/bin/grind token list --db /var/lib/grind/campaigns.db\n' "$WORK"
        grep -o -- '--property=[^ ]*' "$UNITS_DIR/grind-as-coordinator" | sed 's/^--property=//'
    } >"$WORK/units/grind-as-coordinator-check.service"
    run "systemd-analyze verify grind-as-coordinator's systemd-run properties" \
        env SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no "$WORK/units/grind-as-coordinator-check.service"
else
    skip "systemd-analyze verify/security" "systemd-analyze is not installed (Debian package systemd)"
fi

# ----------------------------------------------------------------------------- Dockerfile
DOCKERFILE=$DEPLOY/docker/Dockerfile
if have hadolint; then
    run "hadolint deploy/docker/Dockerfile" hadolint --no-color --failure-threshold style "$DOCKERFILE"
else
    skip "hadolint" "${tools_reason:-hadolint missing from the virtualenv}"
fi
check_docker_context() {
    # The packages and binaries the Dockerfile builds exist in the workspace ...
    local pkg bin member rust_min rust_img
    while read -r pkg; do
        grep -Rqs --include=Cargo.toml -E "^name = \"$pkg\"" "$ROOT"/*/Cargo.toml "$ROOT"/*/*/Cargo.toml ||
            echo "Dockerfile builds package $pkg, which no Cargo.toml defines"
    done < <(grep -o -- '-p [a-z0-9-]*' "$DOCKERFILE" | awk '{print $2}' | sort -u)
    for bin in grind grind-worker; do
        grep -q "target/release/$bin" "$DOCKERFILE" || echo "Dockerfile does not install $bin"
        grep -Rqs -E "^name = \"$bin\"" "$ROOT"/coordinator/Cargo.toml "$ROOT"/worker/Cargo.toml ||
            echo "no [[bin]] named $bin in coordinator/ or worker/"
    done
    # ... .dockerignore keeps every workspace member in the build context ...
    for member in $(sed -n '/^members/,/]/p' "$ROOT/Cargo.toml" | grep -o '"[^"]*"' | tr -d '"'); do
        if grep -Eqx "${member%%/*}/?" "$ROOT/.dockerignore"; then
            echo ".dockerignore excludes workspace member $member"
        fi
    done
    grep -Eqx 'target/?' "$ROOT/.dockerignore" || echo ".dockerignore should exclude target"
    # ... and the builder's Rust is at least the workspace's rust-version.
    rust_min=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml")
    rust_img=$(sed -n 's/^ARG RUST_VERSION=//p' "$DOCKERFILE")
    if [[ -n $rust_min && -n $rust_img ]] &&
        [[ $(printf '%s\n%s\n' "$rust_min" "$rust_img" | sort -V | head -n 1) != "$rust_min" ]]; then
        echo "Dockerfile's RUST_VERSION $rust_img is older than the workspace's rust-version $rust_min"
    fi
}
run "Dockerfile builds the workspace's packages; .dockerignore keeps them" check_docker_context

# ----------------------------------------------------------------------------- YAML, compose
mapfile -t YAMLS < <(find "$DEPLOY" -type f \( -name '*.yaml' -o -name '*.yml' \) | sort)
if have yamllint; then
    run "yamllint (${#YAMLS[@]} files)" yamllint --strict --format parsable \
        -d '{extends: default, rules: {line-length: {max: 120}, document-start: disable, truthy: {check-keys: false}}}' \
        "${YAMLS[@]}"
else
    skip "yamllint" "${tools_reason:-yamllint missing from the virtualenv}"
fi

COMPOSE=$DEPLOY/docker/compose.yaml
compose_cli=()
if docker compose version >/dev/null 2>&1; then
    compose_cli=(docker compose)
elif have docker-compose; then
    compose_cli=("$VENV/bin/docker-compose")
fi
check_compose() {
    # The secrets' files need not exist for `config`; the services and their wiring must.
    local rendered=$WORK/compose.json
    GRIND_WORKERS=3 GRIND_WORKER_THREADS=2 "${compose_cli[@]}" -f "$COMPOSE" config --format json >"$rendered"
    "$PY" - "$rendered" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
s = c["services"]
problems = []
if set(s) != {"tls-init", "coordinator", "worker"}:
    problems.append(f"services are {sorted(s)}")
w, co = s.get("worker", {}), s.get("coordinator", {})
if w.get("deploy", {}).get("replicas") != 3:
    problems.append("worker replicas do not follow GRIND_WORKERS")
if "2" not in w.get("command", []):
    problems.append("worker --threads does not follow GRIND_WORKER_THREADS")
if w.get("depends_on", {}).get("coordinator", {}).get("condition") != "service_healthy":
    problems.append("workers must wait for a healthy coordinator")
if "healthcheck" not in co:
    problems.append("the coordinator needs a healthcheck")
if co.get("command", [None, None])[:2] != ["grind", "serve"] or w.get("command", [None])[0] != "grind-worker":
    problems.append("coordinator must run `grind serve`, workers `grind-worker`")
if not any(v.get("target") == "/var/lib/grind" for v in co.get("volumes", [])):
    problems.append("the coordinator's /var/lib/grind must be a volume")
if w.get("environment", {}).get("GRIND_TOKEN_FILE") != "/run/secrets/worker_token":
    problems.append("workers must read the token from the worker_token secret")
def seconds(d):
    # "1m0s", "30s"
    total, num = 0, ""
    for ch in d:
        if ch.isdigit():
            num += ch
        else:
            total += int(num) * {"h": 3600, "m": 60, "s": 1}[ch]
            num = ""
    return total
if seconds(w.get("stop_grace_period", "10s")) < 15:
    problems.append("workers need a stop_grace_period of at least 15 s to checkpoint")
if problems:
    print("\n".join(problems))
sys.exit(1 if problems else 0)
EOF
}
if [[ ${#compose_cli[@]} -gt 0 && -n $PY ]]; then
    run "compose config deploy/docker/compose.yaml (${compose_cli[*]##*/})" \
        "${compose_cli[@]}" -f "$COMPOSE" config --quiet
    run "compose wiring: services, replicas, healthcheck, secrets, grace" check_compose
else
    skip "compose config" "${tools_reason:-no docker compose plugin and no docker-compose in the virtualenv}"
fi

# ----------------------------------------------------------------------------- Kubernetes
K8S=$DEPLOY/kubernetes
mapfile -t KUSTOMIZATIONS < <(find "$K8S" -name kustomization.yaml -printf '%h\n' | sort)
if have kubectl && have kubernetes-validate; then
    rendered=()
    for dir in "${KUSTOMIZATIONS[@]}"; do
        rel=${dir#"$ROOT"/}
        # Components are rendered only through the overlays that use them.
        if grep -q '^kind: Component' "$dir/kustomization.yaml"; then
            continue
        fi
        out=$WORK/k8s-$(echo "$rel" | tr '/' '_').yaml
        if kubectl kustomize "$dir" >"$out" 2>"$WORK/kustomize.err"; then
            pass "kustomize build $rel"
            rendered+=("$out")
        else
            fail "kustomize build $rel" "$WORK/kustomize.err"
        fi
    done
    for v in "${K8S_VERSIONS[@]}"; do
        # --quiet prints only warnings and errors; a warning (e.g. no schema for a kind) fails too.
        run "kubernetes-validate --strict, Kubernetes $v (${#rendered[@]} builds + secrets.example.yaml)" \
            kubernetes-validate --strict --quiet -k "$v" "${rendered[@]}" "$K8S/secrets.example.yaml"
    done
    # Base first: later builds may use its objects (the workers' PriorityClass).
    ordered=()
    for out in "${rendered[@]}"; do [[ $out == *_base.yaml ]] && ordered+=("$out"); done
    for out in "${rendered[@]}"; do [[ $out != *_base.yaml ]] && ordered+=("$out"); done
    run "manifest cross-references, restricted Pod Security, grace periods" \
        "$PY" "$DEPLOY/check_manifests.py" "$K8S/secrets.example.yaml" "${ordered[@]}"
else
    skip "Kubernetes manifests" "${tools_reason:-kubectl or kubernetes-validate missing from the virtualenv}"
fi

# ----------------------------------------------------------------------------- Slurm
SBATCH=$DEPLOY/slurm/grind-worker.sbatch
check_sbatch_directives() {
    # sbatch reads #SBATCH lines only up to the first command; the options must be real ones.
    awk '
        NR == 1 { next }
        /^#SBATCH/ { if (seen_cmd) print FILENAME ":" NR ": #SBATCH after the first command is ignored by sbatch"; next }
        /^[[:space:]]*(#|$)/ { next }
        { seen_cmd = 1 }
    ' "$SBATCH"
    local known=" job-name array nodes ntasks cpus-per-task mem mem-per-cpu time signal output error open-mode requeue no-requeue partition account qos constraint exclusive "
    local opt
    while read -r opt; do
        [[ $known == *" $opt "* ]] || echo "unknown or unexpected #SBATCH option --$opt"
    done < <(sed -n 's/^#SBATCH --\([a-z-]*\).*/\1/p' "$SBATCH")
    grep -Eq '^#SBATCH --signal=B:(TERM|SIGTERM|15)@[0-9]+$' "$SBATCH" ||
        echo "expected #SBATCH --signal=B:TERM@SECONDS (SIGTERM to the batch shell before the time limit)"
    grep -Eq "^trap '[^']*' TERM$" "$SBATCH" || echo "no TERM trap to forward the signal to the worker"
}
run "sbatch directives (before the first command, known options, --signal=B:TERM)" check_sbatch_directives

# A stand-in worker: records its arguments, on SIGTERM "checkpoints" and exits 0.
STUB=$WORK/stub/grind-worker
mkdir -p "$WORK/stub"
cat >"$STUB" <<EOF
#!/bin/bash
echo "\$\$ \$PPID" >"$WORK/stub/pid"
printf '%s\n' "\$@" >"$WORK/stub/args"
trap 'echo checkpoint >>"$WORK/stub/log"; sleep 0.3; echo released >>"$WORK/stub/log"; exit 0' TERM
echo started >"$WORK/stub/log"
while true; do sleep 0.05; done
EOF
chmod +x "$STUB"
# wait_for FILE PATTERN: up to 5 s.
wait_for() {
    local _
    for _ in $(seq 50); do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "timed out waiting for '$2' in $1"
    return 1
}
check_sbatch_signal() {
    rm -f "$WORK/stub/log" "$WORK/stub/args"
    echo token >"$WORK/stub/token"
    # timeout only ends a job script that hangs.
    GRIND_COORDINATOR=https://coordinator.test:7878 GRIND_TOKEN_FILE=$WORK/stub/token \
        GRIND_WORKER_BIN=$STUB GRIND_CA_FILE=$WORK/stub/none HOME=$WORK \
        SLURM_JOB_ID=43 SLURM_ARRAY_JOB_ID=42 SLURM_ARRAY_TASK_ID=5 SLURM_CPUS_PER_TASK=3 \
        timeout --kill-after=10 30 bash "$SBATCH" >"$WORK/stub/job.out" 2>&1 &
    local job=$! status=0
    BG_PIDS+=("$job")
    if ! wait_for "$WORK/stub/log" started; then
        cat "$WORK/stub/job.out"
        return 1
    fi
    # Slurm's --signal=B:TERM signals the batch shell alone: the worker's parent.
    kill -TERM "$(cut -d' ' -f2 "$WORK/stub/pid")"
    wait "$job" || status=$?
    kill_stub
    [[ $status == 0 ]] || echo "the job script exited $status after SIGTERM (want 0: clean stop; 124/137: hung)"
    grep -qx released "$WORK/stub/log" || echo "the worker did not get SIGTERM / was not waited for: $(cat "$WORK/stub/log")"
    local args
    args=$(tr '\n' ' ' <"$WORK/stub/args")
    [[ $args == *"--coordinator https://coordinator.test:7878 "* ]] || echo "worker args lack --coordinator: $args"
    [[ $args == *"--threads 3 "* ]] || echo "worker args lack --threads \$SLURM_CPUS_PER_TASK: $args"
    [[ $args == *"--token-file $WORK/stub/token "* ]] || echo "worker args lack --token-file: $args"
    [[ $args == *"--name slurm-42-5-"* ]] || echo "worker args lack --name slurm-JOB-TASK-HOST: $args"
    return 0
}
run "sbatch script forwards SIGTERM to the worker and waits for its checkpoint" check_sbatch_signal

# ----------------------------------------------------------------------------- HTCondor
SUB=$DEPLOY/htcondor/grind-worker.sub
check_condor_submit() {
    (cd "$DEPLOY/htcondor" && CONDOR_CONFIG=/dev/null "$PY" -W ignore - "$SUB") <<'EOF'
import sys
import htcondor
text = open(sys.argv[1]).read()
ads = list(htcondor.Submit(text).jobs(count=1))  # condor_submit's own parser, no schedd
ad = ads[0]
want = {"KillSig": "SIGTERM", "RemoveKillSig": "SIGTERM", "HoldKillSig": "SIGTERM",
        "WantGracefulRemoval": True, "JobUniverse": 5}
problems = [f"{k} = {ad.get(k)!r}, want {v!r}" for k, v in want.items() if ad.get(k) != v]
if not (isinstance(ad.get("JobMaxVacateTime"), int) and ad["JobMaxVacateTime"] >= 15):
    problems.append(f"JobMaxVacateTime = {ad.get('JobMaxVacateTime')!r}: the worker needs >= 15 s")
if not ad.get("Cmd", "").endswith("/grind-worker.sh"):
    problems.append(f"executable {ad.get('Cmd')!r} is not the wrapper grind-worker.sh")
inputs = ad.get("TransferInput", "").split(",")
for f in ("grind-worker", "worker.token"):
    if f not in inputs:
        problems.append(f"transfer_input_files lacks {f}")
if "GRIND_COORDINATOR=" not in str(ad.get("Environment", "")):
    problems.append("environment does not set GRIND_COORDINATOR")
args = str(ad.get("Arguments", ""))
if "--threads " + str(ad.get("RequestCpus")) not in args:
    problems.append(f"arguments {args!r} do not pass --threads = request_cpus")
if not isinstance(ad.get("RequestMemory"), int):
    problems.append(f"request_memory does not parse: {ad.get('RequestMemory')!r}")
if problems:
    print("\n".join(problems))
sys.exit(1 if problems else 0)
EOF
}
if [[ -n $PY ]] && "$PY" -c 'import htcondor' >/dev/null 2>&1; then
    run_rc "HTCondor parses grind-worker.sub (SIGTERM on every stop, vacate time, inputs)" check_condor_submit
else
    skip "HTCondor submit file" "${tools_reason:-htcondor bindings missing from the virtualenv}"
fi
check_condor_wrapper() {
    # Run the wrapper as HTCondor would, in a scratch directory with the transferred files.
    local scratch=$WORK/condor-scratch status=0 job stub_pid stub_ppid
    mkdir -p "$scratch"
    cp "$STUB" "$scratch/grind-worker"
    chmod -x "$scratch/grind-worker" # file transfer may drop the executable bit
    echo token >"$scratch/worker.token"
    echo ca >"$scratch/ca.pem"
    rm -f "$WORK/stub/log" "$WORK/stub/args"
    (cd "$scratch" && GRIND_COORDINATOR=https://coordinator.test:7878 \
        exec timeout --kill-after=10 30 sh "$DEPLOY/htcondor/grind-worker.sh" --threads 4 --name condor-7.0) \
        >"$WORK/stub/condor.out" 2>&1 &
    job=$!
    BG_PIDS+=("$job")
    if ! wait_for "$WORK/stub/log" started; then
        cat "$WORK/stub/condor.out"
        return 1
    fi
    # exec: the process HTCondor started (sh, a child of timeout here) is now the worker itself,
    # so HTCondor's SIGTERM, sent to that process alone, reaches the worker directly.
    local started
    read -r stub_pid stub_ppid <"$WORK/stub/pid"
    if [[ $stub_ppid == "$job" ]]; then
        started=$stub_pid
    else
        started=$stub_ppid
        echo "the wrapper did not exec the worker (a shell stays between HTCondor and the worker)"
    fi
    kill -TERM "$started"
    wait "$job" || status=$?
    kill_stub
    [[ $status == 0 ]] || echo "exited $status after SIGTERM (want 0; 124/137: hung)"
    grep -qx released "$WORK/stub/log" || echo "the worker did not checkpoint on SIGTERM"
    local args
    args=$(tr '\n' ' ' <"$WORK/stub/args")
    [[ $args == "--ca-file ca.pem --coordinator https://coordinator.test:7878 --token-file worker.token --threads 4 --name condor-7.0 " ]] ||
        echo "unexpected worker arguments: $args"
    return 0
}
run "HTCondor wrapper execs the worker, which gets SIGTERM itself" check_condor_wrapper

# ----------------------------------------------------------------------------- CLI surface
# Every flag the deploy files and READMEs use, by command. Keep in step with the files.
SURFACE=(
    "grind serve|--listen --db --require-auth --tls-cert --tls-key --allow-plaintext --lease-ttl-ms --heartbeat-ms"
    "grind token create|--db --admin --name"
    "grind token list|--db"
    "grind token revoke|--db"
    "grind cert self-signed|--out-dir --host"
    "grind backup|--db --out"
    "grind status|--coordinator --token-file --ca-file --json"
    "grind campaign list|--coordinator --token-file --ca-file"
    "grind campaign add primes|--to --unit"
    "grind-worker|--coordinator --token-file --ca-file --threads --name --idle-only --max-hours"
    "grind workers up|--hosts --coordinator --token-file --ca-file --threads --worker-bin"
    "grind workers status|--hosts"
    "grind workers down|--hosts"
)
bin_dir=""
for d in "${GRIND_BIN_DIR:-}" "${CARGO_TARGET_DIR:-$ROOT/target}/debug" "${CARGO_TARGET_DIR:-$ROOT/target}/release"; do
    if [[ -n $d && -x $d/grind && -x $d/grind-worker ]]; then
        bin_dir=$d
        break
    fi
done
check_cli() {
    local entry cmd flags help flag
    for entry in "${SURFACE[@]}"; do
        cmd=${entry%%|*}
        flags=${entry#*|}
        # shellcheck disable=SC2086 # split "grind token create" into words
        if ! help=$(set -- $cmd && "$bin_dir/$1" "${@:2}" --help 2>&1); then
            echo "'$cmd --help' failed: ${help%%$'\n'*}"
            continue
        fi
        for flag in $flags; do
            grep -Eq -- "(^|[^[:alnum:]-])$flag([^[:alnum:]-]|$)" <<<"$help" ||
                echo "'$cmd' has no $flag (the deploy files use it)"
        done
    done
}
if [[ -n $bin_dir ]]; then
    run "CLI flags used by deploy/ exist ($bin_dir)" check_cli
else
    skip "CLI flags used by deploy/" "no built grind and grind-worker (cargo build --workspace, or set GRIND_BIN_DIR)"
fi

# ----------------------------------------------------------------------------- README quick start
# The README's "Across machines" block, run as written against the built binaries on a fresh
# database: the commands come from the README itself, not from a copy here. The only changes,
# made by the sed below and nowhere else: `cargo build` is skipped (the binaries under test
# are already built and come first on PATH), `coordinator.example` is read as `localhost`
# (this one machine plays every role), and port 7878 becomes a free port. Each "# on ..."
# section runs in its own directory (the worker machine gets the files its comment says to
# copy there; two of them, as a count campaign's verification replicas need a second worker);
# `grind serve` and `grind-worker` run in the background, and the block must
# leave campaign 1 done with pi(10^8) = 5761455 (a published value) in result.txt.
# `grind workers up` reaches its hosts (the block's other *.example names) through OpenSSH
# servers started here on loopback, one per host (keys made here; GRIND_SSH_CONFIG maps each
# name to its port, GRIND_WORKERS_DIR keeps the workers' files in this run's directory), and
# `grind workers down` takes the workers away afterwards. The portable build is skipped like
# `cargo build` (CI builds it before this script; `workers up` copies it when it is there).
free_port() {
    "${PY:-python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
readme_block() {
    # The fenced block number $3 (default 1) of the section under the heading $2 in file $1,
    # continuation lines joined.
    awk -v heading="$2" -v want="${3:-1}" '
        $0 == heading { found = 1; next }
        found && !inside && /^#+ / { exit }
        found && /^```/ { if (inside) { if (n == want) exit; inside = 0 } else { inside = 1; n++ } next }
        found && inside && n == want { print }
    ' "$1" | sed -e ':a' -e '/\\$/N; s/\\\n//; ta'
}
# The spare machines the README's block names (*.example other than the coordinator).
readme_ssh_hosts() {
    grep -o '[[:alnum:]-]*\.example' "$1" | grep -v '^coordinator\.example$' | sort -u
}
# Starts one sshd per host name on a free loopback port (keys made in $1) and writes $1/config
# mapping each name to its port. The sshd pids go to $2.
start_ssh_hosts() {
    local dir=$1 pids=$2 host port
    shift 2
    mkdir -p "$dir"
    ssh-keygen -q -t ed25519 -N '' -f "$dir/host_key"
    ssh-keygen -q -t ed25519 -N '' -f "$dir/id"
    cp "$dir/id.pub" "$dir/authorized_keys"
    [[ $(id -u) != 0 ]] || mkdir -p /run/sshd # Debian's privilege separation directory
    printf 'Host *\n  IdentityFile %s/id\n  IdentitiesOnly yes\n  UserKnownHostsFile %s/known_hosts\n  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n' \
        "$dir" "$dir" >"$dir/config.common"
    : >"$dir/config"
    for host in "$@"; do
        port=$(free_port)
        printf 'Port %s\nListenAddress 127.0.0.1\nHostKey %s/host_key\nAuthorizedKeysFile %s/authorized_keys\nPidFile %s/sshd-%s.pid\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin yes\nLogLevel ERROR\n' \
            "$port" "$dir" "$dir" "$dir" "$port" >"$dir/sshd-$host.conf"
        "$SSHD" -D -e -f "$dir/sshd-$host.conf" 2>>"$dir/sshd.log" &
        echo $! >>"$pids"
        printf 'Host %s\n  HostName 127.0.0.1\n  Port %s\n' "$host" "$port" >>"$dir/config"
        for _ in $(seq 100); do (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
    done
    cat "$dir/config.common" >>"$dir/config"
}
# Stops the processes whose pids the file $1 lists, one a line (if it has any): SIGTERM to
# all, then up to 10 s for each to exit before SIGKILL.
stop_pids() {
    local file=$1 pid
    [[ -s $file ]] || return 0
    while read -r pid; do kill -TERM "$pid" 2>/dev/null || true; done <"$file"
    while read -r pid; do
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    done <"$file"
}
SSHD=$(command -v sshd || echo /usr/sbin/sshd)
check_readme_quickstart() {
    local qs=$WORK/quickstart port pid status=0
    local coord=$qs/coordinator-machine worker=$qs/worker-machine
    mkdir -p "$coord"
    port=$(free_port)
    readme_block "$ROOT/README.md" "## Across machines" >"$qs/block.txt"
    if ! grep -q '^grind serve ' "$qs/block.txt" ||
        ! grep -Eq '^(grind-worker|grind workers up) ' "$qs/block.txt"; then
        echo "README.md: no 'Across machines' block with grind serve and grind-worker or grind workers up"
        return 0
    fi
    if grep -q '^grind workers up ' "$qs/block.txt"; then
        # shellcheck disable=SC2046 # one word per host name
        start_ssh_hosts "$qs/ssh" "$qs/pids" $(readme_ssh_hosts "$qs/block.txt")
    fi
    {
        echo "set -euo pipefail"
        echo "export PATH=$bin_dir:\$PATH"
        echo "export GRIND_SSH_CONFIG=$qs/ssh/config GRIND_WORKERS_DIR=$qs/remote"
        echo "cd $coord"
        sed -e 's/coordinator\.example/localhost/g' -e "s/:7878/:$port/g" "$qs/block.txt" |
            while IFS= read -r line; do
                case $line in
                "# on the coordinator machine"*) echo "cd $coord" ;;
                "# on every worker machine"*) ;;
                "# from anywhere"*) echo "cd $coord" ;;
                "# a worker on every spare machine"*) echo "cd $coord" ;;
                "cargo build "* | "bash deploy/portable-worker.sh"*) echo ": skipped: $line" ;;
                "grind serve "*)
                    echo "$line >$qs/serve.out 2>$qs/serve.log &"
                    echo "echo \$! >>$qs/pids"
                    echo "for _ in \$(seq 300); do grep -q 'listening on' $qs/serve.out && break; sleep 0.1; done"
                    echo "grep -q 'listening on' $qs/serve.out"
                    continue
                    ;;
                "grind-worker "*)
                    # Two worker machines: a count campaign's verification replicas need a
                    # second worker.
                    for m in 1 2; do
                        echo "mkdir -p $worker-$m && cd $worker-$m && cp $coord/worker.token $coord/certs/ca.pem ."
                        echo "$line >$qs/worker-$m.log 2>&1 &"
                        echo "echo \$! >>$qs/pids"
                    done
                    continue
                    ;;
                "grind watch "*) echo "timeout 900 $line" ;;
                *) echo "$line" ;;
                esac
            done
    } >"$qs/run.sh"
    (env -u GRIND_COORDINATOR -u GRIND_CA_FILE -u GRIND_ADMIN_TOKEN -u GRIND_ADMIN_TOKEN_FILE \
        -u GRIND_TOKEN -u GRIND_TOKEN_FILE bash "$qs/run.sh") >"$qs/run.out" 2>&1 || status=$?
    local want=5761455 # pi(10^8)
    if [[ $status != 0 ]]; then
        echo "the README block failed (exit $status); the script run (from README.md):"
        sed 's/^/    /' "$qs/run.sh"
        echo "its output:"
        tail -n 20 "$qs/run.out" | sed 's/^/    /'
    elif [[ $(tr -d '[:space:]' <"$coord/result.txt" 2>/dev/null) != "$want" ]]; then
        echo "result.txt holds '$(head -c 80 "$coord/result.txt" 2>/dev/null)', want $want"
    elif ! grep -q '"state":"done"' "$qs/run.out"; then
        echo "grind status 1 --json did not say done: $(grep -m1 '"state"' "$qs/run.out" | head -c 200)"
    fi
    if [[ -s $coord/hosts.txt && -s $qs/ssh/config ]]; then
        GRIND_SSH_CONFIG=$qs/ssh/config GRIND_WORKERS_DIR=$qs/remote \
            "$bin_dir/grind" workers down --hosts "$coord/hosts.txt" >"$qs/down.out" 2>&1 ||
            { echo "grind workers down failed:"; sed 's/^/    /' "$qs/down.out"; }
    fi
    stop_pids "$qs/pids"
    if [[ $status != 0 && -s $qs/worker-1.log ]]; then
        echo "first worker's log:"
        tail -n 10 "$qs/worker-1.log" | sed 's/^/    /'
    fi
    if [[ $status != 0 && -s $qs/serve.log ]]; then
        echo "coordinator log:"
        tail -n 10 "$qs/serve.log" | sed 's/^/    /'
    fi
    return 0
}
if [[ -n $bin_dir ]] && readme_block "$ROOT/README.md" "## Across machines" | grep -q '^grind workers up ' &&
    { [[ ! -x $SSHD ]] || ! command -v ssh >/dev/null || ! command -v ssh-keygen >/dev/null; }; then
    skip "README quick start" "its grind workers up needs OpenSSH (apt-get install -y openssh-server openssh-client)"
elif [[ -n $bin_dir ]]; then
    run "README 'Across machines' block as written: tokens first, TLS, two workers put on two ssh hosts by grind workers up finish campaign 1" \
        check_readme_quickstart
else
    skip "README quick start" "no built grind and grind-worker (cargo build --workspace, or set GRIND_BIN_DIR)"
fi

# ----------------------------------------------------------------------------- README "Your own solver"
# The README's "Your own solver" blocks, run as written against the built binaries: the first
# (`grind run exec`) in a clone of this repository, the second in a scratch directory that
# links the clone's examples/ (the block is run "in a clone of this repository"), with port
# 7878 read as a free port; `grind serve` and each `grind-worker` run in the background (the
# block says "each in its own terminal") and the workers' bundle cache is kept in the scratch
# directory (XDG_CACHE_HOME). Then, from what the run recorded:
#   - each result is the checker's score of its solution (`grind run`'s printed solution;
#     the exported best.txt), and the export carries its provenance (best_found_by, the
#     run's solver_provenance with the solver's digest);
#   - improvements were shared between the two workers: a solver on one worker says on
#     stderr (whose tail each run's provenance keeps) that it received a bound V; the
#     coordinator's event log (GET /api/campaigns/1/events) says the improvement to V was
#     reported by the other worker; and no run on the receiving worker reported V itself
#     (improvements.costs in the provenance of each of its runs, one per lease it was
#     granted), so V reached it from the other.
own_solver_verdict() {
    # own_solver_verdict STATUS_JSON EVENTS_JSON EXPORT_FILE INSTANCE CHECKER: the findings.
    "${PY:-python3}" - "$@" <<'EOF'
import json, subprocess, sys
status = json.load(open(sys.argv[1]))
events = json.load(open(sys.argv[2]))
export, instance, checker = sys.argv[3], sys.argv[4], sys.argv[5]
problems = []
if status.get("state") != "done":
    problems.append(f"campaign 1 is {status.get('state')!r}, not done")
# The export: the v line as printed, scored by the checker as the campaign's value.
out = subprocess.run([checker, instance, export], capture_output=True, text=True)
score = out.stdout.split("\n", 1)[0].strip()
if out.returncode != 0 or score != str(status.get("value")):
    problems.append(f"the checker says {out.stdout.strip()!r} (exit {out.returncode}) of the export, "
                    f"the campaign's value is {status.get('value')!r}")
try:
    prov = json.load(open(export + ".provenance.json"))
except (OSError, ValueError) as e:
    prov = {}
    problems.append(f"no provenance beside the export: {e}")
sp = prov.get("solver_provenance") or {}
found_by = prov.get("best_found_by") or {}
if not str((sp.get("solver") or {}).get("digest", "")).startswith("sha256:") or not sp.get("sandbox"):
    problems.append(f"the export's solver_provenance lacks the solver digest or sandbox: {str(sp)[:200]}")
if not found_by.get("worker"):
    problems.append(f"the export's provenance names no worker (best_found_by): {found_by}")
# Who reported which improvement (the coordinator's log), and what each run reported and heard.
found, leases = {}, {}
for e in events:
    if e["kind"] == "improvement" and e.get("worker") is not None:
        found.setdefault(e["detail"]["score"], e["worker"])
    if e["kind"] == "lease_granted":
        leases[e.get("worker")] = leases.get(e.get("worker"), 0) + 1
names = {}
reported = {}   # worker id -> costs its runs reported (None: a run's list may be incomplete)
heard = []      # (worker id, unit label, bound)
for r in status.get("results", []):
    w = r["provenance"]["worker_id"]
    names[w] = r["provenance"]["worker"]
    p = r.get("solver_provenance") or {}
    imp = p.get("improvements") or {}
    costs = imp.get("costs")
    if costs is None or imp.get("reported", 0) > len(costs):
        reported[w] = None
    elif reported.get(w, set()) is not None:
        reported[w] = reported.get(w, set()) | set(costs)
    for line in (p.get("stderr_tail") or "").splitlines():
        words = line.split()
        if len(words) >= 3 and words[:2] == ["received", "bound"]:
            heard.append((w, r.get("label"), int(words[2])))
for w in list(reported):
    # A lease without a result (a run that failed or was stopped): what it reported is unknown.
    if leases.get(w, 0) != sum(r["provenance"]["worker_id"] == w for r in status.get("results", [])):
        reported[w] = None
if len(names) < 2:
    problems.append(f"the results come from {len(names)} worker(s), not two: {sorted(names.values())}")
shared = [(w, label, v) for (w, label, v) in heard
          if v in found and found[v] != w and reported.get(w) is not None and v not in reported[w]]
if not shared:
    problems.append("no solver was seen receiving a bound found on the other worker: "
                    f"bounds received {[(names.get(w), v) for w, _, v in heard][:20]}, "
                    f"improvements by worker {[(names.get(w, w), v) for v, w in sorted(found.items())][:20]}")
else:
    w, label, v = shared[0]
    print(f"shared: the solver of {label} on worker {names[w]} received bound {v}, "
          f"found by worker {names.get(found[v], found[v])} ({len(shared)} such receipts)", file=sys.stderr)
if problems:
    print("\n".join(problems))
sys.exit(1 if problems else 0)
EOF
}
check_readme_own_solver() {
    local qs=$WORK/own-solver port status=0 line m=0
    local clone=$qs/clone
    mkdir -p "$clone" "$qs/cache"
    ln -s "$ROOT/examples" "$clone/examples"
    port=$(free_port)
    readme_block "$ROOT/README.md" "## Your own solver" 1 >"$qs/run-block.txt"
    readme_block "$ROOT/README.md" "## Your own solver" 2 >"$qs/block.txt"
    if ! grep -q '^grind run exec ' "$qs/run-block.txt" || ! grep -q '^grind serve ' "$qs/block.txt" ||
        [[ $(grep -c '^grind-worker ' "$qs/block.txt") != 2 ]] || ! grep -q '^grind export ' "$qs/block.txt"; then
        echo "README.md: 'Your own solver' needs a grind run exec block, then one with grind serve, two grind-worker lines and grind export"
        return 0
    fi
    local clean_env=(env -u GRIND_COORDINATOR -u GRIND_CA_FILE -u GRIND_ADMIN_TOKEN -u GRIND_ADMIN_TOKEN_FILE
        -u GRIND_TOKEN -u GRIND_TOKEN_FILE -u GRIND_BUNDLE_CACHE XDG_CACHE_HOME="$qs/cache")
    # The one-machine command: the value it prints is the checker's score of its solution.
    if ! (cd "$ROOT" && PATH=$bin_dir:$PATH "${clean_env[@]}" bash -euo pipefail "$qs/run-block.txt") \
        >"$qs/run.out" 2>"$qs/run.err"; then
        echo "the grind run exec block failed:"
        tail -n 10 "$qs/run.err" | sed 's/^/    /'
        return 0
    fi
    local value instance
    value=$(sed -n 's/^.*: min = \(-\{0,1\}[0-9]*\) .*$/\1/p' "$qs/run.out" | head -n 1)
    sed -n 's/^solution: //p' "$qs/run.out" | "${PY:-python3}" -c 'import json, sys; sys.stdout.write(json.load(sys.stdin)["model"])' \
        >"$qs/run-solution.txt" 2>/dev/null || true
    instance=$(grep -o -- '--instance [^ ]*' "$qs/run-block.txt" | cut -d' ' -f2)
    local says
    says=$(cd "$ROOT" && examples/labs/check.py "$instance" "$qs/run-solution.txt" 2>&1 | head -n 1) || true
    if [[ -z $value || $says != "$value" ]]; then
        echo "grind run exec printed min = '$value', the checker says '$says' of its solution:"
        sed 's/^/    /' "$qs/run.out"
    fi
    # The coordinator and two workers.
    {
        echo "set -euo pipefail"
        echo "export PATH=$bin_dir:\$PATH"
        echo "cd $clone"
        sed -e "s/:7878/:$port/g" "$qs/block.txt" |
            while IFS= read -r line; do
                case $line in
                "grind serve "*)
                    echo "$line >$qs/serve.out 2>$qs/serve.log &"
                    echo "echo \$! >>$qs/pids"
                    echo "for _ in \$(seq 300); do grep -q 'listening on' $qs/serve.out && break; sleep 0.1; done"
                    echo "grep -q 'listening on' $qs/serve.out"
                    ;;
                "grind-worker "*)
                    m=$((m + 1))
                    echo "$line >$qs/worker-$m.log 2>&1 &"
                    echo "echo \$! >>$qs/pids"
                    ;;
                "grind watch "*) echo "timeout 120 $line" ;;
                *) echo "$line" ;;
                esac
            done
    } >"$qs/run.sh"
    "${clean_env[@]}" bash "$qs/run.sh" >"$qs/block.out" 2>&1 || status=$?
    if [[ $status != 0 ]]; then
        echo "the README block failed (exit $status); the script run (from README.md):"
        sed 's/^/    /' "$qs/run.sh"
        echo "its output:"
        tail -n 20 "$qs/block.out" | sed 's/^/    /'
    else
        local url=http://127.0.0.1:$port
        "$bin_dir/grind" status --coordinator "$url" 1 --json >"$qs/status.json" 2>"$qs/status.err" ||
            echo "grind status 1 --json failed: $(tail -n 1 "$qs/status.err")"
        "${PY:-python3}" - "$url/api/campaigns/1/events" >"$qs/events.json" <<'EOF' || echo "GET /api/campaigns/1/events failed"
import json, sys, urllib.request
events, before = [], ""
while True:
    page = json.load(urllib.request.urlopen(sys.argv[1] + "?limit=1000" + before, timeout=30))["events"]
    events += page
    if len(page) < 1000:
        break
    before = "&before=%d" % page[-1]["id"]
json.dump(events, sys.stdout)
EOF
        instance=$(grep -o -- '--instance [^ ]*' "$qs/block.txt" | cut -d' ' -f2)
        local export_file
        export_file=$(sed -n 's/^grind export .*--out \([^ ]*\).*$/\1/p' "$qs/block.txt")
        own_solver_verdict "$qs/status.json" "$qs/events.json" "$clone/$export_file" \
            "$clone/$instance" "$clone/examples/labs/check.py" 2>"$WORK/own-solver-evidence.txt" || true
    fi
    stop_pids "$qs/pids"
    if [[ $status != 0 ]]; then
        for f in worker-1.log worker-2.log serve.log; do
            [[ -s $qs/$f ]] && { echo "$f:"; tail -n 10 "$qs/$f" | sed 's/^/    /'; }
        done
    fi
    return 0
}
if [[ -n $bin_dir ]] && command -v python3 >/dev/null 2>&1; then
    run "README 'Your own solver' blocks as written: grind run exec, then serve + two --allow-exec workers share bounds; export checked, with provenance" \
        check_readme_own_solver
    if [[ -s $WORK/own-solver-evidence.txt ]]; then
        sed 's/^/      /' "$WORK/own-solver-evidence.txt"
    fi
else
    skip "README 'Your own solver'" "needs built grind and grind-worker (cargo build --workspace, or set GRIND_BIN_DIR) and python3"
fi

# ----------------------------------------------------------------------------- Docker quick start
# Docker cannot run here in general (no daemon in CI containers), so the image and `docker
# compose up` are not exercised (see deploy/README.md). What stands in: the `grind` commands of
# deploy/docker/README.md's "Tokens, then start" block, taken from the README with their
# `docker compose run --rm --no-deps -T coordinator` prefix removed and the data volume
# (/var/lib/grind) mapped to a scratch directory, run in order on a fresh volume: both token
# files must come out holding tokens (the volume has no database before the first one).
check_docker_tokens() {
    local dir=$WORK/docker-standin line cmd
    mkdir -p "$dir/data" "$dir/secrets"
    readme_block "$DEPLOY/docker/README.md" "## 2. Tokens, then start" >"$dir/block.txt"
    grep -q 'grind token create' "$dir/block.txt" || {
        echo "deploy/docker/README.md: no grind token create in the 'Tokens, then start' block"
        return 0
    }
    while IFS= read -r line; do
        [[ $line == "docker compose run --rm --no-deps -T coordinator "* ]] || continue
        cmd=${line#"docker compose run --rm --no-deps -T coordinator"}
        cmd=${cmd//\/var\/lib\/grind/$dir/data}
        (cd "$dir" && PATH=$bin_dir:$PATH bash -c "set -euo pipefail; $cmd") 2>"$dir/err.txt" ||
            echo "failed: $cmd: $(tail -n 1 "$dir/err.txt")"
    done <"$dir/block.txt"
    for f in admin_token worker_token; do
        grep -Eqx 'grind_[0-9a-f]{64}' "$dir/secrets/$f" 2>/dev/null ||
            echo "secrets/$f does not hold a token: '$(head -c 80 "$dir/secrets/$f" 2>/dev/null)'"
    done
}
if [[ -n $bin_dir ]]; then
    run "deploy/docker/README.md token commands on a fresh data volume (stand-in for docker)" check_docker_tokens
else
    skip "Docker quick start stand-in" "no built grind (cargo build --workspace, or set GRIND_BIN_DIR)"
fi

# ----------------------------------------------------------------------------- quick starts under stand-ins
# The systemd, Slurm, HTCondor, Kubernetes and Docker quick starts, run as written against the
# built binaries, each on a fresh database, with stand-ins (deploy/standins/, which says what
# each one does and does not do) for the programs that need root, a daemon or a cluster:
# systemctl, systemd-run, journalctl, sudo (runs its command as the current user), sbatch,
# srun, scancel, squeue, condor_submit, condor_rm, condor_q, kubectl and docker (compose). The commands come from the READMEs;
# the only changes, made by standin_script and named where they are made:
#   - `cargo build` lines are skipped: target/release in each machine's clone is the built
#     binaries' directory;
#   - the example host grind.example.org is read as localhost (every certificate the READMEs
#     make has --host localhost), and port 7878 becomes a free port;
#   - each machine's /etc, /usr/local, /var/lib, /root and /run are directories under a
#     scratch root of its own (deploy/standins map-paths): no root needed, nothing outside $WORK
#     touched;
#   - lines that need a person (paste a token, follow a log forever, an example ID) are
#     changed or skipped as the section says.
STANDINS=$DEPLOY/standins
STANDIN_BIN=$WORK/standin-bin
STANDIN_PIDS=$WORK/standin-pids
setup_standins() {
    local p
    mkdir -p "$STANDIN_BIN"
    for p in systemctl systemd-run journalctl sbatch srun scancel squeue condor_submit condor_rm condor_q kubectl docker; do
        printf '#!/bin/bash\nexec %q -B %q %q "$@"\n' "$PY" "$STANDINS" "$p" >"$STANDIN_BIN/$p"
        chmod +x "$STANDIN_BIN/$p"
    done
    printf '#!/bin/sh\nexec "$@"\n' >"$STANDIN_BIN/sudo"
    chmod +x "$STANDIN_BIN/sudo"
}
# new_machine DIR: an empty machine: the directories a fresh Debian has, and a clone of this
# repository (deploy/ and target/release, the built binaries).
new_machine() {
    mkdir -p "$1"/{root,etc/systemd/system,usr/local/bin,usr/local/sbin,var/lib,run,home,clone/target}
    ln -s "$DEPLOY" "$1/clone/deploy"
    ln -s "$bin_dir" "$1/clone/target/release"
}
# standin_script ROOT PORT [SETTINGS [container-paths]]: a block (stdin) as a script (stdout) on
# the machine ROOT, in its clone, with the substitutions named above; SETTINGS (shell lines) go
# first, as is. With container-paths, absolute paths are left alone (kubectl maps a container's).
standin_script() {
    local root=$1 port=$2 line
    echo "set -euo pipefail"
    echo "export GRIND_STANDIN_ROOT=$root GRIND_STANDIN_PIDS=$STANDIN_PIDS HOME=$root/home USER=\${USER:-\$(id -un)}"
    echo "export PATH=$STANDIN_BIN:$root/usr/local/sbin:$root/usr/local/bin:\$PATH"
    echo "${3:-}"
    echo "cd $root/clone"
    sed -e 's/grind\.example\.org/localhost/g' -e "s/7878/$port/g" |
        if [[ ${4:-} == container-paths ]]; then cat; else GRIND_STANDIN_ROOT=$root "$PY" -B "$STANDINS" map-paths; fi |
        while IFS= read -r line; do
            case $line in
            "cargo build "*) echo ": skipped: $line" ;;
            *) echo "$line" ;;
            esac
        done
}
# run_script NAME: runs $WORK/qs/NAME.sh; on failure prints it and its output's tail.
run_script() {
    local qs=$WORK/qs status=0
    env -u GRIND_COORDINATOR -u GRIND_CA_FILE -u GRIND_ADMIN_TOKEN -u GRIND_ADMIN_TOKEN_FILE \
        -u GRIND_TOKEN -u GRIND_TOKEN_FILE bash "$qs/$1.sh" >"$qs/$1.out" 2>&1 || status=$?
    if [[ $status != 0 ]]; then
        echo "$1 failed (exit $status); the script run (from the README):"
        sed 's/^/    /' "$qs/$1.sh"
        echo "its output:"
        tail -n 20 "$qs/$1.out" | sed 's/^/    /'
    fi
    return "$status"
}
# wait_campaign_done COMMAND...: polls `COMMAND 1 --json` (grind status) for up to 180 s.
wait_campaign_done() {
    local _ out
    for _ in $(seq 360); do
        out=$("$@" 1 --json 2>&1) || true
        if grep -q '"state":"done"' <<<"$out"; then
            return 0
        fi
        sleep 0.5
    done
    echo "campaign 1 not done within 180 s: $(head -c 300 <<<"$out")"
    return 1
}
# The campaign the Slurm, HTCondor and systemd runs finish (their READMEs add none):
# pi(10^7) = 664579, a published value.
QS_TO=10000000
QS_UNIT=1000000
QS_WANT=664579
# check_export ADMIN_ARGS...: campaign 1's exported count is QS_WANT.
check_export() {
    local out=$WORK/qs/export-$RANDOM.txt
    "$bin_dir/grind" export "$@" 1 --out "$out" >/dev/null 2>&1 || {
        echo "grind export 1 failed"
        return 1
    }
    [[ $(tr -d '[:space:]' <"$out") == "$QS_WANT" ]] || echo "campaign 1 counted '$(head -c 80 "$out")', want $QS_WANT"
}
stop_standins() {
    local pid
    if [[ -s $STANDIN_PIDS ]]; then
        while read -r pid; do
            kill -KILL -- "-$pid" 2>/dev/null || true
            kill -KILL "$pid" 2>/dev/null || true
        done <"$STANDIN_PIDS"
        : >"$STANDIN_PIDS"
    fi
}

# ---- systemd: a coordinator machine and two worker machines
# What runs as written (deploy/systemd/README.md): section 1 (install) on every machine;
# section 2's commands (certificate, install the units and grind-as-coordinator,
# daemon-reload, enable --now, status, journalctl); section 3's token commands (but `token
# revoke ... 3`, an example ID); section 4 on each worker machine (units, token, env file,
# enable --now); section 5 once the campaign is done; `systemctl stop grind-worker@main`
# (section 4) must end each worker with status 0, `systemctl start grind-backup` (section 6)
# must write a snapshot. systemctl starts what the installed unit files' ExecStart= lines say,
# resolved as systemd does (deploy/standins/). /etc/grind/coordinator.env is written first, with
# section 2's example content, so that its GRIND_LISTEN carries the free port.
# The check's own steps: copying lab-pcs.token and ca.pem to the worker machines (as section 3
# says), adding the campaign and waiting for it.
check_systemd_quickstart() {
    local qs=$WORK/qs port c=$WORK/qs/systemd-coordinator m status
    mkdir -p "$qs"
    port=$(free_port)
    new_machine "$c"
    local r=$DEPLOY/systemd/README.md
    mkdir -p "$c/etc/grind"
    readme_block "$r" "## 2. The coordinator machine" 2 | sed "s/7878/$port/g" >"$c/etc/grind/coordinator.env"
    {
        readme_block "$r" "## 1. Install the binaries (every machine)"
        readme_block "$r" "## 2. The coordinator machine"
        readme_block "$r" "## 3. Tokens" | grep -v 'token revoke' # an example ID
    } | standin_script "$c" "$port" >"$qs/systemd-coordinator.sh"
    run_script systemd-coordinator || return 0
    for m in 1 2; do
        new_machine "$qs/systemd-worker-$m"
        cp "$c/clone/lab-pcs.token" "$c/etc/grind/tls/ca.pem" "$qs/systemd-worker-$m/clone/"
        {
            readme_block "$r" "## 1. Install the binaries (every machine)"
            readme_block "$r" "## 4. Workers"
        } | standin_script "$qs/systemd-worker-$m" "$port" >"$qs/systemd-worker-$m.sh"
        run_script "systemd-worker-$m" || return 0
    done
    local admin=(--coordinator "https://localhost:$port" --ca-file "$c/etc/grind/tls/ca.pem"
        --token-file "$c/root/grind-admin.token")
    "$bin_dir/grind" campaign add "${admin[@]}" primes --to "$QS_TO" --unit "$QS_UNIT" >/dev/null ||
        return 0
    wait_campaign_done "$bin_dir/grind" status "${admin[@]}" || return 0
    readme_block "$r" "## 5. Status" | standin_script "$c" "$port" >"$qs/systemd-status.sh"
    run_script systemd-status || return 0
    grep -q '"state":"done"' "$qs/systemd-status.out" || echo "section 5's grind status 1 --json did not say done"
    check_export "${admin[@]}"
    for m in 1 2; do
        echo "systemctl stop grind-worker@main; systemctl show -p ExecMainStatus --value grind-worker@main" |
            standin_script "$qs/systemd-worker-$m" "$port" >"$qs/systemd-stop-$m.sh"
        run_script "systemd-stop-$m" || return 0
        status=$(tail -n 1 "$qs/systemd-stop-$m.out")
        [[ $status == 0 ]] || echo "worker machine $m: grind-worker@main ended with status $status after systemctl stop (want 0)"
    done
    echo "systemctl start grind-backup; ls /var/lib/grind-backup/; systemctl stop grind-coordinator
          systemctl show -p ExecMainStatus --value grind-coordinator" |
        standin_script "$c" "$port" >"$qs/systemd-backup.sh"
    run_script systemd-backup || return 0
    grep -Eq '^campaigns-[0-9]{8}T[0-9]{6}Z\.db$' "$qs/systemd-backup.out" ||
        echo "grind-backup.service wrote no snapshot: $(head -c 300 "$qs/systemd-backup.out")"
    status=$(tail -n 1 "$qs/systemd-backup.out")
    [[ $status == 0 ]] || echo "grind-coordinator ended with status $status after systemctl stop (want 0)"
}

# ---- Slurm: a coordinator elsewhere (grind serve with TLS), the job script with the real worker
# start_coordinator DIR PORT: grind serve with TLS on a fresh database in DIR, as the
# coordinator's admin would run it, and a worker token DIR/worker.token, admin DIR/admin.token.
start_coordinator() {
    local dir=$1 port=$2 _
    mkdir -p "$dir"
    "$bin_dir/grind" cert self-signed --out-dir "$dir/certs" --host localhost >/dev/null
    "$bin_dir/grind" token create --db "$dir/campaigns.db" --name workers >"$dir/worker.token" 2>>"$dir/admin.log"
    "$bin_dir/grind" token create --db "$dir/campaigns.db" --admin --name admin >"$dir/admin.token" 2>>"$dir/admin.log"
    # In a subshell: not a job of this shell, which would report its end.
    (
        "$bin_dir/grind" serve --listen "127.0.0.1:$port" --db "$dir/campaigns.db" \
            --tls-cert "$dir/certs/cert.pem" --tls-key "$dir/certs/key.pem" >"$dir/serve.out" 2>"$dir/serve.log" &
        echo $! >>"$STANDIN_PIDS"
    )
    for _ in $(seq 300); do grep -qs 'listening on' "$dir/serve.out" && return 0; sleep 0.1; done
    echo "grind serve did not start: $(tail -n 3 "$dir/serve.log")"
    return 1
}
# What runs as written (deploy/slurm/README.md): section 1 (install the worker); section 2's
# commands (the pasted token comes from the admin's token file, ca.pem from the admin; srun
# runs its command here); section 3's first block (export GRIND_COORDINATOR, sbatch) through
# the sbatch stand-in, which runs the job script as Slurm would, two tasks of the array
# (8 by default) with one CPU each (this machine has 2 cores); section 4's squeue. Then the
# campaign; task 0 gets the time-limit warning (--signal=B:TERM: SIGTERM to the batch shell
# alone, as the stub test above) and task 1 `scancel` (SIGTERM to every process of the job):
# both must end with the worker's status 0.
check_slurm_quickstart() {
    local qs=$WORK/qs port l=$WORK/qs/slurm-login co=$WORK/qs/slurm-coordinator r=$DEPLOY/slurm/README.md
    mkdir -p "$qs"
    port=$(free_port)
    start_coordinator "$co" "$port" || return 0
    new_machine "$l"
    cp "$co/certs/ca.pem" "$l/clone/"
    {
        readme_block "$r" "## 1. The worker binary"
        readme_block "$r" "## 2. Token and CA" | sed "s#^install -m 0600 /dev/stdin .*#{ &\n} <$co/worker.token#"
        readme_block "$r" "## 2. Token and CA" 2
        readme_block "$r" "## 3. Submit"
        readme_block "$r" "## 4. Watch" | grep -v '^tail -f' # follows the log forever
    } | standin_script "$l" "$port" "export GRIND_STANDIN_MAX_JOBS=2 GRIND_STANDIN_CPUS=1" >"$qs/slurm.sh"
    run_script slurm || return 0
    grep -q '^reachable$' "$qs/slurm.out" || echo "srun's reachability check did not say reachable"
    local job
    job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$qs/slurm.out")
    local admin=(--coordinator "https://localhost:$port" --ca-file "$co/certs/ca.pem" --token-file "$co/admin.token")
    "$bin_dir/grind" campaign add "${admin[@]}" primes --to "$QS_TO" --unit "$QS_UNIT" >/dev/null || return 0
    wait_campaign_done "$bin_dir/grind" status "${admin[@]}" || return 0
    check_export "${admin[@]}"
    local state=$l/run/standins/slurm
    kill -TERM "$(cat "$state/${job}_0.pid")"
    printf 'scancel %s_1\n' "$job" | standin_script "$l" "$port" >"$qs/slurm-scancel.sh"
    run_script slurm-scancel || return 0
    local t _
    for t in 0 1; do
        for _ in $(seq 400); do [[ -s $state/${job}_$t.status ]] && break; sleep 0.1; done
        [[ $(cat "$state/${job}_$t.status" 2>/dev/null) == 0 ]] ||
            echo "task $t: the job script ended with status '$(cat "$state/${job}_$t.status" 2>/dev/null)' (want 0)"
        grep -q 'worker exited with status 0' "$l/clone/grind-worker-${job}_$t.out" ||
            echo "task $t: $(tail -n 3 "$l/clone/grind-worker-${job}_$t.out")"
    done
}

# ---- HTCondor
# What runs as written (deploy/htcondor/README.md): section 1 (/path/to/grind is the machine's
# clone); section 2 (the pasted token from the admin's token file, /path/to/ca.pem the admin's
# ca.pem); section 3's second condor_submit (coordinator, workers, cpus appended; the first,
# with the file's own coordinator grind.example.org, is skipped), through the condor_submit
# stand-in, which runs 2 of the 32 jobs; section 4's condor_q. Then the campaign and
# `condor_rm CLUSTER` (section 5): each job must end with status 0.
check_condor_quickstart() {
    local qs=$WORK/qs port h=$WORK/qs/condor-submit co=$WORK/qs/condor-coordinator r=$DEPLOY/htcondor/README.md
    mkdir -p "$qs"
    port=$(free_port)
    start_coordinator "$co" "$port" || return 0
    new_machine "$h"
    {
        readme_block "$r" "## 1. A submit directory"
        readme_block "$r" "## 2. Token and CA" |
            sed -e "s#^install -m 0600 /dev/stdin .*#{ &\n} <$co/worker.token#" -e "s#/path/to/ca.pem#$co/certs/ca.pem#"
        readme_block "$r" "## 3. Submit" | grep -v '^condor_submit grind-worker.sub$'
        readme_block "$r" "## 4. Watch" | grep -Fx condor_q
    } | sed "s#/path/to/grind#$h/clone#g" | standin_script "$h" "$port" "export GRIND_STANDIN_MAX_JOBS=2" >"$qs/condor.sh"
    run_script condor || return 0
    local cluster
    cluster=$(sed -n 's/^.* job(s) submitted to cluster \([0-9]*\)\.$/\1/p' "$qs/condor.out")
    local admin=(--coordinator "https://localhost:$port" --ca-file "$co/certs/ca.pem" --token-file "$co/admin.token")
    "$bin_dir/grind" campaign add "${admin[@]}" primes --to "$QS_TO" --unit "$QS_UNIT" >/dev/null || return 0
    wait_campaign_done "$bin_dir/grind" status "${admin[@]}" || return 0
    check_export "${admin[@]}"
    printf 'condor_rm %s\n' "$cluster" | standin_script "$h" "$port" >"$qs/condor-rm.sh"
    run_script condor-rm || return 0
    local p state=$h/run/standins/condor
    for p in 0 1; do
        [[ $(cat "$state/$cluster.$p.status" 2>/dev/null) == 0 ]] ||
            echo "job $cluster.$p ended with status '$(cat "$state/$cluster.$p.status" 2>/dev/null)' (want 0): $(tail -n 3 "$h/home/grind-condor/grind-worker.$cluster.$p.err")"
    done
}

# ---- Kubernetes
# What runs as written (deploy/kubernetes/README.md): section 2 (apply -k deploy/kubernetes,
# rollout status), section 3's token commands (`get pods -w`, which watches forever, skipped),
# section 4's kubectl exec commands (the campaign ten times smaller: --to 100000000, so that a
# debug build finishes it in seconds) and, once it is done, its port-forward block (grind status
# from this machine), then section 10's delete: every pod must end with status 0. The kubectl
# stand-in renders the manifests with the real kubectl kustomize and runs each container's
# command and args as the kubelet would (deploy/standins/); the Service grind-coordinator is
# localhost, container port 7878 a free port.
check_k8s_quickstart() {
    local qs=$WORK/qs port k=$WORK/qs/k8s r=$DEPLOY/kubernetes/README.md
    mkdir -p "$qs"
    port=$(free_port)
    new_machine "$k"
    local settings="export GRIND_STANDIN_KUBECTL=$VENV/bin/kubectl GRIND_STANDIN_IMAGE_BIN=$bin_dir
export GRIND_STANDIN_HOSTS=grind-coordinator=localhost GRIND_STANDIN_PORTS=7878=$port
export PATH=\$PATH:$bin_dir # your machine's grind (section 4)"
    {
        readme_block "$r" "## 2. Coordinator and workers"
        readme_block "$r" "## 3. Tokens" | grep -v 'get pods -w'
        readme_block "$r" "## 4. Campaigns and status" | sed 's/--to 1000000000 /--to 100000000 /'
    } | standin_script "$k" "$port" "$settings" container-paths >"$qs/k8s.sh"
    run_script k8s || return 0
    local in_pod=(kubectl -n grind exec grind-coordinator-0 -- grind status --coordinator "http://localhost:$port"
        --token-file /var/run/secrets/grind-admin/token)
    { printf '%q ' "${in_pod[@]}" && echo '"$@"'; } | standin_script "$k" "$port" "$settings" container-paths >"$qs/k8s-status.sh"
    local _ done=0
    for _ in $(seq 180); do
        if bash "$qs/k8s-status.sh" 1 --json 2>/dev/null | grep -q '"state":"done"'; then
            done=1
            break
        fi
        sleep 1
    done
    [[ $done == 1 ]] || {
        echo "campaign 1 not done within 180 s: $(bash "$qs/k8s-status.sh" 1 --json 2>&1 | head -c 300)"
        return 0
    }
    grep -q '"value":"5761455"' <(bash "$qs/k8s-status.sh" 1 --json 2>&1) ||
        echo "campaign 1 did not count pi(10^8) = 5761455: $(bash "$qs/k8s-status.sh" 1 --json 2>&1 | head -c 300)"
    {
        readme_block "$r" "## 4. Campaigns and status" 2
        readme_block "$r" "## 10. Remove"
        echo "kubectl -n grind get pods"
    } | standin_script "$k" "$port" "$settings" container-paths >"$qs/k8s-remove.sh"
    run_script k8s-remove || return 0
    grep -q '"state":"done"' "$qs/k8s-remove.out" || echo "section 4's grind status 1 --json (port-forward) did not say done"
    local bad
    bad=$(grep -E '^grind-' "$qs/k8s-remove.out" | grep -v 'Exited(0)$' || true)
    [[ -z $bad ]] || echo "pods that did not end with status 0 after kubectl delete: $bad"
}

# The TLS overlays, on a fresh cluster: section 7's block (certificate, Secret grind-tls, apply
# overlays/tls, create overlays/tls-job) and section 3's tokens, as written; one pod each of the
# Deployment and the Indexed Job (GRIND_STANDIN_MAX_JOBS=1: 2 cores here). The campaign is added
# and watched with section 7's in-pod admin command; the end is section 10's delete and
# section 6's `delete job grind-worker-batch`: every pod must end with status 0.
check_k8s_tls_quickstart() {
    local qs=$WORK/qs port k=$WORK/qs/k8s-tls r=$DEPLOY/kubernetes/README.md
    mkdir -p "$qs"
    port=$(free_port)
    new_machine "$k"
    local settings="export GRIND_STANDIN_KUBECTL=$VENV/bin/kubectl GRIND_STANDIN_IMAGE_BIN=$bin_dir GRIND_STANDIN_MAX_JOBS=1
export GRIND_STANDIN_HOSTS=grind-coordinator=localhost GRIND_STANDIN_PORTS=7878=$port
export PATH=\$PATH:$bin_dir # your machine's grind (section 7)"
    {
        readme_block "$r" "## 7. TLS"
        echo "kubectl -n grind rollout status statefulset/grind-coordinator"
        readme_block "$r" "## 3. Tokens" | grep -v 'get pods -w'
    } | standin_script "$k" "$port" "$settings" container-paths >"$qs/k8s-tls.sh"
    run_script k8s-tls || return 0
    local admin=(kubectl -n grind exec grind-coordinator-0 -- grind)
    local flags=(--coordinator "https://localhost:$port" --ca-file /etc/grind/tls/ca.crt
        --token-file /var/run/secrets/grind-admin/token)
    {
        printf '%q ' "${admin[@]}" campaign add "${flags[@]}" primes --to "$QS_TO" --unit "$QS_UNIT"
        echo
        printf '%q ' "${admin[@]}" status "${flags[@]}"
        echo '1 --json'
    } | standin_script "$k" "$port" "$settings" container-paths >"$qs/k8s-tls-add.sh"
    run_script k8s-tls-add || return 0
    { printf '%q ' "${admin[@]}" status "${flags[@]}" && echo '"$@"'; } |
        standin_script "$k" "$port" "$settings" container-paths >"$qs/k8s-tls-status.sh"
    wait_campaign_done bash "$qs/k8s-tls-status.sh" || return 0
    grep -q "\"value\":\"$QS_WANT\"" <(bash "$qs/k8s-tls-status.sh" 1 --json 2>&1) ||
        echo "campaign 1 did not count $QS_WANT: $(bash "$qs/k8s-tls-status.sh" 1 --json 2>&1 | head -c 300)"
    {
        readme_block "$r" "## 10. Remove"
        echo "kubectl -n grind delete job grind-worker-batch"
        echo "kubectl -n grind get pods"
    } | standin_script "$k" "$port" "$settings" container-paths >"$qs/k8s-tls-remove.sh"
    run_script k8s-tls-remove || return 0
    local bad
    bad=$(grep -E '^grind-' "$qs/k8s-tls-remove.out" | grep -v 'Exited(0)$' || true)
    [[ -z $bad ]] || echo "pods that did not end with status 0 after kubectl delete: $bad"
    [[ $(grep -c '^grind-.*Exited(0)$' "$qs/k8s-tls-remove.out") == 3 ]] ||
        echo "want 3 pods (coordinator, a Deployment worker, a Job worker): $(cat "$qs/k8s-tls-remove.out")"
}

# ---- Docker Compose
# What runs as written (deploy/docker/README.md): section 2's block (tokens with `docker
# compose run`, chmod, up -d, ps, logs), section 3 (exec status and campaign add, ten times
# smaller: --to 100000000; cp of ca.pem, grind status from the host) and section 7's `docker
# compose down`: every container must end with status 0. The docker stand-in renders
# compose.yaml with the real compose (`config`) and runs each service's command against the
# built binaries (deploy/standins/); the service name coordinator is localhost, GRIND_PORT
# (a setting of the README) the free port. The image is not built (no daemon, below).
check_docker_quickstart() {
    local qs=$WORK/qs port d=$WORK/qs/docker r=$DEPLOY/docker/README.md
    mkdir -p "$qs"
    port=$(free_port)
    new_machine "$d"
    # A copy, not a link: the quick start writes its token files into deploy/docker/secrets.
    rm "$d/clone/deploy"
    cp -r "$DEPLOY" "$d/clone/deploy"
    rm -f "$d/clone/deploy/docker/secrets/"*_token
    local settings="export GRIND_STANDIN_COMPOSE=$VENV/bin/docker-compose GRIND_STANDIN_IMAGE_BIN=$bin_dir
export GRIND_STANDIN_HOSTS=coordinator=localhost GRIND_STANDIN_PORTS=7878=$port GRIND_PORT=$port
export PATH=\$PATH:$bin_dir # grind built on the host (section 3)"
    {
        readme_block "$r" "## 2. Tokens, then start"
        readme_block "$r" "## 3. Campaigns and status" | sed 's/--to 1000000000 /--to 100000000 /'
    } | standin_script "$d" "$port" "$settings" container-paths >"$qs/docker.sh"
    run_script docker || return 0
    { echo 'cd deploy/docker' && echo 'docker compose exec coordinator grind status --coordinator https://localhost:7878 --ca-file /etc/grind/tls/ca.pem --token-file /run/secrets/admin_token "$@"'; } |
        standin_script "$d" "$port" "$settings" container-paths >"$qs/docker-status.sh"
    wait_campaign_done bash "$qs/docker-status.sh" || return 0
    grep -q '"value":"5761455"' <(bash "$qs/docker-status.sh" 1 --json 2>&1) ||
        echo "campaign 1 did not count pi(10^8) = 5761455: $(bash "$qs/docker-status.sh" 1 --json 2>&1 | head -c 300)"
    {
        echo 'cd deploy/docker'
        readme_block "$r" "## 3. Campaigns and status" 2
        echo 'docker compose down' # section 7's command (in its prose)
        echo 'docker compose ps'
    } | standin_script "$d" "$port" "$settings" container-paths >"$qs/docker-stop.sh"
    run_script docker-stop || return 0
    grep -q '"state":"done"' "$qs/docker-stop.out" || echo "section 3's grind status 1 --json from the host did not say done"
    local bad
    bad=$(grep -E '^grind-' "$qs/docker-stop.out" | grep -v 'Exited (0)$' || true)
    [[ -z $bad ]] || echo "containers that did not end with status 0 after docker compose down: $bad"
    [[ $(grep -c '^grind-worker-[0-9]*  Exited (0)$' "$qs/docker-stop.out") == 2 ]] ||
        echo "want 2 workers (GRIND_WORKERS's default): $(grep '^grind-' "$qs/docker-stop.out")"
}

if [[ -z $bin_dir ]]; then
    skip "systemd, Slurm, HTCondor, Kubernetes, Docker quick starts" "no built grind and grind-worker (cargo build --workspace, or set GRIND_BIN_DIR)"
elif [[ -z $PY ]]; then
    skip "systemd, Slurm, HTCondor, Kubernetes, Docker quick starts" "${tools_reason:-no python}"
else
    setup_standins
    run "deploy/systemd/README.md as written (units' ExecStart=, tokens, two worker machines finish a campaign)" \
        check_systemd_quickstart
    stop_standins
    run "deploy/slurm/README.md as written (the job script runs the real worker; it finishes a campaign, stops on B:TERM and scancel)" \
        check_slurm_quickstart
    stop_standins
    if "$PY" -c 'import htcondor' >/dev/null 2>&1; then
        run "deploy/htcondor/README.md as written (condor_submit's jobs run the wrapper and the real worker; condor_rm stops them)" \
            check_condor_quickstart
    else
        skip "HTCondor quick start" "${tools_reason:-htcondor bindings missing from the virtualenv}"
    fi
    stop_standins
    if have kubectl; then
        run "deploy/kubernetes/README.md as written (the rendered containers' command/args; tokens by kubectl exec; delete)" \
            check_k8s_quickstart
        stop_standins
        run "deploy/kubernetes/README.md TLS overlays as written (overlays/tls and tls-job: TLS, pinned CA, the Indexed Job)" \
            check_k8s_tls_quickstart
    else
        skip "Kubernetes quick start" "${tools_reason:-kubectl missing from the virtualenv}"
    fi
    stop_standins
    if have docker-compose; then
        run "deploy/docker/README.md as written (compose.yaml's services without a daemon: tls-init, coordinator, 2 workers finish a campaign; down)" \
            check_docker_quickstart
    else
        skip "Docker quick start" "${tools_reason:-docker-compose missing from the virtualenv}"
    fi
    stop_standins
fi

# ----------------------------------------------------------------------------- summary
echo "deploy-check: $passed passed, $failed failed, $skipped skipped"
if [[ $failed -gt 0 ]]; then
    exit 1
fi
if [[ $skipped -gt 0 && ${CI:-} == true && ${GRIND_DEPLOY_CHECK_ALLOW_SKIP:-0} != 1 ]]; then
    echo "deploy-check: checks were skipped under CI=true (GRIND_DEPLOY_CHECK_ALLOW_SKIP=1 allows it)"
    exit 1
fi
