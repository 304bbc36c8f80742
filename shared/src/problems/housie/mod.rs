//! `housie` (tambola, 90-ball bingo): exact counts and exactly uniform books.
//!
//! A ticket is a 3 x 9 grid; each row holds exactly 5 numbers, each column at least one;
//! column 1 holds numbers from 1-9, columns 2-8 from 10-19 ... 70-79, column 9 from 80-90,
//! increasing downwards. A book is 6 tickets using each of 1..90 exactly once.
//!
//! * `housie count [--what books|patterns|tickets]` (count objective): the number of filled-in
//!   books (ordered 6-tuples of tickets), of book patterns (ordered 6-tuples of blank/filled
//!   patterns whose column counts add up to 9, 10, ..., 10, 11), or of filled-in single
//!   tickets. One unit per category (column-count vector) of the first ticket; a unit's
//!   result is the exact count of those whose first ticket is in that category
//!   ([`counting::TicketDp`]; cross-checked in tests by [`counting::count_by_halves`] and by
//!   brute force on shrunken games).
//! * `housie books --count M [--seed S] [--unit U] [--format text|json|html]` (sample
//!   objective): M books drawn exactly uniformly over filled-in books ([`sampler`]), in units
//!   of U books, each unit with its own random stream derived from (S, unit number), so the
//!   same parameters always give the same books. Every book travels in a compact wire form
//!   ([`book`]) and is fully checked by [`verify`] before the coordinator accepts it; the
//!   export (`grind run ... --out FILE`) renders them in book order ([`render`]).

pub mod book;
pub mod counting;
mod drawing;
pub mod patterns;
pub mod render;
pub mod rng;
pub mod sampler;
pub mod verify;

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Mutex;

use crate::problem::{
    codec, Chains, Objective, Placement, Presentation, Problem, ProblemError, SolveContext,
    SplitBatch, UnitOutcome, UnitSpec, Units, Verification,
};
use crate::registry::ProblemDef;
use book::Book;
use counting::{Numbering, TicketDp};
use patterns::PatternTable;
use render::Format;
use sampler::{Sampler, Scratch};

/// Most books one campaign may draw. The export renders every book into one string in
/// memory (`Presentation::render_samples`), next to the stored samples: about 1.5 GB of peak
/// memory for a million books as text, 1.9 GB as HTML.
pub const MAX_BOOKS: u64 = 1_000_000;
/// Most books one unit may hold (they travel in one message).
pub const MAX_UNIT: u64 = 200_000;
/// Default books per unit: large enough that per-unit overhead is small, small enough to
/// spread over workers.
pub const DEFAULT_UNIT: u64 = 20_000;
/// Room for one book's wire form (about 204 bytes; the book number takes up to 7 digits).
const WIRE_CAPACITY: usize = 216;
/// Books generated between two stop checks and progress reports.
const BOOKS_PER_CHECK: u64 = 2_000;

/// What a housie campaign does.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Exact counts (see `--what`).
    Count,
    /// Exactly uniform random books.
    Books,
}

/// What `count` counts.
#[derive(ValueEnum, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum What {
    /// Filled-in books: ordered 6-tuples of tickets using 1..90 once each.
    #[default]
    Books,
    /// Book patterns: ordered 6-tuples of blank/filled patterns with column totals
    /// 9, 10, ..., 10, 11.
    Patterns,
    /// Filled-in single tickets.
    Tickets,
}

/// Parameters of housie.
#[derive(Args, Serialize, Deserialize, Clone, Debug)]
pub struct HousieParams {
    /// `count`: exact counts (see --what); `books`: exactly uniform random books.
    #[arg(value_enum)]
    pub mode: Mode,
    /// count: what to count (filled-in books, book patterns or filled-in single tickets).
    #[arg(long, value_enum, default_value_t = What::Books)]
    #[serde(default)]
    pub what: What,
    /// books: how many books to draw.
    #[arg(long)]
    #[serde(default)]
    pub count: Option<u64>,
    /// books: the random seed; the same seed and --unit always give the same books.
    #[arg(long, default_value_t = 1)]
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// books: books per unit.
    #[arg(long, default_value_t = DEFAULT_UNIT)]
    #[serde(default = "default_unit")]
    pub unit: u64,
    /// books: the export format of `--out` (text grids, JSON lines, or HTML for A4).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    #[serde(default)]
    pub format: Format,
}

