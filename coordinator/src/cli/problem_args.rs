//! Parses `<PROBLEM> [problem flags] [command flags]` against the registry: each problem's
//! flags are its own, merged with the flags of the command that runs it.

use clap::{ArgMatches, Args, Command, FromArgMatches};
use grind_shared::registry::{self, ProblemEntry};
use serde_json::Value;

use super::CliError;

/// A problem with validated, canonical parameters, plus the command's own flags.
pub struct ProblemArgs<T> {
    /// The registry entry.
    pub entry: &'static ProblemEntry,
    /// Canonical parameters (as given, for a family).
    pub params: Value,
    /// The canonical parameters of every campaign they name: one, or one per member of a
    /// family (see `ProblemDef::family`).
    pub members: Vec<Value>,
    /// The command's flags.
    pub options: T,
}

/// A problem's parameters as given at the command line (before they are validated and
/// made canonical), plus the command's own flags.
pub struct RawProblemArgs<T> {
    /// The registry entry.
    pub entry: &'static ProblemEntry,
    /// The parameters as given (attachment parameters still hold local paths until
    /// [`super::attachments::attach`] replaces them).
    pub raw: Value,
    /// The command's flags.
    pub options: T,
}

/// Parses `args` for problem `name`, merging in the flags of `T`. `--help` and flag errors
/// are printed by clap, which exits (code 0 for help, 2 for errors).
pub fn parse<T: Args + FromArgMatches>(
    context: &str,
    name: &str,
    args: &[String],
) -> Result<ProblemArgs<T>, CliError> {
    parse_raw(context, name, args)?.build()
}

/// Parses `args` as [`parse`] does, without validating the parameters yet (so that
/// attachments can be uploaded first).
pub fn parse_raw<T: Args + FromArgMatches>(
    context: &str,
    name: &str,
    args: &[String],
) -> Result<RawProblemArgs<T>, CliError> {
    if name == "--help" || name == "-h" {
        println!("Usage: {context} <PROBLEM> [problem flags] [flags]\n\nProblems:");
        for entry in registry::registry() {
            println!("  {:<12} {}", entry.name, entry.about);
        }
        println!("\nSee `{context} <PROBLEM> --help` for a problem's flags.");
        std::process::exit(0);
    }
    let entry = registry::lookup(name).map_err(|e| CliError::Usage(e.to_string()))?;
    let cmd = T::augment_args(
        entry.augment_args(Command::new(format!("{context} {name}")).no_binary_name(true)),
    )
    .about(entry.about);
    let matches: ArgMatches = cmd.try_get_matches_from(args).map_err(super::clap_error)?;
    let raw = entry
        .params_from_matches(&matches)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let options = T::from_arg_matches(&matches).map_err(|e| CliError::Usage(e.to_string()))?;
    Ok(RawProblemArgs {
        entry,
        raw,
        options,
    })
}

impl<T> RawProblemArgs<T> {
    /// Validates the parameters and makes them canonical (one set per family member).
    pub fn build(self) -> Result<ProblemArgs<T>, CliError> {
        let RawProblemArgs {
            entry,
            raw,
            options,
        } = self;
        let usage = |e: grind_shared::problem::ProblemError| CliError::Usage(e.to_string());
        let canonical = |params: &Value| entry.build(params).map(|(canonical, _)| canonical);
        let (params, members) = match entry.family(&raw).map_err(usage)? {
            Some(members) => {
                let members = members
                    .iter()
                    .map(canonical)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(usage)?;
                (raw, members)
            }
            None => {
                let params = canonical(&raw).map_err(usage)?;
                (params.clone(), vec![params])
            }
        };
        Ok(ProblemArgs {
            entry,
            params,
            members,
            options,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every problem's flags merge with the flags of every command that runs it (clap's
    /// debug assertions refuse two arguments of one name, e.g. a problem's `--threads` beside
    /// `grind run --threads`).
    #[test]
    fn every_problem_merges_with_every_command() {
        fn merged<T: Args>(context: &str, entry: &ProblemEntry) {
            T::augment_args(entry.augment_args(Command::new(format!("{context} {}", entry.name))))
                .debug_assert();
        }
        for entry in registry::registry() {
            merged::<crate::cli::run::RunOptions>("grind run", entry);
            merged::<crate::cli::admin::AddOptions>("grind campaign add", entry);
        }
    }
}
