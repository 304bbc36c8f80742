//! The problem registry: maps a problem's name to its command-line parameters and to a
//! constructor from canonical JSON parameters. The coordinator, the worker and the CLIs only
//! ever reach problems through here.

use clap::{ArgMatches, Args, Command, FromArgMatches};
use serde::{de::DeserializeOwned, Serialize};
use serde_json::Value;
use std::sync::Arc;

use crate::problem::{Problem, ProblemError};
use crate::problems;

/// A problem type that can be registered: a name, its parameters and a validating constructor.
pub trait ProblemDef: Problem + Sized {
    /// The name used on the command line and on the wire.
    const NAME: &'static str;
    /// One line for `--help` and listings.
    const ABOUT: &'static str;
    /// Bumped whenever the solver's results could change; recorded with every result.
    const SOLVER_VERSION: u32;
    /// The typed parameters, parsed from flags and stored as canonical JSON.
    type Params: Args + Serialize + DeserializeOwned;
    /// Validates the parameters and builds the instance.
    fn from_params(params: Self::Params) -> Result<Self, ProblemError>;
    /// The parameters to store, when construction completed them (for example with values
    /// it computed); `None` stores them as given.
    fn canonical(&self) -> Option<Self::Params> {
        None
    }
    /// When the parameters name a family of instances (for example a range of N), the
    /// parameters of every member, each to become a campaign of its own; `None` (the
    /// default) when they name a single instance.
    fn family(params: &Self::Params) -> Result<Option<Vec<Self::Params>>, ProblemError> {
        let _ = params;
        Ok(None)
    }

    /// The JSON keys of [`ProblemDef::Params`] that name files to attach (see
    /// [`crate::attachments`]): at the command line each holds a path (or an array of
    /// them), each optionally prefixed `LABEL=` (e.g. a platform); the CLI uploads the file
    /// or directory and replaces the path with its `sha256:<hex>` digest, keeping the label.
    /// Empty (the default) for problems that name no files.
    const ATTACHMENTS: &'static [&'static str] = &[];

    /// Small parameters that run a whole campaign in well under a second (in a debug
    /// build) and find something to verify: the conformance test
    /// ([`crate::conformance`]) runs each through the generic local driver, and fails for
    /// a registered problem with none. Cover each mode the problem has (exact and heuristic,
    /// discovery and proof, each objective it can take). JSON parameters as stored; fields
    /// left out take their defaults.
    fn examples() -> Vec<Value> {
        Vec::new()
    }

    /// Prepares what [`ProblemDef::examples`] need beyond their parameters (for example the
    /// bundles their attachments name, served by a test
    /// [`crate::attachments::BundleSource`]); the conformance test calls it before running
    /// the examples. The default: nothing.
    fn prepare_examples() {}
}

/// A problem built from JSON parameters: its canonical parameters and the instance.
pub type Built = (Value, Arc<dyn Problem>);

/// One registered problem, type-erased.
pub struct ProblemEntry {
    /// See [`ProblemDef::NAME`].
    pub name: &'static str,
    /// See [`ProblemDef::ABOUT`].
    pub about: &'static str,
    /// See [`ProblemDef::SOLVER_VERSION`].
    pub solver_version: u32,
    args: fn(Command) -> Command,
    params_from_matches: fn(&ArgMatches) -> Result<Value, ProblemError>,
    build: fn(&Value) -> Result<Built, ProblemError>,
    family: fn(&Value) -> Result<Option<Vec<Value>>, ProblemError>,
    examples: fn() -> Vec<Value>,
    prepare_examples: fn(),
    /// See [`ProblemDef::ATTACHMENTS`].
    pub attachments: &'static [&'static str],
}

impl ProblemEntry {
    /// The registry entry for problem type `P`.
    pub const fn of<P: ProblemDef>() -> ProblemEntry {
        ProblemEntry {
            name: P::NAME,
            about: P::ABOUT,
            solver_version: P::SOLVER_VERSION,
            args: P::Params::augment_args,
            params_from_matches: params_from_matches::<P>,
            build: build::<P>,
            family: family::<P>,
            examples: P::examples,
            prepare_examples: P::prepare_examples,
            attachments: P::ATTACHMENTS,
        }
    }

    /// Adds this problem's flags to `cmd`.
    pub fn augment_args(&self, cmd: Command) -> Command {
        (self.args)(cmd)
    }

    /// Reads this problem's parameters from parsed flags, as JSON.
    pub fn params_from_matches(&self, matches: &ArgMatches) -> Result<Value, ProblemError> {
        (self.params_from_matches)(matches)
    }

