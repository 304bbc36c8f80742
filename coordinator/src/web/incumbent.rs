//! The incumbent drawn for people. The `Problem` trait has no drawing hook, so this one
//! module recognises solution shapes (by problem name first, then by the JSON's fields) and
//! draws what it knows: a Topswops deck and its flips, a grid walk (`walk` + `cost`), a move
//! list (`moves`, the sieve), housie tickets (3 x 9 grids). Anything else is shown as the
//! problem's own text rendering only. Adding a drawing is one arm here.

use serde_json::Value;
use std::fmt::Write;

use super::html::esc;
use super::svg;

/// An HTML fragment drawing `solution` of a `problem` campaign with `params`, or `None` when
/// no drawing fits.
pub fn draw(problem: &str, params: &Value, solution: &Value) -> Option<String> {
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

fn deck(solution: &Value) -> Option<String> {
    svg::topswops(&numbers(solution.get("deck"))?)
}

/// The grid's side: the parameters' `size` or `n`, the solution's, or the smallest square
/// holding every city of the walk.
fn walk(params: &Value, solution: &Value) -> Option<String> {
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
        .map(|c| c.to_string())
        .unwrap_or_default();
    Some(format!(
        "{drawing}<p class=\"small\">{} crossings, cost {}</p>",
        cities.len().saturating_sub(1),
        esc(&cost)
    ))
}

fn moves(solution: &Value) -> Option<String> {
    let moves = numbers(solution.get("moves"))?;
    let mut out = String::from("<ol class=\"chips\">");
    for m in &moves {
        let _ = write!(out, "<li class=\"chip\">{m}</li>");
    }
    let _ = write!(
        out,
        "</ol><p class=\"small\">{} moves, total {}</p>",
        moves.len(),
        moves.iter().sum::<u64>()
    );
    Some(out)
}

/// Housie tickets: a 3 x 9 grid of numbers (0 or null for blanks), alone or in a list.
fn tickets(solution: &Value) -> Option<String> {
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
    let mut out = String::new();
    for grid in grids {
        out.push_str("<div class=\"scroll\"><table class=\"ticket\">");
        for row in grid {
            out.push_str("<tr>");
            for cell in row {
                match cell {
                    Some(n) => {
                        let _ = write!(out, "<td>{n}</td>");
                    }
                    None => out.push_str("<td></td>"),
                }
            }
            out.push_str("</tr>");
        }
        out.push_str("</table></div>");
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dispatches_on_name_then_shape() {
        let none = json!({});
        assert!(draw(
            "topswops",
            &none,
            &json!({"deck": [3, 1, 4, 5, 2], "flips": 7})
        )
        .unwrap()
        .contains("<svg"));
        let walk = draw(
            "grid",
            &json!({"size": 3}),
            &json!({"walk": [0, 1, 2], "cost": 5}),
        );
        assert!(walk.unwrap().contains("cost 5"));
        // Unknown problem name: recognised by shape.
        assert!(draw("other", &none, &json!({"walk": [0, 3], "cost": 1})).is_some());
        assert!(draw("sieve", &none, &json!({"moves": [17, 9]}))
            .unwrap()
            .contains("total 26"));
        let row = json!([1, 0, 21, 0, 41, 0, 61, 0, 81]);
        let t = draw("housie", &none, &json!({"tickets": [[row, row, row]]})).unwrap();
        assert_eq!(t.matches("<td></td>").count(), 3 * 9 - 15, "blanks");
        assert!(draw("primes", &none, &json!({"count": 3})).is_none());
    }
}
