//! Fast Topswops scoring for large decks: u16 cards, a prefix reversal chosen at run time
//! (AVX-512, AVX2 or portable), and [`HeadState`], the incremental state of a deck being
//! built from its unique heads (see [`super::heads`]), so that decks sharing a prefix of
//! heads share the flips that prefix causes.
//!
//! Nothing here verifies results for the coordinator: that is [`super::replay`], a plain
//! replay written independently.
//!
//! Kernels: AVX-512 BW (`vpermw`, masked tails), AVX2 shuffles, or portable `slice::reverse`,
//! chosen at run time. Feeding a head to a [`HeadState`] fills the hole on top with it and flips
//! until a hole is on top again, so the continuations of one prefix share its flips; it can also
//! track original positions, to write the deck out.

use std::sync::OnceLock;

/// A card: 1..=n, or 0 for a hole (a card whose value is not decided yet).
pub type Card = u16;

/// Largest deck the heuristic mode accepts.
pub const MAX_CARDS: usize = 32_768;

/// The reversal implementation in use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// `slice::reverse` (any CPU).
    Portable,
    /// 256-bit shuffles (x86-64 with AVX2).
    Avx2,
    /// 512-bit word permutes with masked tails (x86-64 with AVX-512 F and BW).
    Avx512,
}

impl Kernel {
    /// The fastest kernel this CPU supports (detected once).
    pub fn detect() -> Kernel {
        static BEST: OnceLock<Kernel> = OnceLock::new();
        *BEST.get_or_init(|| {
            [Kernel::Avx512, Kernel::Avx2]
                .into_iter()
                .find(|k| k.available())
                .unwrap_or(Kernel::Portable)
        })
    }

