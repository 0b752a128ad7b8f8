//! A Kubernetes API error as an operator reads it. kube's own text of a
//! refused request is `ApiError: <message> (Status { status: Some(Failure), … })`,
//! Rust debug syntax in the middle of a log line; here it is
//! `API server answered 404 NotFound: leases "x" not found`; and a watch's
//! failures, logged once each however often the watch retries.

use std::fmt;

/// A `kube::Error` whose text is [`describe`]'s. It is the error's source in
/// scion's error types, so an error chain printed whole (`{:#}`) carries no
/// debug dump either.
#[derive(Debug)]
pub struct ApiError(pub kube::Error);

impl From<kube::Error> for ApiError {
    fn from(error: kube::Error) -> Self {
        ApiError(error)
    }
}

impl ApiError {
    /// The HTTP status of a refused request; `None` when none came back.
    pub fn code(&self) -> Option<u16> {
        match &self.0 {
            kube::Error::Api(status) => Some(status.code),
            _ => None,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&describe(&self.0))
    }
}

impl std::error::Error for ApiError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            kube::Error::Api(_) => None,
            other => std::error::Error::source(other),
        }
    }
}

/// `API server answered <code> <reason>: <message>` for a refused request
/// (the message cut at 300 bytes); kube's text for everything else.
pub fn describe(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => {
            let mut out = format!("API server answered {}", status.code);
            // kube's stand-in reason when the body was not a Kubernetes Status
            // (a proxy's HTML page, say): not worth repeating.
            if !status.reason.is_empty() && status.reason != "Failed to parse error data" {
                out.push_str(&format!(" {}", status.reason));
            }
            if !status.message.is_empty() {
                out.push_str(&format!(": {}", truncate(&status.message, 300)));
            }
            out
        }
        other => other.to_string(),
    }
}

/// A watch's error in [`describe`]'s terms: `list Clusters: API server answered 403 Forbidden: …`.
pub fn describe_watch(error: &kube::runtime::watcher::Error) -> String {
    use kube::runtime::watcher::Error as W;
    match error {
        W::InitialListFailed(e) => format!("list: {}", describe(e)),
        W::WatchStartFailed(e) => format!("watch: {}", describe(e)),
        W::WatchFailed(e) => format!("watch stream: {}", describe(e)),
        W::WatchError(status) => format!(
            "watch: API server answered {} {}: {}",
            status.code,
            status.reason,
            truncate(&status.message, 300)
        ),
        W::NoResourceVersion => error.to_string(),
    }
}

/// The log of one watch's failures: a watch retries with a backoff and
/// fails the same way at every retry, so each distinct error is logged once
/// (`warn`), its repeats only at `debug`, and the recovery once (`info`).
#[derive(Debug)]
pub struct WatchErrors {
    what: &'static str,
    last: Option<String>,
}

impl WatchErrors {
    /// The log of the watch of `what` (e.g. `Clusters`).
    pub fn new(what: &'static str) -> Self {
        WatchErrors { what, last: None }
    }

    /// The watch failed with `error` (see [`describe_watch`]); true when
    /// that was logged at `warn` (a new error), false for a repeat.
    pub fn failed(&mut self, error: String) -> bool {
        if self.last.as_ref() == Some(&error) {
            tracing::debug!(watch = self.what, %error, "watch failed again; retrying");
            false
        } else {
            tracing::warn!(watch = self.what, %error, "watch failed; retrying with backoff (repeats are logged at debug level)");
            self.last = Some(error);
            true
        }
    }

    /// The watch delivered an event.
    pub fn ok(&mut self) {
        if self.last.take().is_some() {
            tracing::info!(watch = self.what, "watch recovered");
        }
    }

    /// Observe one item of a watcher stream. `Event::Init` is no recovery:
    /// kube-runtime's watcher sends it when a (re)list *starts*, before
    /// every retry of a list that keeps failing, so taking it for one
    /// logged the same error again at every retry, each followed by a
    /// "recovered" (seen on a real API server with a forbidden list).
    pub fn observe<K>(
        &mut self,
        item: &Result<kube::runtime::watcher::Event<K>, kube::runtime::watcher::Error>,
    ) {
        match item {
            Ok(kube::runtime::watcher::Event::Init) => {}
            Ok(_) => self.ok(),
            Err(e) => {
                self.failed(describe_watch(e));
            }
        }
    }
}

/// At most `max` bytes of `text` (on a character boundary), marked when cut.
fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_watch_error_is_logged_once_until_the_watch_recovers() {
        let mut log = WatchErrors::new("Clusters");
        let forbidden = || {
            let status =
                kube::core::Status::failure("clusters is forbidden", "Forbidden").with_code(403);
            kube::runtime::watcher::Error::InitialListFailed(kube::Error::Api(Box::new(status)))
        };
        let text = describe_watch(&forbidden());
        assert_eq!(
            text,
            "list: API server answered 403 Forbidden: clusters is forbidden"
        );
        assert!(log.failed(text.clone()));
        assert!(!log.failed(text.clone()), "a repeat is not logged at warn");
        assert!(log.failed("watch: other".into()), "another error is");
        log.ok();
        assert!(
            log.failed(text.clone()),
            "after a recovery, the error is news again"
        );
        // a list that keeps failing: the watcher's Init before each retry
        // is no recovery
        let init: Result<kube::runtime::watcher::Event<()>, _> =
            Ok(kube::runtime::watcher::Event::Init);
        for _ in 0..3 {
            log.observe(&init);
            assert!(!log.failed(text.clone()), "a retry is no news");
        }
        log.observe(&Ok(kube::runtime::watcher::Event::<()>::InitDone));
        assert!(log.failed(text), "a completed list is a recovery");
    }

    #[test]
    fn a_refused_request_reads_without_debug_syntax() {
        let status =
            kube::core::Status::failure("leases \"x\" not found", "NotFound").with_code(404);
        let err = ApiError(kube::Error::Api(Box::new(status)));
        assert_eq!(
            err.to_string(),
            "API server answered 404 NotFound: leases \"x\" not found"
        );
        assert_eq!(err.code(), Some(404));
        assert!(std::error::Error::source(&err).is_none());
        let long = kube::core::Status::failure(&"é".repeat(400), "").with_code(500);
        let text = describe(&kube::Error::Api(Box::new(long)));
        assert!(
            text.starts_with("API server answered 500: é") && text.ends_with('…'),
            "{text}"
        );
    }
}
