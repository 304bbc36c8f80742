//! The host list of `grind workers`: `[user@]host[:port]` entries from the command line or a
//! file (one a line, `#` comments), each with the label that names its worker's directory,
//! service and worker name on the machine.

use std::path::Path;

/// One machine to put a worker on, as the user wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Host {
    /// The entry as written (`alice@box:2222`).
    pub spec: String,
    /// The user to log in as, when given (else ssh's own choice: config, then local user).
    pub user: Option<String>,
    /// The host name or address (ssh config aliases work).
    pub host: String,
    /// The port, when given (else ssh's own choice).
    pub port: Option<u16>,
}

impl Host {
    /// Parses `[user@]host[:port]` (an IPv6 address in brackets: `[::1]:2222`).
    pub fn parse(spec: &str) -> Result<Host, String> {
        let spec = spec.trim();
        let (user, rest) = match spec.rsplit_once('@') {
            Some((user, rest)) if !user.is_empty() => (Some(user.to_string()), rest),
            Some(_) => return Err(format!("host {spec:?}: empty user before '@'")),
            None => (None, spec),
        };
        let (host, port) = if let Some(inner) = rest.strip_prefix('[') {
            let (addr, after) = inner
                .split_once(']')
                .ok_or_else(|| format!("host {spec:?}: '[' without ']'"))?;
            match after.strip_prefix(':') {
                Some(port) => (addr, Some(port)),
                None if after.is_empty() => (addr, None),
                None => return Err(format!("host {spec:?}: unexpected {after:?} after ']'")),
            }
        } else {
            match rest.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (rest, None),
            }
        };
        if host.is_empty() || host.starts_with('-') || host.chars().any(char::is_whitespace) {
            return Err(format!("host {spec:?}: not a host name"));
        }
        let port = match port {
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| format!("host {spec:?}: port {p:?} is not 1..65535"))?,
            ),
            None => None,
        };
        if user.as_deref().is_some_and(|u| u.starts_with('-')) {
            return Err(format!("host {spec:?}: not a user name"));
        }
        Ok(Host {
            spec: spec.to_string(),
            user,
            host: host.to_string(),
            port,
        })
    }

    /// `user@host` (or `host`) as ssh takes it.
    pub fn destination(&self) -> String {
        match &self.user {
            Some(user) => format!("{user}@{}", self.host),
            None => self.host.clone(),
        }
    }

    /// The entry in characters safe for a directory, a systemd unit and a worker name:
    /// `alice@box:2222` is `alice-box-2222`.
    pub fn label(&self) -> String {
        let label: String = self
            .spec
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        label.trim_matches('-').to_string()
    }
}

/// The hosts named on the command line and in `file` (one a line; blank lines and `#`
/// comments skipped), in that order, without repeats.
pub fn host_list(args: &[String], file: Option<&Path>) -> Result<Vec<Host>, String> {
    let mut specs: Vec<String> = args.to_vec();
    if let Some(path) = file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the host list {}: {e}", path.display()))?;
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if !line.is_empty() {
                specs.push(line.to_string());
            }
        }
    }
    let mut hosts: Vec<Host> = Vec::new();
    for spec in specs {
        let host = Host::parse(&spec)?;
        if !hosts.iter().any(|h| h.spec == host.spec) {
            hosts.push(host);
        }
    }
    if hosts.is_empty() {
        return Err(
            "no hosts: name them as arguments (user@host:port) or with --hosts FILE".into(),
        );
    }
    let mut labels: Vec<String> = hosts.iter().map(Host::label).collect();
    labels.sort();
    labels.dedup();
    if labels.len() != hosts.len() || labels.iter().any(String::is_empty) {
        return Err("two hosts have the same label (letters, digits, '_' and '.' kept, the rest as '-'): write them apart".into());
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_user_host_and_port() {
        let h = Host::parse("alice@box.example:2222").unwrap();
        assert_eq!(h.user.as_deref(), Some("alice"));
        assert_eq!(h.host, "box.example");
        assert_eq!(h.port, Some(2222));
        assert_eq!(h.destination(), "alice@box.example");
        assert_eq!(h.label(), "alice-box.example-2222");
        let plain = Host::parse("box").unwrap();
        assert_eq!((plain.user, plain.port), (None, None));
        let v6 = Host::parse("[::1]:22").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", Some(22)));
        for bad in [
            "",
            "@box",
            "box:0",
            "box:99999",
            "box:x",
            "-oProxyCommand=x",
            "[::1",
            "a b",
        ] {
            assert!(Host::parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn a_host_file_adds_to_the_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hosts");
        std::fs::write(
            &file,
            "# spare machines\nbox1\n\nbob@box2:2200  # the old one\nbox1\n",
        )
        .unwrap();
        let hosts = host_list(&["box0".into()], Some(&file)).unwrap();
        let specs: Vec<&str> = hosts.iter().map(|h| h.spec.as_str()).collect();
        assert_eq!(specs, ["box0", "box1", "bob@box2:2200"]);
        assert!(host_list(&[], None).is_err());
        assert!(
            host_list(&["a@b".into(), "a-b".into()], None).is_err(),
            "same label"
        );
    }
}