fn default_seed() -> u64 {
    1
}

fn default_unit() -> u64 {
    DEFAULT_UNIT
}

/// A housie campaign.
pub struct Housie {
    params: HousieParams,
    /// Count mode: the memo of the ticket DP, filled by the first unit and shared by the
    /// rest solved in this process.
    dp: Mutex<Option<TicketDp<'static>>>,
}

impl ProblemDef for Housie {
    const NAME: &'static str = "housie";
    const ABOUT: &'static str =
        "housie / tambola books: exact counts, or exactly uniform random books";
    const SOLVER_VERSION: u32 = 1;
    type Params = HousieParams;

    fn from_params(mut params: HousieParams) -> Result<Self, ProblemError> {
        match params.mode {
            Mode::Count => {
                if params.count.is_some() {
                    return Err(ProblemError::InvalidParams(
                        "housie count: --count is for `housie books`".into(),
                    ));
                }
                // Book-only settings do not change a count: store them as defaults, so the
                // same count is always the same campaign.
                params.seed = default_seed();
                params.unit = default_unit();
                params.format = Format::default();
            }
            Mode::Books => {
                match params.count {
                    Some(count) if (1..=MAX_BOOKS).contains(&count) => {}
                    Some(count) => {
                        return Err(ProblemError::InvalidParams(format!(
                            "housie books: --count {count} is out of range 1..={MAX_BOOKS}"
                        )))
                    }
                    None => {
                        return Err(ProblemError::InvalidParams(
                            "housie books needs --count (how many books)".into(),
                        ))
                    }
                }
                if !(1..=MAX_UNIT).contains(&params.unit) {
                    return Err(ProblemError::InvalidParams(format!(
                        "housie books: --unit {} is out of range 1..={MAX_UNIT}",
                        params.unit
                    )));
                }
                params.what = What::default();
            }
        }
        Ok(Housie {
            params,
            dp: Mutex::new(None),
        })
    }

    fn canonical(&self) -> Option<HousieParams> {
        Some(self.params.clone())
    }

    /// Counting single tickets, and a few units of random books.
    fn examples() -> Vec<Value> {
        vec![
            serde_json::json!({"mode": "count", "what": "tickets"}),
            serde_json::json!({"mode": "books", "count": 12, "unit": 5, "seed": 3}),
        ]
    }
}

impl Housie {
    fn books(&self) -> u64 {
        self.params.count.unwrap_or(0)
    }

    fn units(&self) -> u64 {
        match self.params.mode {
            Mode::Count => PatternTable::standard().categories().len() as u64,
            Mode::Books => self.books().div_ceil(self.params.unit),
        }
    }

    /// The unit `index`: its label and payload.
    fn unit(&self, index: u64) -> UnitSpec {
        match self.params.mode {
            Mode::Count => {
                let table = PatternTable::standard();
                let counts = &table.categories()[index as usize].counts;
                UnitSpec {
                    label: format!("first ticket {}", table.counts_label(counts)),
                    payload: codec::encode_u64s(&[index]),
                }
            }
            Mode::Books => {
                let first = index * self.params.unit + 1;
                let last = (first + self.params.unit - 1).min(self.books());
                UnitSpec {
                    label: format!("books {first}-{last}"),
                    payload: codec::encode_u64s(&[index, first, last - first + 1]),
                }
            }
        }
    }

    fn solve_count(&self, payload: &[u8]) -> Result<UnitOutcome, ProblemError> {
        let [index] = codec::decode_u64s::<1>(payload, "housie count unit")?;
        let table = PatternTable::standard();
        if index >= table.categories().len() as u64 {
            return Err(ProblemError::InvalidUnit(format!(
                "housie count unit: category {index} does not exist (there are {})",
                table.categories().len()
            )));
        }
        let index = index as usize;
        let count = match self.params.what {
            What::Tickets => counting::single_tickets(table, index),
            What::Books | What::Patterns => {
                let numbering = if self.params.what == What::Books {
                    Numbering::Numbered
                } else {
                    Numbering::Patterns
                };
                let mut dp = self.dp.lock().unwrap_or_else(|p| p.into_inner());
                dp.get_or_insert_with(|| TicketDp::new(table, numbering))
                    .first_ticket(index)
            }
        };
        Ok(UnitOutcome::Count(count))
    }

