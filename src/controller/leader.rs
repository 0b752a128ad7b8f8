//! Leader election over a `coordination.k8s.io/v1` Lease: only the holder
//! runs the work that must run once per installation (the ControlPlane
//! controller, the health checks, the heartbeat, the webhook registration and
//! the certificate rotation).
//!
//! The algorithm is client-go's `leaderelection`, which controller-runtime and
//! so every Go extension uses, with its timings (lease 15 s, renew deadline
//! 10 s, retry 2 s):
//!
//! - every attempt reads the Lease and decides with the pure [`plan`]: create
//!   it, wait (another holder renewed it less than `leaseDurationSeconds` ago
//!   *by our clock*: the time we last saw its record change, so clock skew
//!   between nodes does not matter), or write it with us as holder (renewing
//!   our own, or taking over an expired one); the write is an update with the
//!   `resourceVersion` read, so of two replicas racing for a free Lease one
//!   gets a conflict;
//! - a follower tries every retry period; when the API fails (a 500, a
//!   timeout, a 403) it retries after 2 s, then every 4 s, forever (client-go
//!   retries every 2–4.4 s): it holds nothing, so retrying is safe, and an
//!   API server back from an outage is led again within seconds. Each
//!   distinct error is logged once at `warn`, its repeats at `debug`;
//! - the leader renews every retry period. A failed renewal is retried until
//!   the renew deadline after the last success; then the leader stops its
//!   work, before the Lease (15 s) can run out and another replica take over,
//!   and follows again.
//!
//! Where controller-runtime exits the process whenever leadership ends, scion
//! stops the work through its [`StopSignal`] and waits for it. The cases where
//! the work cannot go on are returned as an error, and the caller fails
//! liveness so the kubelet restarts the pod: the work ended by itself while
//! leading (a controller task died: nothing would run again), or it did not
//! stop within [`LeaseTiming::stop_timeout`] after leadership was lost (it
//! might still be writing while another replica leads). On shutdown the
//! Lease is released, so the next replica takes over at once.
//!
//! Why not the `kube-lease-manager` crate used before: its constructor's single
//! Lease read ended the election on one 500 ("leader work stopped", nothing ran
//! again), and its watch loop kept reporting leadership while renewals failed
//! longer than the lease, because a caller cannot see whether a renewal
//! succeeded; a deadline on renewals needs that.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::{ControlPlaneReconciler, Error, extension};

/// Resolves when the leader work must stop (leadership lost or shutdown).
pub type StopSignal = Pin<Box<dyn Future<Output = ()> + Send + Sync>>;

/// The timings of the election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseTiming {
    /// `leaseDurationSeconds` written into the Lease: how long followers wait
    /// after its last change before taking it over.
    pub lease_duration: Duration,
    /// A leader that has not renewed for this long stops its work.
    pub renew_deadline: Duration,
    /// How often a follower tries to acquire and a leader renews.
    pub retry_period: Duration,
    /// The longest wait between attempts after API failures (4 s: twice
    /// the retry period, about client-go's jittered retry of 2–4.4 s; a
    /// longer wait only delays the recovery after an API server outage,
    /// measured in `docs/reliability.md`).
    pub max_backoff: Duration,
    /// How long the work may take to stop after leadership ended.
    pub stop_timeout: Duration,
}

impl Default for LeaseTiming {
    /// controller-runtime's: lease 15 s, renew deadline 10 s, retry 2 s.
    fn default() -> Self {
        LeaseTiming {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            max_backoff: Duration::from_secs(4),
            stop_timeout: Duration::from_secs(15),
        }
    }
}

/// Which Lease, held as whom.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    pub lease: String,
    pub namespace: String,
    /// This replica's `holderIdentity`: the host name and a random suffix.
    pub identity: String,
    pub timing: LeaseTiming,
    /// What the election is doing, for `/readyz` ([`LeaderStatus::note`]).
    pub status: LeaderStatus,
}

