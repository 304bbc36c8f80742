//! What the sieve record benches (`sieve.rs`, `sieve_beyond.rs`) share: the CPU clock their
//! rows state and the date they are stamped with. A directory module, so that cargo does not
//! take it for a bench of its own.

/// CPU seconds this process has used (user + system, all threads), from /proc/self/stat
/// (0 where it cannot be read).
pub fn process_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends with ')'): utime and stime are the 12th and
    // 13th, in clock ticks (100 a second on Linux).
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

/// Today's UTC date as YYYY-MM-DD (`date -u`), or "-" when it cannot be had.
pub fn today() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map_or_else(|| "-".to_string(), |d| d.trim().to_string())
}