    fn solve_books(
        &self,
        payload: &[u8],
        ctx: &dyn SolveContext,
    ) -> Result<UnitOutcome, ProblemError> {
        let [index, first, books] = codec::decode_u64s::<3>(payload, "housie books unit")?;
        if index >= self.units() || self.unit(index).payload != payload {
            return Err(ProblemError::InvalidUnit(format!(
                "housie books unit ({index}, {first}, {books}) is not a unit of this campaign"
            )));
        }
        let sampler = Sampler::standard()?;
        let game = sampler.table().game();
        let mut rng = rng::for_unit(self.params.seed, index);
        let mut book = Book::blank(game);
        let mut scratch = Scratch::default();
        let mut samples = Vec::with_capacity(books as usize);
        for done in 0..books {
            if done % BOOKS_PER_CHECK == 0 {
                if ctx.stop_requested() {
                    return Ok(UnitOutcome::Stopped);
                }
                ctx.progress(done, Some(done as f64 / books as f64));
            }
            sampler.sample_into(&mut rng, &mut book, &mut scratch);
            let mut text = String::with_capacity(WIRE_CAPACITY);
            book.encode_into(first + done, &mut text);
            samples.push(Value::String(text));
        }
        Ok(UnitOutcome::Samples(samples))
    }

    /// Decodes and fully checks one sampled book.
    fn check_sample(&self, sample: &Value) -> Result<(u64, Book), ProblemError> {
        let bad = |why: String| ProblemError::InvalidSolution(format!("housie: {why}"));
        let text = sample
            .as_str()
            .ok_or_else(|| bad("a book is a JSON string".into()))?;
        let game = patterns::Game::standard_shared();
        let (number, book) = Book::decode(game, text).map_err(bad)?;
        if number == 0 || number > self.books() {
            return Err(bad(format!(
                "book number {number} is outside this campaign's 1..={}",
                self.books()
            )));
        }
        verify::check_book(game, &book, number).map_err(bad)?;
        Ok((number, book))
    }
}

impl Problem for Housie {
    fn objective(&self) -> Objective {
        match self.params.mode {
            Mode::Count => Objective::Count,
            Mode::Books => Objective::Sample,
        }
    }

    fn split(&self, cursor: Option<&[u8]>, max_units: usize) -> Result<SplitBatch, ProblemError> {
        let units = self.units();
        let mut next = match cursor {
            None => 0,
            Some(bytes) => codec::decode_u64s::<1>(bytes, "housie split cursor")?[0],
        };
        if next > units {
            return Err(ProblemError::InvalidUnit(format!(
                "housie split cursor {next} is past the last unit {units}"
            )));
        }
        let mut batch = Vec::new();
        while next < units && batch.len() < max_units {
            batch.push(self.unit(next));
            next += 1;
        }
        Ok(SplitBatch {
            units: batch,
            next: (next < units).then(|| codec::encode_u64s(&[next])),
        })
    }

    fn solve(&self, payload: &[u8], ctx: &dyn SolveContext) -> Result<UnitOutcome, ProblemError> {
        match self.params.mode {
            Mode::Count => self.solve_count(payload),
            Mode::Books => self.solve_books(payload, ctx),
        }
    }
}

impl Verification for Housie {
    fn verify_sample(&self, sample: &Value) -> Result<(), ProblemError> {
        if self.params.mode != Mode::Books {
            return Err(ProblemError::Unsupported(
                "housie count produces no samples".into(),
            ));
        }
        self.check_sample(sample).map(|_| ())
    }
}

impl Units for Housie {}

impl Chains for Housie {}

impl Placement for Housie {}

impl Presentation for Housie {
    /// Renders the books in book order, in the campaign's `--format`. The samples were
    /// verified when they arrived, so they are only decoded here (one at a time, to keep
    /// memory down); any that do not decode (none can) are left out.
    fn render_samples(&self, samples: &[Value]) -> String {
        let game = patterns::Game::standard_shared();
        let mut order: Vec<(u64, &str)> = samples
            .iter()
            .filter_map(|sample| {
                let text = sample.as_str()?;
                let number = text.split_once(':')?.0.parse().ok()?;
                Some((number, text))
            })
            .collect();
        order.sort_unstable_by_key(|(number, _)| *number);
        render::render(
            self.params.format,
            order
                .into_iter()
                .filter_map(|(_, text)| Book::decode(game, text).ok()),
        )
    }

