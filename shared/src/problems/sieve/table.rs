//! The published table of optima (OEIS A019312) as grind keeps it in `records/a019312.txt`:
//! one term per line for N = 1, 2, ...; blank lines and lines starting with `#` are skipped.

/// The workspace's copy of the published table.
pub const PUBLISHED_TABLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../records/a019312.txt");

/// The terms of a table in that format: term i is a(i + 1). Errors name the first line that
/// is not a whole number.
pub fn parse_terms(text: &str) -> Result<Vec<i64>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(i, l)| {
            l.trim()
                .parse()
                .map_err(|_| format!("line {}: {l:?} is not a term", i + 1))
        })
        .collect()
}

/// The terms of the table file at `path` ([`parse_terms`]); errors name the file.
pub fn read_terms(path: &str) -> Result<Vec<i64>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    parse_terms(&text).map_err(|e| format!("{path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_blank_lines_are_skipped_and_bad_lines_named() {
        assert_eq!(parse_terms("# a019312\n0\n\n2\n3\n"), Ok(vec![0, 2, 3]));
        assert_eq!(
            parse_terms("0\n2\nx3\n"),
            Err("line 3: \"x3\" is not a term".to_string())
        );
    }
}
