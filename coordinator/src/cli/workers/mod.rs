//! `grind workers up|down|status`: put a worker on each machine of a host list over SSH,
//! take it away again, or report it; every host in parallel, one line per host.
//!
//! Hosts are reached with the system's OpenSSH client rather than an SSH crate: the user's
//! `~/.ssh/config` (aliases, users, ports, jump hosts), keys, agent and known hosts then
//! work exactly as for their other ssh commands, with no second implementation of host-key
//! checking or agent forwarding to trust, and nothing to add to the build. Each host gets:
//! a probe (architecture, glibc, free space, the digest of a binary already there), the
//! binary when its SHA-256 differs (skipped when equal; checked after the copy and run once
//! with `--version`), the token and CA, and a start that survives logout and reboot where
//! the host allows (see [`scripts`]).

pub mod binary;
pub mod hosts;
pub mod scripts;
pub mod ssh;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::CliError;
use binary::WorkerBinary;
use hosts::Host;
use ssh::{Ssh, SshError};

/// `grind workers ...`
#[derive(clap::Subcommand, Debug)]
pub enum WorkersCommand {
    /// Put a worker on each host (copy the binary, token and CA; start it as a service).
    Up(UpArgs),
    /// Stop each host's worker and remove what `up` put there.
    Down(HostArgs),
    /// Report each host's worker: running or not, how it was started, its version.
    Status(HostArgs),
}

/// The hosts and how to reach them.
#[derive(clap::Args, Debug)]
pub struct HostArgs {
    /// Hosts as `[user@]host[:port]` (ssh config aliases work).
    pub hosts: Vec<String>,
    /// A file of hosts, one a line (`#` starts a comment).
    #[arg(long = "hosts", value_name = "FILE")]
    pub hosts_file: Option<PathBuf>,
    /// An ssh config file to use instead of ~/.ssh/config (`ssh -F`).
    #[arg(long, env = "GRIND_SSH_CONFIG")]
    pub ssh_config: Option<PathBuf>,
    /// An extra ssh option (`ssh -o OPTION`), repeatable.
    #[arg(long = "ssh-option", value_name = "OPTION")]
    pub ssh_options: Vec<String>,
    /// Seconds to wait for each host to answer.
    #[arg(long, default_value_t = 10)]
    pub connect_timeout: u64,
    /// Hosts worked on at once.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: u32,
    /// Directory on each host holding its workers (one subdirectory per host entry).
    #[arg(long, env = "GRIND_WORKERS_DIR", default_value = "~/.grind-worker")]
    pub remote_dir: String,
}

/// `grind workers up` flags.
#[derive(clap::Args, Debug)]
pub struct UpArgs {
    #[command(flatten)]
    pub hosts: HostArgs,
    /// The coordinator URL as the hosts reach it.
    #[arg(long, env = "GRIND_COORDINATOR")]
    pub coordinator: String,
    /// File holding the worker token (`grind token create`) copied to each host (mode 0600).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// CA certificate (PEM) copied to each host, for https:// coordinators.
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
    /// The grind-worker binary to copy (default: the portable build, target/portable/,
    /// when present, else the grind-worker beside this grind).
    #[arg(long)]
    pub worker_bin: Option<PathBuf>,
    /// CPU threads each worker uses (default: all of its host's cores).
    #[arg(long)]
    pub threads: Option<u16>,
    /// Work only while the rest of each machine is idle.
    #[arg(long)]
    pub idle_only: bool,
}

/// What happened on one host.
struct Report {
    host: Host,
    outcome: Result<String, String>,
}

fn ssh_of(args: &HostArgs) -> Ssh {
    Ssh {
        config: args.ssh_config.clone(),
        options: args.ssh_options.clone(),
        connect_timeout: args.connect_timeout,
    }
}

