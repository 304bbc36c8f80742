//! `--idle-only`: work only while the rest of the machine is idle. The monitor compares the
//! machine's busy CPU time (from /proc/stat) with this process's own (getrusage) over a
//! sampling window: what remains is other programs' load.

use std::time::{Duration, Instant};

/// Other programs' load (in cores) above which the worker pauses.
pub const BUSY_CORES: f64 = 0.3;
/// How long the machine must stay idle before work resumes.
pub const CALM_FOR: Duration = Duration::from_secs(30);
/// How often the load is sampled.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(2);

/// Machine-wide busy CPU seconds since boot, from the first line of /proc/stat (user, nice,
/// system, irq, softirq, steal; idle and iowait excluded). `None` where /proc is missing.
pub fn machine_busy_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_busy_seconds(&text, clock_ticks_per_second())
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 {
        ticks as f64
    } else {
        100.0
    }
}

/// Busy seconds from /proc/stat text.
fn parse_busy_seconds(text: &str, ticks_per_second: f64) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal ...
    let busy: u64 = [0usize, 1, 2, 5, 6, 7]
        .iter()
        .filter_map(|&i| fields.get(i))
        .sum();
    Some(busy as f64 / ticks_per_second)
}

/// Decides, sample by sample, whether the worker may run.
#[derive(Default)]
pub struct IdleMonitor {
    last: Option<(Instant, f64, f64)>,
    calm_since: Option<Instant>,
    running: bool,
}

impl IdleMonitor {
    /// Takes a sample of (machine busy seconds, own CPU seconds) at `now` and returns whether
    /// the worker may run: it pauses as soon as others use more than [`BUSY_CORES`], and
    /// resumes after they stayed below it for [`CALM_FOR`].
    pub fn sample(&mut self, now: Instant, machine_busy: f64, own_cpu: f64) -> bool {
        if let Some((then, busy_before, own_before)) = self.last {
            let wall = now.duration_since(then).as_secs_f64();
            if wall > 0.0 {
                let others = ((machine_busy - busy_before) - (own_cpu - own_before)) / wall;
                if others > BUSY_CORES {
                    self.calm_since = None;
                    self.running = false;
                } else {
                    let calm_since = *self.calm_since.get_or_insert(now);
                    if now.duration_since(calm_since) >= CALM_FOR {
                        self.running = true;
                    }
                }
            }
        } else {
            self.calm_since = Some(now);
        }
        self.last = Some((now, machine_busy, own_cpu));
        self.running
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_proc_stat() {
        let text = "cpu  100 20 30 1000 50 5 5 10 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        assert_eq!(parse_busy_seconds(text, 100.0), Some(1.7));
        assert_eq!(parse_busy_seconds("nonsense", 100.0), None);
        assert!(machine_busy_seconds().is_some());
    }

    #[test]
    fn pauses_on_load_and_resumes_after_calm() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let mut monitor = IdleMonitor::default();
        assert!(!monitor.sample(at(0), 0.0, 0.0));
        // Only our own work: calm, but not yet for long enough.
        assert!(!monitor.sample(at(10), 10.0, 10.0));
        assert!(monitor.sample(at(30), 30.0, 30.0));
        // Someone else uses a whole core: pause at once.
        assert!(!monitor.sample(at(32), 34.0, 32.0));
        assert!(!monitor.sample(at(50), 52.0, 50.0));
        assert!(monitor.sample(at(80), 82.0, 80.0));
    }
}
