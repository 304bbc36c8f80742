//! The solution document of an `exec` campaign and its text form.
//!
//! A solution is `{"model": "<v lines>"}`: the solver's `v` lines exactly as printed, each
//! with its `\n` (the MaxSAT Evaluation's model, or any text the user's checker reads). That
//! text is what the checker reads as its solution file and what `grind export` writes.
//! `grind import` reads such a text back, or a solver's whole output (then the model of its
//! last `o` line counts).

use serde_json::{json, Value};

use grind_exec::protocol::{Event, Parser};

use crate::problem::ProblemError;

/// Largest model accepted, in bytes.
pub const MAX_MODEL_BYTES: usize = 64 << 20;

/// The solution document of a model.
pub fn document(model: &str) -> Value {
    json!({ "model": model })
}

/// The model of a solution document.
pub fn model(solution: &Value) -> Result<&str, ProblemError> {
    let model = solution
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ProblemError::InvalidSolution("an exec solution is {\"model\": \"<v lines>\"}".into())
        })?;
    if model.len() > MAX_MODEL_BYTES {
        return Err(ProblemError::InvalidSolution(format!(
            "the model is longer than {MAX_MODEL_BYTES} bytes"
        )));
    }
    Ok(model)
}

/// Reads a submission: the `v` lines of an exported solution, or a solver's whole output
/// (the model of its last complete `o` block).
pub fn parse_submission(text: &str) -> Result<Value, ProblemError> {
    let mut parser = Parser::default();
    let mut events = parser.feed(text.as_bytes());
    if !text.ends_with('\n') {
        events.extend(parser.feed(b"\n"));
    }
    events.extend(parser.finish());
    let last = events.into_iter().rev().find_map(|e| match e {
        Event::Solution(s) => Some(s.text),
        _ => None,
    });
    let model = match last {
        Some(model) => model,
        None => {
            // No `o` line: an exported model, every `v` line of it.
            let lines: String = text
                .lines()
                .filter(|l| l.trim_start().starts_with("v ") || l.trim() == "v")
                .map(|l| format!("{l}\n"))
                .collect();
            if lines.is_empty() {
                return Err(ProblemError::InvalidSolution(
                    "no `v` lines: an exec submission is the solver's `v` lines (or its whole \
                     output)"
                        .into(),
                ));
            }
            lines
        }
    };
    let doc = document(&model);
    self::model(&doc)?;
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exported_models_and_whole_outputs_read_back() {
        let exported = "v 0 1 4 9 11\n";
        assert_eq!(
            model(&parse_submission(exported).unwrap()).unwrap(),
            exported
        );
        let output = "c start\no 12\nv 0 1 5 12\ns SATISFIABLE\no 11\nv 0 1 4 9 11\nc nodes 5\n";
        assert_eq!(model(&parse_submission(output).unwrap()).unwrap(), exported);
        let two_lines = "v 0110\nv 1100";
        assert_eq!(
            model(&parse_submission(two_lines).unwrap()).unwrap(),
            "v 0110\nv 1100\n"
        );
        assert!(parse_submission("nothing here\n").is_err());
        assert!(parse_submission("").is_err());
        assert!(model(&json!({"v": "x"})).is_err());
        assert!(model(&json!({"model": 5})).is_err());
    }
}
