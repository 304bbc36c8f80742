//! Drawings of solutions, in a small neutral vocabulary: a problem describes what to show
//! (notes, chips, tables, pictures made of rectangles, lines, circles and text) and a front
//! end renders it (the coordinator's web pages turn it into escaped HTML and inline SVG).
//! Nothing here knows HTML, so problems carry no web dependency and cannot inject markup:
//! every text is plain text, every style is a class name the front end's stylesheet knows.
//!
//! A problem draws through [`crate::problem::Presentation::drawing`].

/// A drawing of one solution: blocks shown one after another.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Drawing {
    /// The blocks, in order.
    pub blocks: Vec<Block>,
}

impl Drawing {
    /// A drawing of one block.
    pub fn of(block: Block) -> Drawing {
        Drawing {
            blocks: vec![block],
        }
    }
}

/// One block of a drawing.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A short note in small print.
    Note(String),
    /// A picture; with `scroll` it sits in a box that scrolls sideways when too wide.
    Figure {
        /// The picture.
        figure: Figure,
        /// Whether to wrap it in a scrolling box.
        scroll: bool,
    },
    /// A numbered sequence shown as chips (small boxes in a row that wraps).
    Chips {
        /// The items, in order.
        items: Vec<String>,
        /// An extra style class for the list, if any.
        style: Option<&'static str>,
    },
    /// A table of text cells, in a box that scrolls sideways when too wide.
    Table(Table),
}

/// A table: rows of text cells, each row optionally headed.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The table's style class.
    pub style: &'static str,
    /// The rows, top first.
    pub rows: Vec<Row>,
}

/// One table row.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The row's heading cell, if any.
    pub head: Option<Head>,
    /// The row's cells (an empty string is a blank cell).
    pub cells: Vec<String>,
}

/// A row's heading cell: its text and a tooltip.
#[derive(Clone, Debug, PartialEq)]
pub struct Head {
    /// Shown in the cell.
    pub text: String,
    /// Shown on hover.
    pub title: String,
}

/// Items per row when a long sequence is wrapped ([`Table::numbered`] and problems' own
/// wrapped figures).
pub const PER_ROW: usize = 10;

impl Table {
    /// `items` in rows of [`PER_ROW`], each row headed by the position of its first item
    /// (counting from 1), with the tooltip "`what` position".
    pub fn numbered(items: &[String], what: &str) -> Table {
        Table {
            style: "seq",
            rows: items
                .chunks(PER_ROW)
                .enumerate()
                .map(|(row, chunk)| {
                    let first = row * PER_ROW + 1;
                    Row {
                        head: Some(Head {
                            text: first.to_string(),
                            title: format!("{what} {first}"),
                        }),
                        cells: chunk.to_vec(),
                    }
                })
                .collect(),
        }
    }
}

/// A picture in its own coordinates (an SVG image on the web).
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The picture's style class.
    pub style: &'static str,
    /// Width of the coordinate space.
    pub width: usize,
    /// Height of the coordinate space.
    pub height: usize,
    /// Width to show it at (it scales down to fit narrow screens).
    pub shown_width: usize,
    /// What it shows, for screen readers.
    pub label: String,
    /// The shapes, drawn in order (later ones on top).
    pub shapes: Vec<Shape>,
}

/// How a text is placed relative to its point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The text starts at the point.
    Start,
    /// The text is centred on the point.
    Middle,
    /// The text ends at the point.
    End,
}

/// One shape of a [`Figure`]; coordinates are in the figure's space, `style` lists class
/// names.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    /// A rectangle with rounded corners of radius `rx`.
    Rect {
        /// Left edge.
        x: usize,
        /// Top edge.
        y: usize,
        /// Width.
        width: usize,
        /// Height.
        height: usize,
        /// Corner radius.
        rx: usize,
        /// Style classes.
        style: Vec<&'static str>,
        /// Shown on hover.
        title: Option<String>,
    },
    /// A line of text.
    Text {
        /// Where the text is anchored.
        x: usize,
        /// Its baseline.
        y: usize,
        /// How it sits relative to `x`.
        anchor: Anchor,
        /// Style class.
        style: &'static str,
        /// The text.
        text: String,
    },
    /// A straight line.
    Line {
        /// Start.
        from: (usize, usize),
        /// End.
        to: (usize, usize),
        /// Style class.
        style: &'static str,
    },
    /// A circle.
    Circle {
        /// Centre.
        at: (usize, usize),
        /// Radius.
        r: usize,
        /// Style class.
        style: &'static str,
        /// Shown on hover.
        title: Option<String>,
    },
}

/// The numbers of a JSON list, or `None` when `value` is not a list of non-negative
/// integers (a helper for reading solution documents).
pub fn numbers(value: Option<&serde_json::Value>) -> Option<Vec<u64>> {
    value?
        .as_array()?
        .iter()
        .map(serde_json::Value::as_u64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_rows_are_headed_by_their_first_position() {
        let items: Vec<String> = (0..25).map(|i| i.to_string()).collect();
        let table = Table::numbered(&items, "step");
        let heads: Vec<_> = table
            .rows
            .iter()
            .map(|r| r.head.as_ref().unwrap().text.as_str())
            .collect();
        assert_eq!(heads, ["1", "11", "21"]);
        assert_eq!(table.rows[2].cells, ["20", "21", "22", "23", "24"]);
        assert_eq!(table.rows[1].head.as_ref().unwrap().title, "step 11");
    }

    #[test]
    fn numbers_reads_only_lists_of_naturals() {
        use serde_json::json;
        assert_eq!(numbers(Some(&json!([3, 1]))), Some(vec![3, 1]));
        assert_eq!(numbers(Some(&json!([3, -1]))), None);
        assert_eq!(numbers(Some(&json!("x"))), None);
        assert_eq!(numbers(None), None);
    }
}
