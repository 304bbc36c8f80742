//! Compact binary encodings of heuristic units and split cursors. Heads sequences are
//! written as ranks among the values still unused (LEB128 varints): a block-grown prefix
//! costs about one byte a card, so an n = 10,000 unit stays near 10 KB.

use crate::problem::ProblemError;
use crate::problems::topswops::scorer::Card;

/// Appends fields to a byte buffer.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    /// Appends an unsigned varint.
    pub fn varint(&mut self, mut value: u64) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                self.0.push(byte);
                return;
            }
            self.0.push(byte | 0x80);
        }
    }

    /// Appends a sequence of distinct cards of 1..=n as ranks among the unused values.
    pub fn heads(&mut self, n: usize, heads: &[Card]) {
        self.varint(heads.len() as u64);
        let mut unused = Fenwick::full(n);
        for &h in heads {
            let rank = unused.prefix(h as usize - 1);
            unused.remove(h as usize);
            self.varint(rank as u64);
        }
    }
}

/// Reads fields written by [`Writer`]; every error names `what`.
pub struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader over `bytes`, describing errors as `what`.
    pub fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader { bytes, what }
    }

    /// An error about this payload.
    pub fn bad(&self, why: impl std::fmt::Display) -> ProblemError {
        ProblemError::InvalidUnit(format!("topswops {}: {why}", self.what))
    }

    /// Reads an unsigned varint.
    pub fn varint(&mut self) -> Result<u64, ProblemError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self
                .bytes
                .split_first()
                .ok_or_else(|| self.bad("truncated"))?;
            self.bytes = rest;
            let part = u64::from(byte & 0x7f);
            if shift == 63 && part > 1 {
                return Err(self.bad("varint overflows 64 bits"));
            }
            value |= part << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(self.bad("varint too long"))
    }

    /// Reads a varint that must be at most `max`.
    pub fn bounded(&mut self, max: u64, field: &str) -> Result<u64, ProblemError> {
        let value = self.varint()?;
        if value > max {
            return Err(self.bad(format!("{field} {value} exceeds {max}")));
        }
        Ok(value)
    }

    /// Reads a heads sequence of an `n`-card deck (distinct values of 1..=n).
    pub fn heads(&mut self, n: usize) -> Result<Vec<Card>, ProblemError> {
        let len = self.bounded(n as u64, "heads length")? as usize;
        let mut unused = Fenwick::full(n);
        let mut out = Vec::with_capacity(len);
        for taken in 0..len {
            let rank = self.bounded((n - taken - 1) as u64, "head rank")? as usize;
            let value = unused.select(rank);
            unused.remove(value);
            out.push(value as Card);
        }
        Ok(out)
    }

    /// True when every byte was read.
    pub fn at_end(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Fails unless every byte was read.
    pub fn finish(self) -> Result<(), ProblemError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(self.bad(format!("{} trailing bytes", self.bytes.len())))
        }
    }
}

/// A Fenwick tree over the values 1..=n counting which are still unused.
struct Fenwick {
    tree: Vec<u32>,
}

impl Fenwick {
    fn full(n: usize) -> Fenwick {
        let mut tree = vec![0u32; n + 1];
        for i in 1..=n {
            tree[i] += 1;
            let parent = i + (i & i.wrapping_neg());
            if parent <= n {
                tree[parent] += tree[i];
            }
        }
        Fenwick { tree }
    }

    /// Unused values among 1..=value.
    fn prefix(&self, mut value: usize) -> usize {
        let mut sum = 0;
        while value > 0 {
            sum += self.tree[value] as usize;
            value &= value - 1;
        }
        sum
    }

    fn remove(&mut self, mut value: usize) {
        while value < self.tree.len() {
            self.tree[value] -= 1;
            value += value & value.wrapping_neg();
        }
    }

    /// The unused value of rank `rank` (0-based); the caller keeps rank < unused count.
    fn select(&self, mut rank: usize) -> usize {
        let n = self.tree.len() - 1;
        let mut pos = 0;
        let mut step = n.next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next <= n && (self.tree[next] as usize) <= rank {
                pos = next;
                rank -= self.tree[next] as usize;
            }
            step >>= 1;
        }
        pos + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn heads_and_varints_round_trip(
            n in 1usize..300,
            cut in 0usize..300,
            seed in any::<u64>(),
            extra in any::<u64>(),
        ) {
            let mut values: Vec<Card> = (1..=n as Card).collect();
            let mut state = seed | 1;
            for i in (1..n).rev() {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17;
                values.swap(i, (state % (i as u64 + 1)) as usize);
            }
            values.truncate(cut.min(n));
            let mut w = Writer::default();
            w.varint(extra);
            w.heads(n, &values);
            let mut r = Reader::new(&w.0, "test");
            prop_assert_eq!(r.varint().unwrap(), extra);
            prop_assert_eq!(r.heads(n).unwrap(), values);
            prop_assert!(r.finish().is_ok());
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), n in 1usize..50) {
            let mut r = Reader::new(&bytes, "test");
            let _ = r.varint().and_then(|_| r.heads(n));
        }
    }
}
