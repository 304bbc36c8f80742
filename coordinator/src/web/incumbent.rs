//! The incumbent drawn for people. The `Problem` trait has no drawing hook, so this one
//! module recognises solution shapes (by problem name first, then by the JSON's fields) and
//! draws what it knows: a Topswops deck and its flips (flip by flip for small decks; for
//! long ones the deck in rows of cards with their positions and the sequence of flips), a
//! grid walk (`walk` + `cost`) on its grid and as numbered steps, a move list (`moves`, the
//! sieve), housie tickets (3 x 9 grids). Anything else is shown as the problem's own text
//! rendering only. Adding a drawing is one arm here.

use maud::{html, Markup};
use serde_json::Value;

use super::svg;

/// An HTML fragment drawing `solution` of a `problem` campaign with `params`, or `None` when
/// no drawing fits.
pub fn draw(problem: &str, params: &Value, solution: &Value) -> Option<Markup> {
    match problem {
        "topswops" => deck(solution),
        "grid" => walk(params, solution),
        "sieve" => moves(solution),
        "housie" => tickets(solution),
        _ => None,
    }
    .or_else(|| {
        if solution.get("deck").is_some() {
            deck(solution)
        } else if solution.get("walk").is_some() && solution.get("cost").is_some() {
            walk(params, solution)
        } else if solution.get("moves").is_some() {
            moves(solution)
        } else {
            tickets(solution)
        }
    })
}

fn numbers(value: Option<&Value>) -> Option<Vec<u64>> {
    value?.as_array()?.iter().map(Value::as_u64).collect()
}

/// Flips listed for a long game (the number of flips is always given).
const FLIPS_LISTED: usize = 300;
/// Most flips played to count a long game's length (f(97) is about 11,000).
const MAX_FLIPS_PLAYED: usize = 10_000_000;

fn deck(solution: &Value) -> Option<Markup> {
    let cards = numbers(solution.get("deck"))?;
    if let Some(drawing) = svg::topswops(&cards) {
        return Some(drawing);
    }
    let rows = svg::deck_rows(&cards)?;
    // Play the game: the number of cards each flip reverses (the top card's value).
    let mut d = cards.clone();
    let mut flips: Vec<u64> = Vec::new();
    let mut played = 0usize;
    while d[0] != 1 && played < MAX_FLIPS_PLAYED {
        let k = d[0] as usize;
        if flips.len() < FLIPS_LISTED {
            flips.push(d[0]);
        }
        d[..k].reverse();
        played += 1;
    }
    Some(html! {
        p.small { "The deck, top card first (position 1), in rows of " (svg::PER_ROW)
            "; highlighted: the cards the first flip reverses." }
        div.scroll { (rows) }
        p.small {
            (played) " flips" @if d[0] != 1 { " (stopped counting)" } ". Cards reversed by each flip"
            @if played > FLIPS_LISTED { " (first " (FLIPS_LISTED) ")" } ":"
        }
        ol.chips.flips { @for k in &flips { li.chip { (k) } } }
    })
}

/// Items in numbered rows of [`svg::PER_ROW`]: each row headed by the position of its first
/// item (counting from 1).
fn numbered_rows(items: &[String], what: &str) -> Markup {
    html! {
        div.scroll { table.seq {
            @for (row, chunk) in items.chunks(svg::PER_ROW).enumerate() {
                tr {
                    th title={ (what) " " (row * svg::PER_ROW + 1) } { (row * svg::PER_ROW + 1) }
                    @for item in chunk { td { (item) } }
                }
            }
        } }
    }
}

/// The grid's side: the parameters' `size` or `n`, the solution's, or the smallest square
/// holding every city of the walk.
fn walk(params: &Value, solution: &Value) -> Option<Markup> {
    let cities: Vec<usize> = numbers(solution.get("walk"))?
        .into_iter()
        .map(|c| c as usize)
        .collect();
    let side = ["size", "n"]
        .iter()
        .find_map(|k| params.get(*k).or_else(|| solution.get(*k))?.as_u64())
        .map(|n| n as usize)
        .unwrap_or_else(|| {
            let most = cities.iter().max().copied().unwrap_or(0) + 1;
            (most as f64).sqrt().ceil() as usize
        });
    let drawing = svg::grid_walk(side, &cities)?;
    let cost = solution
        .get("cost")
        .map(Value::to_string)
        .unwrap_or_default();
    let steps: Vec<String> = cities.iter().map(usize::to_string).collect();
    Some(html! {
        div.scroll { (drawing) }
        p.small { (cities.len().saturating_sub(1)) " crossings, cost " (cost)
            ". The cities in order (city r × " (side) " + c), in rows of " (svg::PER_ROW) ":" }
        (numbered_rows(&steps, "step"))
    })
}

