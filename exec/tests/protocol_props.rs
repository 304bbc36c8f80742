//! Property tests of the protocol parser: no input makes it panic, chunking never changes
//! the events, and well-formed transcripts give back exactly the solutions they encode.

use grind_exec::protocol::{Event, Parser, Solution, Status};
use proptest::prelude::*;

fn parse_in_chunks(bytes: &[u8], cuts: &[usize], max_line: usize) -> Vec<Event> {
    let mut p = Parser::new(max_line);
    let mut events = Vec::new();
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort();
    let mut last = 0;
    for c in cuts {
        events.extend(p.feed(&bytes[last..c]));
        last = c;
    }
    events.extend(p.feed(&bytes[last..]));
    events.extend(p.finish());
    events
}

/// Bytes that look like protocol output often enough to reach every branch.
fn protocol_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    let fragment = prop_oneof![
        Just(b"o ".to_vec()),
        Just(b"v ".to_vec()),
        Just(b"s OPTIMUM FOUND".to_vec()),
        Just(b"s ".to_vec()),
        Just(b"c ".to_vec()),
        Just(b"g progress ".to_vec()),
        Just(b"g count ".to_vec()),
        Just(b"g checkpoint".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"-".to_vec()),
        Just(b"0101".to_vec()),
        Just(b"9223372036854775807".to_vec()),
        Just(b"9223372036854775808".to_vec()),
        Just(b"0.5".to_vec()),
        Just(b"\xff\xfe".to_vec()),
        prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop::collection::vec(fragment, 0..60).prop_map(|f| f.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn arbitrary_bytes_never_panic_and_chunking_does_not_matter(
        bytes in prop_oneof![prop::collection::vec(any::<u8>(), 0..600), protocol_like_bytes()],
        cuts in prop::collection::vec(any::<usize>(), 0..6),
        max_line in 1usize..64,
    ) {
        let whole = parse_in_chunks(&bytes, &[], max_line);
        let chunked = parse_in_chunks(&bytes, &cuts, max_line);
        prop_assert_eq!(&whole, &chunked);
        for e in &whole {
            if let Event::Solution(s) = e {
                // A solution is only `v` lines, each within the line limit.
                for line in s.text.lines() {
                    prop_assert!(line.starts_with('v'));
                    prop_assert!(line.len() <= max_line);
                }
                prop_assert!(s.text.ends_with('\n'));
            }
        }
    }
}

/// One step of a well-formed transcript.
#[derive(Clone, Debug)]
enum Item {
    Comment(String),
    /// `o <cost>`, optionally an `s` line, then the model's `v` lines (with a comment among
    /// them if asked).
    Improvement {
        cost: i64,
        status_first: Option<Status>,
        model: Vec<String>,
        comment_inside: bool,
    },
    Status(Status),
    Count(u64),
    Checkpoint,
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![
        Just(Status::OptimumFound),
        Just(Status::Satisfiable),
        Just(Status::Unsatisfiable),
        Just(Status::Unknown),
    ]
}

fn item() -> impl Strategy<Value = Item> {
    prop_oneof![
        "[ -~]{0,30}".prop_map(Item::Comment),
        (
            any::<i64>(),
            prop::option::of(status()),
            prop::collection::vec("[01]{1,40}", 0..3),
            any::<bool>()
        )
            .prop_map(
                |(cost, status_first, model, comment_inside)| Item::Improvement {
                    cost,
                    status_first,
                    model,
                    comment_inside
                }
            ),
        status().prop_map(Item::Status),
        any::<u64>().prop_map(Item::Count),
        Just(Item::Checkpoint),
    ]
}

/// The transcript's text and the solutions it encodes (computed from the structure).
fn render(items: &[Item]) -> (String, Vec<Solution>, Vec<i64>) {
    let mut text = String::new();
    let mut sols = Vec::new();
    let mut costs = Vec::new();
    for it in items {
        match it {
            Item::Comment(c) => text += &format!("c {c}\n"),
            Item::Improvement {
                cost,
                status_first,
                model,
                comment_inside,
            } => {
                text += &format!("o {cost}\n");
                costs.push(*cost);
                if let Some(s) = status_first {
                    text += &format!("s {}\n", s.as_str());
                }
                let mut model_text = String::new();
                for (i, v) in model.iter().enumerate() {
                    if i == 1 && *comment_inside {
                        text += "c between v lines\n";
                    }
                    let line = format!("v {v}\n");
                    text += &line;
                    model_text += &line;
                }
                if !model.is_empty() {
                    sols.push(Solution {
                        claimed: *cost,
                        text: model_text,
                    });
                }
            }
            Item::Status(s) => text += &format!("s {}\n", s.as_str()),
            Item::Count(n) => text += &format!("g count {n}\n"),
            Item::Checkpoint => text += "g checkpoint\n",
        }
    }
    (text, sols, costs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn well_formed_transcripts_round_trip(
        items in prop::collection::vec(item(), 0..25),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let (text, expected, costs) = render(&items);
        let events = parse_in_chunks(text.as_bytes(), &cuts, 1 << 20);
        let sols: Vec<Solution> = events.iter().filter_map(|e| match e {
            Event::Solution(s) => Some(s.clone()),
            _ => None,
        }).collect();
        let seen_costs: Vec<i64> = events.iter().filter_map(|e| match e {
            Event::Cost(c) => Some(*c),
            _ => None,
        }).collect();
        let diagnostics: Vec<&Event> =
            events.iter().filter(|e| matches!(e, Event::Diagnostic(_))).collect();
        prop_assert!(diagnostics.is_empty(), "{:?}", diagnostics);
        prop_assert_eq!(sols, expected);
        prop_assert_eq!(seen_costs, costs);
        let comments = events.iter().filter(|e| matches!(e, Event::Comment(_))).count();
        let expected_comments = items.iter().map(|i| match i {
            Item::Comment(_) => 1,
            Item::Improvement { model, comment_inside: true, .. } if model.len() > 1 => 1,
            _ => 0,
        }).sum::<usize>();
        prop_assert_eq!(comments, expected_comments);
    }
}
