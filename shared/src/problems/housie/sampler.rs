//! Exactly uniform random books.
//!
//! A book is drawn in three steps:
//! 1. the tickets' categories, one ticket at a time: with `r` the numbers left per column
//!    and t tickets to go, category v is chosen with probability
//!    tau(v) G_{t-1}(r - v) / G_t(r), where tau are [`factored_weights`] (patterns times
//!    the multinomial share of the numbers) and G_t(r) sums the products of tau over every
//!    way to complete t tickets. The draw is an exact integer: a uniform value below G_t(r)
//!    (rejection on random bits), located in a precomputed cumulative table;
//! 2. a uniform pattern within each category;
//! 3. a uniform deal of each column's numbers: a uniformly shuffled sequence of ticket
//!    labels, ticket i appearing v_ij times, receives the numbers in increasing order, so
//!    every split of the column into shares of the right sizes is equally likely and each
//!    share arrives sorted, ready to go down its column.
//!
//! Every filled-in book comes from exactly one (categories, patterns, deal), and the three
//! steps give it probability prod_i tau(v_i) / G_T(n) * prod_i 1 / P(v_i) *
//! prod_j prod_i v_ij! / n_j!, which is the same for every book. (Choosing a uniform book
//! *pattern* and then uniform numbers instead is not uniform over books:
//! [`Target::BookPatterns`] does exactly that, for the statistical test that must tell the
//! two apart.)
//!
//! G is symmetric under permuting columns, so tables are kept only for sorted remainders:
//! at a remainder r, the columns are sorted (remembering the permutation), a category is
//! drawn for the sorted remainder and mapped back; likewise a pattern is drawn from the
//! category with sorted counts and its columns moved into place. The standard game has
//! 173 sorted remainders with tables (93,886 candidates) and its largest weight total G_6
//! is below 2^127, so every weight fits in a u128; table building checks every addition
//! and multiplication and refuses a game where they would overflow. Each remainder also
//! has a 256-bucket guide table, so a draw usually reads one or two table entries instead
//! of binary searching (the tables are larger than the fast caches).

use std::collections::HashMap;
use std::sync::OnceLock;

use super::book::Book;
use super::counting::{factored_weights, feasible, sorted, Numbering};
use super::patterns::{pack, Counts, Pattern, PatternTable, MAX_COLUMNS, MAX_ROWS, MAX_TICKETS};
use super::rng::Rng;
use crate::problem::ProblemError;
use crate::rng::Random;

/// What the sampler is uniform over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Every filled-in book equally likely (the point of this module).
    Books,
    /// Every book pattern equally likely, then uniform numbers: NOT uniform over books.
    BookPatterns,
}

/// Buckets of a guide table: a draw's top 8 bits pick the candidate to start scanning from.
const GUIDE_BUCKETS: usize = 256;

/// The cumulative draw table of one sorted remainder.
#[derive(Clone, Copy, Debug)]
struct Draw {
    /// Sum of the candidates' weights (G_t of the remainder).
    total: u128,
    /// The candidates' range in [`Sampler::cumulative`] / [`Sampler::choice`].
    start: u32,
    end: u32,
    /// Where its `GUIDE_BUCKETS + 1` guide entries start in [`Sampler::guides`].
    guide: u32,
    /// A value v below `total` falls in bucket v >> shift (fewer than 256 buckets).
    shift: u32,
}

/// The sorted remainders with a given number of tickets to go.
#[derive(Debug, Default)]
struct Level {
    /// Packed sorted remainders, increasing (binary searched).
    keys: Vec<u64>,
    /// Their draw tables, same order.
    draws: Vec<Draw>,
}

