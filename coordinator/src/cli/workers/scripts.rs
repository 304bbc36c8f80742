//! The shell scripts `grind workers` runs on each host (POSIX sh, the tools every Linux has:
//! `uname`, `df`, `sha256sum` or `shasum`, `nohup`). Each prints `key=value` lines that
//! [`fields`] reads; failures exit with a code of their own and a line on stderr.
//!
//! On the host a worker lives in one directory (`~/.grind-worker/<label>` by default):
//! `grind-worker`, `token`, `ca.pem`, `run.sh` (the command line), `start.sh`/`stop.sh` (the
//! fallback's), `mode` (`systemd` or `nohup`), `worker.pid` and `worker.log` (fallback).
//! Started as a systemd user unit (`grind-worker-<label>.service`, lingering so it outlives
//! the login and starts at boot) when the host has a user manager, else with `nohup setsid`
//! plus a crontab `@reboot` line when `crontab` exists.

use super::ssh::quote;
use std::collections::HashMap;

/// Exit codes of the scripts, read by `grind workers` to name the failure.
pub mod exit {
    /// The worker directory cannot be made.
    pub const NO_DIR: i32 = 3;
    /// Writing a file failed (no space, quota, read-only).
    pub const WRITE: i32 = 4;
    /// The copied binary's digest differs from the local one.
    pub const DIGEST: i32 = 5;
    /// The copied binary does not run there (`--version` failed: glibc too old, say).
    pub const WONT_RUN: i32 = 6;
    /// The worker did not stay up after starting.
    pub const NOT_UP: i32 = 7;
}

/// The `key=value` lines of a script's output.
pub fn fields(output: &str) -> HashMap<String, String> {
    output
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// A shell expression for the worker directory `dir`/`label` (`~/` is the remote home).
fn dir_expr(dir: &str, label: &str) -> String {
    let path = format!("{}/{label}", dir.trim_end_matches('/'));
    match path.strip_prefix("~/") {
        Some(rest) => format!("\"$HOME\"/{}", quote(rest)),
        None => quote(&path),
    }
}

/// The systemd user unit's name for `label`.
pub fn unit_name(label: &str) -> String {
    format!("grind-worker-{label}.service")
}

const DIGEST_OF: &str =
    r##"digest() { (sha256sum "$1" 2>/dev/null || shasum -a 256 "$1") | cut -d' ' -f1; }"##;

/// Makes the directory and reports the host: `arch`, `glibc`, `free_kb`, `sha256` (of a
/// worker binary already there), `systemd` (a user manager answers), `crontab`.
pub fn probe(dir: &str, label: &str) -> String {
    format!(
        r##"set -u
{DIGEST_OF}
d={d}
mkdir -p "$d" 2>/dev/null && chmod 700 "$d" || {{ echo "cannot create $d" >&2; exit {no_dir}; }}
echo "arch=$(uname -m)"
echo "glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null || ldd --version 2>&1 | head -n 1)"
echo "free_kb=$(df -Pk "$d" | awk 'NR==2 {{print $4}}')"
if [ -f "$d/grind-worker" ]; then echo "sha256=$(digest "$d/grind-worker")"; fi
if [ -n "${{XDG_RUNTIME_DIR:-}}" ] && command -v systemctl >/dev/null 2>&1 \
   && systemctl --user show-environment >/dev/null 2>&1; then echo systemd=yes; else echo systemd=no; fi
if command -v crontab >/dev/null 2>&1; then echo crontab=yes; else echo crontab=no; fi
"##,
        d = dir_expr(dir, label),
        no_dir = exit::NO_DIR,
    )
}

/// Writes standard input as the worker binary, checks its digest is `sha256` and that it
/// runs (`--version`, printed as `version=`).
pub fn copy_binary(dir: &str, label: &str, sha256: &str) -> String {
    format!(
        r##"set -u
{DIGEST_OF}
d={d}
f="$d/grind-worker"
cat > "$f.new" || {{ rm -f "$f.new"; echo "cannot write $f.new" >&2; exit {write}; }}
chmod 755 "$f.new"
got=$(digest "$f.new")
[ "$got" = {sha} ] || {{ rm -f "$f.new"; echo "digest after copy is $got" >&2; exit {digest}; }}
v=$("$f.new" --version 2>&1) || {{ rm -f "$f.new"; echo "$v" >&2; exit {wont}; }}
mv -f "$f.new" "$f"
echo "version=$v"
"##,
        d = dir_expr(dir, label),
        sha = quote(sha256),
        write = exit::WRITE,
        digest = exit::DIGEST,
        wont = exit::WONT_RUN,
    )
}

/// What [`install`] sets up.
pub struct Install<'a> {
    /// Where the workers live on the host (`~/.grind-worker`).
    pub dir: &'a str,
    /// The host's label.
    pub label: &'a str,
    /// `grind-worker`'s arguments after the ones naming its files.
    pub worker_args: Vec<String>,
    /// The CA certificate (PEM), when the coordinator's certificate needs one.
    pub ca_pem: Option<&'a str>,
    /// Whether a token comes on standard input.
    pub token: bool,
    /// The binary was just replaced: restart a running worker.
    pub changed: bool,
    /// Start as a systemd user unit (the probe found a user manager).
    pub systemd: bool,
}