    /// Validates JSON parameters and builds the instance; also returns the parameters in
    /// canonical form (every field present, in declaration order).
    pub fn build(&self, params: &Value) -> Result<Built, ProblemError> {
        (self.build)(params)
    }

    /// The JSON parameters of every member when `params` names a family of instances (see
    /// [`ProblemDef::family`]); `None` for a single instance.
    pub fn family(&self, params: &Value) -> Result<Option<Vec<Value>>, ProblemError> {
        (self.family)(params)
    }

    /// See [`ProblemDef::examples`].
    pub fn examples(&self) -> Vec<Value> {
        (self.examples)()
    }

    /// See [`ProblemDef::prepare_examples`].
    pub fn prepare_examples(&self) {
        (self.prepare_examples)()
    }
}

fn params_from_matches<P: ProblemDef>(matches: &ArgMatches) -> Result<Value, ProblemError> {
    let params = P::Params::from_arg_matches(matches)
        .map_err(|e| ProblemError::InvalidParams(e.to_string().trim().to_string()))?;
    serde_json::to_value(params).map_err(|e| ProblemError::InvalidParams(e.to_string()))
}

fn family<P: ProblemDef>(params: &Value) -> Result<Option<Vec<Value>>, ProblemError> {
    let typed: P::Params = serde_json::from_value(params.clone())
        .map_err(|e| ProblemError::InvalidParams(format!("{}: {e}", P::NAME)))?;
    let Some(members) = P::family(&typed)? else {
        return Ok(None);
    };
    members
        .iter()
        .map(|member| {
            serde_json::to_value(member).map_err(|e| ProblemError::InvalidParams(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn build<P: ProblemDef>(params: &Value) -> Result<Built, ProblemError> {
    let typed: P::Params = serde_json::from_value(params.clone())
        .map_err(|e| ProblemError::InvalidParams(format!("{}: {e}", P::NAME)))?;
    let given =
        serde_json::to_value(&typed).map_err(|e| ProblemError::InvalidParams(e.to_string()))?;
    let problem = P::from_params(typed)?;
    let canonical = match problem.canonical() {
        Some(completed) => serde_json::to_value(&completed)
            .map_err(|e| ProblemError::InvalidParams(e.to_string()))?,
        None => given,
    };
    Ok((canonical, Arc::new(problem)))
}

/// Every problem grind knows. A new problem is one module plus one line here.
pub fn registry() -> &'static [ProblemEntry] {
    static REGISTRY: &[ProblemEntry] = &[
        ProblemEntry::of::<problems::primes::Primes>(),
        ProblemEntry::of::<problems::nimsquare::NimSquare>(),
        ProblemEntry::of::<problems::topswops::Topswops>(),
        ProblemEntry::of::<problems::housie::Housie>(),
        ProblemEntry::of::<problems::sieve::Sieve>(),
        ProblemEntry::of::<problems::grid::Grid>(),
        ProblemEntry::of::<problems::exec::Exec>(),
    ];
    REGISTRY
}

/// Finds a problem by name.
pub fn lookup(name: &str) -> Result<&'static ProblemEntry, ProblemError> {
    registry()
        .iter()
        .find(|entry| entry.name == name)
        .ok_or_else(|| {
            let known: Vec<_> = registry().iter().map(|e| e.name).collect();
            ProblemError::UnknownProblem(format!("{name} (known: {})", known.join(", ")))
        })
}

/// Builds a problem instance from its name and JSON parameters text.
pub fn instantiate(name: &str, params_json: &str) -> Result<Arc<dyn Problem>, ProblemError> {
    let params: Value = serde_json::from_str(params_json)
        .map_err(|e| ProblemError::InvalidParams(format!("parameters are not JSON: {e}")))?;
    Ok(lookup(name)?.build(&params)?.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_flags_are_well_formed() {
        let mut names: Vec<_> = registry().iter().map(|e| e.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), registry().len());
        for entry in registry() {
            entry
                .augment_args(Command::new(entry.name).no_binary_name(true))
                .debug_assert();
        }
    }

    #[test]
    fn unknown_problem_is_named() {
        let err = lookup("nosuch").err().expect("unknown problem accepted");
        assert!(err.to_string().contains("nosuch"), "{err}");
    }

    #[test]
    fn params_are_canonicalised() {
        let (canonical, _) = lookup("primes")
            .unwrap()
            .build(&serde_json::json!({"to": 100}))
            .unwrap();
        assert_eq!(canonical["to"], 100);
        assert!(canonical.get("from").is_some());
    }

    #[test]
    fn bad_params_json_is_an_error() {
        assert!(instantiate("primes", "{").is_err());
        assert!(instantiate("primes", "{\"to\": -5}").is_err());
    }
}