/// Precomputed tables for drawing books of one game.
#[derive(Debug)]
pub struct Sampler<'a> {
    table: &'a PatternTable,
    /// Index = tickets to go (levels 0 and 1 are empty: the last ticket is forced).
    levels: Vec<Level>,
    /// Inclusive prefix sums of candidate weights, per remainder.
    cumulative: Vec<u128>,
    /// The category (index into the pattern table) of each candidate, in sorted columns.
    choice: Vec<u16>,
    /// Guide tables: entry k of a remainder's table is the first candidate whose cumulative
    /// weight exceeds k << shift, so a draw in bucket k is found by scanning from there.
    guides: Vec<u32>,
    /// Per category: the category with its counts sorted, and where each of the sorted
    /// category's columns is (`sorted.counts[k] == counts[columns[k]]`). Patterns are drawn
    /// from the sorted category and moved to the category's columns: the patterns of a
    /// category are exactly those of its sorted category with the columns permuted, and the
    /// few sorted categories' patterns stay in cache.
    sorted_of: Vec<(u16, [u8; MAX_COLUMNS])>,
    /// G_T of the game's column sizes: the factored number of books.
    total: u128,
}

/// Reusable buffers for [`Sampler::sample_into`].
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    labels: Vec<u8>,
}

impl Sampler<'static> {
    /// The standard game's uniform book sampler, built once per process.
    pub fn standard() -> Result<&'static Sampler<'static>, ProblemError> {
        static SAMPLER: OnceLock<Result<Sampler<'static>, ProblemError>> = OnceLock::new();
        SAMPLER
            .get_or_init(|| Sampler::new(PatternTable::standard(), Target::Books))
            .as_ref()
            .map_err(Clone::clone)
    }
}

impl<'a> Sampler<'a> {
    /// Builds the draw tables of every sorted remainder reachable from the column sizes.
    pub fn new(table: &'a PatternTable, target: Target) -> Result<Sampler<'a>, ProblemError> {
        let game = table.game();
        let (columns, rows, tickets) = (game.columns(), game.rows(), game.tickets());
        let numbering = match target {
            Target::Books => Numbering::Numbered,
            Target::BookPatterns => Numbering::Patterns,
        };
        let (weights, _) = factored_weights(table, numbering)?;
        let overflow = || ProblemError::Solver("housie: sampler weights overflow 128 bits".into());
        let mut completions = Completions {
            table,
            weights: &weights,
            memo: vec![HashMap::new(); tickets + 1],
        };
        let start = sorted(&game.size_counts(), columns);
        let total = completions.get(tickets, &start)?;
        if total == 0 {
            return Err(ProblemError::InvalidParams(
                "housie: this game has no books".into(),
            ));
        }
        let mut levels: Vec<Level> = (0..=tickets).map(|_| Level::default()).collect();
        let mut cumulative = Vec::new();
        let mut choice = Vec::new();
        let mut guides = Vec::new();
        let mut frontier = vec![pack(&start)];
        for to_go in (2..=tickets).rev() {
            frontier.sort_unstable();
            frontier.dedup();
            let mut next = Vec::new();
            for &key in &frontier {
                let state = unpack(key, columns);
                let first = cumulative.len();
                let mut running: u128 = 0;
                for (index, category) in table.categories().iter().enumerate() {
                    let Some(rest) = subtract(&state, &category.counts, columns) else {
                        continue;
                    };
                    if !feasible(&rest, columns, rows, to_go - 1) {
                        continue;
                    }
                    let rest = sorted(&rest, columns);
                    let ways = completions.get(to_go - 1, &rest)?;
                    if ways == 0 {
                        continue;
                    }
                    let weight = weights[index].checked_mul(ways).ok_or_else(overflow)?;
                    running = running.checked_add(weight).ok_or_else(overflow)?;
                    cumulative.push(running);
                    choice.push(index as u16);
                    next.push(pack(&rest));
                }
                debug_assert_eq!(Some(running), completions.get(to_go, &state).ok());
                if running == 0 {
                    continue; // unreachable: a remainder is only kept when it has completions
                }
                let shift = (128 - (running - 1).leading_zeros()).saturating_sub(8);
                let candidates = &cumulative[first..];
                let guide = guides.len() as u32;
                guides.extend((0..=GUIDE_BUCKETS as u128).map(|bucket| {
                    let floor = bucket.checked_shl(shift).unwrap_or(u128::MAX);
                    (first + candidates.partition_point(|&c| c <= floor)) as u32
                }));
                levels[to_go].keys.push(key);
                levels[to_go].draws.push(Draw {
                    total: running,
                    start: first as u32,
                    end: cumulative.len() as u32,
                    guide,
                    shift,
                });
            }
            frontier = next;
        }
        let sorted_of = table
            .categories()
            .iter()
            .map(|category| {
                let order = sort_order(&category.counts, columns);
                let mut counts = [0u8; MAX_COLUMNS];
                for (slot, &column) in counts.iter_mut().zip(&order[..columns]) {
                    *slot = category.counts[usize::from(column)];
                }
                let index = table
                    .category_index(&counts)
                    .expect("a category's sorted counts are a category");
                (index as u16, order)
            })
            .collect();
        Ok(Sampler {
            table,
            levels,
            cumulative,
            choice,
            guides,
            sorted_of,
            total,
        })
    }

    /// The pattern table the sampler draws from.
    pub fn table(&self) -> &'a PatternTable {
        self.table
    }

