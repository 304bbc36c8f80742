//! The game's dimensions and its ticket patterns.
//!
//! A ticket is a grid of `rows` x `columns` cells; each row holds exactly `per_row` numbers,
//! each column at least one; column j holds numbers from its own range, increasing downwards.
//! Only the blank / filled pattern matters for structure, and a pattern's *category* is its
//! column-count vector (how many cells of each column are filled). Everything here is
//! parameterised by [`Game`], so tests can brute-force a shrunken game; the real one is
//! [`Game::standard`] (3 x 9, 5 a row, 6 tickets a book, numbers 1-90).

use std::sync::OnceLock;

use crate::problem::ProblemError;

/// Most columns a game may have (category keys pack 5 bits per column into a u64).
pub const MAX_COLUMNS: usize = 12;
/// Most rows a ticket may have.
pub const MAX_ROWS: usize = 4;
/// Most tickets a book may have.
pub const MAX_TICKETS: usize = 8;
/// Largest number a game may use (numbers travel as two decimal digits).
pub const MAX_NUMBER: usize = 99;
/// Most row combinations the pattern enumeration may visit.
const MAX_ENUMERATION: u64 = 20_000_000;
/// Most column-count vectors a game may have, (rows + 1)^columns: categories are found
/// through a dense table of this size.
const MAX_RADIX: u64 = 1 << 22;

/// A per-column count vector (only the first `columns` entries are used).
pub type Counts = [u8; MAX_COLUMNS];

/// Packs a count vector into a u64 key, 5 bits a column (column 0 in the low bits). Counts
/// never exceed 31, so keys of vectors add lane by lane without carries.
pub fn pack(counts: &Counts) -> u64 {
    counts.iter().enumerate().fold(0u64, |key, (column, &c)| {
        key | (u64::from(c) << (5 * column))
    })
}

/// The dimensions and number ranges of a housie-like game.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Game {
    rows: usize,
    per_row: usize,
    tickets: usize,
    column_first: Vec<u8>,
    column_sizes: Vec<u8>,
    /// Column of each number (index = number; `u8::MAX` = not a number of the game).
    column_of: Vec<u8>,
}

impl Game {
    /// The real game: 3 x 9 tickets with 5 numbers a row, 6 tickets a book; column 1 holds
    /// 1-9, columns 2-8 hold 10-19 ... 70-79, column 9 holds 80-90.
    pub fn standard() -> Game {
        let mut first = vec![1u8];
        let mut sizes = vec![9u8];
        for column in 1..8u8 {
            first.push(10 * column);
            sizes.push(10);
        }
        first.push(80);
        sizes.push(11);
        Game::new(3, 5, 6, first, sizes).expect("the standard game is valid")
    }

