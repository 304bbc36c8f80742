//! Printing books: plain text grids, JSON lines, or a self-contained HTML document that
//! prints on A4 with one book (six tickets) a page.

use std::fmt::Write;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use super::book::Book;

/// How exported books are written.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Classic ticket grids in plain text.
    #[default]
    Text,
    /// One JSON document a line: `{"book": n, "tickets": [[[cells of row 1], ...], ...]}`,
    /// blanks as null.
    Json,
    /// A self-contained HTML document for printing on A4, one book a page.
    Html,
}

/// " 0", " 1", ..., "99" back to back: numbers without the formatting machinery, which
/// dominates rendering otherwise.
const PADDED: &str = " 0 1 2 3 4 5 6 7 8 910111213141516171819202122232425262728293031323334353637383940414243444546474849\
5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

/// `n` right-aligned in two characters.
fn padded(n: u8) -> &'static str {
    let at = 2 * usize::from(n.min(99));
    &PADDED[at..at + 2]
}

/// `n` in decimal, without padding.
fn plain(n: u8) -> &'static str {
    let at = 2 * usize::from(n.min(99));
    &PADDED[at + usize::from(n < 10)..at + 2]
}

/// Renders numbered books in `format`, in the order given.
pub fn render(format: Format, books: impl IntoIterator<Item = (u64, Book)>) -> String {
    let books = books.into_iter();
    // Reserve about what the books take, so large exports are not copied while growing.
    let per_book = match format {
        Format::Text => 900,
        Format::Json => 700,
        Format::Html => 1_320,
    };
    let (low, high) = books.size_hint();
    let expected = high.unwrap_or(low).saturating_mul(per_book);
    let mut out = String::with_capacity(expected + HTML_HEAD.len());
    match format {
        Format::Text => books.for_each(|(n, b)| text(&mut out, n, &b)),
        Format::Json => books.for_each(|(n, b)| json(&mut out, n, &b)),
        Format::Html => {
            out += HTML_HEAD;
            books.for_each(|(n, b)| html(&mut out, n, &b));
            out += "</body></html>\n";
        }
    }
    out
}

/// One book as text: a title, then each ticket as a bordered grid.
///
/// ```text
/// Book 1
/// +--+--+--+--+--+--+--+--+--+
/// |  |14|22|  |48|53|  |  |84|
/// | 3|  |  |37|  |  |65|77|85|
/// | 7|19|  |  |  |  |69|79|87|
/// +--+--+--+--+--+--+--+--+--+
/// ```
fn text(out: &mut String, number: u64, book: &Book) {
    let border: String = "+--".repeat(book.columns()) + "+\n";
    let _ = writeln!(out, "Book {number}");
    for ticket in 0..book.tickets() {
        out.push_str(&border);
        for row in 0..book.rows() {
            for &n in book.row(ticket, row) {
                out.push('|');
                out.push_str(if n == 0 { "  " } else { padded(n) });
            }
            out.push_str("|\n");
        }
        out.push_str(&border);
    }
    out.push('\n');
}

fn json(out: &mut String, number: u64, book: &Book) {
    let _ = write!(out, "{{\"book\":{number},\"tickets\":[");
    for ticket in 0..book.tickets() {
        out.push_str(if ticket == 0 { "[" } else { ",[" });
        for row in 0..book.rows() {
            out.push_str(if row == 0 { "[" } else { ",[" });
            for (column, &n) in book.row(ticket, row).iter().enumerate() {
                if column > 0 {
                    out.push(',');
                }
                out.push_str(if n == 0 { "null" } else { plain(n) });
            }
            out.push(']');
        }
        out.push(']');
    }
    out.push_str("]}\n");
}

/// Page set-up: A4 with 10 mm margins; six tickets of 3 x 11 mm rows and a caption fill a
/// page; blank cells are shaded. Optional end tags (`</td>`, `</tr>`) are left out, as HTML
/// allows, to keep large exports small.
const HTML_HEAD: &str = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>Housie books</title><style>\
@page{size:A4 portrait;margin:10mm}\
body{margin:0;font-family:Arial,Helvetica,sans-serif;color:#000}\
section{break-after:page;page-break-after:always}\
section:last-child{break-after:auto;page-break-after:auto}\
h1{font-size:11pt;margin:0 0 2mm}\
table{border-collapse:collapse;table-layout:fixed;width:189mm;margin:0 0 4mm;\
break-inside:avoid;page-break-inside:avoid}\
caption{caption-side:top;text-align:left;font-size:8pt;padding:0 0 .8mm}\
td{border:.5mm solid #000;height:11mm;padding:0;text-align:center;vertical-align:middle;\
font-size:17pt;font-weight:bold}\
td:empty{background:#e4e4e4}\
@media screen{body{margin:10mm}section{width:190mm;border-bottom:1px dashed #999;\
margin-bottom:8mm}}\
</style></head><body>\n";

fn html(out: &mut String, number: u64, book: &Book) {
    let _ = write!(out, "<section><h1>Book {number}</h1>");
    for ticket in 0..book.tickets() {
        let _ = write!(
            out,
            "<table><caption>Book {number} &middot; ticket {}</caption>",
            ticket + 1
        );
        for row in 0..book.rows() {
            out.push_str("<tr>");
            for &n in book.row(ticket, row) {
                out.push_str("<td>");
                if n != 0 {
                    out.push_str(plain(n));
                }
            }
        }
        out.push_str("</table>");
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::housie::patterns::Game;

    fn book() -> Book {
        let game = Game::standard();
        Book::decode(
            &game,
            "3:1422485384.0337657785.0719697987/2141556272.0428465878.0917304782\
             /1024315074.3342667583.0525384356/2032517380.0212405964.2636456786\
             /1152637181.1323345789.0627497690/0115293560.1654617088.0818394468",
        )
        .unwrap()
        .1
    }

    #[test]
    fn number_tables_are_right() {
        for n in 0..100u8 {
            assert_eq!(padded(n), format!("{n:2}"));
            assert_eq!(plain(n), n.to_string());
        }
    }

    #[test]
    fn text_is_the_classic_grid() {
        let out = render(Format::Text, [(3, book())]);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "Book 3");
        assert_eq!(lines[1], "+--+--+--+--+--+--+--+--+--+");
        assert_eq!(lines[2], "|  |14|22|  |48|53|  |  |84|");
        assert_eq!(lines[3], "| 3|  |  |37|  |  |65|77|85|");
        assert_eq!(lines[5], lines[1]);
        assert_eq!(out.matches("+\n").count(), 12);
    }

    #[test]
    fn json_lines_parse_back() {
        let out = render(Format::Json, [(3, book()), (4, book())]);
        let docs: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0]["book"], 3);
        assert_eq!(docs[0]["tickets"][0][1][0], 3);
        assert!(docs[0]["tickets"][0][0][0].is_null());
        assert_eq!(docs[1]["tickets"][5][2][8], serde_json::Value::Null);
    }

    #[test]
    fn html_is_self_contained_with_a_page_a_book() {
        let out = render(Format::Html, [(3, book()), (4, book())]);
        assert!(out.starts_with("<!DOCTYPE html>"));
        assert!(out.contains("size:A4"));
        assert_eq!(out.matches("<section>").count(), 2);
        assert_eq!(out.matches("<table>").count(), 12);
        assert_eq!(out.matches("<td>").count(), 2 * 6 * 27);
        for external in ["http:", "https:", "src=", "href=", "@import", "url("] {
            assert!(!out.contains(external), "{external}");
        }
    }
}