    /// True when this CPU can run the kernel.
    pub fn available(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => {
                std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512bw")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Every kernel this CPU can run.
    pub fn all_available() -> Vec<Kernel> {
        [Kernel::Portable, Kernel::Avx2, Kernel::Avx512]
            .into_iter()
            .filter(|k| k.available())
            .collect()
    }

    /// Parses `portable`, `avx2`, `avx512` or `auto`.
    pub fn parse(name: &str) -> Option<Kernel> {
        match name {
            "auto" => Some(Kernel::detect()),
            "portable" => Some(Kernel::Portable),
            "avx2" => Some(Kernel::Avx2),
            "avx512" => Some(Kernel::Avx512),
            _ => None,
        }
    }

    /// Reverses `cards[..len]`. Panics when `len > cards.len()`; an unavailable kernel falls
    /// back to the portable one.
    pub fn reverse(self, cards: &mut [Card], len: usize) {
        let cards = &mut cards[..len];
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 if self.available() => {
                // SAFETY: the CPU supports the kernel; the pointer covers `len` cards.
                unsafe { x86::reverse_avx512(cards.as_mut_ptr(), len) }
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 if self.available() => {
                // SAFETY: as above.
                unsafe { x86::reverse_avx2(cards.as_mut_ptr(), len) }
            }
            _ => cards.reverse(),
        }
    }

    /// Flips while the top card is a value `t` with `2 <= t <= cards.len()`; stops at 1, at
    /// a hole (0) or at an out-of-range top. Returns the flips made.
    pub fn run(self, cards: &mut [Card]) -> u64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 if self.available() => {
                // SAFETY: the CPU supports the kernel.
                unsafe { x86::run_avx512(cards) }
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 if self.available() => {
                // SAFETY: the CPU supports the kernel.
                unsafe { x86::run_avx2(cards) }
            }
            _ => run_portable(cards),
        }
    }
}

fn run_portable(cards: &mut [Card]) -> u64 {
    let len = cards.len();
    let mut flips = 0;
    loop {
        let top = cards.first().copied().unwrap_or(0) as usize;
        if top <= 1 || top > len {
            return flips;
        }
        cards[..top].reverse();
        flips += 1;
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Card;
    use std::arch::x86_64::*;

    /// Lane i holds 31 - i: reverses 32 words with one permute.
    static REVERSE_32: [u16; 32] = {
        let mut out = [0u16; 32];
        let mut i = 0;
        while i < 32 {
            out[i] = 31 - i as u16;
            i += 1;
        }
        out
    };
    /// Lane i holds i.
    static IOTA_32: [u16; 32] = {
        let mut out = [0u16; 32];
        let mut i = 0;
        while i < 32 {
            out[i] = i as u16;
            i += 1;
        }
        out
    };

    /// Reverses `len` words at `p` (AVX-512 BW).
    ///
    /// # Safety
    /// The CPU has AVX-512 F and BW, and `p` is valid for `len` reads and writes.
    #[target_feature(enable = "avx512f,avx512bw")]
    #[inline]
    pub unsafe fn reverse_avx512(p: *mut Card, len: usize) {
        unsafe {
            let rev = _mm512_loadu_si512(REVERSE_32.as_ptr() as *const __m512i);
            let (mut i, mut j) = (0usize, len);
            while j - i >= 128 {
                let lo0 = _mm512_loadu_si512(p.add(i) as *const __m512i);
                let lo1 = _mm512_loadu_si512(p.add(i + 32) as *const __m512i);
                let hi0 = _mm512_loadu_si512(p.add(j - 32) as *const __m512i);
                let hi1 = _mm512_loadu_si512(p.add(j - 64) as *const __m512i);
                _mm512_storeu_si512(p.add(i) as *mut __m512i, _mm512_permutexvar_epi16(rev, hi0));
                _mm512_storeu_si512(
                    p.add(i + 32) as *mut __m512i,
                    _mm512_permutexvar_epi16(rev, hi1),
                );
                _mm512_storeu_si512(
                    p.add(j - 32) as *mut __m512i,
                    _mm512_permutexvar_epi16(rev, lo0),
                );
                _mm512_storeu_si512(
                    p.add(j - 64) as *mut __m512i,
                    _mm512_permutexvar_epi16(rev, lo1),
                );
                i += 64;
                j -= 64;
            }
            while j - i >= 64 {
                let lo = _mm512_loadu_si512(p.add(i) as *const __m512i);
                let hi = _mm512_loadu_si512(p.add(j - 32) as *const __m512i);
                _mm512_storeu_si512(p.add(i) as *mut __m512i, _mm512_permutexvar_epi16(rev, hi));
                _mm512_storeu_si512(
                    p.add(j - 32) as *mut __m512i,
                    _mm512_permutexvar_epi16(rev, lo),
                );
                i += 32;
                j -= 32;
            }
            let m = j - i;
            if m >= 32 {
                // Two overlapping vectors: both are loaded before either is stored, and the
                // overlap receives the same (correct) words from both stores.
                let lo = _mm512_loadu_si512(p.add(i) as *const __m512i);
                let hi = _mm512_loadu_si512(p.add(j - 32) as *const __m512i);
                _mm512_storeu_si512(p.add(i) as *mut __m512i, _mm512_permutexvar_epi16(rev, hi));
                _mm512_storeu_si512(
                    p.add(j - 32) as *mut __m512i,
                    _mm512_permutexvar_epi16(rev, lo),
                );
            } else if m >= 2 {
                let mask: __mmask32 = (1u32 << m) - 1;
                let v = _mm512_maskz_loadu_epi16(mask, p.add(i) as *const i16);
                let iota = _mm512_loadu_si512(IOTA_32.as_ptr() as *const __m512i);
                let idx = _mm512_sub_epi16(_mm512_set1_epi16(m as i16 - 1), iota);
                _mm512_mask_storeu_epi16(
                    p.add(i) as *mut i16,
                    mask,
                    _mm512_permutexvar_epi16(idx, v),
                );
            }
        }
    }

    /// Reverses 16 words in a 256-bit register.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn reverse16(v: __m256i) -> __m256i {
        let shuffle = _mm256_setr_epi8(
            14, 15, 12, 13, 10, 11, 8, 9, 6, 7, 4, 5, 2, 3, 0, 1, 14, 15, 12, 13, 10, 11, 8, 9, 6,
            7, 4, 5, 2, 3, 0, 1,
        );
        _mm256_permute4x64_epi64(_mm256_shuffle_epi8(v, shuffle), 0x4E)
    }

    /// Reverses `len` words at `p` (AVX2).
    ///
    /// # Safety
    /// The CPU has AVX2, and `p` is valid for `len` reads and writes.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn reverse_avx2(p: *mut Card, len: usize) {
        unsafe {
            let (mut i, mut j) = (0usize, len);
            while j - i >= 32 {
                let lo = _mm256_loadu_si256(p.add(i) as *const __m256i);
                let hi = _mm256_loadu_si256(p.add(j - 16) as *const __m256i);
                _mm256_storeu_si256(p.add(i) as *mut __m256i, reverse16(hi));
                _mm256_storeu_si256(p.add(j - 16) as *mut __m256i, reverse16(lo));
                i += 16;
                j -= 16;
            }
            let m = j - i;
            if m >= 16 {
                let lo = _mm256_loadu_si256(p.add(i) as *const __m256i);
                let hi = _mm256_loadu_si256(p.add(j - 16) as *const __m256i);
                _mm256_storeu_si256(p.add(i) as *mut __m256i, reverse16(hi));
                _mm256_storeu_si256(p.add(j - 16) as *mut __m256i, reverse16(lo));
            } else if m >= 8 {
                let shuffle = _mm_setr_epi8(14, 15, 12, 13, 10, 11, 8, 9, 6, 7, 4, 5, 2, 3, 0, 1);
                let lo = _mm_loadu_si128(p.add(i) as *const __m128i);
                let hi = _mm_loadu_si128(p.add(j - 8) as *const __m128i);
                _mm_storeu_si128(p.add(i) as *mut __m128i, _mm_shuffle_epi8(hi, shuffle));
                _mm_storeu_si128(p.add(j - 8) as *mut __m128i, _mm_shuffle_epi8(lo, shuffle));
            } else {
                while j > i + 1 {
                    j -= 1;
                    std::ptr::swap(p.add(i), p.add(j));
                    i += 1;
                }
            }
        }
    }

