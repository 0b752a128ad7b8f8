//! Values of `serve` flags: addresses and Go-style durations.

use std::net::SocketAddr;

/// `:8080` means all interfaces, like Go's `--metrics-bind-address :8080`.
pub(super) fn parse_addr(value: &str) -> Result<SocketAddr, String> {
    let full = if value.starts_with(':') {
        format!("0.0.0.0{value}")
    } else {
        value.to_string()
    };
    full.parse()
        .map_err(|_| format!("{value:?} is not HOST:PORT with an IP host (e.g. 0.0.0.0:10250, 127.0.0.1:0, [::]:8080, :8080)"))
}

/// A Go-style duration (`8s`, `500ms`, `1m30s`): see [`crate::gardener::duration`].
pub use crate::gardener::duration::parse as parse_duration;
