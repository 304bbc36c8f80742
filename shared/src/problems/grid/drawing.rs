//! How a grid solution (`{"walk": [...], "cost": c, ...}`) is drawn for people: the walk
//! over the grid of cities (start in green, end in red, each crossing a segment, so reused
//! bridges look darker), then the cities in order as numbered rows.

use serde_json::Value;

use crate::drawing::{numbers, Block, Drawing, Figure, Shape, Table, PER_ROW};

/// Largest side drawn (a bigger grid is shown as text only).
const MAX_SIDE: usize = 200;

/// The drawing of `solution` on an `side` x `side` grid (city index `r * side + c`), or
/// `None` when it holds no walk over that grid.
pub fn draw(side: usize, solution: &Value) -> Option<Drawing> {
    let cities: Vec<usize> = numbers(solution.get("walk"))?
        .into_iter()
        .map(|c| c as usize)
        .collect();
    let figure = walk_figure(side, &cities)?;
    let cost = solution
        .get("cost")
        .map(Value::to_string)
        .unwrap_or_default();
    let steps: Vec<String> = cities.iter().map(usize::to_string).collect();
    Some(Drawing {
        blocks: vec![
            Block::Figure {
                figure,
                scroll: true,
            },
            Block::Note(format!(
                "{} crossings, cost {cost}. The cities in order (city r × {side} + c), in rows \
                 of {PER_ROW}:",
                cities.len().saturating_sub(1)
            )),
            Block::Table(Table::numbered(&steps, "step")),
        ],
    })
}

/// The walk drawn over the grid. `None` for an empty walk, a city off the grid, or a grid
/// too large to draw.
fn walk_figure(n: usize, walk: &[usize]) -> Option<Figure> {
    if n == 0 || n > MAX_SIDE || walk.iter().any(|&c| c >= n * n) {
        return None;
    }
    let (&start, &end) = (walk.first()?, walk.last()?);
    const GAP: usize = 36;
    const PAD: usize = 18;
    let size = PAD * 2 + (n - 1) * GAP;
    let at = |city: usize| (PAD + (city % n) * GAP, PAD + (city / n) * GAP);
    let mut shapes = Vec::new();
    for r in 0..n {
        for c in 0..n {
            let (x, y) = at(r * n + c);
            if c + 1 < n {
                shapes.push(Shape::Line {
                    from: (x, y),
                    to: (x + GAP, y),
                    style: "bridge",
                });
            }
            if r + 1 < n {
                shapes.push(Shape::Line {
                    from: (x, y),
                    to: (x, y + GAP),
                    style: "bridge",
                });
            }
        }
    }
    for pair in walk.windows(2) {
        shapes.push(Shape::Line {
            from: at(pair[0]),
            to: at(pair[1]),
            style: "walk",
        });
    }
    for city in 0..n * n {
        shapes.push(Shape::Circle {
            at: at(city),
            r: 4,
            style: "city",
            title: None,
        });
    }
    for (city, style) in [(start, "start"), (end, "end")] {
        shapes.push(Shape::Circle {
            at: at(city),
            r: 7,
            style,
            title: Some(style.to_string()),
        });
    }
    Some(Figure {
        style: "grid",
        width: size,
        height: size,
        shown_width: size.max(240),
        label: format!("walk over {} cities", n * n),
        shapes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_crossing_is_a_segment() {
        let figure = walk_figure(3, &[6, 7, 8, 7, 4, 1, 0, 3, 4, 5, 2]).unwrap();
        let walked = figure
            .shapes
            .iter()
            .filter(|s| matches!(s, Shape::Line { style: "walk", .. }))
            .count();
        assert_eq!(walked, 10);
        assert!(walk_figure(3, &[9]).is_none());
        assert!(walk_figure(3, &[]).is_none());
    }

    #[test]
    fn a_walk_is_listed_in_numbered_rows() {
        let walk: Vec<u64> = (0..25).collect();
        let drawing = draw(5, &json!({"walk": walk, "cost": 24})).unwrap();
        let Block::Note(note) = &drawing.blocks[1] else {
            panic!("{drawing:?}")
        };
        assert!(note.starts_with("24 crossings, cost 24."), "{note}");
        let Block::Table(table) = &drawing.blocks[2] else {
            panic!("{drawing:?}")
        };
        assert_eq!(table.rows.len(), 3, "rows of 10 steps headed 1, 11, 21");
        assert!(draw(5, &json!({"moves": [1]})).is_none());
    }
}