    /// The standard game, shared by the whole process.
    pub fn standard_shared() -> &'static Game {
        static GAME: OnceLock<Game> = OnceLock::new();
        GAME.get_or_init(Game::standard)
    }

    /// A game with consecutive column ranges starting at 1 (for shrunken test variants).
    pub fn consecutive(
        rows: usize,
        per_row: usize,
        tickets: usize,
        column_sizes: &[u8],
    ) -> Result<Game, ProblemError> {
        let mut first = Vec::with_capacity(column_sizes.len());
        let mut next = 1u32;
        for &size in column_sizes {
            first.push(u8::try_from(next).unwrap_or(u8::MAX));
            next += u32::from(size);
        }
        Game::new(rows, per_row, tickets, first, column_sizes.to_vec())
    }

    /// Validates a game: column ranges ascending and disjoint within 1..=99, every column able
    /// to give each ticket between 1 and `rows` numbers, and the numbers exactly filling a book.
    pub fn new(
        rows: usize,
        per_row: usize,
        tickets: usize,
        column_first: Vec<u8>,
        column_sizes: Vec<u8>,
    ) -> Result<Game, ProblemError> {
        let bad = |why: String| Err(ProblemError::InvalidParams(format!("housie game: {why}")));
        let columns = column_sizes.len();
        if !(1..=MAX_ROWS).contains(&rows) {
            return bad(format!("{rows} rows (1..={MAX_ROWS})"));
        }
        if !(1..=MAX_COLUMNS).contains(&columns) || column_first.len() != columns {
            return bad(format!(
                "{columns} columns (1..={MAX_COLUMNS}, one range each)"
            ));
        }
        if !(1..=columns).contains(&per_row) {
            return bad(format!("{per_row} numbers a row (1..={columns})"));
        }
        if !(1..=MAX_TICKETS).contains(&tickets) {
            return bad(format!("{tickets} tickets a book (1..={MAX_TICKETS})"));
        }
        let mut column_of = vec![u8::MAX; MAX_NUMBER + 1];
        let mut previous_end = 1usize;
        for (column, (&first, &size)) in column_first.iter().zip(&column_sizes).enumerate() {
            let (first, size) = (usize::from(first), usize::from(size));
            if size < tickets || size > rows * tickets || size > 31 {
                return bad(format!(
                    "column {} has {size} numbers; a book of {tickets} tickets needs {tickets}..={}",
                    column + 1,
                    (rows * tickets).min(31)
                ));
            }
            if first < previous_end || first + size - 1 > MAX_NUMBER {
                return bad(format!(
                    "column {} range {first}-{} overlaps or leaves 1..={MAX_NUMBER}",
                    column + 1,
                    first + size - 1
                ));
            }
            for slot in &mut column_of[first..first + size] {
                *slot = column as u8;
            }
            previous_end = first + size;
        }
        let numbers: usize = column_sizes.iter().map(|&s| usize::from(s)).sum();
        if numbers != tickets * rows * per_row {
            return bad(format!(
                "{numbers} numbers cannot fill {tickets} tickets of {rows} rows of {per_row}"
            ));
        }
        if (rows as u64 + 1).pow(columns as u32) > MAX_RADIX {
            return bad("too many possible column-count vectors to index".into());
        }
        let row_choices = binomial(columns as u64, per_row as u64);
        if row_choices
            .checked_pow(rows as u32)
            .is_none_or(|n| n > MAX_ENUMERATION)
        {
            return bad("too many row combinations to enumerate".into());
        }
        Ok(Game {
            rows,
            per_row,
            tickets,
            column_first,
            column_sizes,
            column_of,
        })
    }

    /// Rows of a ticket.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Columns of a ticket.
    pub fn columns(&self) -> usize {
        self.column_sizes.len()
    }
    /// Numbers in each row of a ticket.
    pub fn per_row(&self) -> usize {
        self.per_row
    }
    /// Tickets in a book.
    pub fn tickets(&self) -> usize {
        self.tickets
    }
    /// Cells of one ticket.
    pub fn cells(&self) -> usize {
        self.rows * self.columns()
    }
    /// The first number of each column.
    pub fn column_first(&self) -> &[u8] {
        &self.column_first
    }
    /// How many numbers each column has in a whole book.
    pub fn column_sizes(&self) -> &[u8] {
        &self.column_sizes
    }
    /// The column sizes as a count vector.
    pub fn size_counts(&self) -> Counts {
        let mut counts = [0u8; MAX_COLUMNS];
        counts[..self.columns()].copy_from_slice(&self.column_sizes);
        counts
    }
    /// The last number of the game.
    pub fn last_number(&self) -> u8 {
        let last = self.columns() - 1;
        self.column_first[last] + self.column_sizes[last] - 1
    }
    /// The dense index of a column-count vector: its digits in base rows + 1, column 0 the
    /// least significant.
    #[inline]
    pub fn radix(&self, counts: &Counts) -> usize {
        counts[..self.columns()]
            .iter()
            .rev()
            .fold(0usize, |index, &c| index * (self.rows + 1) + usize::from(c))
    }

    /// The column a number belongs to, or `None` when it is not a number of the game.
    pub fn column_of(&self, number: u8) -> Option<usize> {
        match self.column_of.get(usize::from(number)) {
            Some(&column) if column != u8::MAX => Some(usize::from(column)),
            _ => None,
        }
    }
    /// The numbers of a column, in increasing order.
    pub fn column_numbers(&self, column: usize) -> std::ops::Range<u8> {
        let first = self.column_first[column];
        first..first + self.column_sizes[column]
    }
}

/// n choose k (exact; callers keep n small).
pub fn binomial(n: u64, k: u64) -> u64 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    (0..k).fold(1u64, |acc, i| acc * (n - i) / (i + 1))
}

/// A ticket pattern: bit c of `rows[r]` is set when row r, column c is filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pattern {
    /// One bitmask per row (unused rows are 0).
    pub rows: [u16; MAX_ROWS],
}

impl Pattern {
    /// True when row `row`, column `column` is filled.
    pub fn filled(&self, row: usize, column: usize) -> bool {
        self.rows[row] >> column & 1 == 1
    }
}

/// A column-count vector with its patterns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Category {
    /// Filled cells per column.
    pub counts: Counts,
    /// Index of its first pattern in [`PatternTable::patterns`].
    pub first_pattern: u32,
    /// How many patterns it has.
    pub pattern_count: u32,
}

/// Every ticket pattern of a game, grouped by category. Categories are in increasing
/// order of [`Game::radix`] (column-count vectors compared from the last column), patterns
/// within a category in increasing order of their row masks (row 1 first): unit numbers
/// and sampled books depend on this order, so it is fixed.
#[derive(Debug)]
pub struct PatternTable {
    game: Game,
    categories: Vec<Category>,
    patterns: Vec<Pattern>,
    /// Category index by [`Game::radix`] (`u16::MAX` = not a category).
    index_by_radix: Vec<u16>,
}

