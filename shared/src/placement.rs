//! Placement: which workers may run a campaign's units. Built-in problems run anywhere;
//! a campaign that runs a user's native code runs only on workers whose owner opted in, and
//! only where the code has a variant for the worker's platform.

use serde::{Deserialize, Serialize};

/// The platform (Rust target triple) these binaries were built for.
pub const PLATFORM: &str = env!("GRIND_TARGET");

/// What a problem instance needs from a worker to run its units.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requirements {
    /// The units run code that is not part of grind (a user's solver): only workers started
    /// with the explicit opt-in may run them.
    pub native_code: bool,
    /// The platforms (target triples) the code has variants for; `None` = any platform.
    pub platforms: Option<Vec<String>>,
}

/// What a worker states about itself when it registers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// Its owner started it with the opt-in to run users' native code.
    pub native_code_allowed: bool,
    /// Its platform (target triple), e.g. `x86_64-unknown-linux-gnu`.
    pub platform: String,
}

impl Requirements {
    /// `Ok` when a worker with `host`'s facts may run these units; otherwise why not, in
    /// words for the worker's log and the operator.
    pub fn admits(&self, host: &HostFacts) -> Result<(), String> {
        if self.native_code && !host.native_code_allowed {
            return Err(
                "the campaign runs a user's solver and this worker was not started \
                        with --allow-exec"
                    .into(),
            );
        }
        if let Some(platforms) = &self.platforms {
            if !platforms.iter().any(|p| p == &host.platform) {
                return Err(format!(
                    "the solver has no variant for platform {} (it has: {})",
                    host.platform,
                    platforms.join(", ")
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(native: bool, platform: &str) -> HostFacts {
        HostFacts {
            native_code_allowed: native,
            platform: platform.into(),
        }
    }

    #[test]
    fn built_in_problems_run_anywhere() {
        assert!(Requirements::default().admits(&host(false, "x")).is_ok());
    }

    #[test]
    fn native_code_needs_the_opt_in_and_a_variant() {
        let needs = Requirements {
            native_code: true,
            platforms: Some(vec!["aarch64-unknown-linux-gnu".into()]),
        };
        let refused = needs.admits(&host(false, "aarch64-unknown-linux-gnu"));
        assert!(refused.unwrap_err().contains("--allow-exec"));
        let refused = needs.admits(&host(true, "x86_64-unknown-linux-gnu"));
        assert!(refused
            .unwrap_err()
            .contains("no variant for platform x86_64"));
        assert!(needs
            .admits(&host(true, "aarch64-unknown-linux-gnu"))
            .is_ok());
    }

    #[test]
    fn this_build_names_its_platform() {
        assert!(PLATFORM.contains('-'), "{PLATFORM}");
    }
}
