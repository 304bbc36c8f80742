//! The rules of tickets and books, checked in full on a grid. Every error names the rule
//! that is broken and where (book, ticket, row, column, counted from 1).

use super::book::Book;
use super::patterns::{Game, MAX_COLUMNS};

/// Checks ticket `ticket` of `book` (book number `number`, for messages): every number in
/// its column's range, exactly `per_row` numbers in each row, numbers increasing down each
/// column, and at least one number in each column. One pass, row by row.
pub fn check_ticket(game: &Game, book: &Book, number: u64, ticket: usize) -> Result<(), String> {
    let at = |row: usize, column: usize| {
        format!(
            "book {number} ticket {} row {} column {}",
            ticket + 1,
            row + 1,
            column + 1
        )
    };
    // The number highest so far in each column, and its row.
    let mut above = [(0u8, 0usize); MAX_COLUMNS];
    for row in 0..game.rows() {
        let mut filled = 0;
        for (column, &n) in book.row(ticket, row).iter().enumerate() {
            if n == 0 {
                continue;
            }
            filled += 1;
            if game.column_of(n) != Some(column) {
                let range = game.column_numbers(column);
                return Err(format!(
                    "{}: {n} is outside the column's numbers {}-{}",
                    at(row, column),
                    range.start,
                    range.end - 1
                ));
            }
            let (m, upper) = above[column];
            if m >= n {
                return Err(format!(
                    "book {number} ticket {} column {}: {m} in row {} is above {n} in row {}; \
                     numbers in a column increase downwards",
                    ticket + 1,
                    column + 1,
                    upper + 1,
                    row + 1
                ));
            }
            above[column] = (n, row);
        }
        if filled != game.per_row() {
            return Err(format!(
                "book {number} ticket {} row {}: holds {filled} numbers; every row holds \
                 exactly {}",
                ticket + 1,
                row + 1,
                game.per_row()
            ));
        }
    }
    if let Some(column) = (0..game.columns()).find(|&c| above[c].0 == 0) {
        return Err(format!(
            "book {number} ticket {} column {}: is empty; every column holds at least one \
             number",
            ticket + 1,
            column + 1
        ));
    }
    Ok(())
}

