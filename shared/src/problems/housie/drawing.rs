//! How housie tickets are drawn for people: each ticket a 3 x 9 table of numbers (blank
//! cells empty). A solution document holds one ticket (rows of cells, 0 or null for a
//! blank), or a list of them, alone or under `tickets` or `book` (the JSON export's shape).

use serde_json::Value;

use crate::drawing::{Block, Drawing, Row, Table};

/// One ticket's cells, row by row (`None` for a blank), or `None` unless `value` is a
/// 3 x 9 grid of numbers and blanks.
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

/// The drawing of `solution`, or `None` unless it holds tickets.
pub fn draw(solution: &Value) -> Option<Drawing> {
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
    Some(Drawing {
        blocks: grids
            .into_iter()
            .map(|grid| {
                Block::Table(Table {
                    style: "ticket",
                    rows: grid
                        .into_iter()
                        .map(|row| Row {
                            head: None,
                            cells: row
                                .into_iter()
                                .map(|cell| cell.map(|n| n.to_string()).unwrap_or_default())
                                .collect(),
                        })
                        .collect(),
                })
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tickets_are_tables_with_blanks() {
        let row = json!([1, 0, 21, null, 41, 0, 61, 0, 81]);
        let drawing = draw(&json!({"tickets": [[row, row, row], [row, row, row]]})).unwrap();
        assert_eq!(drawing.blocks.len(), 2);
        let Block::Table(table) = &drawing.blocks[0] else {
            panic!("{drawing:?}")
        };
        let blanks = table
            .rows
            .iter()
            .flat_map(|r| &r.cells)
            .filter(|c| c.is_empty())
            .count();
        assert_eq!(blanks, 3 * 4);
        assert!(draw(&json!([row, row, row])).is_some(), "a bare ticket");
        assert!(draw(&json!({"tickets": [[row, row]]})).is_none());
        assert!(draw(&json!({"count": 3})).is_none());
    }
}
