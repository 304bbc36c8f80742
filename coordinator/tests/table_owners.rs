//! Each table of the coordinator's database has one owning module, and only that module
//! writes it (INSERT, UPDATE, DELETE, REPLACE): everyone else calls the owner's functions.
//! This test scans the string literals of `coordinator/src` (outside comments and
//! `#[cfg(test)]` items; the migrations in `schema.rs` aside) and fails naming the file,
//! line and table of any write from elsewhere.
//!
//! The owners are the scheduler's table modules, and the scheduler keeps three layers
//! (tables, rules, flows): [`layers`] lists every cross-module call inside
//! `coordinator/src/scheduler/` and fails on a table module calling another, a rule touching
//! the store, or a cycle.

#[path = "table_owners/layers.rs"]
mod layers;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Table -> the one file (relative to the crate) allowed to write it.
const OWNERS: &[(&str, &str)] = &[
    ("campaigns", "src/scheduler/tables/campaigns.rs"),
    ("units", "src/scheduler/tables/units.rs"),
    ("spawned_payloads", "src/scheduler/tables/units.rs"),
    ("leases", "src/scheduler/tables/leases.rs"),
    ("results", "src/scheduler/tables/results.rs"),
    ("samples", "src/scheduler/tables/results.rs"),
    ("held_claims", "src/scheduler/tables/results.rs"),
    ("workers", "src/scheduler/tables/workers.rs"),
    ("premises", "src/scheduler/tables/premises.rs"),
    ("proof_records", "src/scheduler/tables/premises.rs"),
    ("events", "src/scheduler/tables/events.rs"),
    // Authentication, not scheduling: tokens are created and revoked by the admin CLI.
    ("tokens", "src/auth.rs"),
    // Storage, not scheduling: a bundle's row is written once its bytes are stored.
    ("bundles", "src/bundles/table.rs"),
];

/// The migrations, which create and reshape every table.
const MIGRATIONS: &str = "src/schema.rs";

/// One write statement found in a source file.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Write {
    /// 1-based line of the statement's keyword.
    line: usize,
    /// The table written, lower case; `{dynamic}` when the name is not spelled out.
    table: String,
}

/// A string literal of a source file, outside comments and `#[cfg(test)]` items.
#[derive(Debug)]
struct Literal {
    line: usize,
    text: String,
}

#[derive(Debug, PartialEq)]
enum Token {
    Literal(Literal),
    Word(String),
    Punct(char),
}

impl PartialEq for Literal {
    fn eq(&self, other: &Self) -> bool {
        self.line == other.line && self.text == other.text
    }
}

/// Splits Rust source into string literals, words and punctuation, dropping comments and
/// character literals (enough to find SQL; not a full Rust lexer).
fn tokens(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                line += usize::from(chars[i] == '\n');
                i += 1;
            }
            i += 2;
        } else if c == 'r' && raw_string_start(&chars, i).is_some() {
            let hashes = raw_string_start(&chars, i).unwrap_or(0);
            let start_line = line;
            i += 2 + hashes;
            let mut text = String::new();
            while i < chars.len() {
                if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                line += usize::from(chars[i] == '\n');
                text.push(chars[i]);
                i += 1;
            }
            out.push(Token::Literal(Literal {
                line: start_line,
                text,
            }));
        } else if c == '"' {
            let start_line = line;
            i += 1;
            let mut text = String::new();
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    line += usize::from(chars[i + 1] == '\n');
                    text.push(chars[i + 1]);
                    i += 2;
                    continue;
                }
                line += usize::from(chars[i] == '\n');
                text.push(chars[i]);
                i += 1;
            }
            i += 1;
            out.push(Token::Literal(Literal {
                line: start_line,
                text,
            }));
        } else if c == '\'' {
            // A character literal ('x', '\n', '\''), or a lifetime ('a), which is skipped.
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if is_word(c) {
            let start = i;
            while i < chars.len() && is_word(chars[i]) {
                i += 1;
            }
            out.push(Token::Word(chars[start..i].iter().collect()));
        } else {
            out.push(Token::Punct(c));
            i += 1;
        }
    }
    out
}

/// The number of `#`s of a raw string (`r"`, `r#"`, ...) starting at `i`, if one does.
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    if i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') && chars[i - 1] != 'b' {
        return None;
    }
    let mut hashes = 0;
    while chars.get(i + 1 + hashes) == Some(&'#') {
        hashes += 1;
    }
    (chars.get(i + 1 + hashes) == Some(&'"')).then_some(hashes)
}

