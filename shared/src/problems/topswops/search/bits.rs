//! Small bit-set helpers: a node's children, unused values and legal moves are `u64` masks
//! (bit v = value, child or position v).

/// The set {v}; empty for v >= 64.
#[inline(always)]
pub(super) fn bit(v: u32) -> u64 {
    1u64.checked_shl(v).unwrap_or(0)
}

/// Values < x.
#[inline(always)]
pub(super) fn below(x: u32) -> u64 {
    if x >= 64 {
        !0
    } else {
        (1u64 << x) - 1
    }
}

/// Values > x.
#[inline(always)]
pub(super) fn above(x: u32) -> u64 {
    if x >= 63 {
        0
    } else {
        !0u64 << (x + 1)
    }
}

/// Index of the highest set bit (0 for none).
#[inline(always)]
pub(super) fn top_bit(x: u64) -> u32 {
    63 - (x | 1).leading_zeros()
}