fn moves(solution: &Value) -> Option<Markup> {
    let moves = numbers(solution.get("moves"))?;
    Some(html! {
        ol.chips { @for m in &moves { li.chip { (m) } } }
        p.small { (moves.len()) " moves, total " (moves.iter().sum::<u64>()) }
    })
}

/// Housie tickets: a 3 x 9 grid of numbers (0 or null for blanks), alone or in a list.
fn tickets(solution: &Value) -> Option<Markup> {
    fn ticket(value: &Value) -> Option<Vec<Vec<Option<u64>>>> {
        let rows = value.as_array()?;
        if rows.len() != 3 {
            return None;
        }
        rows.iter()
            .map(|row| {
                let cells = row.as_array()?;
                (cells.len() == 9).then_some(())?;
                cells
                    .iter()
                    .map(|c| match c {
                        Value::Null => Some(None),
                        _ => c.as_u64().map(|n| (n > 0).then_some(n)),
                    })
                    .collect()
            })
            .collect()
    }
    let list: Vec<&Value> = match solution
        .get("tickets")
        .or_else(|| solution.get("book"))
        .unwrap_or(solution)
    {
        Value::Array(items) if items.first().is_some_and(|t| ticket(t).is_some()) => {
            items.iter().collect()
        }
        single => vec![single],
    };
    let grids: Vec<_> = list.into_iter().map(ticket).collect::<Option<_>>()?;
    Some(html! {
        @for grid in &grids {
            div.scroll { table.ticket {
                @for row in grid {
                    tr { @for cell in row { td { @if let Some(n) = cell { (n) } } } }
                }
            } }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn drawn(problem: &str, params: &Value, solution: &Value) -> String {
        draw(problem, params, solution)
            .expect("a drawing")
            .into_string()
    }

    #[test]
    fn dispatches_on_name_then_shape() {
        let none = json!({});
        assert!(drawn(
            "topswops",
            &none,
            &json!({"deck": [3, 1, 4, 5, 2], "flips": 7})
        )
        .contains("<svg"));
        let walk = drawn(
            "grid",
            &json!({"size": 3}),
            &json!({"walk": [0, 1, 2], "cost": 5}),
        );
        assert!(walk.contains("cost 5"));
        // Unknown problem name: recognised by shape.
        assert!(draw("other", &none, &json!({"walk": [0, 3], "cost": 1})).is_some());
        assert!(drawn("sieve", &none, &json!({"moves": [17, 9]})).contains("total 26"));
        let row = json!([1, 0, 21, 0, 41, 0, 61, 0, 81]);
        let t = drawn("housie", &none, &json!({"tickets": [[row, row, row]]}));
        assert_eq!(t.matches("<td></td>").count(), 3 * 9 - 15, "blanks");
        assert!(draw("primes", &none, &json!({"count": 3})).is_none());
    }

    #[test]
    fn a_long_deck_is_drawn_in_rows_with_its_flips() {
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
        let page = drawn("topswops", &json!({"n": 40}), &json!({ "deck": deck }));
        assert!(page.contains(&format!("{} flips", sizes.len())), "{page}");
        let chips: Vec<&str> = page
            .split("<li class=\"chip\">")
            .skip(1)
            .map(|c| c.split('<').next().unwrap())
            .collect();
        let expected: Vec<String> = sizes.iter().map(u64::to_string).collect();
        assert_eq!(chips, expected);
        assert_eq!(page.matches("<rect").count(), 40, "one card each, in rows");
    }

    #[test]
    fn a_walk_is_listed_in_numbered_rows() {
        let walk: Vec<u64> = (0..25).collect();
        let page = drawn(
            "grid",
            &json!({"size": 5}),
            &json!({"walk": walk, "cost": 24}),
        );
        // Rows of 10 steps headed 1, 11, 21.
        for first in [1, 11, 21] {
            assert!(page.contains(&format!("\">{first}</th>")), "{page}");
        }
        assert_eq!(page.matches("<tr>").count(), 3);
    }
}
