//! `grind workers up|status|down` against real OpenSSH servers on loopback: two `sshd`
//! processes on two high ports (host keys, client key and authorized_keys made by the test
//! in a temporary directory) play two spare machines, a third port with nothing listening
//! plays one that is down. `up` copies the worker binary, token and scripts over ssh and
//! starts the workers (without a systemd user session here, through the nohup fallback);
//! they join a `grind serve` coordinator that requires tokens and finish a campaign; the
//! down host is reported and the others still start; a second `up` copies nothing and
//! leaves the workers running; a binary for another architecture is refused per host;
//! `down` stops the workers and removes their files.
//!
//! Needs Debian's `openssh-server` (`/usr/sbin/sshd`) and `openssh-client`; without them the
//! test prints why and skips, except under `CI=true`, where it fails (`.ci/run` installs
//! them).

mod common;

use common::*;
use grind_kit::net::free_port;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const LONG_WAIT: Duration = Duration::from_secs(120);

fn find(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.extend(["/usr/sbin", "/usr/bin", "/sbin"].map(PathBuf::from));
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run a command");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn keygen(path: &Path) {
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", ""])
        .arg("-f")
        .arg(path));
}

/// An sshd on `port` for the current user, in the foreground, killed when dropped.
fn start_sshd(sshd: &Path, dir: &Path, port: u16) -> Proc {
    let config = dir.join(format!("sshd-{port}.conf"));
    let uid = run(Command::new("id").arg("-u")).stdout;
    let is_root = String::from_utf8_lossy(&uid).trim() == "0";
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\n\
             AuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd-{port}.pid\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\n\
             PubkeyAuthentication yes\nUsePAM no\nStrictModes no\n\
             PermitRootLogin {root}\nLogLevel ERROR\n",
            d = dir.display(),
            root = if is_root { "yes" } else { "no" },
        ),
    )
    .unwrap();
    if is_root {
        // Debian's sshd wants its privilege separation directory (its package makes it at
        // boot through tmpfiles.d, which a container does not run).
        let _ = std::fs::create_dir_all("/run/sshd");
    }
    let mut cmd = Command::new(sshd);
    cmd.args(["-D", "-e", "-f"]).arg(&config);
    Proc::spawn_command(cmd)
}

/// Waits until something accepts connections on `port`.
async fn wait_listening(port: u16, sshd: &Proc) {
    wait_for("sshd to listen", Duration::from_secs(30), || async {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    })
    .await;
    let _ = sshd;
}

