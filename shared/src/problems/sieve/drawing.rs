//! How a sieve solution (`{"moves": [...], ...}`) is drawn for people: the moves in play
//! order as chips, then their number and total.

use serde_json::Value;

use crate::drawing::{numbers, Block, Drawing};

/// The drawing of `solution`, or `None` when it holds no list of moves.
pub fn draw(solution: &Value) -> Option<Drawing> {
    let moves = numbers(solution.get("moves"))?;
    let total: u64 = moves.iter().sum();
    Some(Drawing {
        blocks: vec![
            Block::Chips {
                items: moves.iter().map(u64::to_string).collect(),
                style: None,
            },
            Block::Note(format!("{} moves, total {total}", moves.len())),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn moves_are_chips_with_their_total() {
        let drawing = draw(&json!({"moves": [17, 9]})).unwrap();
        assert_eq!(
            drawing.blocks[1],
            Block::Note("2 moves, total 26".to_string())
        );
        assert!(draw(&json!({"deck": [1]})).is_none());
    }
}
