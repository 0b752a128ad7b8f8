//! `--log-format` and `--log-level`: the tracing subscriber of the binary.
//!
//! JSON is the default and follows the layout Gardener's components write
//! with zap (reference §3.8), so the seed's log stack parses scion's lines
//! like the Go extensions': one object per line on stderr with the keys
//! `level` (`debug`, `info`, `warn`, `error`), `ts` (ISO 8601 UTC with
//! milliseconds, `2021-12-16T08:32:21.059Z`), `logger` (the module path,
//! dot-joined), `msg`, then the fields of the enclosing spans (zap's
//! `WithValues`) and of the event in call order. Not reproduced: zap's
//! sampling (the first 100 lines of a message per second, then every 100th)
//! and the Go `stacktrace` key on errors. `text` is a human-readable line.

use std::fmt::Write as _;
use std::io::IsTerminal as _;

use anyhow::anyhow;
use clap::{Args, ValueEnum};
use serde_json::Value;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line in zap's layout.
    Json,
}

/// Logging flags shared by long-running subcommands.
#[derive(Debug, Clone, Args)]
pub struct LogArgs {
    /// Log output format.
    #[arg(long, env = "SCION_LOG_FORMAT", value_enum, default_value_t = LogFormat::Json)]
    pub log_format: LogFormat,
    /// Log level or filter directives (`info`, `debug`, `error`, `scion=debug,info`).
    #[arg(long, env = "SCION_LOG_LEVEL", default_value = "info", value_parser = parse_filter)]
    pub log_level: String,
}

fn parse_filter(value: &str) -> Result<String, String> {
    EnvFilter::try_new(value)
        .map(|_| value.to_string())
        .map_err(|err| format!("not a log level or filter: {err}"))
}

/// kube-runtime's watcher warns at every retry of a list the API server
/// forbids, in Rust debug syntax (`Api(Status { status: Some(Failure) …`);
/// scion logs each watch's failures itself, once per distinct error and in
/// plain words (`gardener::api_error::WatchErrors`, the health-check
/// caches), so the watcher's own lines are kept below `error` unless the
/// filter names `kube_runtime`.
const QUIET_WATCHER: &str = "kube_runtime::watcher=error";

/// The filter of `--log-level`, with [`QUIET_WATCHER`] unless it names
/// `kube_runtime` itself.
pub fn filter(level: &str) -> anyhow::Result<EnvFilter> {
    let filter =
        EnvFilter::try_new(level).map_err(|err| anyhow!("invalid --log-level {level:?}: {err}"))?;
    Ok(if level.contains("kube_runtime") {
        filter
    } else {
        filter.add_directive(QUIET_WATCHER.parse()?)
    })
}

/// Install the global subscriber (logs go to stderr).
pub fn init(args: &LogArgs) -> anyhow::Result<()> {
    let filter = filter(&args.log_level)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let result = match args.log_format {
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder
            .with_ansi(false)
            .fmt_fields(SpanFields)
            .event_format(ZapJson)
            .try_init(),
    };
    result.map_err(|err| anyhow!("cannot install the logger: {err}"))
}

/// zap's level names; tracing's `trace` is below zap's lowest, `debug`.
fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::ERROR => "error",
        Level::WARN => "warn",
        Level::INFO => "info",
        Level::DEBUG | Level::TRACE => "debug",
    }
}

/// `2006-01-02T15:04:05.000Z0700` for a UTC time: `…T08:32:21.059Z`.
pub fn zap_timestamp(t: time::OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// The fields of an event, in call order; `message` apart.
#[derive(Default)]
struct Fields {
    message: String,
    pairs: Vec<(String, Value)>,
}

impl Fields {
    fn push(&mut self, field: &Field, value: Value) {
        if field.name() == "message" {
            self.message = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
        } else {
            self.pairs.push((field.name().to_owned(), value));
        }
    }
}

impl FieldSink for Fields {
    fn take(&mut self, field: &Field, value: Value) {
        self.push(field, value);
    }
}

/// Something that takes a field's value as JSON; [`AsJson`] feeds it.
trait FieldSink {
    fn take(&mut self, field: &Field, value: Value);
}

/// A visitor turning each recorded field into a JSON value for a [`FieldSink`].
struct AsJson<'a, T>(&'a mut T);

impl<T: FieldSink> Visit for AsJson<'_, T> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.take(field, Value::String(value.to_owned()));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.take(field, Value::Bool(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.take(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.take(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.take(field, Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.0.take(field, Value::String(value.to_string()));
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.take(field, Value::String(format!("{value:?}")));
    }
}

/// How the fields of spans are kept until an event prints them: as JSON
/// members, `"key":value`, appended in the order they are recorded, with no
/// braces. tracing-subscriber's `JsonFields` keeps a JSON object instead and
/// parses and writes it again at every `Span::record`; the admission span
/// records nine fields after its creation, which made that re-parsing 185 k
/// of the 440 k instructions a 10 KB review cost the server (callgrind, 500
/// requests; issue 26), though at the default level no line is written for
/// a successful request. Appending costs a few hundred instructions; the
/// parsing is left to [`ZapJson`], which runs only for a line that is
/// written, and keeps what it did (a field recorded twice keeps the later
/// value, and the members come out in key order).
struct SpanFields;

/// Writes each field as `,"key":value` (no comma before the first).
struct MemberWriter<'a, 'w> {
    writer: &'a mut Writer<'w>,
    first: bool,
    result: std::fmt::Result,
}

impl FieldSink for MemberWriter<'_, '_> {
    fn take(&mut self, field: &Field, value: Value) {
        if self.result.is_err() {
            return;
        }
        let comma = if self.first { "" } else { "," };
        self.first = false;
        let key = Value::String(field.name().to_owned());
        self.result = write!(self.writer, "{comma}{key}:{value}");
    }
}