    /// G_T of the game: the factored number of books (`Target::Books`: books times
    /// L^T / prod_j n_j!, see [`factored_weights`]; `Target::BookPatterns`: book patterns).
    pub fn factored_total(&self) -> u128 {
        self.total
    }

    /// Number of sorted remainders with tables, and of table entries.
    pub fn table_sizes(&self) -> (usize, usize) {
        let states = self.levels.iter().map(|l| l.keys.len()).sum();
        (states, self.cumulative.len())
    }

    /// Draws one book into `book` (which must be [`Book::blank`] of the same game, in any
    /// state), reusing `scratch`.
    pub fn sample_into(&self, rng: &mut Rng, book: &mut Book, scratch: &mut Scratch) {
        let game = self.table.game();
        let (columns, rows, tickets) = (game.columns(), game.rows(), game.tickets());
        let categories = self.table.categories();
        let mut remaining = game.size_counts();
        let mut shares = [[0u8; MAX_COLUMNS]; MAX_TICKETS];
        let mut patterns = [Pattern {
            rows: [0; MAX_ROWS],
        }; MAX_TICKETS];
        for ticket in 0..tickets {
            let to_go = tickets - ticket;
            // The remainder's columns in increasing order of count, and the category drawn
            // for the sorted remainder (for the last ticket: the whole remainder).
            let order = sort_order(&remaining, columns);
            let mut state = [0u8; MAX_COLUMNS];
            for (slot, &column) in state.iter_mut().zip(&order[..columns]) {
                *slot = remaining[usize::from(column)];
            }
            let chosen = if to_go == 1 {
                self.table.category_index(&state)
            } else {
                self.draw(rng, to_go, &state)
            }
            .expect("sampler tables cover every reachable remainder");
            let counts = &categories[chosen].counts;
            for (k, &column) in order[..columns].iter().enumerate() {
                let column = usize::from(column);
                shares[ticket][column] = counts[k];
                remaining[column] -= counts[k];
            }
            // A uniform pattern of the chosen category, drawn from its sorted category and
            // moved to the book's columns.
            let (sorted_index, to_chosen) = &self.sorted_of[chosen];
            let options = self.table.patterns_of(usize::from(*sorted_index));
            let drawn = options[rng.below(options.len() as u64) as usize];
            for (row, mask) in drawn.rows[..rows].iter().enumerate() {
                let mut moved = 0u16;
                for k in 0..columns {
                    let column = order[usize::from(to_chosen[k])];
                    moved |= (mask >> k & 1) << column;
                }
                patterns[ticket].rows[row] = moved;
            }
        }
        book.clear();
        // Numbers: a uniform arrangement of each column's ticket labels (ticket i appearing
        // v_ij times) hands the column's numbers, in increasing order, to the tickets; each
        // ticket's share then goes down its filled cells in order, so it is sorted.
        for column in 0..columns {
            scratch.labels.clear();
            for (ticket, share) in shares[..tickets].iter().enumerate() {
                scratch.labels.extend(std::iter::repeat_n(
                    ticket as u8,
                    usize::from(share[column]),
                ));
            }
            rng.shuffle(&mut scratch.labels);
            let mut next_row = [0usize; MAX_TICKETS];
            for (number, &ticket) in game.column_numbers(column).zip(&scratch.labels) {
                let ticket = usize::from(ticket);
                let pattern = &patterns[ticket];
                let mut row = next_row[ticket];
                while !pattern.filled(row, column) {
                    row += 1;
                }
                debug_assert!(row < rows, "share matches the pattern");
                book.set(ticket, row, column, number);
                next_row[ticket] = row + 1;
            }
        }
    }

