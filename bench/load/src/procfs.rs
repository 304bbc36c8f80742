//! CPU time and memory of a process and of its threads, read from `/proc` (Linux).
//!
//! Thread CPU is grouped by thread name, which is how the report tells the store's writer
//! thread (`grind-store`) from the coordinator's runtime threads and the load generator's.

use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use std::time::Instant;

/// Which process to look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// This process.
    Current,
    /// Another process, by id.
    Pid(u32),
}

impl Target {
    fn dir(self) -> PathBuf {
        match self {
            Target::Current => PathBuf::from("/proc/self"),
            Target::Pid(pid) => PathBuf::from(format!("/proc/{pid}")),
        }
    }
}

/// Kernel clock ticks per second (the unit of `utime` and `stime` in `/proc/*/stat`).
pub fn clock_ticks() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// Parses a `/proc/*/stat` line into (name, user ticks, system ticks).
pub fn parse_stat(text: &str) -> Option<(String, u64, u64)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let name = text.get(open + 1..close)?.to_string();
    // Fields after the name start at field 3 (state); utime and stime are fields 14 and 15.
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let utime = rest.get(11)?.parse().ok()?;
    let stime = rest.get(12)?.parse().ok()?;
    Some((name, utime, stime))
}

fn stat_seconds(path: PathBuf) -> io::Result<(String, f64)> {
    let text = std::fs::read_to_string(&path)?;
    let (name, utime, stime) = parse_stat(&text).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("cannot parse {}", path.display()),
        )
    })?;
    Ok((name, (utime + stime) as f64 / clock_ticks()))
}

/// CPU seconds (user + system) the process has used so far, its finished threads included.
pub fn process_cpu_seconds(target: Target) -> io::Result<f64> {
    stat_seconds(target.dir().join("stat")).map(|(_, seconds)| seconds)
}

/// CPU seconds of the process's live threads, summed per thread name.
pub fn thread_cpu_seconds(target: Target) -> io::Result<BTreeMap<String, f64>> {
    let mut by_name = BTreeMap::new();
    for entry in std::fs::read_dir(target.dir().join("task"))? {
        let entry = entry?;
        // A thread may end between listing and reading: skip it.
        if let Ok((name, seconds)) = stat_seconds(entry.path().join("stat")) {
            *by_name.entry(name).or_insert(0.0) += seconds;
        }
    }
    Ok(by_name)
}

/// Seconds the process's live threads have spent runnable but waiting for a CPU (the
/// second field of `/proc/*/task/*/schedstat`); 0 when the kernel does not keep it.
pub fn runqueue_wait_seconds(target: Target) -> io::Result<f64> {
    let mut total = 0.0;
    for entry in std::fs::read_dir(target.dir().join("task"))? {
        let entry = entry?;
        if let Ok(text) = std::fs::read_to_string(entry.path().join("schedstat")) {
            total += parse_schedstat_wait(&text).unwrap_or(0.0);
        }
    }
    Ok(total)
}

/// The run-queue wait, in seconds, of a `schedstat` line (`run_ns wait_ns slices`).
pub fn parse_schedstat_wait(text: &str) -> Option<f64> {
    let wait_ns: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    Some(wait_ns as f64 / 1e9)
}

/// Peak resident memory of the process (`VmHWM`), in KiB.
pub fn max_rss_kib(target: Target) -> io::Result<u64> {
    let text = std::fs::read_to_string(target.dir().join("status"))?;
    parse_status_kib(&text, "VmHWM:").ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "no VmHWM line in /proc/*/status",
        )
    })
}

/// The value in KiB of a `/proc/*/status` line such as `VmHWM:  1234 kB`.
pub fn parse_status_kib(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|value| value.parse().ok())
}

/// Machine-wide CPU time so far, from the `cpu` line of `/proc/stat`, in seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MachineCpu {
    /// Time spent running anything (user, nice, system, irq, softirq).
    pub busy: f64,
    /// Time the hypervisor ran something else while this machine wanted to run.
    pub steal: f64,
}

/// Parses the aggregate `cpu` line of `/proc/stat`.
pub fn parse_proc_stat(text: &str) -> Option<MachineCpu> {
    let line = text.lines().find(|line| line.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|field| field.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal ...
    let field = |i: usize| ticks.get(i).copied().unwrap_or(0);
    let hz = clock_ticks();
    Some(MachineCpu {
        busy: (field(0) + field(1) + field(2) + field(5) + field(6)) as f64 / hz,
        steal: field(7) as f64 / hz,
    })
}

/// Machine-wide CPU time so far.
pub fn machine_cpu() -> io::Result<MachineCpu> {
    let text = std::fs::read_to_string("/proc/stat")?;
    parse_proc_stat(&text)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "cannot parse /proc/stat"))
}

