//! Units of an `exec` campaign and the lazy split that makes them: one unit per seed, or one
//! per line of the units file.
//!
//! A unit's payload is a small JSON document: `{"seed": 17}` or `{"line": 4, "text": "1-3"}`
//! (the line number in the units file, from 1, and the line without its newline), so a
//! worker never needs the units file itself. Split cursors: the next seed (8 bytes, little
//! endian), or `{"offset": <byte>, "line": <lines read>, "units": <units made>}`; the file is
//! read from the offset on, a batch at a time.

use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};

use serde::{Deserialize, Serialize};

use super::attached;
use super::params::UnitSource;
use crate::attachments;
use crate::problem::{ProblemError, SplitBatch, UnitSpec};

/// Longest line of a units file, in bytes (without the newline).
pub const MAX_LINE_BYTES: usize = 4096;

/// One unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Unit {
    /// A seed campaign's unit.
    Seed {
        /// The seed (`GRIND_SEED`, `GRIND_UNIT`).
        seed: u64,
    },
    /// A units-file campaign's unit.
    Line {
        /// Its line number in the units file, from 1 (`GRIND_SEED`).
        line: u64,
        /// The line (`GRIND_UNIT`; its words are the solver's `{unit}` arguments).
        text: String,
    },
}

impl Unit {
    /// The payload bytes.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a unit serialises")
    }

    /// Reads a payload back.
    pub fn decode(payload: &[u8]) -> Result<Unit, ProblemError> {
        serde_json::from_slice(payload)
            .map_err(|e| ProblemError::InvalidUnit(format!("exec: not an exec unit payload: {e}")))
    }

    /// `GRIND_SEED`: the seed, or the line number.
    pub fn seed(&self) -> u64 {
        match self {
            Unit::Seed { seed } => *seed,
            Unit::Line { line, .. } => *line,
        }
    }

    /// `GRIND_UNIT`: the seed in decimal, or the line.
    pub fn text(&self) -> String {
        match self {
            Unit::Seed { seed } => seed.to_string(),
            Unit::Line { text, .. } => text.clone(),
        }
    }

    /// The arguments a whole `{unit}` argument becomes: the seed, or the line's words.
    pub fn words(&self) -> Vec<String> {
        match self {
            Unit::Seed { seed } => vec![seed.to_string()],
            Unit::Line { text, .. } => text.split_ascii_whitespace().map(String::from).collect(),
        }
    }

    /// The label people see.
    pub fn label(&self) -> String {
        match self {
            Unit::Seed { seed } => format!("seed {seed}"),
            Unit::Line { line, text } => {
                let mut shown: String = text.chars().take(60).collect();
                if shown.len() < text.len() {
                    shown.push('…');
                }
                format!("line {line}: {shown}")
            }
        }
    }

    fn spec(self) -> UnitSpec {
        UnitSpec {
            label: self.label(),
            payload: self.encode(),
        }
    }
}

/// Where a units-file split continues.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct FileCursor {
    offset: u64,
    line: u64,
    units: u64,
}

/// The next up to `max_units` units of `source`, continuing from `cursor`.
pub fn split(
    source: &UnitSource,
    cursor: Option<&[u8]>,
    max_units: usize,
) -> Result<SplitBatch, ProblemError> {
    match source {
        UnitSource::Seeds { from, to } => split_seeds(*from, *to, cursor, max_units),
        UnitSource::File(digest) => {
            let dir = attachments::materialise(digest)?;
            let path = attached::bundle_file(&dir, None, "units-file")?;
            let mut file = std::fs::File::open(&path).map_err(|e| {
                ProblemError::Unsupported(format!("exec: cannot open the units file: {e}"))
            })?;
            let at = match cursor {
                None => FileCursor::default(),
                Some(bytes) => serde_json::from_slice(bytes).map_err(|e| {
                    ProblemError::InvalidUnit(format!("exec: bad units-file cursor: {e}"))
                })?,
            };
            file.seek(SeekFrom::Start(at.offset)).map_err(|e| {
                ProblemError::Unsupported(format!("exec: cannot read the units file: {e}"))
            })?;
            split_lines(BufReader::new(file), at, max_units)
        }
    }
}

fn split_seeds(
    from: u64,
    to: u64,
    cursor: Option<&[u8]>,
    max_units: usize,
) -> Result<SplitBatch, ProblemError> {
    let next = match cursor {
        None => from,
        Some(bytes) => {
            let [seed] = crate::problem::codec::decode_u64s::<1>(bytes, "exec seed cursor")?;
            seed
        }
    };
    let end = to.min(next.saturating_add(max_units as u64));
    let units = (next..end).map(|seed| Unit::Seed { seed }.spec()).collect();
    Ok(SplitBatch {
        units,
        next: (end < to).then(|| crate::problem::codec::encode_u64s(&[end])),
    })
}

