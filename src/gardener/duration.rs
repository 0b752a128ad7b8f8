//! Durations as Kubernetes and Gardener write them (`metav1.Duration`, Go's
//! `time.Duration` text): `500ms`, `8s`, `2m`, `1m30s`. [`parse`] reads the
//! flags' values; [`text`] writes durations into log lines and messages, so an
//! operator reads `1.5s`, never `1.500000001s` or a float of seconds.
//!
//! The byte-exact Go codec of the kubelet configuration is a separate one
//! (`mutation::osc::kubelet`): there every nanosecond must round-trip; here a
//! duration is shown to a person.

use std::time::Duration;

/// A Go-style duration: `8s`, `500ms`, `2m`, `1m30s`, `1.5h`; units ns, us, µs, ms, s, m, h.
pub fn parse(value: &str) -> Result<Duration, String> {
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
    // Whole nanoseconds: `1.1s` is 1_100_000_000 ns, not the float's neighbour.
    let nanos = (total * 1e9).round();
    if !(0.0..=u64::MAX as f64).contains(&nanos) {
        return Err(format!("{value:?} is out of range"));
    }
    Ok(Duration::from_nanos(nanos as u64))
}

/// A duration for people: whole units down to milliseconds (`2m30s`, `8s`,
/// `1.5s`, `250ms`), below a millisecond in µs; at most three decimals.
pub fn text(d: Duration) -> String {
    let micros = d.as_micros();
    if micros == 0 {
        return if d.is_zero() {
            "0s".into()
        } else {
            format!("{}ns", d.as_nanos())
        };
    }
    if micros < 1_000 {
        return format!("{micros}µs");
    }
    let millis = d.as_millis();
    if millis < 1_000 {
        return decimals(micros, 1_000, "ms");
    }
    let (minutes, ms) = (millis / 60_000, millis % 60_000);
    let seconds = decimals(ms, 1_000, "s");
    match (minutes / 60, minutes % 60) {
        (0, 0) => seconds,
        (0, m) if ms == 0 => format!("{m}m"),
        (0, m) => format!("{m}m{seconds}"),
        (h, 0) if ms == 0 => format!("{h}h"),
        (h, m) => format!("{h}h{m}m{seconds}"),
    }
}

/// `value / per` with up to three decimals, trailing zeros dropped, then `unit`.
fn decimals(value: u128, per: u128, unit: &str) -> String {
    let (whole, part) = (value / per, value % per);
    if part == 0 {
        return format!("{whole}{unit}");
    }
    let digits = format!("{part:03}");
    format!("{whole}.{}{unit}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_go() {
        assert_eq!(parse("8s"), Ok(Duration::from_secs(8)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("1.1s"), Ok(Duration::from_millis(1100)));
        assert!(parse("8").unwrap_err().contains("no unit"));
        assert!(parse("8x").unwrap_err().contains("unknown unit \"x\""));
        assert!(parse("s").unwrap_err().contains("expected a number"));
    }

    #[test]
    fn durations_are_written_without_float_noise() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(7), "7ns"),
            (Duration::from_micros(250), "250µs"),
            (Duration::from_micros(1_500), "1.5ms"),
            (Duration::from_nanos(10_000_001), "10ms"),
            (Duration::from_millis(250), "250ms"),
            (Duration::from_secs(8), "8s"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_nanos(1_500_000_001), "1.5s"),
            (Duration::from_secs(90), "1m30s"),
            (Duration::from_secs(120), "2m"),
            (Duration::from_secs(3_600), "1h"),
            (Duration::from_secs(3_690), "1h1m30s"),
        ];
        for (d, want) in cases {
            assert_eq!(text(d), want, "{d:?}");
        }
        for s in ["8s", "500ms", "1m30s", "2m", "1.5s"] {
            assert_eq!(text(parse(s).unwrap()), s);
        }
    }
}