    /// [`super::Kernel::run`] with the AVX-512 reversal inlined.
    ///
    /// # Safety
    /// The CPU has AVX-512 F and BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub unsafe fn run_avx512(cards: &mut [Card]) -> u64 {
        let len = cards.len();
        let p = cards.as_mut_ptr();
        let mut flips = 0;
        loop {
            if len == 0 {
                return flips;
            }
            // SAFETY: len >= 1, so p points at the top card.
            let top = unsafe { *p } as usize;
            if top <= 1 || top > len {
                return flips;
            }
            // SAFETY: top <= len cards are valid at p.
            unsafe { reverse_avx512(p, top) };
            flips += 1;
        }
    }

    /// [`super::Kernel::run`] with the AVX2 reversal inlined.
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn run_avx2(cards: &mut [Card]) -> u64 {
        let len = cards.len();
        let p = cards.as_mut_ptr();
        let mut flips = 0;
        loop {
            if len == 0 {
                return flips;
            }
            // SAFETY: len >= 1, so p points at the top card.
            let top = unsafe { *p } as usize;
            if top <= 1 || top > len {
                return flips;
            }
            // SAFETY: top <= len cards are valid at p.
            unsafe { reverse_avx2(p, top) };
            flips += 1;
        }
    }
}

/// Checks that `deck` is a permutation of 1..=n (n = its length, 1 <= n <= [`MAX_CARDS`]).
pub fn check_deck(deck: &[Card]) -> Result<(), String> {
    let n = deck.len();
    if n == 0 || n > MAX_CARDS {
        return Err(format!("a deck has 1..={MAX_CARDS} cards, got {n}"));
    }
    let mut seen = vec![false; n + 1];
    for (position, &card) in deck.iter().enumerate() {
        let c = card as usize;
        if c == 0 || c > n {
            return Err(format!(
                "card {card} at position {} is not in 1..={n}",
                position + 1
            ));
        }
        if std::mem::replace(&mut seen[c], true) {
            return Err(format!("card {card} appears twice"));
        }
    }
    Ok(())
}

/// Flips `deck` takes (fast kernel); the deck must be a permutation of 1..=n.
pub fn flips(deck: &[Card]) -> Result<u64, String> {
    flips_with(Kernel::detect(), deck)
}

/// [`flips`] with a chosen kernel.
pub fn flips_with(kernel: Kernel, deck: &[Card]) -> Result<u64, String> {
    check_deck(deck)?;
    let mut cards = deck.to_vec();
    Ok(kernel.run(&mut cards))
}

/// The state of a deck being built from its unique heads: the deck so far with holes for
/// the cards not yet decided, after every flip the fed heads cause. Feeding head `v` puts
/// `v` into the hole on top and flips until a hole is on top again (the next head's turn)
/// or until `v = 1` ends the game. Cloning the state is how a shared prefix of heads is
/// reused by many continuations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeadState {
    cards: Vec<Card>,
    used: Vec<bool>,
    flips: u64,
    fed: usize,
    active: usize,
    finished: bool,
    tracking: Option<Box<Tracking>>,
}

/// Where each slot of the current deck started, so the original deck can be written out.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Tracking {
    /// Original position of the card (or hole) in each slot now.
    origin: Vec<Card>,
    /// The original deck so far (0 where undecided).
    deck: Vec<Card>,
}

