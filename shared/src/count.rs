//! Exact counts as they travel and are stored: decimal strings of arbitrary size.

use num_bigint::BigUint;
use std::str::FromStr;

use crate::problem::ProblemError;

/// Parses a decimal count, rejecting signs, blanks and anything that is not a plain number.
pub fn parse_count(text: &str) -> Result<BigUint, ProblemError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ProblemError::InvalidResult(format!(
            "count {text:?} is not a non-negative decimal integer"
        )));
    }
    BigUint::from_str(text).map_err(|e| ProblemError::InvalidResult(format!("count {text:?}: {e}")))
}

/// Adds two decimal counts exactly.
pub fn add_counts(a: &str, b: &str) -> Result<String, ProblemError> {
    Ok((parse_count(a)? + parse_count(b)?).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rejects_non_numbers() {
        for bad in ["", "-1", "+1", " 1", "1.0", "0x10", "１"] {
            assert!(parse_count(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn adds_past_u128() {
        let max = u128::MAX.to_string();
        assert_eq!(
            add_counts(&max, "1").unwrap(),
            "340282366920938463463374607431768211456"
        );
    }

    proptest! {
        #[test]
        fn round_trips_and_adds_like_u128(a in 0u64.., b in 0u64..) {
            let sum = add_counts(&a.to_string(), &b.to_string()).unwrap();
            prop_assert_eq!(sum, (a as u128 + b as u128).to_string());
        }
    }
}
