//! Values of `serve` flags: addresses and Go-style durations.

use std::net::SocketAddr;
use std::time::Duration;

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

/// A Go-style duration: `8s`, `500ms`, `2m`, `1m30s`, `1.5h`; units ns, us, µs, ms, s, m, h.
pub fn parse_duration(value: &str) -> Result<Duration, String> {
    let text = value.trim();
    if text.is_empty() {
        return Err("empty duration: use e.g. 8s, 500ms, 2m".into());
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, after) = rest.split_at(number_len);
        let unit_len = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let number: f64 = number.parse().map_err(|_| {
            format!("{value:?} is not a duration: expected a number before {unit:?}")
        })?;
        let seconds = match unit {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => {
                return Err(format!(
                    "{value:?} has no unit: use ns, us, ms, s, m or h (e.g. 8s)"
                ));
            }
            other => {
                return Err(format!(
                    "{value:?} has an unknown unit {other:?}: use ns, us, ms, s, m or h"
                ));
            }
        };
        total += number * seconds;
        rest = after;
    }
    Duration::try_from_secs_f64(total).map_err(|err| format!("{value:?} is out of range: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse_duration("8s"), Ok(Duration::from_secs(8)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("8").unwrap_err().contains("no unit"));
        assert!(
            parse_duration("8x")
                .unwrap_err()
                .contains("unknown unit \"x\"")
        );
        assert!(
            parse_duration("s")
                .unwrap_err()
                .contains("expected a number")
        );
    }
}
