//! A filled-in book and its compact wire form.
//!
//! In memory a book is a grid of cells, ticket by ticket, row by row (0 = blank). On the
//! wire (a sample is one JSON string) it is `"<book number>:<ticket>/<ticket>/..."`, a
//! ticket being its rows separated by `.`, a row its numbers as two decimal digits each, in
//! column order: `"17:0414335781.1222405466.0928456779/..."` (about 200 characters for a
//! standard book). A number's column follows from its value, so the blanks need no
//! characters. Decoding places each number in its column and refuses text that cannot be
//! placed; whether the grid obeys the game's rules is [`super::verify`]'s job.

use std::fmt::Write;

use super::patterns::{Game, MAX_ROWS, MAX_TICKETS};

/// "00", "01", ..., "99" back to back.
const TWO_DIGITS: &str = "00010203040506070809101112131415161718192021222324252627282930313233343536373839\
404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

/// The cells of every ticket of a book (0 = blank).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Book {
    tickets: usize,
    rows: usize,
    columns: usize,
    cells: Vec<u8>,
}

impl Book {
    /// An all-blank book for `game`.
    pub fn blank(game: &Game) -> Book {
        Book {
            tickets: game.tickets(),
            rows: game.rows(),
            columns: game.columns(),
            cells: vec![0; game.tickets() * game.cells()],
        }
    }

    /// Tickets in the book.
    pub fn tickets(&self) -> usize {
        self.tickets
    }
    /// Rows of each ticket.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns of each ticket.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// The number in a cell (0 = blank).
    #[inline]
    pub fn cell(&self, ticket: usize, row: usize, column: usize) -> u8 {
        self.cells[(ticket * self.rows + row) * self.columns + column]
    }

    /// Sets a cell (0 = blank).
    #[inline]
    pub fn set(&mut self, ticket: usize, row: usize, column: usize, number: u8) {
        self.cells[(ticket * self.rows + row) * self.columns + column] = number;
    }

    /// Blanks every cell.
    pub fn clear(&mut self) {
        self.cells.fill(0);
    }

    /// One row of one ticket.
    pub fn row(&self, ticket: usize, row: usize) -> &[u8] {
        let start = (ticket * self.rows + row) * self.columns;
        &self.cells[start..start + self.columns]
    }

    /// Appends the wire form of book number `number` to `out`.
    pub fn encode_into(&self, number: u64, out: &mut String) {
        let _ = write!(out, "{number}:");
        for ticket in 0..self.tickets {
            if ticket > 0 {
                out.push('/');
            }
            for row in 0..self.rows {
                if row > 0 {
                    out.push('.');
                }
                for &n in self.row(ticket, row).iter().filter(|&&n| n != 0) {
                    let at = 2 * usize::from(n);
                    out.push_str(&TWO_DIGITS[at..at + 2]);
                }
            }
        }
    }

    /// The wire form of book number `number`.
    pub fn encode(&self, number: u64) -> String {
        let mut out = String::with_capacity(8 + self.cells.len() * 2);
        self.encode_into(number, &mut out);
        out
    }

