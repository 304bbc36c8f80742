//! Prints the grid puzzle's root LP point as a picture (diagnostics for the cuts):
//! `cargo run --release -p grind-shared --example grid_lp -- N SEED`. Cities are `o`
//! (`E`/`e`: an end, wholly/partly); bridge values print as 1, 2, `h` (1/2), `H` (3/2) or
//! tenths.

use grind_shared::problems::grid::exact::{LocalHooks, Search};
use grind_shared::problems::grid::instance::Instance;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args[1].parse().unwrap();
    let seed: u64 = args[2].parse().unwrap();
    let grid = Instance::generate(n, seed).unwrap();
    let hooks = LocalHooks::default();
    let mut s = Search::new(&grid, &hooks);
    let root = s.root_relaxation().unwrap().unwrap();
    let (v, xs, ys) = (root.value, root.bridges, root.ends);
    println!("root {v}");
    let f = |x: f64| {
        if x < 1e-6 {
            " ".to_string()
        } else if (x - 1.0).abs() < 1e-6 {
            "1".into()
        } else if (x - 2.0).abs() < 1e-6 {
            "2".into()
        } else if (x - 0.5).abs() < 1e-6 {
            "h".into()
        } else if (x - 1.5).abs() < 1e-6 {
            "H".into()
        } else {
            format!("{:.0}", x * 10.0)
        }
    };
    let hcount = n * (n - 1);
    for r in 0..n {
        let mut line = String::new();
        for c in 0..n {
            let y = ys[r * n + c];
            line.push_str(if y > 1.0 - 1e-6 {
                "E"
            } else if y > 1e-6 {
                "e"
            } else {
                "o"
            });
            if c + 1 < n {
                let x = xs[r * (n - 1) + c];
                line.push_str(&format!("{:>2}", f(x)));
            }
        }
        println!("{line}");
        if r + 1 < n {
            let mut line = String::new();
            for c in 0..n {
                let x = xs[hcount + r * n + c];
                line.push_str(&format!("{:<3}", f(x)));
            }
            println!("{line}");
        }
    }
}
