//! Deck kernels: the deck as bytes (`UNKNOWN | origin` or a card value), top first, in a
//! byte array or in SIMD registers (see the parent module's docs, "Kernels"). Both directions'
//! searches run on every kernel.

/// Whether the SSSE3 kernels can run.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("ssse3")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The frozen boundary after card m was flipped onto position m (forward search): the largest
/// m' < m with positions m'+1..m holding their own cards.
#[inline]
pub fn lower(deck: &[u8; 32], m: u32) -> u32 {
    let mut m = m.saturating_sub(1);
    while m > 0 && deck[(m as usize - 1) & 31] as u32 == m {
        m -= 1;
    }
    m
}

/// A deck representation.
pub trait Deck: Copy {
    /// From bytes (top first).
    fn load(bytes: &[u8; 32]) -> Self;
    /// To bytes (top first).
    fn store(self) -> [u8; 32];
    /// The top byte.
    fn top(self) -> u32;
    /// Reverses the top `k` cards (1 <= k <= the kernel's width).
    fn flip(self, k: u32) -> Self;
    /// Sets the top byte to `v`, then reverses the top `v` cards.
    fn assign_flip(self, v: u32) -> Self;
    /// Reverses the top `k` cards where `k` (<= the kernel's width) is the top byte.
    #[inline(always)]
    fn flip_top(self, k: u32) -> Self {
        self.flip(k)
    }
    /// The frozen boundary after the card equal to the boundary `m` was flipped.
    #[inline(always)]
    fn lower(self, m: u32) -> u32 {
        lower(&self.store(), m)
    }
    /// Sets the top byte to `v`.
    fn set_top(self, v: u32) -> Self;
    /// Bit i set where byte i is i + 1 (card i + 1 at its own position).
    fn matches(self) -> u64;
    /// Bit i set where byte i has its high bit set (an unknown card).
    fn unknowns(self) -> u64;
    /// Bit i set where byte i is a known card that is 1 or above `s`.
    fn inert(self, s: u32) -> u64;
}

/// Portable kernel: a byte array.
#[derive(Clone, Copy)]
pub struct Bytes(pub [u8; 32]);

impl Deck for Bytes {
    #[inline(always)]
    fn load(bytes: &[u8; 32]) -> Self {
        Bytes(*bytes)
    }
    #[inline(always)]
    fn store(self) -> [u8; 32] {
        self.0
    }
    #[inline(always)]
    fn top(self) -> u32 {
        self.0[0] as u32
    }
    #[inline(always)]
    fn flip(mut self, k: u32) -> Self {
        let k = (k as usize).min(32);
        self.0[..k].reverse();
        self
    }
    #[inline(always)]
    fn assign_flip(mut self, v: u32) -> Self {
        self.0[0] = v as u8;
        self.flip(v)
    }
    #[inline(always)]
    fn set_top(mut self, v: u32) -> Self {
        self.0[0] = v as u8;
        self
    }
    #[inline(always)]
    fn matches(self) -> u64 {
        let mut out = 0;
        for (i, &b) in self.0.iter().enumerate() {
            out |= u64::from(b as usize == i + 1) << i;
        }
        out
    }
    #[inline(always)]
    fn unknowns(self) -> u64 {
        let mut out = 0;
        for (i, &b) in self.0.iter().enumerate() {
            out |= u64::from(b >> 7) << i;
        }
        out
    }
    #[inline(always)]
    fn inert(self, s: u32) -> u64 {
        let mut out = 0;
        for (i, &b) in self.0.iter().enumerate() {
            let known = b & 0x80 == 0;
            out |= u64::from(known && (b == 1 || u32::from(b) > s)) << i;
        }
        out
    }
}