/// Runs `grind workers ARGS` with the test's ssh config and remote directory.
fn workers<S: AsRef<std::ffi::OsStr>>(dir: &Path, args: &[S]) -> Output {
    Command::new(grind_bin())
        .arg("workers")
        .args(args)
        .arg("--ssh-config")
        .arg(dir.join("ssh_config"))
        .arg("--remote-dir")
        .arg(dir.join("remote"))
        .output()
        .expect("run grind workers")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The report line of `host` in `out`.
fn line_of<'a>(out: &'a str, host: &str) -> &'a str {
    out.lines()
        .find(|l| l.starts_with(&format!("{host} ")))
        .unwrap_or_else(|| panic!("no line for {host} in:\n{out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_up_over_ssh_join_finish_and_go_down() {
    let (Some(sshd), Some(_ssh)) = (find(&["sshd"]), find(&["ssh"])) else {
        let why = "sshd or ssh not found (apt-get install -y openssh-server openssh-client)";
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and the ssh test cannot run: {why}"
        );
        println!("SKIPPED workers over ssh: {why}");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    keygen(&dir.join("host_key"));
    keygen(&dir.join("id"));
    std::fs::copy(dir.join("id.pub"), dir.join("authorized_keys")).unwrap();
    std::fs::write(
        dir.join("ssh_config"),
        format!(
            "Host *\n  IdentityFile {d}/id\n  IdentitiesOnly yes\n  UserKnownHostsFile {d}/known_hosts\n\
             \x20 StrictHostKeyChecking accept-new\n  LogLevel ERROR\n",
            d = dir.display()
        ),
    )
    .unwrap();
    let (p1, p2, dead) = (free_port(), free_port(), free_port());
    let sshd1 = start_sshd(&sshd, dir, p1);
    let sshd2 = start_sshd(&sshd, dir, p2);
    wait_listening(p1, &sshd1).await;
    wait_listening(p2, &sshd2).await;
    let (h1, h2, h3) = (
        format!("127.0.0.1:{p1}"),
        format!("127.0.0.1:{p2}"),
        format!("127.0.0.1:{dead}"),
    );

    let db = dir.join("campaigns.db");
    let worker_token = create_token(&db, false);
    let admin_token = create_token(&db, true);
    let coord = start_coordinator_on(db.clone(), "127.0.0.1:0", 10_000, &["--require-auth"]);
    let token_file = dir.join("worker.token");
    std::fs::write(&token_file, format!("{worker_token}\n")).unwrap();
    let worker = worker_bin();
    let up_args = |hosts: &[&str]| -> Vec<String> {
        let mut args = vec!["up".to_string()];
        args.extend(hosts.iter().map(|h| h.to_string()));
        args.extend(
            [
                "--coordinator",
                &coord.url,
                "--threads",
                "1",
                "--token-file",
                token_file.to_str().unwrap(),
                "--worker-bin",
                worker.to_str().unwrap(),
            ]
            .map(String::from),
        );
        args
    };

    // Up on three hosts, one of them down: it is reported, the other two start.
    let out = workers(dir, &up_args(&[&h1, &h2, &h3]));
    let report = text(&out);
    println!("grind workers up:\n{report}");
    assert_eq!(out.status.code(), Some(1), "one host failed: {report}");
    for host in [&h1, &h2] {
        let line = line_of(&report, host);
        assert!(line.contains(" ok "), "{line}");
        assert!(line.contains("copied the binary"), "{line}");
        assert!(line.contains("started with nohup"), "{line}");
    }
    let line = line_of(&report, &h3);
    assert!(
        line.contains("FAILED") && line.contains("unreachable"),
        "{line}"
    );
    assert!(report.contains("2 host(s) ok, 1 failed"), "{report}");

    // Both workers register (with their hosts' labels as names) and finish a campaign.
    let status = |campaign: Option<&str>| -> Value {
        let mut cmd = Command::new(grind_bin());
        cmd.args(["status", "--coordinator", &coord.url, "--json"])
            .env("GRIND_ADMIN_TOKEN", &admin_token);
        if let Some(id) = campaign {
            cmd.arg(id);
        }
        serde_json::from_slice(&run(&mut cmd).stdout).expect("status JSON")
    };
    let labels = [format!("127.0.0.1-{p1}"), format!("127.0.0.1-{p2}")];
    wait_for("both workers to register", LONG_WAIT, || {
        let names: Vec<String> = status(None)["workers"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|w| w["name"].as_str().map(String::from))
            .collect();
        let all = labels.iter().all(|l| names.contains(l));
        async move { all.then_some(()) }
    })
    .await;
    let add = run(Command::new(grind_bin())
        .args(["campaign", "add", "--coordinator", &coord.url])
        .args([
            "primes",
            "--to",
            "200000",
            "--unit",
            "20000",
            "--verify-rate",
            "0",
        ])
        .env("GRIND_ADMIN_TOKEN", &admin_token));
    let id = String::from_utf8_lossy(&add.stdout)
        .lines()
        .last()
        .unwrap()
        .to_string();
    let done = wait_for("the ssh workers to finish the campaign", LONG_WAIT, || {
        let s = status(Some(&id));
        async move { (s["state"] == "done").then_some(s) }
    })
    .await;
    // pi(200000) = 17984 (published tables of the prime-counting function).
    assert_eq!(done["value"], "17984");
    for r in done["results"].as_array().unwrap() {
        let by = r["provenance"]["worker"].as_str().unwrap_or_default();
        assert!(labels.iter().any(|l| l == by), "unit run by {by}");
    }

    // Status names both as running under nohup; a second up copies nothing, restarts nothing.
    let out = workers(dir, &["status", h1.as_str(), h2.as_str()]);
    let report = text(&out);
    println!("grind workers status:\n{report}");
    assert!(out.status.success(), "{report}");
    let mut pids = Vec::new();
    for host in [&h1, &h2] {
        let line = line_of(&report, host);
        assert!(line.contains("running (nohup), pid "), "{line}");
        let pid: u32 = line
            .split("pid ")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("no pid in {line}"));
        pids.push(pid);
    }
    let out = workers(dir, &up_args(&[&h1, &h2]));
    let report = text(&out);
    assert!(out.status.success(), "{report}");
    for host in [&h1, &h2] {
        let line = line_of(&report, host);
        assert!(line.contains("binary already there"), "{line}");
        assert!(line.contains("already running"), "{line}");
    }

    // A binary for another machine is refused before anything is copied.
    let mut foreign = std::fs::read(&worker).unwrap();
    foreign[18..20].copy_from_slice(&183u16.to_le_bytes()); // EM_AARCH64
    let foreign_path = dir.join("grind-worker-aarch64");
    std::fs::write(&foreign_path, foreign).unwrap();
    let mut args = up_args(&[&h1]);
    let at = args.iter().position(|a| a == "--worker-bin").unwrap();
    args[at + 1] = foreign_path.display().to_string();
    let out = workers(dir, &args);
    let line = text(&out);
    assert_eq!(out.status.code(), Some(1), "{line}");
    assert!(
        line_of(&line, &h1).contains("wrong architecture: the host is x86_64"),
        "{line}"
    );

    // Down stops both workers and removes their files; the down host is reported again.
    let out = workers(dir, &["down", h1.as_str(), h2.as_str(), h3.as_str()]);
    let report = text(&out);
    println!("grind workers down:\n{report}");
    assert_eq!(out.status.code(), Some(1), "{report}");
    for host in [&h1, &h2] {
        assert!(
            line_of(&report, host).contains("stopped and removed"),
            "{report}"
        );
    }
    assert!(line_of(&report, &h3).contains("unreachable"), "{report}");
    for pid in pids {
        wait_for("the worker process to end", LONG_WAIT, || async move {
            (!Path::new(&format!("/proc/{pid}")).exists()).then_some(())
        })
        .await;
    }
    assert_eq!(
        std::fs::read_dir(dir.join("remote")).unwrap().count(),
        0,
        "down leaves nothing behind"
    );
    let out = workers(dir, &["status", h1.as_str()]);
    assert!(line_of(&text(&out), &h1).contains("no worker"));
    drop((sshd1, sshd2));
}
