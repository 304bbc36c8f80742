//! Times the exact sieve search. Draft.
use std::cell::RefCell;
use std::time::Instant;

use grind_shared::problems::sieve::search::{Observer, Searcher};

#[derive(Default)]
struct Best {
    best: RefCell<Option<i64>>,
}

impl Observer for Best {
    fn bound(&self) -> Option<i64> {
        *self.best.borrow()
    }
    fn found(&self, _moves: &[u32], score: i64) {
        *self.best.borrow_mut() = Some(score);
    }
    fn progress(&self, _nodes: u64) {}
    fn checkpoint(&self, _path: &[u16]) {}
    fn should_stop(&self) -> bool {
        false
    }
    fn should_split(&self) -> bool {
        false
    }
    fn donate(&self, _prefixes: Vec<Vec<u16>>, _limit: Vec<u16>) -> bool {
        false
    }
}

fn main() {
    let ns: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    for n in ns {
        let t = Instant::now();
        let mut s = Searcher::new(n);
        let root = s.root_bound();
        let best = Best::default();
        s.search(&[], None, None, &best).unwrap();
        println!(
            "n={n} root={root} best={:?} nodes={} leaves={} secs={:.3}",
            best.best.borrow(),
            s.stats().nodes,
            s.stats().leaves,
            t.elapsed().as_secs_f64()
        );
    }
}