impl HeadState {
    /// The empty state of an `n`-card deck: all holes, no flips.
    pub fn new(n: usize) -> Result<HeadState, String> {
        if n == 0 || n > MAX_CARDS {
            return Err(format!("a deck has 1..={MAX_CARDS} cards, got {n}"));
        }
        Ok(HeadState {
            cards: vec![0; n],
            used: vec![false; n + 1],
            flips: 0,
            fed: 0,
            active: 1,
            finished: false,
            tracking: None,
        })
    }

    /// Like [`HeadState::new`], but also tracks where every card started, so that
    /// [`HeadState::deck`] can write the deck out (twice the work per flip).
    pub fn tracked(n: usize) -> Result<HeadState, String> {
        let mut state = HeadState::new(n)?;
        state.tracking = Some(Box::new(Tracking {
            origin: (0..n).map(|p| p as Card).collect(),
            deck: vec![0; n],
        }));
        Ok(state)
    }

    /// A copy without position tracking (for fast continuations).
    pub fn untracked(&self) -> HeadState {
        HeadState {
            cards: self.cards.clone(),
            used: self.used.clone(),
            flips: self.flips,
            fed: self.fed,
            active: self.active,
            finished: self.finished,
            tracking: None,
        }
    }

    /// The original deck of a tracked state: the fed heads where they started, and the
    /// values never fed, in increasing order, in the slots that never reached the top (in
    /// deck order). `None` when the state is not tracked.
    pub fn deck(&self) -> Option<Vec<Card>> {
        let tracking = self.tracking.as_ref()?;
        let mut deck = tracking.deck.clone();
        let mut holes: Vec<usize> = (0..self.n())
            .filter(|&slot| self.cards[slot] == 0)
            .map(|slot| tracking.origin[slot] as usize)
            .collect();
        holes.sort_unstable();
        let unused = (1..=self.n()).filter(|&v| !self.used[v]);
        for (position, value) in holes.into_iter().zip(unused) {
            deck[position] = value as Card;
        }
        Some(deck)
    }

    /// Number of cards.
    pub fn n(&self) -> usize {
        self.cards.len()
    }

    /// Flips made so far. While a head is awaited this is the score of the deck whose heads
    /// are the ones fed followed by 1.
    pub fn flips(&self) -> u64 {
        self.flips
    }

    /// Heads fed so far.
    pub fn fed(&self) -> usize {
        self.fed
    }

    /// True once head 1 was fed (the game is over).
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// True when `value` was fed already.
    pub fn used(&self, value: Card) -> bool {
        self.used.get(value as usize).copied().unwrap_or(true)
    }

    /// The cards now (0 = hole), top first.
    pub fn cards(&self) -> &[Card] {
        &self.cards
    }

    /// Feeds the next head (checked: in 1..=n, not fed before, game not over).
    pub fn feed(&mut self, kernel: Kernel, head: Card) -> Result<(), String> {
        if self.finished {
            return Err(format!("head {head} follows 1, which ends the game"));
        }
        if head == 0 || head as usize > self.n() {
            return Err(format!("head {head} is not in 1..={}", self.n()));
        }
        if self.used[head as usize] {
            return Err(format!("head {head} appears twice"));
        }
        self.feed_unchecked(kernel, head);
        Ok(())
    }

    /// [`HeadState::feed`] without the checks, for hot loops whose heads are known valid
    /// (in range, unused, game not over). A bad head gives a wrong state, never UB.
    pub fn feed_unchecked(&mut self, kernel: Kernel, head: Card) {
        debug_assert!(!self.finished && self.cards[0] == 0);
        self.cards[0] = head;
        self.used[head as usize] = true;
        self.fed += 1;
        if let Some(tracking) = self.tracking.as_mut() {
            tracking.deck[tracking.origin[0] as usize] = head;
        }
        if head == 1 {
            self.finished = true;
            return;
        }
        self.active = self.active.max(head as usize);
        match self.tracking.as_mut() {
            None => self.flips += kernel.run(&mut self.cards[..self.active]),
            Some(tracking) => loop {
                let top = self.cards[0] as usize;
                if top <= 1 {
                    break;
                }
                kernel.reverse(&mut self.cards, top);
                kernel.reverse(&mut tracking.origin, top);
                self.flips += 1;
            },
        }
    }