fn heredoc(path: &str, text: &str) -> String {
    format!(
        "cat > {path} <<'GRIND_EOF' || exit {}\n{text}GRIND_EOF\n",
        exit::WRITE
    )
}

/// Writes the token (standard input), CA and scripts, then starts the worker or leaves a
/// running one be when nothing changed. Prints `started=` (`systemd`, `nohup`, `already`),
/// `linger=` or `boot=` (how it comes back after a reboot), `pid=` (fallback).
pub fn install(i: &Install) -> String {
    let mut run = String::from(
        "#!/bin/sh\n# Written by `grind workers up`.\nd=$(cd \"$(dirname \"$0\")\" && pwd)\n\
         NO_COLOR=1; export NO_COLOR\n\
         exec nice -n 19 \"$d/grind-worker\"",
    );
    if i.token {
        run += " --token-file \"$d/token\"";
    }
    if i.ca_pem.is_some() {
        run += " --ca-file \"$d/ca.pem\"";
    }
    for arg in &i.worker_args {
        run += " ";
        run += &quote(arg);
    }
    run += "\n";
    let start = "#!/bin/sh\n# Starts the worker unless it runs (`grind workers up`, crontab @reboot).\n\
        d=$(cd \"$(dirname \"$0\")\" && pwd)\n\
        if [ -f \"$d/worker.pid\" ] && kill -0 \"$(cat \"$d/worker.pid\")\" 2>/dev/null; then exit 0; fi\n\
        cd \"$d\" || exit 1\n\
        if command -v setsid >/dev/null 2>&1; then\n\
        \x20 nohup setsid \"$d/run.sh\" >>\"$d/worker.log\" 2>&1 </dev/null &\n\
        else\n\
        \x20 nohup \"$d/run.sh\" >>\"$d/worker.log\" 2>&1 </dev/null &\n\
        fi\n\
        echo $! > \"$d/worker.pid\"\n";
    let stop = "#!/bin/sh\n# Stops the worker (SIGTERM: it checkpoints and hands its work back).\n\
        d=$(cd \"$(dirname \"$0\")\" && pwd)\n\
        [ -f \"$d/worker.pid\" ] || exit 0\n\
        pid=$(cat \"$d/worker.pid\")\n\
        if kill -0 \"$pid\" 2>/dev/null; then\n\
        \x20 kill -TERM \"$pid\"\n\
        \x20 n=0; while kill -0 \"$pid\" 2>/dev/null && [ $n -lt 30 ]; do sleep 1; n=$((n+1)); done\n\
        \x20 kill -0 \"$pid\" 2>/dev/null && kill -KILL \"$pid\"\n\
        fi\n\
        rm -f \"$d/worker.pid\"\n";
    let unit = unit_name(i.label);
    let mut s = format!(
        "set -u\nd={d}\nchanged={changed}\nlabel={label}\nunit={unit}\numask 077\n",
        d = dir_expr(i.dir, i.label),
        changed = u8::from(i.changed),
        label = quote(i.label),
        unit = quote(&unit),
    );
    if i.token {
        s += &format!(
            "cat > \"$d/token.new\" || exit {w}\ncmp -s \"$d/token.new\" \"$d/token\" || changed=1\nmv -f \"$d/token.new\" \"$d/token\"\n",
            w = exit::WRITE
        );
    } else {
        s += "rm -f \"$d/token\"\n";
    }
    match i.ca_pem {
        Some(pem) => {
            s += &heredoc("\"$d/ca.pem.new\"", &format!("{}\n", pem.trim_end()));
            s += "cmp -s \"$d/ca.pem.new\" \"$d/ca.pem\" || changed=1\nmv -f \"$d/ca.pem.new\" \"$d/ca.pem\"\n";
        }
        None => s += "rm -f \"$d/ca.pem\"\n",
    }
    s += &heredoc("\"$d/run.sh.new\"", &run);
    s += "cmp -s \"$d/run.sh.new\" \"$d/run.sh\" || changed=1\nmv -f \"$d/run.sh.new\" \"$d/run.sh\"\n";
    s += &heredoc("\"$d/start.sh\"", start);
    s += &heredoc("\"$d/stop.sh\"", stop);
    s += "chmod 700 \"$d/run.sh\" \"$d/start.sh\" \"$d/stop.sh\"\n";
    if i.systemd {
        s += &format!(
            r##"u="$HOME/.config/systemd/user"
mkdir -p "$u" || exit {w}
cat > "$u/$unit.new" <<GRIND_EOF || exit {w}
# Written by \`grind workers up\`.
[Unit]
Description=grind worker ($label)
StartLimitIntervalSec=0
[Service]
ExecStart=$d/run.sh
Restart=on-failure
RestartSec=10s
RestartPreventExitStatus=77 78
KillSignal=SIGTERM
TimeoutStopSec=30s
[Install]
WantedBy=default.target
GRIND_EOF
cmp -s "$u/$unit.new" "$u/$unit" || changed=1
mv -f "$u/$unit.new" "$u/$unit"
echo systemd > "$d/mode"
systemctl --user daemon-reload && systemctl --user enable "$unit" >/dev/null 2>&1 || exit {up}
if [ "$changed" = 1 ]; then systemctl --user restart "$unit"; else systemctl --user start "$unit"; fi || exit {up}
sleep 2
systemctl --user is-active --quiet "$unit" || {{ journalctl --user -u "$unit" -n 3 --no-pager -o cat >&2; exit {up}; }}
echo started=systemd
user=$(id -un)
linger=$(loginctl show-user "$user" -p Linger --value 2>/dev/null || true)
if [ "$linger" != yes ] && loginctl enable-linger "$user" >/dev/null 2>&1; then linger=yes; fi
echo "linger=${{linger:-no}}"
"##,
            w = exit::WRITE,
            up = exit::NOT_UP,
        );
    } else {
        s += &format!(
            r##"echo nohup > "$d/mode"
if [ "$changed" = 1 ]; then "$d/stop.sh"; fi
if [ -f "$d/worker.pid" ] && kill -0 "$(cat "$d/worker.pid")" 2>/dev/null; then
  echo started=already
else
  "$d/start.sh"
  sleep 2
  if ! kill -0 "$(cat "$d/worker.pid")" 2>/dev/null; then tail -n 3 "$d/worker.log" >&2; exit {up}; fi
  echo started=nohup
fi
echo "pid=$(cat "$d/worker.pid")"
if command -v crontab >/dev/null 2>&1; then
  {{ crontab -l 2>/dev/null | grep -v "#grind-worker:$label\$"; echo "@reboot $d/start.sh #grind-worker:$label"; }} | crontab - && echo boot=crontab || echo boot=none
else
  echo boot=none
fi
"##,
            up = exit::NOT_UP,
        );
    }
    s
}