/// The string literals of `source` outside `#[cfg(test)]` items.
fn literals(source: &str) -> Vec<Literal> {
    let tokens = tokens(source);
    let test_attribute = [
        Token::Punct('#'),
        Token::Punct('['),
        Token::Word("cfg".into()),
        Token::Punct('('),
        Token::Word("test".into()),
        Token::Punct(')'),
        Token::Punct(']'),
    ];
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i..].starts_with(&test_attribute) {
            i = end_of_item(&tokens, i + test_attribute.len());
            continue;
        }
        if let Token::Literal(literal) = &tokens[i] {
            out.push(Literal {
                line: literal.line,
                text: literal.text.clone(),
            });
        }
        i += 1;
    }
    out
}

/// The index just past the item starting at `i`: its `;` or its closing brace.
fn end_of_item(tokens: &[Token], mut i: usize) -> usize {
    let mut depth = 0usize;
    while i < tokens.len() {
        match tokens[i] {
            Token::Punct('(' | '[' | '{') => depth += 1,
            Token::Punct(')' | ']') => depth = depth.saturating_sub(1),
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            Token::Punct(';') if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    i
}

/// The SQL words of a text with their byte offsets, upper-cased.
fn words(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices().chain([(text.len(), ' ')]) {
        let part = c.is_alphanumeric() || c == '_';
        match (part, start) {
            (true, None) => start = Some(at),
            (false, Some(s)) => {
                out.push((s, text[s..at].to_uppercase()));
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// The table named right after `words[at]`, or `{dynamic}` when the text there is a format
/// placeholder or anything but a name.
fn table_after(text: &str, words: &[(usize, String)], at: usize) -> Option<String> {
    let (offset, word) = &words[at];
    let rest = text[offset + word.len()..].trim_start();
    if rest.starts_with('{') || rest.starts_with('"') || rest.starts_with('`') {
        return Some("{dynamic}".into());
    }
    words.get(at + 1).map(|(_, w)| w.to_lowercase())
}

/// The tables a text writes, with the byte offset of each write's keyword.
fn writes_in(text: &str) -> Vec<(usize, String)> {
    let words = words(text);
    let word = |k: usize| words.get(k).map(|(_, w)| w.as_str());
    let mut out = Vec::new();
    for (k, (offset, keyword)) in words.iter().enumerate() {
        let table = match keyword.as_str() {
            // INSERT [OR conflict] INTO t, REPLACE INTO t
            "INSERT" | "REPLACE" => {
                let into = if word(k + 1) == Some("OR") {
                    k + 3
                } else {
                    k + 1
                };
                (word(into) == Some("INTO"))
                    .then(|| table_after(text, &words, into))
                    .flatten()
            }
            // DELETE FROM t
            "DELETE" => (word(k + 1) == Some("FROM"))
                .then(|| table_after(text, &words, k + 1))
                .flatten(),
            // UPDATE [OR conflict] t SET (an upsert's DO UPDATE SET names no table; prose such
            // as "update the campaign" has no SET after the name)
            "UPDATE" => {
                let before_table = if word(k + 1) == Some("OR") { k + 2 } else { k };
                match table_after(text, &words, before_table) {
                    Some(t) if t == "{dynamic}" => Some(t),
                    Some(t) if t != "set" && word(before_table + 2) == Some("SET") => Some(t),
                    _ => None,
                }
            }
            _ => None,
        };
        if let Some(table) = table {
            out.push((*offset, table));
        }
    }
    out
}

/// Every write statement in the string literals of a Rust source file.
fn writes(source: &str) -> Vec<Write> {
    literals(source)
        .into_iter()
        .flat_map(|literal| {
            writes_in(&literal.text)
                .into_iter()
                .map(move |(offset, table)| Write {
                    line: literal.line + literal.text[..offset].matches('\n').count(),
                    table,
                })
        })
        .collect()
}

/// The complaints about the writes in `file` (relative to the crate): a table written
/// outside its owner, or a table nobody owns.
fn violations(file: &str, source: &str) -> Vec<String> {
    if file == MIGRATIONS {
        return Vec::new();
    }
    let owners: BTreeMap<&str, &str> = OWNERS.iter().copied().collect();
    writes(source)
        .into_iter()
        .filter_map(|w| match owners.get(w.table.as_str()) {
            Some(owner) if *owner == file => None,
            Some(owner) => Some(format!(
                "{file}:{}: writes table `{}`, which only {owner} may write; call its owner",
                w.line, w.table
            )),
            None => Some(format!(
                "{file}:{}: writes table `{}`, which has no owner in tests/table_owners.rs",
                w.line, w.table
            )),
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The crate's source files as (path relative to the crate, text).
fn sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(root).unwrap();
            let name = relative.to_string_lossy().replace('\\', "/");
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

#[test]
fn every_table_is_written_only_by_its_owner() {
    let sources = sources();
    assert!(
        sources.len() > 10,
        "found too few sources: {}",
        sources.len()
    );
    let complaints: Vec<String> = sources
        .iter()
        .flat_map(|(file, text)| violations(file, text))
        .collect();
    assert!(complaints.is_empty(), "\n{}", complaints.join("\n"));
    // The map is not stale: each owner exists and really writes its table.
    for (table, owner) in OWNERS {
        let (_, text) = sources
            .iter()
            .find(|(file, _)| file == owner)
            .unwrap_or_else(|| panic!("owner {owner} of `{table}` does not exist"));
        assert!(
            writes(text).iter().any(|w| w.table == *table),
            "{owner} is the owner of `{table}` but never writes it"
        );
    }
}

#[test]
fn every_table_of_the_schema_has_an_owner() {
    let schema = sources()
        .into_iter()
        .find(|(file, _)| file == MIGRATIONS)
        .expect("schema.rs")
        .1;
    let created: BTreeSet<String> = literals(&schema)
        .iter()
        .flat_map(|l| {
            let words = words(&l.text);
            (0..words.len().saturating_sub(2))
                .filter(|&k| words[k].1 == "CREATE" && words[k + 1].1 == "TABLE")
                .map(|k| words[k + 2].1.to_lowercase())
                .collect::<Vec<_>>()
        })
        .collect();
    let owned: BTreeSet<String> = OWNERS.iter().map(|(t, _)| t.to_string()).collect();
    assert!(
        created.len() >= 9,
        "tables found in the schema: {created:?}"
    );
    assert_eq!(
        created, owned,
        "tables of the schema vs tables with an owner"
    );
}

#[test]
fn a_planted_write_from_the_wrong_module_is_named() {
    let planted = r##"
// UPDATE units SET state = 'done' WHERE id = 1   (a comment: not code)
fn sneaky(conn: &Connection) {
    let c = 'x';
    conn.execute("UPDATE units SET state = 'done' WHERE id = ?1", [1]).unwrap();
    conn.execute(
        r#"INSERT OR IGNORE INTO
             spawned_payloads (campaign_id, payload) VALUES (1, x'00')"#,
        [],
    );
    conn.execute("DELETE FROM leases WHERE id = 1", []);
    conn.execute(&format!("UPDATE {table} SET x = 1"), []);
    conn.execute("REPLACE INTO mystery (id) VALUES (1)", []);
    let prose = "cannot update the campaign: insert a token first";
    conn.execute("INSERT INTO campaigns (id) VALUES (1)", []);
}

#[cfg(test)]
mod tests {
    fn fixture(conn: &Connection) {
        conn.execute("INSERT INTO units (id) VALUES (1)", []).unwrap();
    }
}
"##;
    let found = violations("src/web/sneaky.rs", planted);
    assert_eq!(
        found,
        vec![
            "src/web/sneaky.rs:5: writes table `units`, which only src/scheduler/tables/units.rs may write; call its owner",
            "src/web/sneaky.rs:7: writes table `spawned_payloads`, which only src/scheduler/tables/units.rs may write; call its owner",
            "src/web/sneaky.rs:11: writes table `leases`, which only src/scheduler/tables/leases.rs may write; call its owner",
            "src/web/sneaky.rs:12: writes table `{dynamic}`, which has no owner in tests/table_owners.rs",
            "src/web/sneaky.rs:13: writes table `mystery`, which has no owner in tests/table_owners.rs",
            "src/web/sneaky.rs:15: writes table `campaigns`, which only src/scheduler/tables/campaigns.rs may write; call its owner",
        ]
    );
    // The same writes from their owners are fine, except the ones no one owns.
    let from_owner = violations("src/scheduler/tables/campaigns.rs", planted);
    assert_eq!(from_owner.len(), 5, "{from_owner:#?}");
    assert!(violations(MIGRATIONS, planted).is_empty());
}

#[test]
fn the_scanner_reads_sql_as_the_scheduler_writes_it() {
    let source = r#"
const SQL: &str = "SELECT x FROM units WHERE state = 'pending'";
fn f(conn: &Connection) {
    conn.execute("INSERT INTO events (kind) VALUES ('a \" quoted')
                  ON CONFLICT (id) DO UPDATE SET kind = excluded.kind", []);
    conn.execute("update workers set banned = 1 where id = ?1", []);
    conn.execute("UPDATE OR ROLLBACK results SET status = 'x'", []);
    let url = "http://example.com/ // not a comment";
    conn.execute("DELETE FROM samples", []);
}
"#;
    let tables: Vec<(usize, String)> = writes(source)
        .into_iter()
        .map(|w| (w.line, w.table))
        .collect();
    assert_eq!(
        tables,
        vec![
            (4, "events".to_string()),
            (6, "workers".to_string()),
            (7, "results".to_string()),
            (9, "samples".to_string()),
        ]
    );
}

/// The scheduler's modules as (module path, source).
fn scheduler_modules() -> Vec<(String, String)> {
    sources()
        .into_iter()
        .filter(|(file, _)| file.starts_with("src/scheduler/"))
        .map(|(file, text)| (layers::module_of(&file["src/".len()..]), text))
        .collect()
}

#[test]
fn the_scheduler_keeps_its_layers() {
    let modules = scheduler_modules();
    for layer in ["tables", "rules", "flows"] {
        let count = modules
            .iter()
            .filter(|(m, _)| m.starts_with(&format!("scheduler::{layer}::")))
            .count();
        assert!(count >= 4, "{count} modules in scheduler/{layer}");
    }
    let (refs, _) = layers::references(&modules).unwrap();
    // Every cross-module call, for the record (`--nocapture` shows it).
    let mut listing = String::new();
    for r in refs.iter().filter(|r| r.is_call()) {
        listing.push_str(&format!("{} -> {}::{}\n", r.from, r.to, r.item));
    }
    println!("cross-module calls inside src/scheduler:\n{listing}");
    // The scan sees the calls it must see.
    for (from, to, item) in [
        (
            "scheduler::flows::complete",
            "scheduler::tables::leases",
            "load_with_unit",
        ),
        (
            "scheduler::flows::complete",
            "scheduler::rules::settle",
            "count_verdict",
        ),
        (
            "scheduler::flows::grant",
            "scheduler::rules::pacing",
            "run_length",
        ),
        (
            "scheduler::flows::finish",
            "scheduler::flows::successors",
            "adopt",
        ),
    ] {
        assert!(
            refs.iter()
                .any(|r| r.from == from && r.to == to && r.item == item),
            "{from} -> {to}::{item} not found in:\n{listing}"
        );
    }
    let complaints = layers::layering_violations(&modules).unwrap();
    assert!(complaints.is_empty(), "\n{}", complaints.join("\n"));
}

#[test]
fn a_planted_layer_breach_is_named() {
    let modules: Vec<(String, String)> = [
        (
            "scheduler",
            "pub mod tables; pub use tables::units::grow; pub struct Ctx; pub struct Usage;",
        ),
        (
            "scheduler::tables::units",
            "use crate::scheduler::tables::campaigns;
             use super::leases::LeaseRow;
             pub fn grow(lease: &LeaseRow) { campaigns::advance(lease.id); }",
        ),
        ("scheduler::tables::campaigns", "pub fn advance(id: i64) {}"),
        (
            "scheduler::tables::leases",
            "pub struct LeaseRow { pub id: i64 }",
        ),
        (
            "scheduler::rules::pacing",
            "use rusqlite::Connection; pub fn measure(c: &Connection) {}",
        ),
        (
            "scheduler::rules::settle",
            "pub fn decide(ctx: &crate::scheduler::Ctx, u: crate::scheduler::Usage) {}",
        ),
        (
            "scheduler::flows::grant",
            "use super::finish; pub fn grant() { finish::finish() }",
        ),
        (
            "scheduler::flows::finish",
            "pub fn finish() { super::grant::grant() }
             #[cfg(test)]
             mod tests { fn t() { crate::scheduler::tables::units::grow(); } }",
        ),
    ]
    .into_iter()
    .map(|(m, s)| (m.to_string(), s.to_string()))
    .collect();
    assert_eq!(
        layers::layering_violations(&modules).unwrap(),
        vec![
            "scheduler::tables::units calls scheduler::tables::campaigns::advance: a table \
             module calls no other table module (move the combination into a flow)",
            "scheduler::rules::pacing touches the store (Connection, rusqlite): a rule decides \
             from plain values",
            "scheduler::rules::settle touches the store (Ctx): a rule decides from plain values",
            "modules call each other in a cycle: scheduler::flows::finish -> \
             scheduler::flows::grant -> scheduler::flows::finish",
        ]
    );
}