    fn drawing(&self, solution: &Value) -> Option<crate::drawing::Drawing> {
        drawing::draw(solution)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::LocalContext;
    use crate::registry;
    use proptest::prelude::*;

    fn params(mode: Mode) -> HousieParams {
        HousieParams {
            mode,
            what: What::Books,
            count: None,
            seed: 1,
            unit: DEFAULT_UNIT,
            format: Format::Text,
        }
    }

    fn books(count: u64, unit: u64, seed: u64) -> Housie {
        Housie::from_params(HousieParams {
            count: Some(count),
            unit,
            seed,
            ..params(Mode::Books)
        })
        .unwrap()
    }

    fn all_units(problem: &Housie, batch: usize) -> Vec<UnitSpec> {
        let mut cursor: Option<Vec<u8>> = None;
        let mut units = Vec::new();
        loop {
            let next = problem.split(cursor.as_deref(), batch).unwrap();
            assert!(next.units.len() <= batch);
            units.extend(next.units);
            match next.next {
                Some(c) => cursor = Some(c),
                None => return units,
            }
        }
    }

    fn samples(problem: &Housie, unit: &UnitSpec) -> Vec<Value> {
        match problem
            .solve(&unit.payload, &LocalContext::default())
            .unwrap()
        {
            UnitOutcome::Samples(samples) => samples,
            other => panic!("unexpected outcome {other:?}"),
        }
    }

    #[test]
    fn the_command_line_shapes_parse() {
        let entry = registry::lookup("housie").unwrap();
        let parse = |args: &[&str]| {
            let cmd = entry.augment_args(clap::Command::new("housie").no_binary_name(true));
            let matches = cmd.try_get_matches_from(args).unwrap();
            entry.build(&entry.params_from_matches(&matches).unwrap())
        };
        let (canonical, problem) = parse(&["count"]).unwrap();
        assert_eq!(canonical["mode"], "count");
        assert_eq!(canonical["what"], "books");
        assert_eq!(problem.objective(), Objective::Count);
        let (canonical, problem) = parse(&[
            "books", "--count", "1000000", "--seed", "7", "--format", "html",
        ])
        .unwrap();
        assert_eq!(canonical["count"], 1_000_000);
        assert_eq!(canonical["format"], "html");
        assert_eq!(problem.objective(), Objective::Sample);
        assert!(parse(&["count", "--what", "patterns"]).is_ok());
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        let cases = [
            (
                HousieParams {
                    count: Some(5),
                    ..params(Mode::Count)
                },
                "--count",
            ),
            (params(Mode::Books), "--count"),
            (
                HousieParams {
                    count: Some(MAX_BOOKS + 1),
                    ..params(Mode::Books)
                },
                "--count",
            ),
            (
                HousieParams {
                    count: Some(10),
                    unit: 0,
                    ..params(Mode::Books)
                },
                "--unit",
            ),
        ];
        for (bad, flag) in cases {
            let err = Housie::from_params(bad).err().expect("accepted");
            assert!(
                err.to_string().contains("housie") && err.to_string().contains(flag),
                "{err}"
            );
        }
    }

    #[test]
    fn count_units_are_the_categories_and_add_up() {
        let count = Housie::from_params(HousieParams {
            what: What::Tickets,
            ..params(Mode::Count)
        })
        .unwrap();
        let units = all_units(&count, 500);
        assert_eq!(units.len(), 1_554);
        assert_eq!(units[0].label, "first ticket 333111111");
        let mut total = num_bigint::BigUint::default();
        for unit in &units {
            match count
                .solve(&unit.payload, &LocalContext::default())
                .unwrap()
            {
                UnitOutcome::Count(c) => total += c,
                other => panic!("unexpected outcome {other:?}"),
            }
        }
        let table = PatternTable::standard();
        let by_category: num_bigint::BigUint = (0..table.categories().len())
            .map(|i| counting::single_tickets(table, i))
            .sum();
        assert_eq!(total, by_category);
        assert!(count
            .solve(&codec::encode_u64s(&[1_554]), &LocalContext::default())
            .is_err());
        assert!(count.solve(&[1, 2, 3], &LocalContext::default()).is_err());
    }

    #[test]
    fn book_units_are_reproducible_verified_and_rendered_in_order() {
        let problem = books(25, 10, 7);
        let units = all_units(&problem, 2);
        let labels: Vec<&str> = units.iter().map(|u| u.label.as_str()).collect();
        assert_eq!(labels, ["books 1-10", "books 11-20", "books 21-25"]);
        let mut all = Vec::new();
        for unit in units.iter().rev() {
            let got = samples(&problem, unit);
            assert_eq!(got, samples(&problem, unit), "same unit, same books");
            for sample in &got {
                problem.verify_sample(sample).unwrap();
            }
            all.extend(got);
        }
        assert_eq!(all.len(), 25);
        // A different seed gives different books.
        let other = books(25, 10, 8);
        assert_ne!(samples(&other, &units[0]), samples(&problem, &units[0]));
        // Export: units finished out of order come out in book order.
        let text = problem.render_samples(&all);
        let titles: Vec<&str> = text.lines().filter(|l| l.starts_with("Book ")).collect();
        let expected: Vec<String> = (1..=25).map(|n| format!("Book {n}")).collect();
        assert_eq!(titles, expected);
    }

    #[test]
    fn forged_samples_are_refused_with_the_rule() {
        let problem = books(25, 10, 7);
        let unit = all_units(&problem, 1).remove(0);
        let good = samples(&problem, &unit).remove(0);
        let text = good.as_str().unwrap().to_string();
        let forged = [
            (Value::from(5), "JSON string"),
            (
                Value::from(text.replacen("1:", "26:", 1)),
                "outside this campaign",
            ),
            (
                Value::from(text.replacen("1:", "0:", 1)),
                "outside this campaign",
            ),
            (Value::from(text.replacen('/', "", 1)), "ticket 1: 5 rows"),
            (Value::from(format!("{text}00")), "not a number of the game"),
        ];
        for (sample, needle) in forged {
            let err = problem.verify_sample(&sample).expect_err("accepted");
            assert!(err.to_string().contains(needle), "{err}");
        }
        // A grid that breaks a rule is refused with the rule's message.
        let (number, mut book) = Book::decode(patterns::Game::standard_shared(), &text).unwrap();
        let column = (0..9).find(|&c| book.cell(0, 0, c) != 0).unwrap();
        book.set(0, 0, column, 0);
        let err = problem
            .verify_sample(&Value::from(book.encode(number)))
            .expect_err("accepted");
        assert!(
            err.to_string().contains("ticket 1 row 1: holds 4 numbers"),
            "{err}"
        );
    }

    #[test]
    fn a_stop_request_stops_a_book_unit() {
        let problem = books(10_000, 10_000, 1);
        let unit = all_units(&problem, 1).remove(0);
        let ctx = LocalContext::stopping_after(0);
        assert_eq!(
            problem.solve(&unit.payload, &ctx).unwrap(),
            UnitOutcome::Stopped
        );
    }

    #[test]
    fn garbage_units_and_cursors_are_errors() {
        let problem = books(25, 10, 7);
        for payload in [
            vec![],
            codec::encode_u64s(&[0, 1]),
            codec::encode_u64s(&[0, 1, 11]),
            codec::encode_u64s(&[3, 31, 10]),
            codec::encode_u64s(&[1, 1, 10]),
        ] {
            assert!(problem.solve(&payload, &LocalContext::default()).is_err());
        }
        assert!(problem.split(Some(&codec::encode_u64s(&[4])), 1).is_err());
        assert!(problem.split(Some(&[1, 2]), 1).is_err());
        assert!(problem.verify_sample(&Value::from("1:")).is_err());
    }

    proptest! {
        #[test]
        fn book_units_cover_every_book_once(count in 1u64..500, unit in 1u64..120, batch in 1usize..9) {
            let problem = books(count, unit, 1);
            let mut next = 1;
            for spec in all_units(&problem, batch) {
                let [_, first, size] = codec::decode_u64s::<3>(&spec.payload, "t").unwrap();
                prop_assert_eq!(first, next);
                prop_assert!(size >= 1 && size <= unit);
                next += size;
            }
            prop_assert_eq!(next, count + 1);
        }
    }
}