/// Checks a whole book: every ticket (see [`check_ticket`]), and every number of the game
/// used exactly once across the tickets.
pub fn check_book(game: &Game, book: &Book, number: u64) -> Result<(), String> {
    if (book.tickets(), book.rows(), book.columns())
        != (game.tickets(), game.rows(), game.columns())
    {
        return Err(format!(
            "book {number}: the grid does not have the game's shape"
        ));
    }
    for ticket in 0..game.tickets() {
        check_ticket(game, book, number, ticket)?;
    }
    // Where each number was first seen: (ticket, row) + 1, 0 = not yet.
    let mut seen = [(0u8, 0u8); super::patterns::MAX_NUMBER + 1];
    for ticket in 0..game.tickets() {
        for row in 0..game.rows() {
            for &n in book.row(ticket, row).iter().filter(|&&n| n != 0) {
                let slot = &mut seen[usize::from(n)];
                if slot.0 != 0 {
                    return Err(format!(
                        "book {number}: {n} appears twice (ticket {} row {} and ticket {} \
                         row {}); a book uses every number exactly once",
                        slot.0,
                        slot.1,
                        ticket + 1,
                        row + 1
                    ));
                }
                *slot = (ticket as u8 + 1, row as u8 + 1);
            }
        }
    }
    // Every row is full and every number in its column's range, so the book has exactly as
    // many numbers as the game (Game::new checks the sizes add up): with no number twice,
    // none is missing.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A valid standard book, made outside grind (a seeded random pattern search in a
    /// scripting language). Ticket 1 reads:
    /// ```text
    /// .. 14 22 .. 48 53 .. .. 84
    ///  3 .. .. 37 .. .. 65 77 85
    ///  7 19 .. .. .. .. 69 79 87
    /// ```
    const VALID: &str = "1:1422485384.0337657785.0719697987\
        /2141556272.0428465878.0917304782/1024315074.3342667583.0525384356\
        /2032517380.0212405964.2636456786/1152637181.1323345789.0627497690\
        /0115293560.1654617088.0818394468";

    fn valid() -> (Game, u64, Book) {
        let game = Game::standard();
        let (number, book) = Book::decode(&game, &VALID.replace(' ', "")).unwrap();
        (game, number, book)
    }

    fn broken(edit: impl FnOnce(&mut Book)) -> String {
        let (game, number, mut book) = valid();
        edit(&mut book);
        check_book(&game, &book, number).expect_err("accepted")
    }

    #[test]
    fn the_reference_book_is_valid() {
        let (game, number, book) = valid();
        check_book(&game, &book, number).unwrap();
    }

    #[test]
    fn a_number_outside_its_column_is_named() {
        let err = broken(|b| b.set(0, 0, 1, 25));
        assert!(
            err.contains(
                "book 1 ticket 1 row 1 column 2: 25 is outside the column's numbers 10-19"
            ),
            "{err}"
        );
    }

    #[test]
    fn rows_hold_exactly_five() {
        let err = broken(|b| b.set(0, 0, 0, 1));
        assert!(err.contains("ticket 1 row 1: holds 6 numbers"), "{err}");
        let err = broken(|b| b.set(5, 2, 0, 0));
        assert!(err.contains("ticket 6 row 3: holds 4 numbers"), "{err}");
    }

    #[test]
    fn columns_increase_downwards() {
        let err = broken(|b| {
            b.set(0, 1, 0, 7);
            b.set(0, 2, 0, 3);
        });
        assert!(
            err.contains("ticket 1 column 1: 7 in row 2 is above 3 in row 3"),
            "{err}"
        );
    }

    #[test]
    fn no_column_is_empty() {
        let err = broken(|b| {
            b.set(0, 1, 3, 0);
            b.set(0, 1, 1, 15);
        });
        assert!(err.contains("ticket 1 column 4: is empty"), "{err}");
    }

    #[test]
    fn every_number_once() {
        let err = broken(|b| b.set(1, 1, 0, 3));
        assert!(
            err.contains("3 appears twice (ticket 1 row 2 and ticket 2 row 2)"),
            "{err}"
        );
    }

    /// The rules restated as plainly as possible, to check the verifier against.
    fn naive_valid(game: &Game, book: &Book) -> bool {
        let mut used = Vec::new();
        for t in 0..game.tickets() {
            for r in 0..game.rows() {
                let row = book.row(t, r);
                if row.iter().filter(|&&n| n != 0).count() != game.per_row() {
                    return false;
                }
            }
            for c in 0..game.columns() {
                let column: Vec<u8> = (0..game.rows())
                    .map(|r| book.cell(t, r, c))
                    .filter(|&n| n != 0)
                    .collect();
                let range = game.column_numbers(c);
                if column.is_empty()
                    || column.windows(2).any(|w| w[0] >= w[1])
                    || column.iter().any(|n| !range.contains(n))
                {
                    return false;
                }
                used.extend(column);
            }
        }
        used.sort_unstable();
        used == (1..=90).collect::<Vec<u8>>()
    }

    proptest! {
        #[test]
        fn verdicts_match_the_plain_rules(
            edits in proptest::collection::vec((0usize..6, 0usize..3, 0usize..9, 0u8..=95), 1..4),
        ) {
            let (game, number, mut book) = valid();
            for (t, r, c, n) in edits {
                let n = if n > 90 { 0 } else { n };
                book.set(t, r, c, n);
            }
            let verdict = check_book(&game, &book, number);
            prop_assert_eq!(verdict.is_ok(), naive_valid(&game, &book), "{:?}", verdict);
        }
    }
}