/// Runs `grind workers ...`.
pub async fn workers(cmd: WorkersCommand) -> Result<(), CliError> {
    match cmd {
        WorkersCommand::Up(args) => up(args).await,
        WorkersCommand::Down(args) => {
            each_host(&args, |ctx, host| async move {
                let out = ctx
                    .ssh
                    .run(
                        &host,
                        &scripts::down(&ctx.dir, &host.label()),
                        b"",
                        ctx.slow,
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(
                    match scripts::fields(&out).get("state").map(String::as_str) {
                        Some("removed") => "stopped and removed".to_string(),
                        _ => "nothing there".to_string(),
                    },
                )
            })
            .await
        }
        WorkersCommand::Status(args) => {
            each_host(&args, |ctx, host| async move {
                let out = ctx
                    .ssh
                    .run(
                        &host,
                        &scripts::status(&ctx.dir, &host.label()),
                        b"",
                        ctx.quick,
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                let f = scripts::fields(&out);
                let get = |k: &str| f.get(k).cloned().unwrap_or_default();
                if get("state") == "absent" {
                    return Ok("no worker".to_string());
                }
                let mut line = format!("{} ({})", get("state"), get("mode"));
                if !get("pid").is_empty() {
                    line += &format!(", pid {}", get("pid"));
                }
                line += &format!(", {}", get("version"));
                let log = without_escapes(&get("log"));
                if !log.is_empty() {
                    line += &format!("; log: {log}");
                }
                Ok(line)
            })
            .await
        }
    }
}

/// `text` without terminal escape sequences (colours in a log line written before
/// `NO_COLOR` was set) or other control characters.
fn without_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters, ending with a letter.
            if chars.next() == Some('[') {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
        } else if !c.is_control() {
            out.push(c);
        }
    }
    out
}

/// What every host's task shares.
struct Context {
    ssh: Ssh,
    dir: String,
    /// Time allowed for a quick script.
    quick: Duration,
    /// Time allowed for a copy or a stop.
    slow: Duration,
    binary: Option<WorkerBinary>,
    up: Option<UpArgs>,
    token: Option<Vec<u8>>,
    ca_pem: Option<String>,
}

/// Runs `task` for every host, at most `--jobs` at once, printing one line per host as it
/// finishes; fails (exit code 1) when any host failed.
async fn each_host<F, Fut>(args: &HostArgs, task: F) -> Result<(), CliError>
where
    F: Fn(Arc<Context>, Host) -> Fut,
    Fut: std::future::Future<Output = Result<String, String>> + Send + 'static,
{
    let ctx = Arc::new(context(args, None, None, None, None));
    run_all(args, ctx, task).await
}

fn context(
    args: &HostArgs,
    binary: Option<WorkerBinary>,
    up: Option<UpArgs>,
    token: Option<Vec<u8>>,
    ca_pem: Option<String>,
) -> Context {
    let quick = Duration::from_secs(args.connect_timeout + 30);
    Context {
        ssh: ssh_of(args),
        dir: args.remote_dir.clone(),
        quick,
        slow: quick + Duration::from_secs(600),
        binary,
        up,
        token,
        ca_pem,
    }
}