    /// Copies `other` into `self` (same n) without reallocating; tracking is not copied
    /// (`self` keeps none: use it for untracked continuations).
    pub fn copy_from(&mut self, other: &HeadState) {
        self.tracking = None;
        // Nothing above either state's largest fed value is set: copy only up to it.
        let span = self.active.max(other.active);
        self.cards[..span].copy_from_slice(&other.cards[..span]);
        self.used[..=span].copy_from_slice(&other.used[..=span]);
        self.flips = other.flips;
        self.fed = other.fed;
        self.active = other.active;
        self.finished = other.finished;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::topswops::replay::replay_flips;
    use crate::rng::{Random, SplitMix64};
    use proptest::prelude::*;

    fn shuffled(n: usize, seed: u64) -> Vec<Card> {
        let mut deck: Vec<Card> = (1..=n as Card).collect();
        SplitMix64::new(seed).shuffle(&mut deck);
        deck
    }

    #[test]
    fn the_classic_five_card_deck_takes_seven_flips() {
        for kernel in Kernel::all_available() {
            assert_eq!(flips_with(kernel, &[3, 1, 4, 5, 2]), Ok(7), "{kernel:?}");
        }
    }

    #[test]
    fn every_reversal_length_matches_slice_reverse() {
        for kernel in Kernel::all_available() {
            for len in 0..300 {
                let original: Vec<Card> = (0..300).map(|i| (i * 7 + 3) as Card).collect();
                let mut fast = original.clone();
                kernel.reverse(&mut fast, len);
                let mut plain = original.clone();
                plain[..len].reverse();
                assert_eq!(fast, plain, "{kernel:?} len {len}");
            }
        }
    }

    #[test]
    fn fast_scorer_equals_plain_replay_up_to_two_thousand_cards() {
        let sizes = [
            1, 2, 3, 7, 31, 32, 33, 64, 97, 100, 257, 500, 1000, 1500, 2000,
        ];
        for (seed, &n) in sizes.iter().enumerate() {
            let deck = shuffled(n, seed as u64);
            let expected = replay_flips(&deck).unwrap();
            for kernel in Kernel::all_available() {
                assert_eq!(flips_with(kernel, &deck), Ok(expected), "{kernel:?} n {n}");
            }
        }
    }

    #[test]
    fn bad_decks_are_refused() {
        assert!(flips(&[]).is_err());
        assert!(flips(&[1, 1]).unwrap_err().contains("twice"));
        assert!(flips(&[0, 1]).unwrap_err().contains("not in"));
        assert!(flips(&[3, 1]).unwrap_err().contains("not in"));
        let mut state = HeadState::new(3).unwrap();
        assert!(state.feed(Kernel::Portable, 4).is_err());
        state.feed(Kernel::Portable, 1).unwrap();
        assert!(state
            .feed(Kernel::Portable, 2)
            .unwrap_err()
            .contains("ends"));
    }

    proptest! {
        #[test]
        fn kernels_agree_with_replay(n in 1usize..400, seed in any::<u64>()) {
            let deck = shuffled(n, seed);
            let expected = replay_flips(&deck).unwrap();
            for kernel in Kernel::all_available() {
                prop_assert_eq!(flips_with(kernel, &deck), Ok(expected));
            }
        }

        #[test]
        fn heads_state_scores_every_prefix(n in 2usize..300, seed in any::<u64>()) {
            // Heads = a random order of 2..=n then 1: feeding them one by one scores every
            // prefix, and the last score is the deck's.
            let mut heads = shuffled(n, seed);
            let one = heads.iter().position(|&c| c == 1).unwrap();
            heads.remove(one);
            heads.push(1);
            let deck = crate::problems::topswops::heads::to_deck(&heads).unwrap();
            let mut state = HeadState::new(n).unwrap();
            for &h in &heads {
                state.feed(Kernel::detect(), h).unwrap();
            }
            prop_assert!(state.finished());
            prop_assert_eq!(state.flips(), replay_flips(&deck).unwrap());
            // A tracked state writes out the same deck, also from a partial prefix.
            let cut = (seed as usize) % n;
            let mut tracked = HeadState::tracked(n).unwrap();
            for &h in &heads[..cut] {
                tracked.feed(Kernel::detect(), h).unwrap();
            }
            let mut partial = heads[..cut].to_vec();
            partial.push(1);
            let mut rest: Vec<Card> = heads[cut..].iter().copied().filter(|&c| c != 1).collect();
            rest.sort_unstable();
            tracked.feed(Kernel::detect(), 1).unwrap();
            partial.extend(rest);
            let expected = crate::problems::topswops::heads::to_deck(&partial).unwrap();
            prop_assert_eq!(tracked.deck().unwrap(), expected);
        }
    }
}