/// What this replica's election is doing, in words for the operator:
/// `/readyz` shows it on its `leader-election` line, so a replica that
/// cannot reach its Lease (an API server without etcd) says that its
/// controllers do not run while its webhook goes on answering. Cheap to
/// clone; every clone shows the same.
#[derive(Debug, Clone, Default)]
pub struct LeaderStatus(std::sync::Arc<std::sync::RwLock<Option<String>>>);

impl LeaderStatus {
    fn set(&self, text: String) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(text);
    }

    /// The last word, `None` before the first attempt.
    pub fn note(&self) -> Option<String> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Now, to the second, for [`LeaderStatus`].
fn now_text() -> String {
    format!("{:.0}", k8s_openapi::jiff::Timestamp::now())
}

impl LeaderElection {
    /// The Lease `namespace/lease`, held as [`default_identity`], with
    /// controller-runtime's timings.
    pub fn new(lease: &str, namespace: &str) -> Self {
        LeaderElection {
            lease: lease.to_owned(),
            namespace: namespace.to_owned(),
            identity: default_identity(),
            timing: LeaseTiming::default(),
            status: LeaderStatus::default(),
        }
    }
}

/// `<hostname>_<16 hex digits>`, as controller-runtime's `<hostname>_<uuid>`:
/// the pod name shows who leads, the suffix tells two processes of one pod apart.
pub fn default_identity() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "scion".to_owned());
    // std's RandomState is seeded from the OS's random source per process.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    format!("{host}_{:016x}", hasher.finish())
}

/// What the elector last saw of the Lease, and when (client-go's
/// `observedRecord` and `observedTime`).
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub record: LeaseSpec,
    pub at: Instant,
}

/// The decision of one attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// No Lease: create it, held by us.
    Create(LeaseSpec),
    /// Another replica holds it and renewed it within its duration.
    Wait { holder: String },
    /// Write this record (we hold it, or it ran out and we take it over).
    Write(LeaseSpec),
}

/// Decide one attempt from the Lease read (`None`: it does not exist). Updates
/// `observed` when the record changed since the last read. `now` is the
/// MicroTime to write.
pub fn plan(
    current: Option<&LeaseSpec>,
    identity: &str,
    observed: &mut Option<Observed>,
    at: Instant,
    now: MicroTime,
    lease_duration: Duration,
) -> Step {
    let seconds = i32::try_from(lease_duration.as_secs()).unwrap_or(i32::MAX);
    let ours = |acquire: Option<MicroTime>, transitions: i32| LeaseSpec {
        holder_identity: Some(identity.to_owned()),
        lease_duration_seconds: Some(seconds),
        acquire_time: Some(acquire.unwrap_or_else(|| now.clone())),
        renew_time: Some(now.clone()),
        lease_transitions: Some(transitions),
        ..LeaseSpec::default()
    };
    let Some(current) = current else {
        *observed = None;
        return Step::Create(ours(None, 0));
    };
    if observed.as_ref().is_none_or(|o| o.record != *current) {
        *observed = Some(Observed {
            record: current.clone(),
            at,
        });
    }
    let seen_at = observed.as_ref().map_or(at, |o| o.at);
    let holder = current.holder_identity.as_deref().unwrap_or_default();
    let transitions = current.lease_transitions.unwrap_or(0);
    if holder == identity {
        return Step::Write(ours(current.acquire_time.clone(), transitions));
    }
    let duration = Duration::from_secs(
        current
            .lease_duration_seconds
            .and_then(|s| u64::try_from(s).ok())
            .unwrap_or(0),
    );
    if !holder.is_empty() && seen_at + duration > at {
        return Step::Wait {
            holder: holder.to_owned(),
        };
    }
    Step::Write(ours(None, transitions + 1))
}

