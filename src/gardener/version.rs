//! Kubernetes versions as Gardener reads them.

use semver::Version;

/// Parse a Kubernetes version leniently, as Gardener (Masterminds semver) does:
/// an optional `v`, one to three numeric parts (missing ones are 0), and an
/// optional pre-release and build suffix: `1.31` is 1.31.0, `v1.31.2` is 1.31.2.
pub fn parse_version(text: &str) -> Result<Version, String> {
    let trimmed = text.trim();
    let body = trimmed
        .strip_prefix('v')
        .or_else(|| trimmed.strip_prefix('V'))
        .unwrap_or(trimmed);
    let split = body.find(['-', '+']).unwrap_or(body.len());
    let (core, suffix) = body.split_at(split);
    let parts: Vec<&str> = core.split('.').collect();
    if parts.len() > 3
        || parts
            .iter()
            .any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(format!("{text:?} is not a valid version"));
    }
    let mut numbers = [0u64; 3];
    for (slot, part) in numbers.iter_mut().zip(&parts) {
        *slot = part
            .parse()
            .map_err(|_| format!("{text:?} is not a valid version: {part:?} is too large"))?;
    }
    let canonical = format!("{}.{}.{}{suffix}", numbers[0], numbers[1], numbers[2]);
    Version::parse(&canonical).map_err(|e| format!("{text:?} is not a valid version: {e}"))
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn versions_parse_leniently_like_gardener() {
        let cases = [
            ("1.31", "1.31.0"),
            ("v1.31.2", "1.31.2"),
            ("1", "1.0.0"),
            (" 1.33.4 ", "1.33.4"),
            ("1.34.0-alpha.1", "1.34.0-alpha.1"),
            ("v1.30.1+build.5", "1.30.1+build.5"),
        ];
        for (input, want) in cases {
            assert_eq!(parse_version(input).unwrap().to_string(), want, "{input}");
        }
        for bad in ["", "1.x", "1.2.3.4", "one", "1..2", "-1.2"] {
            let err = parse_version(bad).unwrap_err();
            assert!(err.contains("not a valid version"), "{bad}: {err}");
        }
    }
}