/// Reads units from `reader` (positioned at `at.offset`).
fn split_lines(
    mut reader: impl BufRead,
    mut at: FileCursor,
    max_units: usize,
) -> Result<SplitBatch, ProblemError> {
    let mut units = Vec::new();
    let mut buf = Vec::new();
    let invalid = |line: u64, why: &str| {
        ProblemError::InvalidParams(format!("exec: units file line {line}: {why}"))
    };
    while units.len() < max_units.max(1) {
        buf.clear();
        let read = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 2)
            .read_until(b'\n', &mut buf)
            .map_err(|e| {
                ProblemError::Unsupported(format!("exec: cannot read the units file: {e}"))
            })?;
        if read == 0 {
            if at.units == 0 {
                return Err(ProblemError::InvalidParams(
                    "exec: the units file has no units (every line is blank or a # comment)".into(),
                ));
            }
            return Ok(SplitBatch { units, next: None });
        }
        at.line += 1;
        let ended = buf.last() == Some(&b'\n');
        let mut line = buf.as_slice();
        line = line.strip_suffix(b"\n").unwrap_or(line);
        line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > MAX_LINE_BYTES || (!ended && read as u64 > MAX_LINE_BYTES as u64) {
            return Err(invalid(
                at.line,
                &format!("longer than {MAX_LINE_BYTES} bytes (one unit's arguments a line)"),
            ));
        }
        at.offset += read as u64;
        let text = std::str::from_utf8(line).map_err(|_| invalid(at.line, "not UTF-8"))?;
        if text.contains('\0') {
            return Err(invalid(at.line, "contains a NUL byte"));
        }
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        at.units += 1;
        units.push(
            Unit::Line {
                line: at.line,
                text: trimmed.to_string(),
            }
            .spec(),
        );
    }
    // Full batch: is anything left? (An exhausted file ends the split now, not with an
    // empty batch later.)
    let more = reader
        .fill_buf()
        .map(|rest| !rest.is_empty())
        .unwrap_or(true);
    Ok(SplitBatch {
        units,
        next: more.then(|| serde_json::to_vec(&at).expect("a cursor serialises")),
    })
}

/// Every unit of a units file at `path` (for checks at `add`): their number, or the error
/// the split would give.
pub fn count_file_units(path: &std::path::Path) -> Result<u64, ProblemError> {
    let file = std::fs::File::open(path).map_err(|e| {
        ProblemError::InvalidParams(format!("exec: cannot open the units file: {e}"))
    })?;
    let mut reader = BufReader::new(file);
    let mut at = FileCursor::default();
    loop {
        let batch = split_lines(&mut reader, at, 4096)?;
        let Some(next) = batch.next else {
            return Ok(at.units + batch.units.len() as u64);
        };
        at = serde_json::from_slice(&next).expect("our own cursor");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all_lines(text: &[u8], batch: usize) -> Result<Vec<Unit>, ProblemError> {
        let mut at = FileCursor::default();
        let mut out = Vec::new();
        loop {
            let mut reader = std::io::Cursor::new(text);
            reader.set_position(at.offset);
            let got = split_lines(reader, at, batch)?;
            assert!(got.units.len() <= batch.max(1));
            out.extend(got.units.iter().map(|u| Unit::decode(&u.payload).unwrap()));
            match got.next {
                Some(next) => at = serde_json::from_slice(&next).unwrap(),
                None => return Ok(out),
            }
        }
    }

    #[test]
    fn seeds_split_lazily() {
        let first = split_seeds(5, 12, None, 4).unwrap();
        assert_eq!(first.units.len(), 4);
        assert_eq!(first.units[0].label, "seed 5");
        let rest = split_seeds(5, 12, first.next.as_deref(), 4).unwrap();
        assert_eq!(rest.units.len(), 3);
        assert_eq!(rest.next, None);
        assert_eq!(
            Unit::decode(&rest.units[2].payload).unwrap(),
            Unit::Seed { seed: 11 }
        );
        assert!(split_seeds(0, 4, Some(&[1, 2]), 4).is_err());
    }

    #[test]
    fn lines_become_units_skipping_blanks_and_comments() {
        let units = all_lines(b"# d1 slices\n1\n\n 2 3 \r\n#x\nlast", 1).unwrap();
        assert_eq!(
            units,
            vec![
                Unit::Line {
                    line: 2,
                    text: "1".into()
                },
                Unit::Line {
                    line: 4,
                    text: "2 3".into()
                },
                Unit::Line {
                    line: 6,
                    text: "last".into()
                },
            ]
        );
        assert_eq!(units[1].words(), vec!["2", "3"]);
        assert_eq!(units[1].seed(), 4);
        assert_eq!(units[1].label(), "line 4: 2 3");
    }

    #[test]
    fn bad_units_files_are_named() {
        let err = all_lines(b"\n# only comments\n  \n", 3)
            .unwrap_err()
            .to_string();
        assert!(err.contains("has no units"), "{err}");
        assert!(all_lines(b"", 3)
            .unwrap_err()
            .to_string()
            .contains("has no units"));
        let long = format!("1\n{}\n", "x".repeat(MAX_LINE_BYTES + 1));
        let err = all_lines(long.as_bytes(), 3).unwrap_err().to_string();
        assert!(err.contains("line 2: longer than 4096"), "{err}");
        let long_last = format!("1\n{}", "x".repeat(MAX_LINE_BYTES + 5));
        assert!(all_lines(long_last.as_bytes(), 3).is_err());
        let exact = format!("{}\n", "y".repeat(MAX_LINE_BYTES));
        assert_eq!(all_lines(exact.as_bytes(), 3).unwrap().len(), 1);
        let err = all_lines(b"ok\n\xff\xfe\n", 3).unwrap_err().to_string();
        assert!(err.contains("line 2: not UTF-8"), "{err}");
        assert!(Unit::decode(b"{\"nope\":1}").is_err());
    }

    proptest! {
        /// Any batch size yields the same units as reading the file line by line.
        #[test]
        fn batches_do_not_change_the_units(
            lines in proptest::collection::vec("[ #a-c0-9]{0,6}", 1..30),
            batch in 1usize..7,
        ) {
            let text = lines.join("\n");
            let expected: Vec<Unit> = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty() && !l.trim().starts_with('#'))
                .map(|(i, l)| Unit::Line { line: i as u64 + 1, text: l.trim().to_string() })
                .collect();
            match all_lines(text.as_bytes(), batch) {
                Ok(units) => prop_assert_eq!(units, expected),
                Err(_) => prop_assert!(expected.is_empty()),
            }
        }
    }
}
