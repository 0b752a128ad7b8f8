//! Gardener's `lastError.codes`: error codes attached to the errors that carry
//! them (`extensions/pkg/util/errors.go`). Gardener's ControlPlane actuators
//! attach one only for a ManagedResource deletion that failed on an invalid
//! object; scion does the same, with the same pattern, matched by hand.

/// `ERR_CONFIGURATION_PROBLEM`.
pub const CONFIGURATION_PROBLEM: &str = "ERR_CONFIGURATION_PROBLEM";

/// Whether the text matches `(?i)(error during apply of object .* is invalid:)`.
pub fn is_configuration_problem(text: &str) -> bool {
    let lower = text.to_lowercase();
    let Some(at) = lower.find("error during apply of object ") else {
        return false;
    };
    lower[at + "error during apply of object ".len()..].contains(" is invalid:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_problem_pattern() {
        assert!(is_configuration_problem(
            "Error during apply of object \"apps/v1/Deployment/ns/x\" is invalid: spec.x: bad"
        ));
        assert!(!is_configuration_problem(
            "error during apply of object x failed"
        ));
        assert!(!is_configuration_problem(
            "is invalid: error during apply of object "
        ));
    }
}
