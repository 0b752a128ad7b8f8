//! Process limits the server sizes itself by: the open-file limit, raised
//! to its hard limit at start, and the default connection cap below it.

use super::probes::PROBE_MAX_CONNECTIONS;

/// The default cap on open webhook connections never exceeds this: an idle
/// TLS connection costs about 10 KiB of memory besides its descriptor.
pub const MAX_CONNECTIONS_CEILING: usize = 16_384;

/// File descriptors kept out of the webhook's connection cap: both probe
/// listeners at their cap, plus the rest of the process (certificate and
/// objects-directory watches, the Kubernetes client, log output).
const OTHER_DESCRIPTORS: usize = 256;

/// The open-file limit now (soft limit), if it can be read.
pub fn open_file_limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        Some(limit.current.unwrap_or(u64::MAX))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Raise the soft open-file limit to the hard limit. Returns the limits
/// before and after.
pub fn raise_open_file_limit() -> std::io::Result<(u64, u64)> {
    #[cfg(unix)]
    {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let limit = getrlimit(Resource::Nofile);
        let before = limit.current.unwrap_or(u64::MAX);
        if limit.current == limit.maximum {
            return Ok((before, before));
        }
        setrlimit(
            Resource::Nofile,
            rustix::process::Rlimit {
                current: limit.maximum,
                maximum: limit.maximum,
            },
        )?;
        Ok((before, limit.maximum.unwrap_or(u64::MAX)))
    }
    #[cfg(not(unix))]
    {
        Err(std::io::Error::other("not supported on this platform"))
    }
}

/// The default `--max-connections` for an open-file limit: the limit less
/// the reserved descriptors (at most half of it), at most
/// [`MAX_CONNECTIONS_CEILING`], at least 1.
pub fn default_max_connections(open_file_limit: Option<u64>) -> usize {
    let Some(limit) = open_file_limit else {
        return MAX_CONNECTIONS_CEILING;
    };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let reserve = (2 * PROBE_MAX_CONNECTIONS + OTHER_DESCRIPTORS).min(limit / 2);
    (limit - reserve).clamp(1, MAX_CONNECTIONS_CEILING)
}

/// Descriptors the process needs besides `max_connections` webhook
/// connections; a cap above `limit - reserved` may run out of descriptors
/// before it is reached.
pub fn reserved_descriptors() -> usize {
    2 * PROBE_MAX_CONNECTIONS + OTHER_DESCRIPTORS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_stays_below_the_descriptor_limit() {
        let reserved = reserved_descriptors();
        assert_eq!(default_max_connections(Some(10_000)), 10_000 - reserved);
        assert_eq!(
            default_max_connections(Some(1_048_576)),
            MAX_CONNECTIONS_CEILING
        );
        // A small limit keeps half for everything else.
        assert_eq!(default_max_connections(Some(256)), 128);
        assert_eq!(default_max_connections(Some(1)), 1);
        assert_eq!(default_max_connections(None), MAX_CONNECTIONS_CEILING);
    }

    #[test]
    fn raising_never_lowers_the_limit() {
        let before = open_file_limit().unwrap();
        let (was, now) = raise_open_file_limit().unwrap();
        assert_eq!(was, before);
        assert!(now >= was);
        assert_eq!(open_file_limit(), Some(now));
    }
}
