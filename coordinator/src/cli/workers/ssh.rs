//! Runs shell scripts on a host through the system's OpenSSH client (`ssh`), so the user's
//! own `~/.ssh/config`, keys, agent, jump hosts and known hosts apply as they do for every
//! other ssh command. Files travel on the script's standard input (no `scp`, whose protocol
//! changed to SFTP in OpenSSH 9 and needs a server subsystem some machines lack).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

use super::hosts::Host;

/// What ssh exits with when it, not the remote command, failed.
const SSH_FAILED: i32 = 255;

/// How to call ssh.
#[derive(Clone, Debug, Default)]
pub struct Ssh {
    /// `-F FILE`: an ssh config file instead of `~/.ssh/config`.
    pub config: Option<PathBuf>,
    /// Extra `-o OPTION` settings.
    pub options: Vec<String>,
    /// Seconds to wait for a connection.
    pub connect_timeout: u64,
}

/// Why a remote script failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SshError {
    /// ssh could not connect or log in (its exit code 255), with ssh's own words.
    Unreachable(String),
    /// The script ran and failed, with its exit code and the last lines it wrote on stderr.
    Failed(i32, String),
    /// No answer within the time allowed.
    TimedOut(Duration),
    /// The local `ssh` could not be started.
    NoClient(String),
}

impl std::fmt::Display for SshError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SshError::Unreachable(why) => write!(f, "unreachable: {why}"),
            SshError::Failed(code, why) => write!(f, "{why} (remote exit code {code})"),
            SshError::TimedOut(after) => write!(f, "no answer within {} s", after.as_secs()),
            SshError::NoClient(why) => write!(f, "cannot run ssh: {why}"),
        }
    }
}

/// The last non-empty lines of `text`, joined: what a failing program said last.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

/// `text` in single quotes for a POSIX shell.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

impl Ssh {
    /// The ssh arguments that reach `host` and run `script` there under `sh`.
    pub fn args(&self, host: &Host, script: &str) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(config) = &self.config {
            args.push("-F".to_string());
            args.push(config.display().to_string());
        }
        // Never prompt: hosts run in parallel and a prompt would hang them all.
        args.extend(["-o".into(), "BatchMode=yes".into()]);
        args.extend([
            "-o".to_string(),
            format!("ConnectTimeout={}", self.connect_timeout.max(1)),
        ]);
        for option in &self.options {
            args.extend(["-o".to_string(), option.clone()]);
        }
        if let Some(port) = host.port {
            args.extend(["-p".to_string(), port.to_string()]);
        }
        args.push("--".into());
        args.push(host.destination());
        // The remote login shell may not be sh: the script is handed to sh whole.
        args.push(format!("sh -c {}", quote(script)));
        args
    }

    /// Runs `script` on `host` with `input` on its standard input; its standard output.
    pub async fn run(
        &self,
        host: &Host,
        script: &str,
        input: &[u8],
        timeout: Duration,
    ) -> Result<String, SshError> {
        let mut child = tokio::process::Command::new("ssh")
            .args(self.args(host, script))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| SshError::NoClient(e.to_string()))?;
        let mut stdin = child.stdin.take().expect("piped stdin");
        let input = input.to_vec();
        let writer = tokio::spawn(async move {
            // A script that stops reading early closes the pipe: its exit code tells why.
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
        let output = tokio::time::timeout(timeout, child.wait_with_output())
            .await
            .map_err(|_| SshError::TimedOut(timeout))?
            .map_err(|e| SshError::NoClient(e.to_string()))?;
        let _ = writer.await;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        match output.status.code() {
            Some(0) => Ok(stdout),
            Some(SSH_FAILED) | None => Err(SshError::Unreachable(last_lines(&stderr, 2))),
            Some(code) => Err(SshError::Failed(code, last_lines(&stderr, 3))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_for_sh() {
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        let out = std::process::Command::new("sh")
            .args(["-c", &format!("printf %s {}", quote("x'y \"$HOME\" `z`"))])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "x'y \"$HOME\" `z`");
    }

    #[test]
    fn builds_the_ssh_command_line() {
        let ssh = Ssh {
            config: Some("/tmp/cfg".into()),
            options: vec!["StrictHostKeyChecking=no".into()],
            connect_timeout: 5,
        };
        let host = Host::parse("bob@box:2200").unwrap();
        let args = ssh.args(&host, "echo hi");
        assert_eq!(
            args,
            [
                "-F",
                "/tmp/cfg",
                "-o",
                "BatchMode=yes",
                "-o",
                "ConnectTimeout=5",
                "-o",
                "StrictHostKeyChecking=no",
                "-p",
                "2200",
                "--",
                "bob@box",
                "sh -c 'echo hi'"
            ]
        );
        assert_eq!(last_lines("a\n\nb\nc\n", 2), "b / c");
    }
}
