//! How a Topswops solution (`{"deck": [...], "flips": f}`) is drawn for people: a small deck
//! flip by flip, one row per deck state with the cards about to be reversed highlighted; a
//! long deck in rows of cards with their positions, then the number of flips and the cards
//! each flip reverses.

use serde_json::Value;

use crate::drawing::{numbers, Anchor, Block, Drawing, Figure, Shape, PER_ROW};

/// Most flips drawn flip by flip (a longer game is cut, with a note).
pub const MAX_FLIPS_DRAWN: usize = 400;
/// Largest deck drawn flip by flip; larger decks are drawn as rows of cards.
pub const MAX_CARDS_PER_FLIP_ROW: usize = 24;
/// Flips listed for a long game (the number of flips is always given).
const FLIPS_LISTED: usize = 300;
/// Most flips played to count a long game's length (f(97) is about 11,000).
const MAX_FLIPS_PLAYED: usize = 10_000_000;

/// The drawing of `solution`, or `None` when it holds no deck (a permutation of 1..=n).
pub fn draw(solution: &Value) -> Option<Drawing> {
    let cards = numbers(solution.get("deck"))?;
    if let Some(game) = flip_by_flip(&cards) {
        return Some(Drawing::of(Block::Figure {
            figure: game,
            scroll: false,
        }));
    }
    let rows = deck_rows(&cards)?;
    // Play the game: the number of cards each flip reverses (the top card's value).
    let mut d = cards.clone();
    let mut flips: Vec<String> = Vec::new();
    let mut played = 0usize;
    while d[0] != 1 && played < MAX_FLIPS_PLAYED {
        let k = d[0] as usize;
        if flips.len() < FLIPS_LISTED {
            flips.push(d[0].to_string());
        }
        d[..k].reverse();
        played += 1;
    }
    let stopped = if d[0] != 1 { " (stopped counting)" } else { "" };
    let first = if played > FLIPS_LISTED {
        format!(" (first {FLIPS_LISTED})")
    } else {
        String::new()
    };
    Some(Drawing {
        blocks: vec![
            Block::Note(format!(
                "The deck, top card first (position 1), in rows of {PER_ROW}; highlighted: \
                 the cards the first flip reverses."
            )),
            Block::Figure {
                figure: rows,
                scroll: true,
            },
            Block::Note(format!(
                "{played} flips{stopped}. Cards reversed by each flip{first}:"
            )),
            Block::Chips {
                items: flips,
                style: Some("flips"),
            },
        ],
    })
}

/// Whether `deck` is a permutation of 1..=n.
fn is_deck(deck: &[u64]) -> bool {
    let n = deck.len();
    let mut seen = vec![false; n + 1];
    n > 0
        && deck.iter().all(|&c| {
            let ok = c >= 1 && c as usize <= n && !seen[c as usize];
            if ok {
                seen[c as usize] = true;
            }
            ok
        })
}

/// The style classes of a card, highlighted when the next flip reverses it.
fn card_style(flipped: bool) -> Vec<&'static str> {
    if flipped {
        vec!["card", "flip"]
    } else {
        vec!["card"]
    }
}

/// A game drawn flip by flip: one row per deck state, the cards about to be reversed
/// highlighted. `None` unless `deck` is a permutation of at most [`MAX_CARDS_PER_FLIP_ROW`]
/// cards.
fn flip_by_flip(deck: &[u64]) -> Option<Figure> {
    let n = deck.len();
    if !is_deck(deck) || n > MAX_CARDS_PER_FLIP_ROW {
        return None;
    }
    let mut states = vec![deck.to_vec()];
    let mut d = deck.to_vec();
    while d[0] != 1 && states.len() <= MAX_FLIPS_DRAWN {
        let k = d[0] as usize;
        d[..k].reverse();
        states.push(d.clone());
    }
    let cut = d[0] != 1;
    const CELL: usize = 22;
    const LABEL: usize = 40;
    let w = LABEL + n * CELL + 4;
    let h = states.len() * CELL + if cut { CELL } else { 4 };
    let mut shapes = Vec::new();
    for (row, state) in states.iter().enumerate() {
        let y = row * CELL;
        let flip = if state[0] != 1 { state[0] as usize } else { 0 };
        shapes.push(Shape::Text {
            x: LABEL - 6,
            y: y + 15,
            anchor: Anchor::End,
            style: "tick",
            text: row.to_string(),
        });
        for (col, card) in state.iter().enumerate() {
            let x = LABEL + col * CELL;
            shapes.push(Shape::Rect {
                x,
                y,
                width: CELL - 2,
                height: CELL - 2,
                rx: 3,
                style: card_style(col < flip),
                title: None,
            });
            shapes.push(Shape::Text {
                x: x + (CELL - 2) / 2,
                y: y + 15,
                anchor: Anchor::Middle,
                style: "cardtext",
                text: card.to_string(),
            });
        }
    }
    if cut {
        shapes.push(Shape::Text {
            x: LABEL,
            y: h - 6,
            anchor: Anchor::Start,
            style: "tick",
            text: format!("… (first {MAX_FLIPS_DRAWN} flips shown)"),
        });
    }
    Some(Figure {
        style: "deck",
        width: w,
        height: h,
        shown_width: w,
        label: format!("Topswops deck and its {} flips", states.len() - 1),
        shapes,
    })
}