/// CPU use of a process (and of the machine) at one moment.
#[derive(Clone, Debug)]
pub struct CpuSnapshot {
    at: Instant,
    process: f64,
    threads: BTreeMap<String, f64>,
    machine: Option<MachineCpu>,
    runqueue_wait: f64,
}

/// CPU used between two snapshots.
#[derive(Clone, Debug)]
pub struct CpuUsage {
    /// Wall seconds between the snapshots.
    pub wall_seconds: f64,
    /// CPU seconds of the whole process.
    pub process_seconds: f64,
    /// CPU seconds per thread name (threads alive at both snapshots).
    pub threads: BTreeMap<String, f64>,
    /// CPU seconds the whole machine was busy (every process), when known.
    pub machine_busy_seconds: Option<f64>,
    /// CPU seconds stolen by the hypervisor, when known.
    pub steal_seconds: Option<f64>,
    /// Seconds the process's threads waited, runnable, for a CPU.
    pub runqueue_wait_seconds: f64,
}

impl CpuSnapshot {
    /// Reads the process's CPU counters now.
    pub fn take(target: Target) -> io::Result<CpuSnapshot> {
        Ok(CpuSnapshot {
            at: Instant::now(),
            process: process_cpu_seconds(target)?,
            threads: thread_cpu_seconds(target)?,
            machine: machine_cpu().ok(),
            runqueue_wait: runqueue_wait_seconds(target).unwrap_or(0.0),
        })
    }

    /// What was used from `earlier` to this snapshot.
    pub fn since(&self, earlier: &CpuSnapshot) -> CpuUsage {
        let threads = self
            .threads
            .iter()
            .map(|(name, &now)| {
                let before = earlier.threads.get(name).copied().unwrap_or(0.0);
                (name.clone(), (now - before).max(0.0))
            })
            .collect();
        let machine = self.machine.zip(earlier.machine);
        CpuUsage {
            wall_seconds: self.at.duration_since(earlier.at).as_secs_f64(),
            process_seconds: (self.process - earlier.process).max(0.0),
            threads,
            machine_busy_seconds: machine.map(|(now, before)| (now.busy - before.busy).max(0.0)),
            steal_seconds: machine.map(|(now, before)| (now.steal - before.steal).max(0.0)),
            runqueue_wait_seconds: (self.runqueue_wait - earlier.runqueue_wait).max(0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines_with_odd_names() {
        let line = "1234 (grind store) S 1 2 3 4 5 6 7 8 9 10 250 75 0 0 20 0 9 0 100 0 0";
        assert_eq!(parse_stat(line), Some(("grind store".into(), 250, 75)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn parses_proc_stat() {
        let text = "cpu  100 5 50 1000 20 3 2 7 0 0\ncpu0 50 2 25 500 10 1 1 3 0 0\n";
        let hz = clock_ticks();
        let cpu = parse_proc_stat(text).unwrap();
        assert!((cpu.busy - 160.0 / hz).abs() < 1e-9);
        assert!((cpu.steal - 7.0 / hz).abs() < 1e-9);
        assert_eq!(parse_proc_stat("intr 1 2 3"), None);
    }

    #[test]
    fn parses_schedstat() {
        assert_eq!(parse_schedstat_wait("1000 2500000000 7\n"), Some(2.5));
        assert_eq!(parse_schedstat_wait(""), None);
    }

    #[test]
    fn parses_status_values() {
        let text = "Name:\tx\nVmPeak:\t  999 kB\nVmHWM:\t   4321 kB\n";
        assert_eq!(parse_status_kib(text, "VmHWM:"), Some(4321));
        assert_eq!(parse_status_kib(text, "VmRSS:"), None);
    }

    #[test]
    fn reads_this_process() {
        let snapshot = CpuSnapshot::take(Target::Current).unwrap();
        let later = CpuSnapshot::take(Target::Current).unwrap();
        let usage = later.since(&snapshot);
        assert!(usage.process_seconds >= 0.0);
        assert!(!later.threads.is_empty());
        assert!(max_rss_kib(Target::Current).unwrap() > 0);
    }
}