#[cfg(target_arch = "x86_64")]
pub use x86::{Narrow, Wide};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::Deck;
    use std::arch::x86_64::*;

    /// 16 bytes as a SIMD constant.
    const fn v16(b: [u8; 16]) -> __m128i {
        // SAFETY: __m128i is 16 plain bytes; every bit pattern is valid.
        unsafe { core::mem::transmute::<[u8; 16], __m128i>(b) }
    }

    /// `mask[i]` = source byte of position i (0x80 = zero) for every flip size 0..32.
    struct Masks {
        /// Narrow reversal of the top k bytes (identity for k > 16).
        rev: [__m128i; 64],
        /// Wide: new low half from the low half.
        ll: [__m128i; 64],
        /// Wide: new low half from the high half.
        hl: [__m128i; 64],
        /// Wide: new high half from the low half.
        lh: [__m128i; 64],
        /// Wide: new high half from the high half.
        hh: [__m128i; 64],
    }

    const fn masks() -> Masks {
        let z = v16([0; 16]);
        let mut m = Masks {
            rev: [z; 64],
            ll: [z; 64],
            hl: [z; 64],
            lh: [z; 64],
            hh: [z; 64],
        };
        let mut k = 0;
        while k <= 32 {
            let mut rev = [0u8; 16];
            let (mut ll, mut hl, mut lh, mut hh) =
                ([0x80u8; 16], [0x80u8; 16], [0x80u8; 16], [0x80u8; 16]);
            let mut i = 0;
            while i < 16 {
                rev[i] = if k <= 16 && i < k {
                    (k - 1 - i) as u8
                } else {
                    i as u8
                };
                // Low position i.
                if i < k {
                    let s = k - 1 - i;
                    if s < 16 {
                        ll[i] = s as u8;
                    } else {
                        hl[i] = (s - 16) as u8;
                    }
                } else {
                    ll[i] = i as u8;
                }
                // High position 16 + i.
                let p = 16 + i;
                if p < k {
                    lh[i] = (k - 1 - p) as u8; // < 16 since k <= 32
                } else {
                    hh[i] = i as u8;
                }
                i += 1;
            }
            m.rev[k] = v16(rev);
            m.ll[k] = v16(ll);
            m.hl[k] = v16(hl);
            m.lh[k] = v16(lh);
            m.hh[k] = v16(hh);
            k += 1;
        }
        m
    }

    static MASKS: Masks = masks();

    /// 0xff where a byte is a known card (high bit clear) equal to 1 or above `s` (a signed
    /// comparison: unknown bytes are negative).
    #[inline(always)]
    unsafe fn inert16(x: __m128i, s: u32) -> __m128i {
        _mm_or_si128(
            _mm_cmpeq_epi8(x, _mm_set1_epi8(1)),
            _mm_cmpgt_epi8(x, _mm_set1_epi8(s.min(127) as i8)),
        )
    }

    /// Byte i holds i + 1 (a card at its own position, low half).
    const IOTA1: __m128i = v16([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
    /// Byte i holds i + 17 (high half).
    const IOTA17: __m128i = v16([
        17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
    ]);

    /// Table index of a flip size (sizes above 32 never occur; they map to zero masks).
    #[inline(always)]
    fn idx(k: u32) -> usize {
        (k & 63) as usize
    }

    /// One register: n <= 16.
    #[derive(Clone, Copy)]
    pub struct Narrow(__m128i);

    impl Deck for Narrow {
        #[inline(always)]
        fn load(bytes: &[u8; 32]) -> Self {
            // SAFETY: reads 16 of the 32 bytes (unaligned load).
            Narrow(unsafe { _mm_loadu_si128(bytes.as_ptr() as *const __m128i) })
        }
        #[inline(always)]
        fn store(self) -> [u8; 32] {
            let mut b = [0u8; 32];
            // SAFETY: writes 16 of the 32 bytes (unaligned store).
            unsafe { _mm_storeu_si128(b.as_mut_ptr() as *mut __m128i, self.0) };
            b
        }
        #[inline(always)]
        fn top(self) -> u32 {
            // SAFETY: SSE2 is part of x86-64.
            (unsafe { _mm_cvtsi128_si32(self.0) } as u32) & 0xff
        }
        #[inline(always)]
        fn flip(self, k: u32) -> Self {
            // SAFETY: only reached from the SSSE3 entry points (run-time detected).
            Narrow(unsafe { _mm_shuffle_epi8(self.0, MASKS.rev[idx(k)]) })
        }
        #[inline(always)]
        fn assign_flip(self, v: u32) -> Self {
            // SAFETY: SSE2 is part of x86-64.
            let d = unsafe {
                _mm_or_si128(
                    _mm_andnot_si128(_mm_cvtsi32_si128(0xff), self.0),
                    _mm_cvtsi32_si128(v as i32),
                )
            };
            Narrow(d).flip_top(v)
        }
        #[inline(always)]
        fn set_top(self, v: u32) -> Self {
            // SAFETY: SSE2 is part of x86-64.
            Narrow(unsafe {
                _mm_or_si128(
                    _mm_andnot_si128(_mm_cvtsi32_si128(0xff), self.0),
                    _mm_cvtsi32_si128(v as i32),
                )
            })
        }
        #[inline(always)]
        fn matches(self) -> u64 {
            // SAFETY: SSE2 is part of x86-64.
            unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(self.0, IOTA1)) as u32 as u64 }
        }
        #[inline(always)]
        fn unknowns(self) -> u64 {
            // SAFETY: SSE2 is part of x86-64.
            unsafe { _mm_movemask_epi8(self.0) as u32 as u64 }
        }
        #[inline(always)]
        fn inert(self, s: u32) -> u64 {
            // SAFETY: SSE2 is part of x86-64.
            unsafe { _mm_movemask_epi8(inert16(self.0, s)) as u32 as u64 }
        }
        #[inline(always)]
        fn lower(self, m: u32) -> u32 {
            // SAFETY: an __m128i is 16 plain bytes.
            let b = unsafe { core::mem::transmute::<__m128i, [u8; 16]>(self.0) };
            let mut m = m.saturating_sub(1);
            while m > 0 && b[(m as usize - 1) & 15] as u32 == m {
                m -= 1;
            }
            m
        }
        /// The shuffle mask is computed from the top byte t inside the vector unit (no
        /// round trip through a general register and a table load on the dependency
        /// chain): byte i of `t - 1 - i` is the reversal index where i < t and has its high
        /// bit set elsewhere, so its unsigned minimum with `0x70 + i` (which `pshufb` reads
        /// as i) is the whole mask.
        #[inline(always)]
        fn flip_top(self, _k: u32) -> Self {
            // SAFETY: only reached from the SSSE3 entry points (run-time detected).
            unsafe {
                let iota1 = v16([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]);
                let keep = v16([
                    0x70, 0x71, 0x72, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x7b, 0x7c,
                    0x7d, 0x7e, 0x7f,
                ]);
                let t = _mm_shuffle_epi8(self.0, _mm_setzero_si128());
                let mask = _mm_min_epu8(_mm_sub_epi8(t, iota1), keep);
                Narrow(_mm_shuffle_epi8(self.0, mask))
            }
        }
    }

    /// Two registers: n <= 32.
    #[derive(Clone, Copy)]
    pub struct Wide(__m128i, __m128i);

    impl Deck for Wide {
        #[inline(always)]
        fn load(bytes: &[u8; 32]) -> Self {
            // SAFETY: reads the 32 bytes (unaligned loads).
            unsafe {
                Wide(
                    _mm_loadu_si128(bytes.as_ptr() as *const __m128i),
                    _mm_loadu_si128(bytes.as_ptr().add(16) as *const __m128i),
                )
            }
        }
        #[inline(always)]
        fn store(self) -> [u8; 32] {
            let mut b = [0u8; 32];
            // SAFETY: writes the 32 bytes (unaligned stores).
            unsafe {
                _mm_storeu_si128(b.as_mut_ptr() as *mut __m128i, self.0);
                _mm_storeu_si128(b.as_mut_ptr().add(16) as *mut __m128i, self.1);
            }
            b
        }
        #[inline(always)]
        fn top(self) -> u32 {
            // SAFETY: SSE2 is part of x86-64.
            (unsafe { _mm_cvtsi128_si32(self.0) } as u32) & 0xff
        }
        #[inline(always)]
        fn flip(self, k: u32) -> Self {
            let k = idx(k);
            // SAFETY: only reached from the SSSE3 entry points (run-time detected).
            unsafe {
                let lo = _mm_or_si128(
                    _mm_shuffle_epi8(self.0, MASKS.ll[k]),
                    _mm_shuffle_epi8(self.1, MASKS.hl[k]),
                );
                let hi = _mm_or_si128(
                    _mm_shuffle_epi8(self.0, MASKS.lh[k]),
                    _mm_shuffle_epi8(self.1, MASKS.hh[k]),
                );
                Wide(lo, hi)
            }
        }
        #[inline(always)]
        fn assign_flip(self, v: u32) -> Self {
            // SAFETY: SSE2 is part of x86-64.
            let lo = unsafe {
                _mm_or_si128(
                    _mm_andnot_si128(_mm_cvtsi32_si128(0xff), self.0),
                    _mm_cvtsi32_si128(v as i32),
                )
            };
            Wide(lo, self.1).flip(v)
        }
        #[inline(always)]
        fn set_top(self, v: u32) -> Self {
            // SAFETY: SSE2 is part of x86-64.
            let lo = unsafe {
                _mm_or_si128(
                    _mm_andnot_si128(_mm_cvtsi32_si128(0xff), self.0),
                    _mm_cvtsi32_si128(v as i32),
                )
            };
            Wide(lo, self.1)
        }
        #[inline(always)]
        fn matches(self) -> u64 {
            // SAFETY: SSE2 is part of x86-64.
            unsafe {
                let lo = _mm_movemask_epi8(_mm_cmpeq_epi8(self.0, IOTA1)) as u32;
                let hi = _mm_movemask_epi8(_mm_cmpeq_epi8(self.1, IOTA17)) as u32;
                u64::from(lo | hi << 16)
            }
        }
        #[inline(always)]
        fn unknowns(self) -> u64 {
            // SAFETY: SSE2 is part of x86-64.
            unsafe {
                let lo = _mm_movemask_epi8(self.0) as u32;
                let hi = _mm_movemask_epi8(self.1) as u32;
                u64::from(lo | hi << 16)
            }
        }
        #[inline(always)]
        fn inert(self, s: u32) -> u64 {
            // SAFETY: SSE2 is part of x86-64.
            unsafe {
                let lo = _mm_movemask_epi8(inert16(self.0, s)) as u32;
                let hi = _mm_movemask_epi8(inert16(self.1, s)) as u32;
                u64::from(lo | hi << 16)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::bits::below;
    use super::*;

    /// Every kernel flips like the byte-array one, for every size up to its width.
    #[test]
    fn kernels_agree_on_flips() {
        fn check<D: Deck>(width: u32) {
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            for round in 0..2000 {
                let mut bytes = [0u8; 32];
                for b in bytes.iter_mut() {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    *b = state as u8;
                }
                let w = width as usize;
                let k = 1 + round % width;
                let want = Bytes(bytes).flip(k).store();
                assert_eq!(D::load(&bytes).flip(k).store()[..w], want[..w], "flip {k}");
                bytes[0] = k as u8;
                let want = Bytes(bytes).flip(k).store();
                assert_eq!(
                    D::load(&bytes).flip_top(k).store()[..w],
                    want[..w],
                    "top {k}"
                );
                let assigned = D::load(&bytes).assign_flip(k).store();
                assert_eq!(assigned[..w], want[..w], "assign {k}");
                assert_eq!(D::load(&bytes).top(), k);
                let m = 1 + (round * 7) % width;
                assert_eq!(D::load(&bytes).lower(m), lower(&bytes, m));
                // Backward-search helpers, on bytes with planted matches and unknowns.
                for (i, b) in bytes.iter_mut().enumerate().take(w) {
                    if (round as usize + i).is_multiple_of(3) {
                        *b = i as u8 + 1;
                    }
                }
                let lanes = below(width);
                let b = Bytes(bytes);
                assert_eq!(D::load(&bytes).matches() & lanes, b.matches() & lanes);
                assert_eq!(D::load(&bytes).unknowns() & lanes, b.unknowns() & lanes);
                assert_eq!(D::load(&bytes).inert(m) & lanes, b.inert(m) & lanes);
                assert_eq!(
                    D::load(&bytes).set_top(k).store()[..w],
                    b.set_top(k).store()[..w]
                );
            }
        }
        check::<Bytes>(32);
        #[cfg(target_arch = "x86_64")]
        if available() {
            check::<Narrow>(16);
            check::<Wide>(32);
        }
    }
}