async fn run_all<F, Fut>(args: &HostArgs, ctx: Arc<Context>, task: F) -> Result<(), CliError>
where
    F: Fn(Arc<Context>, Host) -> Fut,
    Fut: std::future::Future<Output = Result<String, String>> + Send + 'static,
{
    let hosts =
        hosts::host_list(&args.hosts, args.hosts_file.as_deref()).map_err(CliError::Usage)?;
    let width = hosts.iter().map(|h| h.spec.len()).max().unwrap_or(0);
    let slots = Arc::new(tokio::sync::Semaphore::new(args.jobs as usize));
    let mut tasks = tokio::task::JoinSet::new();
    for host in hosts {
        let slots = slots.clone();
        let work = task(ctx.clone(), host.clone());
        tasks.spawn(async move {
            let _slot = slots.acquire_owned().await;
            Report {
                host,
                outcome: work.await,
            }
        });
    }
    let (mut ok, mut failed) = (0, 0);
    while let Some(done) = tasks.join_next().await {
        let report =
            done.map_err(|e| CliError::Other(anyhow::anyhow!("a host's task failed: {e}")))?;
        match &report.outcome {
            Ok(what) => {
                ok += 1;
                println!("{:<width$}  ok      {what}", report.host.spec);
            }
            Err(why) => {
                failed += 1;
                println!("{:<width$}  FAILED  {why}", report.host.spec);
            }
        }
    }
    println!("{ok} host(s) ok, {failed} failed");
    if failed > 0 {
        return Err(CliError::Other(anyhow::anyhow!(
            "{failed} of {} host(s) failed (see above)",
            ok + failed
        )));
    }
    Ok(())
}

async fn up(args: UpArgs) -> Result<(), CliError> {
    let path = binary::choose(args.worker_bin.as_deref()).map_err(CliError::Usage)?;
    let binary = WorkerBinary::load(&path).map_err(CliError::Usage)?;
    println!(
        "worker binary {} ({}, {}, sha256 {})",
        binary.path.display(),
        binary.arch,
        match binary.glibc {
            Some((a, b)) => format!("needs glibc >= {a}.{b}"),
            None => "static".to_string(),
        },
        &binary.sha256[..16]
    );
    let token = match &args.token_file {
        Some(p) => Some(
            std::fs::read(p)
                .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", p.display())))?,
        ),
        None => None,
    };
    if token
        .as_ref()
        .is_some_and(|t| t.iter().all(u8::is_ascii_whitespace))
    {
        return Err(CliError::Usage("the token file is empty".into()));
    }
    let ca_pem = match &args.ca_file {
        Some(p) => {
            let pem = std::fs::read_to_string(p)
                .map_err(|e| CliError::Usage(format!("cannot read {}: {e}", p.display())))?;
            if !pem.contains("-----BEGIN CERTIFICATE-----") {
                return Err(CliError::Usage(format!(
                    "{} is not a PEM certificate",
                    p.display()
                )));
            }
            Some(pem)
        }
        None => None,
    };
    let host_args = HostArgs {
        hosts: args.hosts.hosts.clone(),
        hosts_file: args.hosts.hosts_file.clone(),
        ssh_config: args.hosts.ssh_config.clone(),
        ssh_options: args.hosts.ssh_options.clone(),
        connect_timeout: args.hosts.connect_timeout,
        jobs: args.hosts.jobs,
        remote_dir: args.hosts.remote_dir.clone(),
    };
    let ctx = Arc::new(context(&host_args, Some(binary), Some(args), token, ca_pem));
    run_all(&host_args, ctx, |ctx, host| async move {
        up_one(&ctx, &host).await
    })
    .await
}