/// A long deck wrapped in rows of [`PER_ROW`] cards, each row labelled with the position of
/// its first card (1 = top), the first flip's cards highlighted. `None` unless `deck` is a
/// permutation.
fn deck_rows(deck: &[u64]) -> Option<Figure> {
    if !is_deck(deck) {
        return None;
    }
    const CELL: usize = 30;
    const LABEL: usize = 44;
    let rows = deck.len().div_ceil(PER_ROW);
    let cols = deck.len().min(PER_ROW);
    let (w, h) = (LABEL + cols * CELL + 2, rows * CELL + 2);
    let flip = if deck[0] != 1 { deck[0] as usize } else { 0 };
    let mut shapes = Vec::new();
    for (row, cards) in deck.chunks(PER_ROW).enumerate() {
        let y = row * CELL;
        shapes.push(Shape::Text {
            x: LABEL - 6,
            y: y + 19,
            anchor: Anchor::End,
            style: "tick",
            text: (row * PER_ROW + 1).to_string(),
        });
        for (col, card) in cards.iter().enumerate() {
            let x = LABEL + col * CELL;
            let position = row * PER_ROW + col;
            shapes.push(Shape::Rect {
                x,
                y,
                width: CELL - 2,
                height: CELL - 2,
                rx: 3,
                style: card_style(position < flip),
                title: Some(format!("position {}: card {card}", position + 1)),
            });
            shapes.push(Shape::Text {
                x: x + (CELL - 2) / 2,
                y: y + 19,
                anchor: Anchor::Middle,
                style: "cardtext",
                text: card.to_string(),
            });
        }
    }
    Some(Figure {
        style: "deck",
        width: w,
        height: h,
        shown_width: w,
        label: format!("Topswops deck of {} cards, top first", deck.len()),
        shapes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rects(figure: &Figure) -> Vec<&Shape> {
        figure
            .shapes
            .iter()
            .filter(|s| matches!(s, Shape::Rect { .. }))
            .collect()
    }

    fn highlighted(figure: &Figure) -> usize {
        figure
            .shapes
            .iter()
            .filter(|s| matches!(s, Shape::Rect { style, .. } if style.contains(&"flip")))
            .count()
    }

    #[test]
    fn rows_follow_the_flips() {
        // 3 1 4 5 2 takes 7 flips: 8 rows of 5 cards.
        let game = flip_by_flip(&[3, 1, 4, 5, 2]).unwrap();
        assert_eq!(rects(&game).len(), 8 * 5);
        assert_eq!(game.label, "Topswops deck and its 7 flips");
        assert!(flip_by_flip(&[1, 1]).is_none());
        assert!(flip_by_flip(&[]).is_none());
        let drawing = draw(&json!({"deck": [3, 1, 4, 5, 2], "flips": 7})).unwrap();
        assert!(matches!(drawing.blocks[..], [Block::Figure { .. }]));
    }

    #[test]
    fn long_decks_wrap_in_rows_with_positions() {
        let deck: Vec<u64> = (1..=97).rev().collect();
        assert!(
            flip_by_flip(&deck).is_none(),
            "too wide to draw flip by flip"
        );
        let rows = deck_rows(&deck).unwrap();
        assert_eq!(rects(&rows).len(), 97);
        // Ten rows, labelled with the position of their first card.
        let labels: Vec<&str> = rows
            .shapes
            .iter()
            .filter_map(|s| match s {
                Shape::Text {
                    anchor: Anchor::End,
                    text,
                    ..
                } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            labels,
            ["1", "11", "21", "31", "41", "51", "61", "71", "81", "91"]
        );
        // The first flip reverses all 97 cards: every card is highlighted.
        assert_eq!(highlighted(&rows), 97);
        assert!(rows.shapes.iter().any(|s| matches!(s,
            Shape::Rect { title: Some(t), .. } if t == "position 97: card 1")));
        assert!(deck_rows(&[2, 2]).is_none());
    }

    #[test]
    fn a_long_deck_lists_its_flips() {
        // A 40-card deck (too wide to draw flip by flip); its game played here, apart from
        // the drawing code.
        let deck: Vec<u64> = (2..=40).chain([1]).collect();
        let mut d = deck.clone();
        let mut sizes = Vec::new();
        while d[0] != 1 {
            sizes.push(d[0].to_string());
            let k = d[0] as usize;
            d[..k].reverse();
        }
        let drawing = draw(&json!({ "deck": deck })).unwrap();
        let Block::Note(count) = &drawing.blocks[2] else {
            panic!("{drawing:?}")
        };
        assert!(
            count.starts_with(&format!("{} flips.", sizes.len())),
            "{count}"
        );
        let Block::Chips { items, .. } = &drawing.blocks[3] else {
            panic!("{drawing:?}")
        };
        assert_eq!(items, &sizes);
        assert!(draw(&json!({"deck": [1, 1]})).is_none());
        assert!(draw(&json!({"count": 3})).is_none());
    }
}
