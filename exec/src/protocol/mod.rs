//! The solver's stdout line protocol: the MaxSAT Evaluation format as it is, plus `g` lines.
//!
//! [`Parser`] is push-based: feed it the bytes of the solver's stdout in chunks of any size
//! ([`Parser::feed`]) and call [`Parser::finish`] at end of file; both return typed
//! [`Event`]s. It never panics, whatever the bytes (a proptest checks this).
//!
//! Lines (a trailing `\r` is ignored, fields are separated by ASCII whitespace):
//!
//! | line | event |
//! |---|---|
//! | `c <anything>` | [`Event::Comment`] |
//! | `o <cost>` | [`Event::Cost`]; also completes the model collected for the previous cost |
//! | `v <anything>` | one line of the model for the latest `o` (several `v` lines form one model) |
//! | `s OPTIMUM FOUND` / `SATISFIABLE` / `UNSATISFIABLE` / `UNKNOWN` | [`Event::Status`]; completes a pending model |
//! | `g progress <fraction>` | [`Event::Progress`] (a number in 0..=1) |
//! | `g count <decimal>` | [`Event::Count`] (count campaigns; a non-negative integer of any size) |
//! | `g checkpoint` | [`Event::Checkpoint`]: a checkpoint was written (renamed into place) in `GRIND_CHECKPOINT_DIR` |
//! | empty line | nothing |
//!
//! A model is the run of `v` lines printed after the latest `o` line. It is complete, and
//! becomes [`Event::Solution`] with the claimed cost of that `o` line and the `v` lines exactly
//! as printed (each with its `\n`), when the next `o` or `s` line arrives or at end of file.
//! `c` and `g` lines between `v` lines do not end a model. This accepts every order real
//! MaxSAT solvers use: `v` after every `o`; `o` lines as they improve and the model only once
//! at the end; `s` before `o`, or `s` between the last `o` and the model. The runner also
//! completes a model when the solver's output goes quiet after a complete `v` line
//! ([`Parser::flush`]), so an improvement is streamed while the solver searches on; `v` lines
//! for the same `o` after that extend it (print a several-line model in one go).
//!
//! Costs are integers (`i64`, decimal, optional sign). An `o` line whose value is not one (a
//! float, an overflow, garbage, nothing) gives [`Diagnostic::InvalidCost`], and the model that
//! follows it is no claim: it is dropped with [`Diagnostic::ModelDropped`]. A solver for a
//! real-valued objective must print it scaled to integers. `v` lines with no `o` line before
//! them are dropped the same way (a model without a claimed cost is not an improvement).
//!
//! Unknown lines, lines longer than the limit and lines that are not UTF-8 give a
//! [`Diagnostic`] and are otherwise ignored; such a broken line inside a model drops that model
//! (it could be a cut `v` line). A last line without `\n` at end of file (typically a solver
//! killed while printing) is ignored with [`Diagnostic::UnterminatedLine`] and drops a pending
//! model for the same reason.

use num_bigint::BigUint;
use std::fmt;

/// Default longest line accepted (bytes, without the newline): 64 MiB, room for a `v` line of
/// a 64-million-variable model.
pub const DEFAULT_MAX_LINE: usize = 64 << 20;

/// The `s` line's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// `s OPTIMUM FOUND`: the solver claims its last solution is optimal (a claim only).
    OptimumFound,
    /// `s SATISFIABLE`: a solution was found, optimality not claimed.
    Satisfiable,
    /// `s UNSATISFIABLE`: the solver claims there is no solution.
    Unsatisfiable,
    /// `s UNKNOWN`: nothing found.
    Unknown,
}

impl Status {
    /// The text after `s ` for this status.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::OptimumFound => "OPTIMUM FOUND",
            Status::Satisfiable => "SATISFIABLE",
            Status::Unsatisfiable => "UNSATISFIABLE",
            Status::Unknown => "UNKNOWN",
        }
    }
}

