//! Measures the local leg of a shared bound: from `BoundFeed::offer` to the solver having read
//! the `b` line, as a round trip (the solver echoes it as a `c` line, which comes back through
//! the parser and the event callback). The one-way delivery is at most this.
//!
//! The solver is `tests/fixtures/bound_reader.py` (Python; it also reads the bound file).
//!
//! Run: `cargo run --release -p grind-exec --example bound_latency [offers]`

use grind_exec::bound::Objective;
use grind_exec::protocol::Event;
use grind_exec::runner::{self, BoundSpec, SolverSpec};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn main() {
    let offers: i64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(500);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut spec = SolverSpec::new(fixtures.join("bound_reader.py"), tmp.path());
    spec.bundle_dir = Some(fixtures);
    spec.bound = Some(BoundSpec {
        objective: Objective::Minimize,
        initial: None,
    });
    let (tx, rx) = mpsc::channel();
    let running = runner::spawn(spec, move |e| {
        let _ = tx.send(e);
    })
    .expect("spawn");
    let next_comment = || loop {
        let e = rx.recv_timeout(Duration::from_secs(30)).expect("event");
        if let Event::Comment(c) = e.event {
            return c;
        }
    };
    assert_eq!(next_comment(), "ready");
    let feed = running.bound_feed().expect("bound feed").clone();
    let mut ms = Vec::new();
    for i in 0..offers {
        let value = 1_000_000 - i;
        let start = Instant::now();
        feed.offer(value).expect("offer");
        let c = next_comment();
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        assert!(c.starts_with(&format!("got {value} ")), "{c}");
    }
    feed.close_stdin();
    running.wait().expect("run");
    ms.sort_by(f64::total_cmp);
    let p = |q: f64| ms[((ms.len() - 1) as f64 * q).round() as usize];
    println!(
        "offer -> solver read it -> echo parsed, {offers} offers: median {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        p(0.5),
        p(0.9),
        p(0.99),
        ms[ms.len() - 1]
    );
}
