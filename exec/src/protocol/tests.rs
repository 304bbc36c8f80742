//! Unit tests of the parser: the orders real solvers print in, and every diagnostic.

use super::*;

fn all(input: &str) -> Vec<Event> {
    let mut p = Parser::default();
    let mut ev = p.feed(input.as_bytes());
    ev.extend(p.finish());
    ev
}

fn solutions(input: &str) -> Vec<(i64, String)> {
    all(input)
        .into_iter()
        .filter_map(|e| match e {
            Event::Solution(s) => Some((s.claimed, s.text)),
            _ => None,
        })
        .collect()
}

fn diagnostics(input: &str) -> Vec<Diagnostic> {
    all(input)
        .into_iter()
        .filter_map(|e| match e {
            Event::Diagnostic(d) => Some(d),
            _ => None,
        })
        .collect()
}

#[test]
fn v_after_every_o() {
    let s = solutions("c hi\no 10\nv 0101\no 8\nv 0111\ns OPTIMUM FOUND\n");
    assert_eq!(
        s,
        vec![(10, "v 0101\n".to_string()), (8, "v 0111\n".to_string())]
    );
}

#[test]
fn model_once_at_the_end() {
    let s = solutions("o 10\no 8\no 5\ns OPTIMUM FOUND\nv 1 -2 3\nv -4 0\n");
    assert_eq!(s, vec![(5, "v 1 -2 3\nv -4 0\n".to_string())]);
}

#[test]
fn status_before_o() {
    let ev = all("s SATISFIABLE\no 7\nv 01\n");
    assert_eq!(
        ev,
        vec![
            Event::Status(Status::Satisfiable),
            Event::Cost(7),
            Event::Solution(Solution {
                claimed: 7,
                text: "v 01\n".into()
            })
        ]
    );
}

#[test]
fn model_completes_at_next_o_not_at_comment() {
    let mut p = Parser::default();
    let ev = p.feed(b"o 3\nv 1\nc still\ng progress 0.5\nv 0\n");
    assert!(!ev.iter().any(|e| matches!(e, Event::Solution(_))));
    let ev = p.feed(b"o 2\n");
    assert_eq!(
        ev[0],
        Event::Solution(Solution {
            claimed: 3,
            text: "v 1\nv 0\n".into()
        })
    );
}

#[test]
fn split_anywhere_gives_same_events() {
    let input = b"o 12\r\nv 0110\nc x\ns UNKNOWN\ng count 123456789012345678901234567890\n";
    let whole = {
        let mut p = Parser::default();
        let mut e = p.feed(input);
        e.extend(p.finish());
        e
    };
    for cut in 0..input.len() {
        let mut p = Parser::default();
        let mut e = p.feed(&input[..cut]);
        e.extend(p.feed(&input[cut..]));
        e.extend(p.finish());
        assert_eq!(e, whole, "cut at {cut}");
    }
}

#[test]
fn invalid_cost_drops_its_model() {
    let d = diagnostics("o 1.5\nv 01\no 99999999999999999999\no\n");
    assert!(matches!(d[0], Diagnostic::InvalidCost { line: 1, .. }));
    assert!(matches!(d[1], Diagnostic::ModelDropped { line: 2, .. }));
    assert!(matches!(d[2], Diagnostic::InvalidCost { line: 3, .. }));
    assert!(matches!(d[3], Diagnostic::InvalidCost { line: 4, .. }));
    assert!(solutions("o 1.5\nv 01\n").is_empty());
    assert_eq!(solutions("o -3\nv 1\n"), vec![(-3, "v 1\n".into())]);
}

#[test]
fn model_without_cost_is_dropped() {
    assert!(solutions("v 0101\ns OPTIMUM FOUND\n").is_empty());
    assert!(matches!(
        diagnostics("v 0101\n")[0],
        Diagnostic::ModelDropped { line: 1, .. }
    ));
}

#[test]
fn bad_lines_are_diagnosed() {
    let d = diagnostics("hello\ns MAYBE\ng progress 2\ng count -1\ng frobnicate\nx\n");
    assert_eq!(d.len(), 6, "{d:?}");
    assert!(matches!(d[0], Diagnostic::UnknownLine { line: 1, .. }));
    assert!(matches!(d[1], Diagnostic::UnknownStatus { line: 2, .. }));
    assert!(matches!(d[2], Diagnostic::InvalidGrindLine { line: 3, .. }));
    assert!(matches!(d[3], Diagnostic::InvalidGrindLine { line: 4, .. }));
    assert!(matches!(d[4], Diagnostic::InvalidGrindLine { line: 5, .. }));
}

#[test]
fn grind_lines() {
    assert_eq!(
        all("g progress 0.25\ng count 42\ng checkpoint\n"),
        vec![
            Event::Progress(0.25),
            Event::Count(BigUint::from(42u32)),
            Event::Checkpoint
        ]
    );
}

#[test]
fn overlong_and_non_utf8_lines_break_models() {
    let mut p = Parser::new(8);
    let mut ev = p.feed(b"o 1\nv 0101010101010101\nc ok\n");
    ev.extend(p.finish());
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::Diagnostic(Diagnostic::LineTooLong { line: 2, .. })
    )));
    assert!(!ev.iter().any(|e| matches!(e, Event::Solution(_))));
    assert!(ev.contains(&Event::Comment("ok".into())));
    let d = diagnostics("o 1\nv 01\nv \u{0}\n");
    assert!(d.is_empty(), "NUL is valid UTF-8: {d:?}");
    let mut p = Parser::default();
    let mut ev = p.feed(b"o 1\nv 01\n\xff\xfe\n");
    ev.extend(p.finish());
    assert!(ev.contains(&Event::Diagnostic(Diagnostic::InvalidUtf8 { line: 3 })));
    assert!(!ev.iter().any(|e| matches!(e, Event::Solution(_))));
}

#[test]
fn unterminated_last_line_drops_pending_model() {
    let ev = all("o 4\nv 01");
    assert!(ev.contains(&Event::Diagnostic(Diagnostic::UnterminatedLine { line: 2 })));
    assert!(!ev.iter().any(|e| matches!(e, Event::Solution(_))));
    // A complete model before the cut line still counts.
    assert_eq!(solutions("o 4\nv 01\no 3\nv 1"), vec![(4, "v 01\n".into())]);
}

#[test]
fn a_quiet_flush_completes_a_model_and_later_lines_extend_it() {
    let mut p = Parser::default();
    let mut ev = p.feed(b"o 9\nv 01");
    assert!(p.flush().is_empty(), "a partial line is not flushed");
    ev.extend(p.feed(b"1\n"));
    let flushed = p.flush();
    assert_eq!(
        flushed,
        vec![Event::Solution(Solution {
            claimed: 9,
            text: "v 011\n".into()
        })]
    );
    assert!(p.flush().is_empty(), "flushed once");
    // More lines for the same `o`: the whole model is completed again at the next `o`.
    ev.extend(p.feed(b"c still 9\nv 100\no 7\nv 111\n"));
    ev.extend(p.flush());
    ev.extend(p.feed(b"s OPTIMUM FOUND\n"));
    ev.extend(p.finish());
    let solutions: Vec<(i64, String)> = ev
        .into_iter()
        .filter_map(|e| match e {
            Event::Solution(s) => Some((s.claimed, s.text)),
            _ => None,
        })
        .collect();
    assert_eq!(
        solutions,
        vec![
            (9, "v 011\nv 100\n".to_string()),
            (7, "v 111\n".to_string())
        ],
        "a flushed model is not completed again without new lines"
    );
}