impl<'w> FormatFields<'w> for SpanFields {
    fn format_fields<R: RecordFields>(
        &self,
        mut writer: Writer<'w>,
        fields: R,
    ) -> std::fmt::Result {
        let mut members = MemberWriter {
            writer: &mut writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut AsJson(&mut members));
        members.result
    }

    fn add_fields(
        &self,
        current: &'w mut FormattedFields<Self>,
        fields: &tracing::span::Record<'_>,
    ) -> std::fmt::Result {
        let first = current.fields.is_empty();
        let mut writer = current.as_writer();
        let mut members = MemberWriter {
            writer: &mut writer,
            first,
            result: Ok(()),
        };
        fields.record(&mut AsJson(&mut members));
        members.result
    }
}

/// The members [`SpanFields`] kept, as one JSON object.
fn span_members(kept: &str) -> Option<serde_json::Map<String, Value>> {
    match serde_json::from_str::<Value>(&format!("{{{kept}}}")) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// One line in zap's key order (without the trailing newline).
pub fn zap_line(
    level: &str,
    ts: &str,
    logger: &str,
    msg: &str,
    pairs: impl IntoIterator<Item = (String, Value)>,
) -> String {
    let quote = |s: &str| Value::String(s.to_owned()).to_string();
    let mut line = format!("{{\"level\":{},\"ts\":{}", quote(level), quote(ts));
    if !logger.is_empty() {
        let _ = write!(line, ",\"logger\":{}", quote(logger));
    }
    let _ = write!(line, ",\"msg\":{}", quote(msg));
    for (key, value) in pairs {
        let _ = write!(line, ",{}:{}", quote(&key), value);
    }
    line.push('}');
    line
}

/// The zap-layout event formatter (fields of spans kept by [`SpanFields`]).
struct ZapJson;

impl<S, N> FormatEvent<S, N> for ZapJson
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let meta = event.metadata();
        let mut fields = Fields::default();
        event.record(&mut AsJson(&mut fields));
        let mut pairs: Vec<(String, Value)> = Vec::new();
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                if let Some(formatted) = span.extensions().get::<FormattedFields<N>>()
                    && let Some(map) = span_members(&formatted.fields)
                {
                    pairs.extend(map);
                }
            }
        }
        pairs.extend(fields.pairs);
        let logger = meta.target().replace("::", ".");
        let line = zap_line(
            level_name(meta.level()),
            &zap_timestamp(time::OffsetDateTime::now_utc()),
            &logger,
            &fields.message,
            pairs,
        );
        writeln!(writer, "{line}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_zaps_keys_in_zaps_order() {
        let t = time::OffsetDateTime::from_unix_timestamp_nanos(1_639_639_941_059_999_000).unwrap();
        assert_eq!(zap_timestamp(t), "2021-12-16T07:32:21.059Z");
        let line = zap_line(
            "info",
            "2021-12-16T07:32:21.059Z",
            "scion.server",
            "listening \"x\"",
            [
                ("listener".to_owned(), Value::from("https")),
                ("port".to_owned(), Value::from(10250)),
                ("error".to_owned(), Value::from("boom")),
            ],
        );
        assert_eq!(
            line,
            r#"{"level":"info","ts":"2021-12-16T07:32:21.059Z","logger":"scion.server","msg":"listening \"x\"","listener":"https","port":10250,"error":"boom"}"#
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["msg"], "listening \"x\"");
        assert_eq!(level_name(&Level::TRACE), "debug");
        assert_eq!(level_name(&Level::WARN), "warn");
    }

    /// The span fields as `JsonFields` kept them: a JSON object, a field
    /// recorded again keeps its later value, keys in order.
    #[test]
    fn span_fields_are_appended_and_read_as_one_object() {
        use tracing_subscriber::layer::SubscriberExt as _;
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        let sink = lines.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .fmt_fields(SpanFields)
                .event_format(ZapJson)
                .with_writer(move || Sink(sink.clone())),
        );
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!(
                "admission",
                uid = "u-1",
                kind = tracing::field::Empty,
                outcome = tracing::field::Empty,
                duration_ms = tracing::field::Empty,
            );
            span.record("kind", "Deployment");
            span.record("outcome", "denied");
            span.record("outcome", "patched");
            span.record("duration_ms", 1.25);
            span.in_scope(|| tracing::warn!(reason = "a \"quoted\" one", "refused"));
        });
        let text = String::from_utf8(lines.lock().unwrap().clone()).unwrap();
        let line: Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(line["msg"], "refused");
        assert_eq!(line["uid"], "u-1");
        assert_eq!(line["kind"], "Deployment");
        assert_eq!(line["outcome"], "patched");
        assert_eq!(line["duration_ms"], 1.25);
        assert_eq!(line["reason"], "a \"quoted\" one");
        let keys: Vec<&str> = line
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(text.matches("\"outcome\"").count(), 1, "{text}");
        assert!(keys.contains(&"reason"), "{keys:?}");
        assert!(
            text.find("\"duration_ms\"") < text.find("\"kind\""),
            "span members in key order: {text}"
        );
    }

    struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_watchers_own_retries_stay_quiet_unless_asked_for() {
        for level in ["info", "debug", "scion=debug,warn"] {
            let text = filter(level).unwrap().to_string();
            assert!(
                text.contains("kube_runtime::watcher=error"),
                "{level}: {text}"
            );
        }
        let asked = filter("kube_runtime=debug,info").unwrap().to_string();
        assert!(!asked.contains("kube_runtime::watcher=error"), "{asked}");
        assert!(filter("scion=loud").is_err());
    }
}