/// `grind workers up` on one host.
async fn up_one(ctx: &Context, host: &Host) -> Result<String, String> {
    let binary = ctx.binary.as_ref().expect("up has a binary");
    let args = ctx.up.as_ref().expect("up has its flags");
    let label = host.label();
    let probe = ctx
        .ssh
        .run(host, &scripts::probe(&ctx.dir, &label), b"", ctx.quick)
        .await
        .map_err(|e| match e {
            SshError::Failed(scripts::exit::NO_DIR, why) => format!("no worker directory: {why}"),
            other => other.to_string(),
        })?;
    let f = scripts::fields(&probe);
    let get = |k: &str| f.get(k).cloned().unwrap_or_default();
    let arch = get("arch");
    if !binary.runs_on(&arch) {
        return Err(format!(
            "wrong architecture: the host is {arch}, the worker binary {} is {}",
            binary.path.display(),
            binary.arch
        ));
    }
    if let (Some(needed), Some(there)) = (binary.glibc, binary::parse_glibc(&get("glibc"))) {
        if there < needed {
            return Err(format!(
                "glibc too old: the host has {}.{}, the worker binary needs {}.{} \
                 (build the portable worker: deploy/portable-worker.sh)",
                there.0, there.1, needed.0, needed.1
            ));
        }
    }
    let mut done = Vec::new();
    let changed = get("sha256") != binary.sha256;
    if changed {
        let free = get("free_kb")
            .parse::<u64>()
            .unwrap_or(u64::MAX)
            .saturating_mul(1024);
        let needed = binary.bytes.len() as u64 + (1 << 20);
        if free < needed {
            return Err(format!(
                "no space: {} MiB free in {}, the worker binary needs {} MiB",
                free >> 20,
                ctx.dir,
                needed >> 20
            ));
        }
        let out = ctx
            .ssh
            .run(
                host,
                &scripts::copy_binary(&ctx.dir, &label, &binary.sha256),
                &binary.bytes,
                ctx.slow,
            )
            .await
            .map_err(|e| match e {
                SshError::Failed(scripts::exit::WRITE, why) if why.contains("No space") => {
                    format!("no space: {why}")
                }
                SshError::Failed(scripts::exit::WRITE, why) => {
                    format!("cannot write the binary: {why}")
                }
                SshError::Failed(scripts::exit::DIGEST, why) => format!("copy damaged: {why}"),
                SshError::Failed(scripts::exit::WONT_RUN, why) => {
                    format!("the worker binary does not run there: {why}")
                }
                other => other.to_string(),
            })?;
        done.push(format!(
            "copied the binary ({})",
            scripts::fields(&out)
                .get("version")
                .cloned()
                .unwrap_or_default()
        ));
    } else {
        done.push("binary already there (same sha256)".to_string());
    }
    let mut worker_args = vec![
        "--coordinator".to_string(),
        args.coordinator.clone(),
        "--name".to_string(),
        label.clone(),
    ];
    if let Some(threads) = args.threads {
        worker_args.extend(["--threads".to_string(), threads.to_string()]);
    }
    if args.idle_only {
        worker_args.push("--idle-only".into());
    }
    let systemd = get("systemd") == "yes";
    let script = scripts::install(&scripts::Install {
        dir: &ctx.dir,
        label: &label,
        worker_args,
        ca_pem: ctx.ca_pem.as_deref(),
        token: ctx.token.is_some(),
        changed,
        systemd,
    });
    let out = ctx
        .ssh
        .run(
            host,
            &script,
            ctx.token.as_deref().unwrap_or_default(),
            ctx.slow,
        )
        .await
        .map_err(|e| match e {
            SshError::Failed(scripts::exit::WRITE, why) if why.contains("No space") => {
                format!("no space: {why}")
            }
            SshError::Failed(scripts::exit::NOT_UP, why) => {
                format!("the worker did not stay up: {why}")
            }
            other => other.to_string(),
        })?;
    let f = scripts::fields(&out);
    let get = |k: &str| f.get(k).cloned().unwrap_or_default();
    done.push(match get("started").as_str() {
        "systemd" => format!(
            "started as systemd user unit {} ({})",
            scripts::unit_name(&label),
            if get("linger") == "yes" {
                "lingering: survives logout, starts at boot"
            } else {
                "linger refused: stops at logout; ask root for `loginctl enable-linger`"
            }
        ),
        "already" => format!("already running (pid {})", get("pid")),
        _ => format!(
            "started with nohup (pid {}; {})",
            get("pid"),
            if get("boot") == "crontab" {
                "crontab @reboot starts it at boot"
            } else {
                "no systemd user manager or crontab here: not restarted at reboot"
            }
        ),
    });
    Ok(done.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_lose_their_colours() {
        assert_eq!(
            without_escapes("\u{1b}[2m2026\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m lease 9\u{7}"),
            "2026  INFO lease 9"
        );
    }
}
