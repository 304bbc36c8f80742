//! Times housie: building the tables, the exact counts by both methods, and the uniform book
//! generator on one thread (drawing only; drawing plus the wire form a sample travels in;
//! the coordinator's decode-and-verify; text rendering), printing one row per stage.
//!
//! `cargo bench -p grind-shared --bench housie [-- BOOKS] [--repeat R]` (BOOKS may be written
//! like `1e6`, default 1e6; times are the best of R runs, default 3). Rates are per CPU second
//! of the benchmark thread, so they hold per core even on a busy machine.

use std::hint::black_box;
use std::time::{Duration, Instant};

use grind_shared::problems::housie::book::Book;
use grind_shared::problems::housie::counting::{count_by_halves, Numbering, TicketDp};
use grind_shared::problems::housie::patterns::{Game, PatternTable};
use grind_shared::problems::housie::render::{render, Format};
use grind_shared::problems::housie::rng::Rng;
use grind_shared::problems::housie::sampler::{Sampler, Scratch, Target};
use grind_shared::problems::housie::verify::check_book;

fn parse_count(text: &str) -> Option<usize> {
    match text.split_once(['e', 'E']) {
        Some((mantissa, exponent)) => {
            let mantissa: usize = mantissa.parse().ok()?;
            let exponent: u32 = exponent.parse().ok()?;
            mantissa.checked_mul(10usize.checked_pow(exponent)?)
        }
        None => text.parse().ok(),
    }
}

/// CPU time of the calling thread (Linux `/proc/thread-self/schedstat`: nanoseconds on a
/// CPU), or `None` where unavailable. On a shared machine this is the figure that matters
/// per core: wall time also counts waiting for other processes.
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// A stage's best wall time and best thread CPU time over the repeats.
struct Timing {
    wall: Duration,
    cpu: Option<Duration>,
}

/// The best of `repeat` timings of `run`.
fn best(repeat: usize, mut run: impl FnMut()) -> Timing {
    let mut timing = Timing {
        wall: Duration::MAX,
        cpu: None,
    };
    for _ in 0..repeat.max(1) {
        let (cpu_before, started) = (thread_cpu(), Instant::now());
        run();
        timing.wall = timing.wall.min(started.elapsed());
        if let (Some(before), Some(after)) = (cpu_before, thread_cpu()) {
            let cpu = after.saturating_sub(before);
            timing.cpu = Some(timing.cpu.map_or(cpu, |best| best.min(cpu)));
        }
    }
    timing
}

fn row(stage: &str, items: usize, timing: Timing) {
    let wall = timing.wall.as_secs_f64();
    let cpu = timing.cpu.map_or(f64::NAN, |c| c.as_secs_f64());
    if items > 1 {
        println!(
            "{stage:<36} {items:>8} {wall:>9.4} {cpu:>9.4} {:>12.0} {:>9.3}",
            items as f64 / cpu,
            cpu * 1e6 / items as f64
        );
    } else {
        println!("{stage:<36} {:>8} {wall:>9.4} {cpu:>9.4}", "-");
    }
}

fn main() {
    let mut books = 1_000_000;
    let mut repeat = 3;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--repeat" => repeat = args.next().and_then(|r| r.parse().ok()).unwrap_or(3),
            flag if flag.starts_with("--") => {} // --bench and other harness flags
            count => match parse_count(count) {
                Some(n) if n > 0 => books = n,
                _ => {
                    eprintln!("housie bench: not a number of books: {count}");
                    std::process::exit(2);
                }
            },
        }
    }

    println!(
        "{:<36} {:>8} {:>9} {:>9} {:>12} {:>9}",
        "stage", "items", "wall s", "cpu s", "items/cpu-s", "cpu us"
    );
    let game = Game::standard();
    row(
        "pattern table (735,210 patterns)",
        1,
        best(repeat, || {
            black_box(PatternTable::new(game.clone()));
        }),
    );
    let table = PatternTable::standard();
    let mut sampler = None;
    row(
        "sampler tables (uniform over books)",
        1,
        best(repeat, || {
            sampler = Some(Sampler::new(table, Target::Books).unwrap())
        }),
    );
    let sampler = sampler.expect("built");
    let mut total = None;
    row(
        "count books, method A (ticket DP)",
        1,
        best(repeat, || {
            total = Some(TicketDp::new(table, Numbering::Numbered).total());
        }),
    );
    row(
        "count books, method B (halves)",
        1,
        best(repeat, || {
            let by_halves = count_by_halves(table, Numbering::Numbered).unwrap();
            assert_eq!(Some(&by_halves), total.as_ref());
        }),
    );
    row(
        "count book patterns, method A",
        1,
        best(repeat, || {
            black_box(TicketDp::new(table, Numbering::Patterns).total());
        }),
    );

    let mut book = Book::blank(&game);
    let mut scratch = Scratch::default();
    row(
        "draw books (1 thread)",
        books,
        best(repeat, || {
            let mut rng = Rng::seeded(1);
            for _ in 0..books {
                sampler.sample_into(&mut rng, &mut book, &mut scratch);
                black_box(&book);
            }
        }),
    );
    let mut wire = Vec::with_capacity(books);
    row(
        "draw + wire form as JSON values",
        books,
        best(repeat, || {
            wire.clear();
            let mut rng = Rng::seeded(1);
            for number in 1..=books as u64 {
                sampler.sample_into(&mut rng, &mut book, &mut scratch);
                let mut text = String::with_capacity(216);
                book.encode_into(number, &mut text);
                wire.push(serde_json::Value::String(text));
            }
        }),
    );
    let bytes: usize = wire.iter().map(|v| v.as_str().map_or(0, str::len)).sum();
    println!(
        "  (wire form: {:.1} bytes a book)",
        bytes as f64 / books as f64
    );
    row(
        "JSON text -> decode -> verify",
        books,
        best(repeat, || {
            for value in &wire {
                let text = value.to_string();
                let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
                let (number, book) = Book::decode(&game, parsed.as_str().unwrap()).unwrap();
                check_book(&game, &book, number).unwrap();
            }
        }),
    );
    let sample: Vec<(u64, Book)> = wire
        .iter()
        .take(100_000)
        .map(|v| Book::decode(&game, v.as_str().unwrap()).unwrap())
        .collect();
    for format in [Format::Text, Format::Json, Format::Html] {
        let mut size = 0;
        let time = best(repeat, || {
            size = render(format, sample.iter().cloned()).len()
        });
        row(&format!("render {format:?}"), sample.len(), time);
        println!("  ({:.0} bytes a book)", size as f64 / sample.len() as f64);
    }
}