/// A complete solution as the solver claimed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Solution {
    /// The cost of the `o` line this model belongs to (claimed, not checked).
    pub claimed: i64,
    /// The `v` lines exactly as printed, each ending in `\n`.
    pub text: String,
}

/// What is wrong with a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Diagnostic {
    /// A line that is none of `c`, `o`, `v`, `s`, `g` (its start, at most 80 characters).
    UnknownLine { line: u64, start: String },
    /// An `o` line whose value is not a decimal `i64`.
    InvalidCost { line: u64, text: String },
    /// An `s` line with a status other than the four known ones.
    UnknownStatus { line: u64, text: String },
    /// A `g` line with an unknown key or a bad value.
    InvalidGrindLine { line: u64, text: String },
    /// A line longer than the limit (it was skipped).
    LineTooLong { line: u64, max: usize },
    /// A line that is not valid UTF-8 (it was skipped).
    InvalidUtf8 { line: u64 },
    /// The output ended in the middle of a line (it was ignored).
    UnterminatedLine { line: u64 },
    /// A model that is not a claim, and why.
    ModelDropped { line: u64, reason: String },
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diagnostic::UnknownLine { line, start } => {
                write!(f, "line {line}: unknown line {start:?} (expected c, o, v, s or g)")
            }
            Diagnostic::InvalidCost { line, text } => write!(
                f,
                "line {line}: `o` needs a decimal integer cost (i64), got {text:?}"
            ),
            Diagnostic::UnknownStatus { line, text } => write!(
                f,
                "line {line}: unknown status {text:?} (expected OPTIMUM FOUND, SATISFIABLE, UNSATISFIABLE or UNKNOWN)"
            ),
            Diagnostic::InvalidGrindLine { line, text } => write!(
                f,
                "line {line}: bad grind line {text:?} (expected `g progress <0..1>`, `g count <n>` or `g checkpoint`)"
            ),
            Diagnostic::LineTooLong { line, max } => {
                write!(f, "line {line}: longer than the limit of {max} bytes; skipped")
            }
            Diagnostic::InvalidUtf8 { line } => write!(f, "line {line}: not UTF-8; skipped"),
            Diagnostic::UnterminatedLine { line } => {
                write!(f, "line {line}: output ended without a newline; last line ignored")
            }
            Diagnostic::ModelDropped { line, reason } => {
                write!(f, "line {line}: model dropped: {reason}")
            }
        }
    }
}

/// One thing the solver said.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// `c ...`: the text after `c ` (or empty).
    Comment(String),
    /// `o <cost>`: a claimed improvement; its model may follow.
    Cost(i64),
    /// A complete model with its claimed cost.
    Solution(Solution),
    /// `s ...`.
    Status(Status),
    /// `g progress <fraction>`.
    Progress(f64),
    /// `g count <decimal>`.
    Count(BigUint),
    /// `g checkpoint`.
    Checkpoint,
    /// A line that could not be used, and why.
    Diagnostic(Diagnostic),
}

/// The model being collected.
#[derive(Debug)]
enum Model {
    /// No `v` lines since the last `o` (or ever).
    None,
    /// `v` lines for a valid cost.
    Collecting { cost: i64, text: String },
    /// `v` lines that will not become a claim (already reported).
    Dropping,
    /// A model completed by [`Parser::flush`]; further `v` lines for the same cost extend
    /// it, and it is completed again with all its lines.
    Flushed { cost: i64, text: String },
}

/// Incremental parser of a solver's stdout (see the module docs for the protocol).
#[derive(Debug)]
pub struct Parser {
    max_line: usize,
    buf: Vec<u8>,
    /// Skipping the rest of an overlong line.
    skipping: bool,
    line_no: u64,
    /// The latest `o` cost, `None` before any or after an invalid one.
    cost: Option<i64>,
    /// Whether the latest `o` line was invalid (so its model is dropped).
    cost_invalid: bool,
    model: Model,
}

impl Default for Parser {
    fn default() -> Self {
        Parser::new(DEFAULT_MAX_LINE)
    }
}