    /// Draws the next ticket's category for a sorted remainder with `to_go` tickets to go:
    /// a uniform value below the remainder's total weight, located through its guide table.
    fn draw(&self, rng: &mut Rng, to_go: usize, state: &Counts) -> Option<usize> {
        let level = &self.levels[to_go];
        let at = level.keys.binary_search(&pack(state)).ok()?;
        let draw = level.draws[at];
        let value = rng.below_u128(draw.total);
        let bucket = (value >> draw.shift) as usize;
        let mut pick = self.guides[draw.guide as usize + bucket] as usize;
        // The first candidate whose cumulative weight exceeds the value; the last one's is
        // the total, so the scan stops inside the table.
        while self.cumulative[pick] <= value {
            pick += 1;
        }
        debug_assert!((draw.start as usize..draw.end as usize).contains(&pick));
        Some(usize::from(self.choice[pick]))
    }
}

/// The first `columns` column numbers ordered by increasing count (a stable insertion sort,
/// so ties keep their order and the result is deterministic).
fn sort_order(counts: &Counts, columns: usize) -> [u8; MAX_COLUMNS] {
    let mut order = [0u8; MAX_COLUMNS];
    for column in 0..columns {
        let value = counts[column];
        let mut at = column;
        while at > 0 && counts[usize::from(order[at - 1])] > value {
            order[at] = order[at - 1];
            at -= 1;
        }
        order[at] = column as u8;
    }
    order
}

/// Unpacks a key made by [`pack`].
fn unpack(key: u64, columns: usize) -> Counts {
    let mut counts = [0u8; MAX_COLUMNS];
    for (column, slot) in counts.iter_mut().enumerate().take(columns) {
        *slot = (key >> (5 * column) & 31) as u8;
    }
    counts
}

/// `state - counts` column by column, or `None` if a column would go negative.
fn subtract(state: &Counts, counts: &Counts, columns: usize) -> Option<Counts> {
    let mut rest = [0u8; MAX_COLUMNS];
    for column in 0..columns {
        rest[column] = state[column].checked_sub(counts[column])?;
    }
    Some(rest)
}

/// G_t(r): the sum over every way to fill t tickets with column totals r of the product of
/// the categories' factored weights, memoised on sorted r, in checked u128 arithmetic.
struct Completions<'t> {
    table: &'t PatternTable,
    weights: &'t [u128],
    memo: Vec<HashMap<u64, u128>>,
}