/// The shell around [`plan`]: reads and writes the Lease.
struct Elector {
    api: Api<Lease>,
    election: LeaderElection,
    observed: Option<Observed>,
}

fn micro_now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409)
}

impl Elector {
    fn what(&self) -> String {
        format!("Lease {}/{}", self.election.namespace, self.election.lease)
    }

    /// One attempt: `Ok(true)` when we hold the Lease afterwards.
    async fn try_acquire_or_renew(&mut self) -> Result<bool, Error> {
        let what = self.what();
        let lease = self
            .api
            .get_opt(&self.election.lease)
            .await
            .map_err(|e| Error::kube(format!("get {what}"), e))?;
        let step = plan(
            lease.as_ref().and_then(|l| l.spec.as_ref()),
            &self.election.identity,
            &mut self.observed,
            Instant::now(),
            micro_now(),
            self.election.timing.lease_duration,
        );
        let written = match step {
            Step::Wait { .. } => return Ok(false),
            Step::Create(spec) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.election.lease.clone()),
                        namespace: Some(self.election.namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(spec),
                };
                match self.api.create(&post_params(), &lease).await {
                    Ok(lease) => lease,
                    // Another replica created it first.
                    Err(e) if is_conflict(&e) => return Ok(false),
                    Err(e) => return Err(Error::kube(format!("create {what}"), e)),
                }
            }
            Step::Write(spec) => {
                let mut lease = lease.expect("a write is planned for an existing Lease");
                lease.spec = Some(spec);
                match self
                    .api
                    .replace(&self.election.lease, &post_params(), &lease)
                    .await
                {
                    Ok(lease) => lease,
                    // Another replica wrote it since we read it.
                    Err(e) if is_conflict(&e) => return Ok(false),
                    Err(e) => return Err(Error::kube(format!("update {what}"), e)),
                }
            }
        };
        self.observed = written.spec.map(|record| Observed {
            record,
            at: Instant::now(),
        });
        Ok(true)
    }

    /// Give the Lease up if we hold it: no holder, a one-second duration.
    async fn release(&mut self) -> Result<(), Error> {
        let what = self.what();
        let Some(mut lease) = self
            .api
            .get_opt(&self.election.lease)
            .await
            .map_err(|e| Error::kube(format!("get {what}"), e))?
        else {
            return Ok(());
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if spec.holder_identity.as_deref() != Some(self.election.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(micro_now());
        self.api
            .replace(&self.election.lease, &post_params(), &lease)
            .await
            .map_err(|e| Error::kube(format!("release {what}"), e))?;
        Ok(())
    }
}

fn post_params() -> PostParams {
    PostParams {
        dry_run: false,
        field_manager: Some(super::FIELD_MANAGER.to_owned()),
    }
}

/// The wait before the next attempt after `failures` failed ones in a row:
/// the retry period doubled per failure, at most `max`.
pub fn backoff(timing: &LeaseTiming, failures: u32) -> Duration {
    let factor = 1u32 << failures.saturating_sub(1).min(16);
    (timing.retry_period * factor).min(timing.max_backoff.max(timing.retry_period))
}

/// Run the ControlPlane controller while this replica holds the Lease; see
/// [`run_while_leading`].
pub async fn run_with_leader_election(
    client: kube::Client,
    ctx: std::sync::Arc<ControlPlaneReconciler>,
    election: &LeaderElection,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Error> {
    run_while_leading(client, election, shutdown, move |stop| {
        extension::run(ctx.clone(), |_| {}, stop)
    })
    .await
}

/// How a term of leadership ended.
enum Ending {
    Shutdown,
    /// The work returned before it was asked to stop.
    WorkEnded,
    /// Another replica holds the Lease, or it could not be renewed in time.
    Lost(String),
}

/// Run `work` while this replica holds the Lease. `work` is called each time
/// leadership is acquired and gets a [`StopSignal`] that resolves when
/// leadership ends or `shutdown` resolves; it must return only then. Returns
/// `Ok` when `shutdown` resolves (the Lease is released then), and an error
/// when the work cannot go on (see the module documentation).
pub async fn run_while_leading<W, F>(
    client: kube::Client,
    election: &LeaderElection,
    shutdown: impl Future<Output = ()> + Send,
    work: W,
) -> Result<(), Error>
where
    W: Fn(StopSignal) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let timing = election.timing;
    let mut elector = Elector {
        api: Api::namespaced(client, &election.namespace),
        election: election.clone(),
        observed: None,
    };
    let lease = elector.what();
    let status = &election.status;
    tokio::pin!(shutdown);
    loop {
        // Follower: try until we hold the Lease.
        let mut failures = 0u32;
        let mut waiting_for: Option<String> = None;
        let mut last_error: Option<String> = None;
        let mut failing_since: Option<String> = None;
        let not_leading = "the controllers, the webhook registration and the certificate rotation run on the leader only";
        loop {
            let attempt = tokio::select! {
                () = &mut shutdown => return Ok(()),
                attempt = tokio::time::timeout(timing.renew_deadline, elector.try_acquire_or_renew()) => attempt,
            };
            let wait = match attempt {
                Ok(Ok(true)) => break,
                Ok(Ok(false)) => {
                    if failures > 0 {
                        tracing::info!(%lease, "the Lease can be read again");
                    }
                    failures = 0;
                    last_error = None;
                    failing_since = None;
                    let holder = elector
                        .observed
                        .as_ref()
                        .and_then(|o| o.record.holder_identity.clone());
                    status.set(format!(
                        "following: {} holds the Lease; {not_leading}",
                        holder.as_deref().unwrap_or("another replica")
                    ));
                    if holder != waiting_for {
                        if let Some(holder) = &holder {
                            tracing::info!(%lease, %holder, "another replica leads; waiting for the Lease");
                        }
                        waiting_for = holder;
                    }
                    timing.retry_period
                }
                Ok(Err(error)) => {
                    failures += 1;
                    let wait = backoff(&timing, failures);
                    let error = error.to_string();
                    let since = failing_since.get_or_insert_with(now_text);
                    status.set(format!("not leading: the Lease cannot be read or written since {since} ({error}); {not_leading}"));
                    if last_error.as_ref() == Some(&error) {
                        tracing::debug!(%lease, %error, failures, retry_in = %crate::gardener::duration::text(wait), "cannot acquire the leader-election Lease; retrying");
                    } else {
                        tracing::warn!(%lease, %error, failures, retry_in = %crate::gardener::duration::text(wait), "cannot acquire the leader-election Lease; retrying (repeats of this error are logged at debug level)");
                        last_error = Some(error);
                    }
                    wait
                }
                Err(_elapsed) => {
                    failures += 1;
                    let wait = backoff(&timing, failures);
                    let error = "no answer in time".to_owned();
                    let since = failing_since.get_or_insert_with(now_text);
                    status.set(format!(
                        "not leading: the Lease gets no answer in time since {since}; {not_leading}"
                    ));
                    if last_error.as_ref() == Some(&error) {
                        tracing::debug!(%lease, failures, timeout = %crate::gardener::duration::text(timing.renew_deadline), retry_in = %crate::gardener::duration::text(wait), "the leader-election Lease did not answer in time; retrying");
                    } else {
                        tracing::warn!(%lease, failures, timeout = %crate::gardener::duration::text(timing.renew_deadline), retry_in = %crate::gardener::duration::text(wait), "the leader-election Lease did not answer in time; retrying (repeats are logged at debug level)");
                        last_error = Some(error);
                    }
                    wait
                }
            };
            tokio::select! {
                () = &mut shutdown => return Ok(()),
                () = tokio::time::sleep(wait) => {}
            }
        }
        tracing::info!(%lease, identity = %election.identity, "acquired leadership");
        status.set(format!("leading since {}", now_text()));
        let (stop, stopped) = oneshot::channel::<()>();
        let mut task = tokio::spawn(work(Box::pin(async move {
            let _ = stopped.await;
        })));
        let mut renewed = Instant::now();
        let mut last_error: Option<String> = None;
        let ending = loop {
            tokio::select! {
                () = &mut shutdown => break Ending::Shutdown,
                _ = &mut task => break Ending::WorkEnded,
                () = tokio::time::sleep(timing.retry_period) => {}
            }
            let deadline = renewed + timing.renew_deadline;
            match tokio::time::timeout_at(deadline, elector.try_acquire_or_renew()).await {
                Ok(Ok(true)) => {
                    if last_error.take().is_some() {
                        tracing::info!(%lease, "the leader-election Lease is renewed again");
                        status.set(format!("leading; renewed again at {}", now_text()));
                    }
                    renewed = Instant::now();
                }
                Ok(Ok(false)) => break Ending::Lost("another replica holds the Lease".into()),
                Ok(Err(error)) => {
                    let error = error.to_string();
                    tracing::warn!(%lease, %error, "cannot renew the leader-election Lease; retrying until the renew deadline");
                    status.set(format!("leading, but the Lease cannot be renewed since {} ({error}); the leader work stops at the renew deadline", now_text()));
                    last_error = Some(error);
                    if Instant::now() + timing.retry_period >= deadline {
                        break Ending::Lost(format!(
                            "not renewed within the renew deadline of {}: {}",
                            crate::gardener::duration::text(timing.renew_deadline),
                            last_error.take().unwrap_or_default()
                        ));
                    }
                }
                Err(_elapsed) => {
                    break Ending::Lost(format!(
                        "not renewed within the renew deadline of {}{}",
                        crate::gardener::duration::text(timing.renew_deadline),
                        last_error
                            .take()
                            .map(|e| format!(": {e}"))
                            .unwrap_or_default()
                    ));
                }
            }
        };
        let _ = stop.send(());
        let stopped_in_time = match ending {
            Ending::WorkEnded => true,
            _ => tokio::time::timeout(timing.stop_timeout, &mut task)
                .await
                .is_ok(),
        };
        match ending {
            Ending::Shutdown => {
                if !stopped_in_time {
                    tracing::warn!(%lease, "the leader work did not stop in time; releasing the Lease anyway");
                    task.abort();
                }
                if let Err(error) = elector.release().await {
                    tracing::warn!(%lease, %error, "cannot release the leader-election Lease; it runs out by itself");
                } else {
                    tracing::info!(%lease, "released the leader-election Lease");
                }
                return Ok(());
            }
            Ending::WorkEnded => {
                if let Err(error) = elector.release().await {
                    tracing::warn!(%lease, %error, "cannot release the leader-election Lease; it runs out by itself");
                }
                return Err(Error::Leader(
                    "the leader work ended while this replica was leading".into(),
                ));
            }
            Ending::Lost(reason) => {
                if !stopped_in_time {
                    task.abort();
                    return Err(Error::Leader(format!(
                        "lost leadership ({reason}) and the leader work did not stop within {}",
                        crate::gardener::duration::text(timing.stop_timeout)
                    )));
                }
                tracing::warn!(%lease, %reason, "lost leadership; the leader work stopped; following again");
                status.set(format!(
                    "lost leadership at {} ({reason}); the leader work stopped",
                    now_text()
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micro(second: i64) -> MicroTime {
        MicroTime(k8s_openapi::jiff::Timestamp::from_second(1_790_000_000 + second).unwrap())
    }

    fn held(by: &str, renewed: i64) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(by.into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(micro(0)),
            renew_time: Some(micro(renewed)),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        }
    }

    const D: Duration = Duration::from_secs(15);

    #[test]
    fn a_missing_lease_is_created_held_by_us() {
        let mut observed = None;
        let step = plan(None, "me", &mut observed, Instant::now(), micro(5), D);
        let Step::Create(spec) = step else {
            panic!("{step:?}")
        };
        assert_eq!(spec.holder_identity.as_deref(), Some("me"));
        assert_eq!(spec.lease_duration_seconds, Some(15));
        assert_eq!(spec.lease_transitions, Some(0));
        assert_eq!(spec.acquire_time, Some(micro(5)));
    }

    #[test]
    fn another_holder_is_waited_for_by_our_clock_then_taken_over() {
        let t0 = Instant::now();
        let mut observed = None;
        let other = held("other", 100);
        let step = plan(Some(&other), "me", &mut observed, t0, micro(1), D);
        assert_eq!(
            step,
            Step::Wait {
                holder: "other".into()
            }
        );
        // The same record 14 s later by our clock (whatever its renewTime
        // says): still valid; at 15 s it ran out and is taken over.
        let step = plan(
            Some(&other),
            "me",
            &mut observed,
            t0 + Duration::from_secs(14),
            micro(2),
            D,
        );
        assert!(matches!(step, Step::Wait { .. }), "{step:?}");
        let step = plan(Some(&other), "me", &mut observed, t0 + D, micro(3), D);
        let Step::Write(spec) = step else {
            panic!("{step:?}")
        };
        assert_eq!(spec.holder_identity.as_deref(), Some("me"));
        assert_eq!(spec.lease_transitions, Some(4));
        assert_eq!(spec.acquire_time, Some(micro(3)));
    }

    #[test]
    fn a_renewal_by_the_other_holder_restarts_our_clock() {
        let t0 = Instant::now();
        let mut observed = None;
        plan(
            Some(&held("other", 100)),
            "me",
            &mut observed,
            t0,
            micro(1),
            D,
        );
        let later = t0 + Duration::from_secs(10);
        plan(
            Some(&held("other", 110)),
            "me",
            &mut observed,
            later,
            micro(2),
            D,
        );
        let step = plan(
            Some(&held("other", 110)),
            "me",
            &mut observed,
            t0 + D,
            micro(3),
            D,
        );
        assert!(matches!(step, Step::Wait { .. }), "{step:?}");
    }

    #[test]
    fn our_own_lease_is_renewed_keeping_acquire_time_and_transitions() {
        let mut observed = None;
        let step = plan(
            Some(&held("me", 100)),
            "me",
            &mut observed,
            Instant::now(),
            micro(200),
            D,
        );
        let Step::Write(spec) = step else {
            panic!("{step:?}")
        };
        assert_eq!(spec.acquire_time, Some(micro(0)));
        assert_eq!(spec.renew_time, Some(micro(200)));
        assert_eq!(spec.lease_transitions, Some(3));
    }

    #[test]
    fn a_released_lease_is_taken_at_once() {
        let mut observed = None;
        let released = LeaseSpec {
            holder_identity: None,
            lease_duration_seconds: Some(1),
            ..held("x", 100)
        };
        let step = plan(
            Some(&released),
            "me",
            &mut observed,
            Instant::now(),
            micro(1),
            D,
        );
        assert!(matches!(step, Step::Write(_)), "{step:?}");
    }

    #[test]
    fn backoff_doubles_from_the_retry_period_up_to_the_cap() {
        let t = LeaseTiming::default();
        let waits: Vec<u64> = (1..=6).map(|n| backoff(&t, n).as_secs()).collect();
        assert_eq!(waits, [2, 4, 4, 4, 4, 4]);
        assert_eq!(backoff(&t, 1000).as_secs(), 4);
        let long = LeaseTiming {
            max_backoff: Duration::from_secs(30),
            ..t
        };
        let waits: Vec<u64> = (1..=6).map(|n| backoff(&long, n).as_secs()).collect();
        assert_eq!(waits, [2, 4, 8, 16, 30, 30]);
    }
}