impl PatternTable {
    /// The standard game's table, built once per process.
    pub fn standard() -> &'static PatternTable {
        static TABLE: OnceLock<PatternTable> = OnceLock::new();
        TABLE.get_or_init(|| PatternTable::new(Game::standard()))
    }

    /// Enumerates every pattern of `game` (each row one of the C(columns, per_row) masks,
    /// kept when every column is filled somewhere) twice: once to size the categories, once
    /// to place the patterns.
    pub fn new(game: Game) -> PatternTable {
        let columns = game.columns();
        let full = (1u16 << columns) - 1;
        let row_masks: Vec<u16> = (0..=full)
            .filter(|m| m.count_ones() as usize == game.per_row)
            .collect();
        // A row's contribution to the radix index of its ticket's column counts.
        let row_radix: Vec<usize> = row_masks
            .iter()
            .map(|&mask| {
                let mut counts = [0u8; MAX_COLUMNS];
                for (column, count) in counts.iter_mut().enumerate().take(columns) {
                    *count = (mask >> column & 1) as u8;
                }
                game.radix(&counts)
            })
            .collect();
        let radix_size = (game.rows + 1).pow(columns as u32);
        let mut sizes = vec![0u32; radix_size];
        let rows = game.rows;
        let rows_of = RowChoices {
            masks: &row_masks,
            radix: &row_radix,
            rows,
            full,
        };
        rows_of.visit(&mut |_, radix| sizes[radix] += 1);
        let mut index_by_radix = vec![u16::MAX; radix_size];
        let mut categories = Vec::new();
        let mut next_slot = vec![0u32; radix_size];
        let mut placed = 0u32;
        for (radix, &size) in sizes.iter().enumerate() {
            if size == 0 {
                continue;
            }
            index_by_radix[radix] = categories.len() as u16;
            let mut counts = [0u8; MAX_COLUMNS];
            let mut rest = radix;
            for count in counts.iter_mut().take(columns) {
                *count = (rest % (rows + 1)) as u8;
                rest /= rows + 1;
            }
            categories.push(Category {
                counts,
                first_pattern: placed,
                pattern_count: size,
            });
            next_slot[radix] = placed;
            placed += size;
        }
        let mut patterns = vec![
            Pattern {
                rows: [0; MAX_ROWS]
            };
            placed as usize
        ];
        rows_of.visit(&mut |pattern, radix| {
            patterns[next_slot[radix] as usize] = *pattern;
            next_slot[radix] += 1;
        });
        PatternTable {
            game,
            categories,
            patterns,
            index_by_radix,
        }
    }

    /// The game.
    pub fn game(&self) -> &Game {
        &self.game
    }
    /// Every category, in their fixed order.
    pub fn categories(&self) -> &[Category] {
        &self.categories
    }
    /// Every pattern, grouped by category.
    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }
    /// The patterns of category `index`.
    pub fn patterns_of(&self, index: usize) -> &[Pattern] {
        let c = &self.categories[index];
        &self.patterns[c.first_pattern as usize..(c.first_pattern + c.pattern_count) as usize]
    }
    /// The index of the category with these counts, if it is one.
    #[inline]
    pub fn category_index(&self, counts: &Counts) -> Option<usize> {
        if counts[..self.game.columns()]
            .iter()
            .any(|&c| usize::from(c) > self.game.rows)
        {
            return None;
        }
        match self.index_by_radix[self.game.radix(counts)] {
            u16::MAX => None,
            index => Some(usize::from(index)),
        }
    }
    /// The counts as text, one digit (or letter past 9) a column: `211112322`.
    pub fn counts_label(&self, counts: &Counts) -> String {
        counts[..self.game.columns()]
            .iter()
            .map(|&c| char::from_digit(u32::from(c), 36).unwrap_or('?'))
            .collect()
    }
}

/// The row masks of a game, for visiting every valid pattern in increasing order of
/// (row 1 mask, row 2 mask, ...).
struct RowChoices<'a> {
    masks: &'a [u16],
    radix: &'a [usize],
    rows: usize,
    full: u16,
}

