//! Contests: named families of campaigns that together make one entry (one submission file,
//! one score). A contest is a problem plus the flags that make it a family; adding a contest
//! is one line in [`contests`].

/// One contest grind can enter.
#[derive(Clone, Copy, Debug)]
pub struct Contest {
    /// The name used on the command line (`grind contest add NAME`).
    pub name: &'static str,
    /// One line for listings.
    pub about: &'static str,
    /// The registered problem its campaigns run.
    pub problem: &'static str,
    /// The problem flags that name the family (more flags may be added on the command line).
    pub args: &'static [&'static str],
    /// The parameter that tells the entries apart (matched against reference tables).
    pub key: &'static str,
}

/// Every contest this build knows.
pub fn contests() -> &'static [Contest] {
    static CONTESTS: &[Contest] = &[Contest {
        name: "topswops-primes",
        about: "Al Zimmermann 2011: the longest Topswops deck for every prime n from 2 to 97",
        problem: "topswops",
        args: &["--contest", "primes"],
        key: "n",
    }];
    CONTESTS
}

/// Finds a contest by name.
pub fn lookup(name: &str) -> Option<&'static Contest> {
    contests().iter().find(|c| c.name == name)
}

/// Parses a reference table of best-known values: one `KEY VALUE` pair a line (separated by
/// spaces, tabs or a comma); blank lines and lines starting with `#` are skipped.
pub fn parse_reference(text: &str) -> Result<Vec<(String, f64)>, String> {
    let mut out = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|f| !f.is_empty())
            .collect();
        let [key, value] = fields.as_slice() else {
            return Err(format!(
                "line {}: expected `KEY VALUE`, found {line:?}",
                index + 1
            ));
        };
        let value: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v > 0.0)
            .ok_or_else(|| format!("line {}: {value:?} is not a positive number", index + 1))?;
        out.push((key.to_string(), value));
    }
    Ok(out)
}

/// The contest score of one entry: its value relative to the best known (higher is better;
/// above 1 beats the reference). For minimisation the ratio is inverted.
pub fn relative_score(value: f64, reference: f64, minimise: bool) -> f64 {
    if minimise {
        reference / value
    } else {
        value / reference
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry;

    #[test]
    fn contests_name_registered_problems() {
        for contest in contests() {
            assert!(
                registry::lookup(contest.problem).is_ok(),
                "{}",
                contest.name
            );
            assert!(lookup(contest.name).is_some());
        }
        assert!(lookup("nosuch").is_none());
    }

    #[test]
    fn reference_tables_parse_and_errors_name_the_line() {
        let table = parse_reference("# best known\n2 1\n3,2\n\n97\t10749\n").unwrap();
        assert_eq!(table.len(), 3);
        assert_eq!(table[2], ("97".to_string(), 10749.0));
        let err = parse_reference("2 1\n3\n").unwrap_err();
        assert!(err.contains("line 2"), "{err}");
        assert!(parse_reference("5 -1").is_err());
        assert!((relative_score(50.0, 100.0, false) - 0.5).abs() < 1e-12);
        assert!((relative_score(50.0, 100.0, true) - 2.0).abs() < 1e-12);
    }
}
