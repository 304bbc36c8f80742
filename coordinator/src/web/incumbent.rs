//! The incumbent drawn for people. The problem draws its own solutions
//! ([`Presentation::drawing`](grind_shared::problem::Presentation::drawing), in the neutral
//! vocabulary of [`grind_shared::drawing`]); this module renders any such drawing as HTML,
//! its figures through [`svg::figure`]. It knows no problem: a problem without a drawing is
//! shown as its own text rendering only.

use grind_shared::drawing::{Block, Drawing, Table};
use grind_shared::problem::Problem;
use maud::{html, Markup};
use serde_json::Value;

use super::svg;

/// An HTML fragment drawing `solution` of a campaign of `problem`, or `None` when the
/// problem draws nothing for it.
pub fn draw(problem: &dyn Problem, solution: &Value) -> Option<Markup> {
    problem.drawing(solution).map(|drawing| render(&drawing))
}

/// A drawing as HTML: notes in small print, chips as an ordered list, tables and wide
/// figures in boxes that scroll sideways.
pub fn render(drawing: &Drawing) -> Markup {
    html! {
        @for block in &drawing.blocks {
            @match block {
                Block::Note(text) => p.small { (text) },
                Block::Figure { figure, scroll: true } => div.scroll { (svg::figure(figure)) },
                Block::Figure { figure, scroll: false } => (svg::figure(figure)),
                Block::Chips { items, style } => {
                    @let class = style.map_or_else(|| "chips".to_string(), |s| format!("chips {s}"));
                    ol class=(class) { @for item in items { li.chip { (item) } } }
                }
                Block::Table(table) => div.scroll { (self::table(table)) },
            }
        }
    }
}

fn table(table: &Table) -> Markup {
    html! {
        table class=(table.style) {
            @for row in &table.rows {
                tr {
                    @if let Some(head) = &row.head { th title=(head.title) { (head.text) } }
                    @for cell in &row.cells { td { (cell) } }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use grind_shared::registry;
    use serde_json::json;

    fn drawn(problem: &str, params: Value, solution: &Value) -> Option<String> {
        let (_, problem) = registry::lookup(problem).unwrap().build(&params).unwrap();
        draw(problem.as_ref(), solution).map(Markup::into_string)
    }

    #[test]
    fn each_problem_draws_its_own_solutions() {
        let deck = drawn(
            "topswops",
            json!({"n": 5}),
            &json!({"deck": [3, 1, 4, 5, 2], "flips": 7}),
        )
        .unwrap();
        assert!(deck.starts_with("<svg class=\"figure deck\""), "{deck}");
        // 3 1 4 5 2 takes 7 flips: 8 rows of 5 cards.
        assert_eq!(deck.matches("<rect").count(), 8 * 5);
        assert_eq!(
            deck.matches("<rect").count(),
            deck.matches("</rect>").count()
        );
        let walk = drawn(
            "grid",
            json!({"size": 3, "seed": 1}),
            &json!({"walk": [0, 1, 2], "cost": 5}),
        )
        .unwrap();
        assert!(walk.contains("cost 5"), "{walk}");
        assert!(
            walk.contains("<div class=\"scroll\"><svg class=\"figure grid\""),
            "{walk}"
        );
        let moves = drawn("sieve", json!({"n": 20}), &json!({"moves": [17, 9]})).unwrap();
        assert!(
            moves.contains("<ol class=\"chips\"><li class=\"chip\">17</li>"),
            "{moves}"
        );
        assert!(moves.contains("total 26"), "{moves}");
        let row = json!([1, 0, 21, 0, 41, 0, 61, 0, 81]);
        let tickets = drawn(
            "housie",
            json!({"mode": "count", "what": "tickets"}),
            &json!({"tickets": [[row, row, row]]}),
        )
        .unwrap();
        assert_eq!(tickets.matches("<td></td>").count(), 3 * 9 - 15, "blanks");
        assert!(tickets.contains("<table class=\"ticket\">"), "{tickets}");
        assert!(drawn("primes", json!({"to": 10}), &json!({"count": 3})).is_none());
        // A problem's drawing only draws its own solution shape.
        assert!(drawn(
            "topswops",
            json!({"n": 5}),
            &json!({"walk": [0, 3], "cost": 1})
        )
        .is_none());
    }

    #[test]
    fn a_long_deck_lists_its_flips_as_chips() {
        // A 40-card deck (too wide to draw flip by flip); its game played here, apart from
        // the drawing code.
        let deck: Vec<u64> = (2..=40).chain([1]).collect();
        let mut d = deck.clone();
        let mut sizes = Vec::new();
        while d[0] != 1 {
            sizes.push(d[0]);
            let k = d[0] as usize;
            d[..k].reverse();
        }
        let page = drawn(
            "topswops",
            json!({"n": 40, "heuristic": true}),
            &json!({ "deck": deck }),
        )
        .unwrap();
        assert!(page.contains(&format!("{} flips", sizes.len())), "{page}");
        assert!(page.contains("<ol class=\"chips flips\">"), "{page}");
        let chips: Vec<&str> = page
            .split("<li class=\"chip\">")
            .skip(1)
            .map(|c| c.split('<').next().unwrap())
            .collect();
        let expected: Vec<String> = sizes.iter().map(u64::to_string).collect();
        assert_eq!(chips, expected);
        assert_eq!(page.matches("<rect").count(), 40, "one card each, in rows");
        assert!(
            page.contains("<title>position 40: card 1</title>"),
            "{page}"
        );
    }

    #[test]
    fn a_walk_is_listed_in_numbered_rows() {
        let walk: Vec<u64> = (0..25).collect();
        let page = drawn(
            "grid",
            json!({"size": 5, "seed": 1}),
            &json!({"walk": walk, "cost": 24}),
        )
        .unwrap();
        // Rows of 10 steps headed 1, 11, 21.
        for first in [1, 11, 21] {
            assert!(
                page.contains(&format!("<th title=\"step {first}\">{first}</th>")),
                "{page}"
            );
        }
        assert_eq!(page.matches("<tr>").count(), 3);
    }
}