impl RowChoices<'_> {
    /// Calls `visit(pattern, radix of its column counts)` for every pattern whose rows
    /// cover every column.
    fn visit(&self, visit: &mut dyn FnMut(&Pattern, usize)) {
        let mut pattern = Pattern {
            rows: [0; MAX_ROWS],
        };
        self.choose(0, 0, 0, &mut pattern, visit);
    }

    fn choose(
        &self,
        row: usize,
        covered: u16,
        radix: usize,
        pattern: &mut Pattern,
        visit: &mut dyn FnMut(&Pattern, usize),
    ) {
        if row + 1 == self.rows {
            for (&mask, &contribution) in self.masks.iter().zip(self.radix) {
                if covered | mask == self.full {
                    pattern.rows[row] = mask;
                    visit(pattern, radix + contribution);
                }
            }
            return;
        }
        for (&mask, &contribution) in self.masks.iter().zip(self.radix) {
            pattern.rows[row] = mask;
            self.choose(
                row + 1,
                covered | mask,
                radix + contribution,
                pattern,
                visit,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Counts matrices with the given row sum and column sums by a DP over columns whose
    /// state is the number of cells filled so far in each row (independent of the row-mask
    /// enumeration).
    fn patterns_by_columns(game: &Game, counts: &Counts) -> u64 {
        let rows = game.rows();
        let mut states: HashMap<Vec<usize>, u64> = HashMap::from([(vec![0; rows], 1)]);
        for &need in &counts[..game.columns()] {
            let mut next: HashMap<Vec<usize>, u64> = HashMap::new();
            for (state, ways) in &states {
                for subset in 0u32..1 << rows {
                    if subset.count_ones() != u32::from(need) {
                        continue;
                    }
                    let mut grown = state.clone();
                    for (r, filled) in grown.iter_mut().enumerate() {
                        *filled += (subset >> r & 1) as usize;
                    }
                    if grown.iter().all(|&f| f <= game.per_row()) {
                        *next.entry(grown).or_default() += ways;
                    }
                }
            }
            states = next;
        }
        states
            .get(&vec![game.per_row(); rows])
            .copied()
            .unwrap_or(0)
    }

    #[test]
    fn the_issue_states_735210_patterns_in_1554_categories() {
        let table = PatternTable::standard();
        assert_eq!(table.patterns().len(), 735_210);
        assert_eq!(table.categories().len(), 1_554);
    }

    #[test]
    fn category_sizes_agree_with_a_column_dp() {
        let table = PatternTable::standard();
        // The count depends only on the multiset of column counts, so check one category
        // of each sorted shape, plus a spread of others.
        let mut seen = std::collections::HashSet::new();
        for (index, category) in table.categories().iter().enumerate() {
            let mut sorted = category.counts;
            sorted.sort_unstable();
            if seen.insert(sorted) || index % 97 == 0 {
                assert_eq!(
                    patterns_by_columns(table.game(), &category.counts),
                    u64::from(category.pattern_count),
                    "category {}",
                    table.counts_label(&category.counts)
                );
            }
        }
        assert_eq!(seen.len(), 4);
    }

    #[test]
    fn every_pattern_obeys_the_rules_and_sits_in_its_category() {
        let table = PatternTable::new(Game::consecutive(3, 2, 2, &[3, 4, 5]).unwrap());
        let game = table.game();
        let mut total = 0;
        for (index, category) in table.categories().iter().enumerate() {
            for pattern in table.patterns_of(index) {
                total += 1;
                for row in 0..game.rows() {
                    assert_eq!(pattern.rows[row].count_ones() as usize, game.per_row());
                }
                for column in 0..game.columns() {
                    let filled = (0..game.rows()).filter(|&r| pattern.filled(r, column));
                    assert_eq!(filled.count() as u8, category.counts[column]);
                }
            }
        }
        // 3 rows each leaving out one of 3 columns, minus the 3 that leave one out thrice.
        assert_eq!(total, 27 - 3);
        assert_eq!(table.category_index(&table.categories()[5].counts), Some(5));
    }

    #[test]
    fn numbers_map_to_their_columns() {
        let game = Game::standard();
        assert_eq!(game.column_of(1), Some(0));
        assert_eq!(game.column_of(9), Some(0));
        assert_eq!(game.column_of(10), Some(1));
        assert_eq!(game.column_of(79), Some(7));
        assert_eq!(game.column_of(80), Some(8));
        assert_eq!(game.column_of(90), Some(8));
        assert_eq!(game.column_of(0), None);
        assert_eq!(game.column_of(91), None);
        assert_eq!(game.last_number(), 90);
    }

    #[test]
    fn impossible_games_are_refused() {
        assert!(Game::consecutive(3, 5, 6, &[9, 10, 10]).is_err());
        assert!(Game::consecutive(2, 2, 2, &[1, 3, 4]).is_err()); // a column below one a ticket
        assert!(Game::consecutive(2, 2, 2, &[2, 3, 4]).is_err()); // 9 numbers for 8 cells
        assert!(Game::consecutive(2, 2, 2, &[2, 3, 3]).is_ok());
        assert!(Game::new(2, 2, 2, vec![1, 2, 5], vec![2, 3, 3]).is_err()); // overlap
    }
}