impl Parser {
    /// A parser accepting lines of at most `max_line` bytes.
    pub fn new(max_line: usize) -> Parser {
        Parser {
            max_line: max_line.max(1),
            buf: Vec::new(),
            skipping: false,
            line_no: 0,
            cost: None,
            cost_invalid: false,
            model: Model::None,
        }
    }

    /// Feeds the next bytes of output; returns the events of the lines they complete.
    pub fn feed(&mut self, mut bytes: &[u8]) -> Vec<Event> {
        let mut events = Vec::new();
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let (part, rest) = match newline {
                Some(i) => (&bytes[..i], Some(&bytes[i + 1..])),
                None => (bytes, None),
            };
            if !self.skipping {
                if self.buf.len() + part.len() > self.max_line {
                    self.skipping = true;
                    self.buf.clear();
                    self.line_no += 1;
                    let line = self.line_no;
                    events.push(Event::Diagnostic(Diagnostic::LineTooLong {
                        line,
                        max: self.max_line,
                    }));
                    self.broken_line(line, "it contains a line that was too long", &mut events);
                } else {
                    self.buf.extend_from_slice(part);
                }
            }
            match rest {
                Some(rest) => {
                    if self.skipping {
                        self.skipping = false;
                    } else {
                        self.line_no += 1;
                        let line = std::mem::take(&mut self.buf);
                        self.line(&line, &mut events);
                    }
                    bytes = rest;
                }
                None => bytes = &[],
            }
        }
        events
    }

    /// Ends the output: completes a pending model and reports an unterminated last line.
    pub fn finish(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        if !self.buf.is_empty() {
            self.line_no += 1;
            let line = self.line_no;
            self.buf.clear();
            events.push(Event::Diagnostic(Diagnostic::UnterminatedLine { line }));
            self.broken_line(
                line,
                "the output ended in the middle of a line",
                &mut events,
            );
        }
        self.skipping = false;
        self.complete_model(&mut events);
        events
    }

    /// The output went quiet: completes a pending model now if its lines are all complete
    /// (no partial line is buffered), so that an improvement is streamed while the solver
    /// searches on instead of at its next `o` line. Should more `v` lines for the same `o`
    /// follow, they extend the model, which is completed again (a second
    /// [`Event::Solution`] with the same cost and all the lines): a solver prints a
    /// several-line model in one go.
    pub fn flush(&mut self) -> Vec<Event> {
        let mut events = Vec::new();
        if !self.buf.is_empty() || self.skipping {
            return events;
        }
        if let Model::Collecting { cost, text } = &self.model {
            let (cost, text) = (*cost, text.clone());
            events.push(Event::Solution(Solution {
                claimed: cost,
                text: text.clone(),
            }));
            self.model = Model::Flushed { cost, text };
        }
        events
    }

    /// Number of complete lines seen so far.
    pub fn lines(&self) -> u64 {
        self.line_no
    }

    fn broken_line(&mut self, line: u64, reason: &str, events: &mut Vec<Event>) {
        if matches!(self.model, Model::Flushed { .. }) {
            self.model = Model::None;
        }
        if matches!(self.model, Model::Collecting { .. }) {
            self.model = Model::Dropping;
            events.push(Event::Diagnostic(Diagnostic::ModelDropped {
                line,
                reason: reason.to_string(),
            }));
        }
    }

    fn complete_model(&mut self, events: &mut Vec<Event>) {
        if let Model::Collecting { cost, text } = std::mem::replace(&mut self.model, Model::None) {
            events.push(Event::Solution(Solution {
                claimed: cost,
                text,
            }));
        }
        self.model = Model::None;
    }

    fn line(&mut self, raw: &[u8], events: &mut Vec<Event>) {
        let line = self.line_no;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Ok(text) = std::str::from_utf8(raw) else {
            events.push(Event::Diagnostic(Diagnostic::InvalidUtf8 { line }));
            self.broken_line(line, "it contains a line that is not UTF-8", events);
            return;
        };
        let trimmed = text.trim_start_matches([' ', '\t']);
        if trimmed.trim().is_empty() {
            return;
        }
        let (kind, rest) = match trimmed.split_once([' ', '\t']) {
            Some((kind, rest)) => (kind, rest),
            None => (trimmed.trim_end(), ""),
        };
        match kind {
            "c" => events.push(Event::Comment(rest.to_string())),
            "o" => self.cost_line(rest.trim(), events),
            "v" => self.value_line(text, events),
            "s" => {
                self.complete_model(events);
                let status = rest.split_ascii_whitespace().collect::<Vec<_>>().join(" ");
                let status = match status.as_str() {
                    "OPTIMUM FOUND" => Status::OptimumFound,
                    "SATISFIABLE" => Status::Satisfiable,
                    "UNSATISFIABLE" => Status::Unsatisfiable,
                    "UNKNOWN" => Status::Unknown,
                    _ => {
                        events.push(Event::Diagnostic(Diagnostic::UnknownStatus {
                            line,
                            text: clip(&status),
                        }));
                        return;
                    }
                };
                events.push(Event::Status(status));
            }
            "g" => events.push(grind_line(line, rest.trim())),
            _ => events.push(Event::Diagnostic(Diagnostic::UnknownLine {
                line,
                start: clip(text),
            })),
        }
    }

    fn cost_line(&mut self, value: &str, events: &mut Vec<Event>) {
        self.complete_model(events);
        match parse_cost(value) {
            Some(cost) => {
                self.cost = Some(cost);
                self.cost_invalid = false;
                events.push(Event::Cost(cost));
            }
            None => {
                self.cost = None;
                self.cost_invalid = true;
                events.push(Event::Diagnostic(Diagnostic::InvalidCost {
                    line: self.line_no,
                    text: clip(value),
                }));
            }
        }
    }

    fn value_line(&mut self, text: &str, events: &mut Vec<Event>) {
        let line = self.line_no;
        match &mut self.model {
            Model::Collecting { text: model, .. } => {
                model.push_str(text);
                model.push('\n');
            }
            Model::Dropping => {}
            Model::Flushed { cost, text: model } => {
                let text = format!("{model}{text}\n");
                self.model = Model::Collecting { cost: *cost, text };
            }
            Model::None => match self.cost {
                Some(cost) => {
                    self.model = Model::Collecting {
                        cost,
                        text: format!("{text}\n"),
                    }
                }
                None => {
                    self.model = Model::Dropping;
                    let reason = if self.cost_invalid {
                        "its `o` line has no valid integer cost"
                    } else {
                        "`v` lines before any `o` line (no claimed cost)"
                    };
                    events.push(Event::Diagnostic(Diagnostic::ModelDropped {
                        line,
                        reason: reason.to_string(),
                    }));
                }
            },
        }
    }
}

/// Parses a decimal `i64` with an optional sign (no spaces, no `_`, no exponent).
fn parse_cost(value: &str) -> Option<i64> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok()
}

fn grind_line(line: u64, rest: &str) -> Event {
    let mut fields = rest.split_ascii_whitespace();
    let bad = || {
        Event::Diagnostic(Diagnostic::InvalidGrindLine {
            line,
            text: clip(rest),
        })
    };
    let (key, value, extra) = (fields.next(), fields.next(), fields.next());
    if extra.is_some() {
        return bad();
    }
    match (key, value) {
        (Some("progress"), Some(v)) => match v.parse::<f64>() {
            Ok(p) if (0.0..=1.0).contains(&p) => Event::Progress(p),
            _ => bad(),
        },
        (Some("count"), Some(v)) if v.bytes().all(|b| b.is_ascii_digit()) => {
            match v.parse::<BigUint>() {
                Ok(n) => Event::Count(n),
                Err(_) => bad(),
            }
        }
        (Some("checkpoint"), None) => Event::Checkpoint,
        _ => bad(),
    }
}

/// At most 80 characters of `text`, for messages.
fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests;