impl Completions<'_> {
    fn get(&mut self, to_go: usize, remaining: &Counts) -> Result<u128, ProblemError> {
        let game = self.table.game();
        let (columns, rows) = (game.columns(), game.rows());
        if to_go == 0 {
            return Ok(u128::from(remaining.iter().all(|&r| r == 0)));
        }
        if !feasible(remaining, columns, rows, to_go) {
            return Ok(0);
        }
        let state = sorted(remaining, columns);
        let key = pack(&state);
        if let Some(&known) = self.memo[to_go].get(&key) {
            return Ok(known);
        }
        let overflow = || ProblemError::Solver("housie: sampler weights overflow 128 bits".into());
        let mut total: u128 = 0;
        for (index, category) in self.table.categories().iter().enumerate() {
            let Some(rest) = subtract(&state, &category.counts, columns) else {
                continue;
            };
            let ways = self.get(to_go - 1, &rest)?;
            if ways != 0 {
                let weight = self.weights[index].checked_mul(ways).ok_or_else(overflow)?;
                total = total.checked_add(weight).ok_or_else(overflow)?;
            }
        }
        self.memo[to_go].insert(key, total);
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problems::housie::counting::TicketDp;
    use crate::problems::housie::patterns::Game;
    use crate::problems::housie::verify::check_book;
    use num_bigint::BigUint;
    use num_traits::ToPrimitive;

    /// The chi-square value exceeded with probability `alpha` (Wilson-Hilferty), for the
    /// `z` of `alpha`'s upper normal quantile.
    fn chi_square_critical(degrees: f64, z: f64) -> f64 {
        let h = 2.0 / (9.0 * degrees);
        degrees * (1.0 - h + z * h.sqrt()).powi(3)
    }

    /// Upper normal quantile of 0.001.
    const Z_0_001: f64 = 3.090_232;

    fn draw(sampler: &Sampler, seed: u64, books: usize, mut each: impl FnMut(&Book)) {
        let mut rng = Rng::seeded(seed);
        let mut book = Book::blank(sampler.table().game());
        let mut scratch = Scratch::default();
        for _ in 0..books {
            sampler.sample_into(&mut rng, &mut book, &mut scratch);
            each(&book);
        }
    }

    #[test]
    fn tables_agree_with_the_ticket_dp() {
        let table = PatternTable::standard();
        let game = table.game();
        let books: BigUint = crate::problems::housie::counting::standard_books_by_first_ticket()
            .iter()
            .sum();
        let sampler = Sampler::standard().unwrap();
        let (_, lcd) = factored_weights(table, Numbering::Numbered).unwrap();
        let factorials: BigUint = game
            .column_sizes()
            .iter()
            .map(|&n| (1..=u64::from(n)).product::<BigUint>())
            .product();
        assert_eq!(
            BigUint::from(sampler.factored_total()) * factorials,
            books * BigUint::from(lcd).pow(game.tickets() as u32)
        );
        assert_eq!(
            BigUint::from(pattern_first().factored_total()),
            TicketDp::new(table, Numbering::Patterns).total()
        );
    }

    #[test]
    fn sampled_books_are_valid_and_reproducible() {
        let sampler = Sampler::standard().unwrap();
        let game = sampler.table().game();
        let mut first = Vec::new();
        draw(sampler, 11, 300, |book| {
            check_book(game, book, 1).unwrap();
            first.push(book.encode(1));
        });
        let mut again = Vec::new();
        draw(sampler, 11, 300, |book| again.push(book.encode(1)));
        assert_eq!(first, again);
        let mut other = Vec::new();
        draw(sampler, 12, 300, |book| other.push(book.encode(1)));
        assert_ne!(first, other);
    }

    /// Chi-square of the books drawn against "every one of `total` books equally likely".
    fn chi_square_over_books(sampler: &Sampler, total: u64, draws: usize) -> (f64, usize) {
        let game = sampler.table().game();
        let mut seen: HashMap<String, u64> = HashMap::new();
        draw(sampler, 5, draws, |book| {
            check_book(game, book, 1).unwrap();
            *seen.entry(book.encode(1)).or_default() += 1;
        });
        assert!(seen.len() as u64 <= total);
        let expected = draws as f64 / total as f64;
        let observed: f64 = seen
            .values()
            .map(|&o| (o as f64 - expected).powi(2) / expected)
            .sum();
        let unseen = (total - seen.len() as u64) as f64 * expected;
        (observed + unseen, seen.len())
    }

    #[test]
    fn every_book_of_a_shrunken_game_is_equally_likely() {
        // 3 x 3 tickets, 2 a row, 2 tickets, columns of 3, 4, 5 numbers: 8,640 books, in
        // book patterns of two sizes (120 and 180 books), so drawing a uniform pattern first
        // is detectably wrong.
        let table = PatternTable::new(Game::consecutive(3, 2, 2, &[3, 4, 5]).unwrap());
        let total = TicketDp::new(&table, Numbering::Numbered)
            .total()
            .to_u64()
            .unwrap();
        // Four draws a book on average: the statistic's variance stays close to 2 df, and
        // the pattern-first sampler's excess (about 0.037 per draw) clears the critical
        // value by several standard deviations.
        let draws = 4 * total as usize;
        let critical = chi_square_critical(total as f64 - 1.0, Z_0_001);
        let uniform = Sampler::new(&table, Target::Books).unwrap();
        let (chi, seen) = chi_square_over_books(&uniform, total, draws);
        assert!(
            chi < critical,
            "uniform sampler: chi-square {chi} >= {critical}"
        );
        assert!(
            seen as u64 > total * 9 / 10,
            "only {seen} of {total} books seen"
        );
        let by_pattern = Sampler::new(&table, Target::BookPatterns).unwrap();
        let (chi, _) = chi_square_over_books(&by_pattern, total, draws);
        assert!(
            chi > critical,
            "pattern-first sampler passed: {chi} < {critical}"
        );
    }

    /// The standard game's sampler uniform over book patterns (not books), built once.
    fn pattern_first() -> &'static Sampler<'static> {
        static SAMPLER: std::sync::OnceLock<Sampler<'static>> = std::sync::OnceLock::new();
        SAMPLER
            .get_or_init(|| Sampler::new(PatternTable::standard(), Target::BookPatterns).unwrap())
    }

    /// The exact distribution of how many numbers the first ticket holds in `column`, from
    /// the per-category counts of the ticket DP. (Reversing the order of a book's tickets
    /// is a bijection of books, so the last ticket has the same distribution.)
    fn exact_column_share(table: &PatternTable, column: usize) -> Vec<f64> {
        let counts = crate::problems::housie::counting::standard_books_by_first_ticket();
        let mut by_share = vec![BigUint::default(); table.game().rows() + 1];
        for (category, count) in table.categories().iter().zip(counts) {
            by_share[usize::from(category.counts[column])] += count;
        }
        let total: BigUint = by_share.iter().sum();
        // Probabilities to 1e-15 are plenty for expected counts.
        let scale = BigUint::from(10u64).pow(15);
        by_share
            .iter()
            .map(|c| (c * &scale / &total).to_f64().unwrap() / 1e15)
            .collect()
    }

    /// Chi-square statistics (ticket 1 column 1, last ticket last column) of `books` books.
    fn marginal_chi_squares(sampler: &Sampler, books: usize, exact: &[Vec<f64>; 2]) -> [f64; 2] {
        let game = sampler.table().game();
        let (last_ticket, last_column) = (game.tickets() - 1, game.columns() - 1);
        let mut observed = [vec![0u64; game.rows() + 1], vec![0u64; game.rows() + 1]];
        draw(sampler, 2026, books, |book| {
            let share = |ticket, column| {
                (0..game.rows())
                    .filter(|&row| book.cell(ticket, row, column) != 0)
                    .count()
            };
            observed[0][share(0, 0)] += 1;
            observed[1][share(last_ticket, last_column)] += 1;
        });
        [0, 1].map(|which| {
            observed[which]
                .iter()
                .zip(&exact[which])
                .filter(|(_, &p)| p > 0.0)
                .map(|(&o, &p)| {
                    let e = p * books as f64;
                    (o as f64 - e).powi(2) / e
                })
                .sum()
        })
    }

    /// Shares 1..3 of a column (0 is impossible): 2 degrees of freedom each. Two tests at
    /// 0.05% each make a false alarm rate of at most 0.1%; for 2 degrees of freedom the
    /// critical value is exactly -2 ln(0.0005).
    fn critical_for_two_shares() -> f64 {
        -2.0 * 0.0005f64.ln()
    }

    fn exact_shares() -> [Vec<f64>; 2] {
        let table = PatternTable::standard();
        [exact_column_share(table, 0), exact_column_share(table, 8)]
    }

    #[test]
    fn ticket_column_shares_match_their_exact_distributions() {
        let critical = critical_for_two_shares();
        let chi = marginal_chi_squares(Sampler::standard().unwrap(), 20_000, &exact_shares());
        assert!(
            chi.iter().all(|&c| c < critical),
            "uniform sampler: {chi:?} (critical {critical})"
        );
    }

    #[test]
    fn a_pattern_first_generator_fails_the_same_test() {
        let critical = critical_for_two_shares();
        let chi = marginal_chi_squares(pattern_first(), 20_000, &exact_shares());
        assert!(
            chi.iter().all(|&c| c > critical),
            "pattern-first sampler passed: {chi:?} (critical {critical})"
        );
    }
}