    /// Parses the wire form for `game`: the book's number and its grid. Errors name what is
    /// malformed and where (ticket and row, counted from 1).
    pub fn decode(game: &Game, text: &str) -> Result<(u64, Book), String> {
        let (number, body) = text
            .split_once(':')
            .ok_or_else(|| "expected \"<book number>:<tickets>\"".to_string())?;
        if number.is_empty() || number.len() > 19 || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("book number {number:?} is not a decimal number"));
        }
        let number: u64 = number
            .parse()
            .map_err(|_| format!("book number {number:?} is out of range"))?;
        // One scan for the structure: where each row's text starts and ends.
        let (tickets, rows) = (game.tickets(), game.rows());
        let mut bounds = [(0usize, 0usize); MAX_TICKETS * MAX_ROWS];
        let (mut t, mut r, mut start) = (0usize, 0usize, 0usize);
        let wrong_rows = |t: usize, r: usize| {
            format!(
                "book {number} ticket {}: {r} rows separated by '.', expected {rows}",
                t + 1
            )
        };
        for (at, &byte) in body.as_bytes().iter().enumerate() {
            if byte != b'.' && byte != b'/' {
                continue;
            }
            if t < tickets && r < rows {
                bounds[t * rows + r] = (start, at);
            }
            start = at + 1;
            if byte == b'.' {
                r += 1;
            } else {
                if r + 1 != rows {
                    return Err(wrong_rows(t, r + 1));
                }
                (t, r) = (t + 1, 0);
            }
        }
        if t + 1 != tickets {
            return Err(format!(
                "book {number}: {} tickets separated by '/', expected {tickets}",
                t + 1
            ));
        }
        if r + 1 != rows {
            return Err(wrong_rows(t, r + 1));
        }
        bounds[t * rows + r] = (start, body.len());
        let mut book = Book::blank(game);
        for (index, &(from, to)) in bounds[..tickets * rows].iter().enumerate() {
            book.decode_row(game, number, index / rows, index % rows, &body[from..to])?;
        }
        Ok((number, book))
    }

    /// Places the numbers of one row's wire text (ticket `t`, row `r`, from 0).
    fn decode_row(
        &mut self,
        game: &Game,
        number: u64,
        t: usize,
        r: usize,
        row: &str,
    ) -> Result<(), String> {
        let place = || format!("book {number} ticket {} row {}", t + 1, r + 1);
        let digits = row.as_bytes();
        if !digits.len().is_multiple_of(2) || !digits.iter().all(u8::is_ascii_digit) {
            return Err(format!(
                "{}: {row:?} is not a run of two-digit numbers",
                place()
            ));
        }
        let mut previous: Option<(usize, u8)> = None;
        for pair in digits.chunks_exact(2) {
            let n = (pair[0] - b'0') * 10 + (pair[1] - b'0');
            let column = game.column_of(n).ok_or_else(|| {
                format!(
                    "{}: {n:02} is not a number of the game (1-{})",
                    place(),
                    game.last_number()
                )
            })?;
            if let Some((before, m)) = previous {
                if before == column {
                    return Err(format!(
                        "{}, column {}: {m:02} and {n:02} are both in this column, and a \
                         cell holds one number",
                        place(),
                        column + 1
                    ));
                }
                if before > column {
                    return Err(format!(
                        "{}: {m:02} comes before {n:02}; numbers are listed in column order",
                        place()
                    ));
                }
            }
            self.set(t, r, column, n);
            previous = Some((column, n));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample_book() -> Book {
        let game = Game::consecutive(2, 2, 2, &[2, 3, 3]).unwrap();
        let mut book = Book::blank(&game);
        // Ticket 1: rows {1, 3}, {2, 6}; ticket 2: rows {4, 7}, {5, 8}.
        book.set(0, 0, 0, 1);
        book.set(0, 0, 1, 3);
        book.set(0, 1, 0, 2);
        book.set(0, 1, 2, 6);
        book.set(1, 0, 1, 4);
        book.set(1, 0, 2, 7);
        book.set(1, 1, 1, 5);
        book.set(1, 1, 2, 8);
        book
    }

    #[test]
    fn two_digit_table_is_right() {
        for n in 0..100usize {
            assert_eq!(&TWO_DIGITS[2 * n..2 * n + 2], format!("{n:02}"));
        }
    }

    #[test]
    fn wire_form_round_trips() {
        let game = Game::consecutive(2, 2, 2, &[2, 3, 3]).unwrap();
        let book = sample_book();
        let text = book.encode(42);
        assert_eq!(text, "42:0103.0206/0407.0508");
        assert_eq!(Book::decode(&game, &text).unwrap(), (42, book));
    }

    #[test]
    fn malformed_text_is_named() {
        let game = Game::consecutive(2, 2, 2, &[2, 3, 3]).unwrap();
        for (text, needle) in [
            ("0103.0206/0407.0508", "<book number>"),
            ("x:0103.0206/0407.0508", "not a decimal"),
            ("1:0103.0206", "1 tickets"),
            ("1:0103.0206/0407.0508/0103.0206", "3 tickets"),
            ("1:0103.0206/0407.0508.", "ticket 2: 3 rows"),
            ("1:0103/0407.0508", "ticket 1: 1 rows"),
            ("1:013.0206/0407.0508", "ticket 1 row 1"),
            ("1:0109.0206/0407.0508", "09 is not a number"),
            (
                "1:0103.0206/0405.0508",
                "ticket 2 row 1, column 2: 04 and 05",
            ),
            ("1:0301.0206/0407.0508", "column order"),
        ] {
            let err = Book::decode(&game, text).expect_err(text);
            assert!(err.contains(needle), "{text}: {err}");
        }
    }

    proptest! {
        #[test]
        fn any_text_decodes_or_is_refused_without_panicking(text in "[0-9./:]{0,60}") {
            let game = Game::consecutive(2, 2, 2, &[2, 3, 3]).unwrap();
            if let Ok((number, book)) = Book::decode(&game, &text) {
                let again = book.encode(number);
                prop_assert_eq!(Book::decode(&game, &again).unwrap(), (number, book));
            }
        }
    }
}
