//! Times the Nim Square solver (Project Euler 310): `grundy_values` + `count_losing` for
//! N = 1e5, 1e6 and 1e7 on rayon pools of 1 and 2 threads, printing one table row per run.
//!
//! `cargo bench -p grind-shared --bench nimsquare [-- N... [--threads T,...] [--repeat R]]`
//! (N may be written like `1e7`; the time reported is the best of R runs).

use std::time::Instant;

use grind_shared::problems::nimsquare::{count_losing, grundy_values};

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

fn main() {
    let mut sizes = Vec::new();
    let mut threads = vec![1, 2];
    let mut repeat = 1;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--threads" => {
                let list = args.next().unwrap_or_default();
                threads = list.split(',').filter_map(|t| t.parse().ok()).collect();
            }
            "--repeat" => repeat = args.next().and_then(|r| r.parse().ok()).unwrap_or(1),
            flag if flag.starts_with("--") => {} // --bench and other harness flags
            size => match parse_count(size) {
                Some(n) => sizes.push(n),
                None => {
                    eprintln!("nimsquare bench: not a heap size: {size}");
                    std::process::exit(2);
                }
            },
        }
    }
    if sizes.is_empty() {
        sizes = vec![100_000, 1_000_000, 10_000_000];
    }

    println!(
        "{:>12} {:>7} {:>10} {:>9} {:>20}",
        "N", "threads", "seconds", "max g", "losing positions"
    );
    for &n in &sizes {
        for &t in &threads {
            let pool = match rayon::ThreadPoolBuilder::new().num_threads(t).build() {
                Ok(pool) => pool,
                Err(e) => {
                    eprintln!("nimsquare bench: cannot build a pool of {t} threads: {e}");
                    std::process::exit(1);
                }
            };
            let mut best = f64::INFINITY;
            let mut result = None;
            for _ in 0..repeat.max(1) {
                let start = Instant::now();
                let outcome = pool.install(|| {
                    let grundy = grundy_values(n)?;
                    let max = grundy.iter().copied().max().unwrap_or(0);
                    Ok::<_, grind_shared::problem::ProblemError>((max, count_losing(&grundy)?))
                });
                best = best.min(start.elapsed().as_secs_f64());
                match outcome {
                    Ok(found) => result = Some(found),
                    Err(e) => {
                        eprintln!("nimsquare bench: N={n}: {e}");
                        std::process::exit(1);
                    }
                }
            }
            if let Some((max, losing)) = result {
                println!("{n:>12} {t:>7} {best:>10.3} {max:>9} {losing:>20}");
            }
        }
    }
}
