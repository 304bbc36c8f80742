//! # grind-exec: running users' own solvers ("bring your own solver", issue 29)
//!
//! The foundation both the worker and the coordinator use for `exec` campaigns, with no
//! dependency on either. Design notes and sources: `shared/research/byo-solver.md` (cited
//! below as [research §n]).
//!
//! | module | job |
//! |---|---|
//! | [`protocol`] | parse a solver's stdout (MaxSAT Evaluation format + `g` lines) into events |
//! | [`env`](mod@env) | the environment variables a solver gets |
//! | [`sandbox`] | process group, `no_new_privs`, rlimits, Landlock, network namespace |
//! | [`runner`] | start a solver, stream its events, enforce limits, stop it, report the outcome |
//! | [`bound`] | feed the campaign's best cost into a running solver (stdin + bound file) |
//! | [`checker`] | run the user's checker on a solution: valid with a score, invalid, or checker failure |
//! | [`bundle`] | SHA-256 content addressing: canonical pack/unpack, verification, local cache |
//!
//! ## Decisions
//!
//! **Protocol** ([`protocol`]). The MaxSAT Evaluation output format as it is [research §2,
//! S10]: `c` comments, `o <cost>` on every improvement, `v` model lines (several form one
//! model; since 2020 one 0/1 string), `s OPTIMUM FOUND|SATISFIABLE|UNSATISFIABLE|UNKNOWN`. A
//! model belongs to the latest `o` and is complete at the next `o` or `s` line or at end of
//! output, so all orders real solvers use work unmodified; the runner also completes it when
//! stdout goes quiet for 100 ms after a whole `v` line (`Parser::flush`), so an improvement
//! streams while the solver searches on. grind adds `g progress <0..1>`,
//! `g count <n>` (count campaigns) and `g checkpoint` (a checkpoint was renamed into place).
//! Costs are `i64`; anything else is a diagnostic and its model is no claim. `s OPTIMUM
//! FOUND` is recorded as the solver's claim only. A solution's text is its `v` lines exactly
//! as printed; that is what the checker reads and what export writes.
//!
//! **Environment** ([`env`](mod@env)). A clean environment: `GRIND_PROTOCOL`, `GRIND_UNIT`,
//! `GRIND_SEED`, `GRIND_TIME_LIMIT`, `GRIND_THREADS`, `GRIND_INSTANCE`, `GRIND_WORK_DIR`,
//! `GRIND_CHECKPOINT_DIR`, `GRIND_BOUND_FILE` (with the bound feed), `HOME`, `TMPDIR`, `PATH`,
//! `LANG`, plus the campaign's extra variables.
//!
//! **Exit codes of solvers.** Any exit code is accepted and reported (MaxSAT Evaluation's
//! 0/10/20/30 [research §2] included); what counts is the output. A unit's result is its last
//! complete solution, whatever the exit status.
//!
//! **Stopping** ([`runner`], `process`). At the time limit, on request, or when the
//! [`runner::RunningSolver`] handle is dropped: `SIGTERM` to the whole process group, a grace
//! period (default 5 s; the MaxSAT Evaluation uses 1 s, runsolver 2 s, BOINC 10 s [research
//! §1, §2]), then `SIGKILL` to the group (the MaxSAT harness learned that signalling only the
//! parent "sometimes didn't work"). Output over its limit, or resident memory over its limit:
//! `SIGKILL` at once. When the solver process exits, whatever is left of its process group is
//! killed with `SIGKILL` (strays do not outlive their solver); this is done before the solver
//! is reaped, so the group ID cannot have been reused. A process that left the group
//! (`setsid`) but kept the solver's stdout or stderr is found through `/proc/*/fd` (it holds
//! the pipe) and killed too. One that left the group *and* closed both pipes (a deliberate
//! daemon) escapes: cgroups would close that gap but are v1 on the machines at hand; Landlock
//! still confines it. A model completed only by the end of output of a solver that died of a
//! signal is flagged ([`runner::RunOutcome::last_solution_cut_by_kill`]): it may have been cut
//! between its `v` lines.
//!
//! **Sandbox** ([`sandbox`]). Each process leads its own process group and has:
//! - `PR_SET_PDEATHSIG(SIGKILL)`: it dies if the worker dies, even by `SIGKILL`;
//! - `no_new_privs`, and no capabilities: the bounding set is emptied, so even a worker running
//!   as root starts solvers without root's powers;
//! - rlimits: CPU time, memory as `RLIMIT_AS` or `RLIMIT_DATA` (address-space limits break the
//!   JVM, Go and ASan [research §4]), open files, file size, no core dumps; optionally a
//!   resident-memory limit on the whole group measured every 200 ms (runsolver's `-R`; cgroup
//!   `memory.max` would be better, but cgroups are v1 here);
//! - a private work directory (also `HOME` and `TMPDIR`);
//! - where the kernel has it, a Landlock rule set: system directories, the bundle and the
//!   instance read-only, the work and checkpoint directories read-write, nothing else, not
//!   even `/proc` by default (through it a same-user solver could read the worker's
//!   environment: Landlock's ptrace rules refuse `/proc/<pid>/mem` but not `environ` on this
//!   kernel; a test shows both); signals and abstract UNIX sockets scoped to the sandbox
//!   (ABI >= 6), so it cannot signal the worker;
//! - optionally a new user + network namespace: no network but a private loopback.
//!
//! What was applied is a [`sandbox::SandboxReport`] for provenance. All child-side steps run
//! between fork and exec and make only system calls; the rule set is built in the parent.
//!
//! **Bound feed** ([`bound`]). Opt-in: monotone `b <value>` lines on stdin (non-blocking) and
//! `GRIND_BOUND_FILE` replaced atomically (temporary file + rename) [research §3].
//!
//! **Checker** ([`checker`]). `checker <instance> <solution>`; exit 0 with the score on the
//! first stdout line = valid; exit 43 = invalid (a strike against the worker); anything else,
//! a signal, a timeout or unparsable output = the checker failed (held for the operator, no
//! strike). Exit 1 is a checker failure because crashing scripts exit 1 [research §6].
//!
//! **Bundles** ([`bundle`]). One canonical byte stream per tree, addressed by its SHA-256
//! [research §5]; the digest is checked before anything is unpacked into place; a local
//! cache keyed by digest installs by rename.
//!
//! **Threads, not async.** A solver costs three sleeping threads (supervisor, stdout, stderr);
//! a checker runs on the calling thread. Callers on tokio use `spawn_blocking`.

pub mod bound;
pub mod bundle;
pub mod checker;
pub mod env;
mod error;
mod output;
mod proc_scan;
pub mod process;
pub mod protocol;
pub mod runner;
pub mod sandbox;

pub use error::{Error, Result};