/// Stops the worker and removes everything `install` wrote. Prints `state=removed` or
/// `state=absent`.
pub fn down(dir: &str, label: &str) -> String {
    format!(
        r##"set -u
d={d}
label={label}
unit={unit}
[ -d "$d" ] || {{ echo state=absent; exit 0; }}
if [ "$(cat "$d/mode" 2>/dev/null)" = systemd ]; then
  systemctl --user disable --now "$unit" >/dev/null 2>&1
  rm -f "$HOME/.config/systemd/user/$unit"
  systemctl --user daemon-reload >/dev/null 2>&1
fi
if [ -x "$d/stop.sh" ]; then "$d/stop.sh"; fi
if command -v crontab >/dev/null 2>&1 && crontab -l 2>/dev/null | grep -q "#grind-worker:$label\$"; then
  crontab -l 2>/dev/null | grep -v "#grind-worker:$label\$" | crontab -
fi
rm -rf "$d"
echo state=removed
"##,
        d = dir_expr(dir, label),
        label = quote(label),
        unit = quote(&unit_name(label)),
    )
}

/// Reports the worker: `state=` (`running`, `stopped`, `absent`), `mode=`, `pid=`,
/// `version=`, `log=` (its last line).
pub fn status(dir: &str, label: &str) -> String {
    format!(
        r##"set -u
d={d}
unit={unit}
[ -d "$d" ] || {{ echo state=absent; exit 0; }}
mode=$(cat "$d/mode" 2>/dev/null || echo none)
echo "mode=$mode"
if [ "$mode" = systemd ]; then
  if systemctl --user is-active --quiet "$unit"; then echo state=running; else echo state=stopped; fi
  echo "log=$(journalctl --user -u "$unit" -n 1 --no-pager -o cat 2>/dev/null)"
else
  if [ -f "$d/worker.pid" ] && kill -0 "$(cat "$d/worker.pid")" 2>/dev/null; then
    echo state=running; echo "pid=$(cat "$d/worker.pid")"
  else
    echo state=stopped
  fi
  echo "log=$(tail -n 1 "$d/worker.log" 2>/dev/null)"
fi
echo "version=$("$d/grind-worker" --version 2>&1 | head -n 1)"
"##,
        d = dir_expr(dir, label),
        unit = quote(&unit_name(label)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, input: &[u8]) -> (i32, String) {
        use std::io::Write;
        let mut child = std::process::Command::new("sh")
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    #[test]
    fn every_script_parses_under_sh() {
        let pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let mut scripts = vec![
            probe("~/.grind-worker", "h"),
            copy_binary("~/.grind-worker", "h", "ab"),
            down("~/.grind-worker", "h"),
            status("~/.grind-worker", "h"),
        ];
        for systemd in [false, true] {
            for ca_pem in [None, Some(pem)] {
                scripts.push(install(&Install {
                    dir: "~/.grind-worker",
                    label: "h",
                    worker_args: vec!["--coordinator".into(), "https://c.example:7878".into()],
                    ca_pem,
                    token: ca_pem.is_some(),
                    changed: systemd,
                    systemd,
                }));
            }
        }
        for script in scripts {
            let out = std::process::Command::new("sh")
                .args(["-n", "-c", &script])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}\n{script}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }

    #[test]
    fn the_directory_expression_keeps_the_home_unquoted() {
        assert_eq!(
            dir_expr("~/.grind-worker", "a-b"),
            "\"$HOME\"/'.grind-worker/a-b'"
        );
        assert_eq!(dir_expr("/srv/w/", "x"), "'/srv/w/x'");
    }

    #[test]
    fn probe_and_copy_run_under_sh() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().to_str().unwrap();
        let (code, out) = sh(&probe(base, "h1"), b"");
        assert_eq!(code, 0, "{out}");
        let f = fields(&out);
        assert_eq!(f["arch"], std::env::consts::ARCH);
        assert!(f["free_kb"].parse::<u64>().unwrap() > 0);
        assert!(!f.contains_key("sha256"), "nothing there yet");
        // A "binary" that is a script answering --version; its digest computed here.
        let fake = b"#!/bin/sh\necho fake 1.0\n";
        let sha = {
            use sha2::Digest;
            format!("{:x}", sha2::Sha256::digest(fake))
        };
        let (code, out) = sh(&copy_binary(base, "h1", &sha), fake);
        assert_eq!(code, 0, "{out}");
        assert_eq!(fields(&out)["version"], "fake 1.0");
        let (_, out) = sh(&probe(base, "h1"), b"");
        assert_eq!(fields(&out)["sha256"], sha);
        // The wrong digest is refused and nothing replaces the binary.
        let (code, _) = sh(&copy_binary(base, "h1", &"0".repeat(64)), b"other");
        assert_eq!(code, exit::DIGEST);
        let (_, out) = sh(&down(base, "h1"), b"");
        assert_eq!(fields(&out)["state"], "removed");
        assert!(!dir.path().join("h1").exists());
        let (_, out) = sh(&status(base, "h1"), b"");
        assert_eq!(fields(&out)["state"], "absent");
    }
}
