//! Client-side rate limit of the Kubernetes API client (`--kube-api-qps`,
//! `--kube-api-burst`), client-go's token bucket: `burst` requests at once,
//! then `qps` per second. A request that finds the bucket empty waits for
//! its token instead of failing, as client-go's does.
//!
//! [`TokenBucket`] is the pure arithmetic over explicit instants;
//! [`ThrottleLayer`] is the tower layer that puts it in front of the
//! client's HTTP stack (`kube::client::ClientBuilder::with_layer`).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};

/// client-go's token bucket over explicit instants.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket at `now`. `qps` must be positive and finite, `burst` at least 1.
    pub fn new(qps: f64, burst: u32, now: Instant) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            qps,
            burst,
            tokens: burst,
            last: now,
        }
    }

    /// Take a token at `now`, or say how long until one is there.
    pub fn take(&mut self, now: Instant) -> Result<(), Duration> {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / self.qps))
        }
    }
}

/// Layer putting a shared [`TokenBucket`] in front of a service.
#[derive(Debug, Clone)]
pub struct ThrottleLayer {
    bucket: Arc<Mutex<TokenBucket>>,
}

impl ThrottleLayer {
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            bucket: Arc::new(Mutex::new(TokenBucket::new(qps, burst, Instant::now()))),
        }
    }
}

impl<S> tower_layer::Layer<S> for ThrottleLayer {
    type Service = Throttle<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Throttle {
            inner,
            bucket: self.bucket.clone(),
            sleep: None,
            token: false,
        }
    }
}

/// The throttled service: ready once it holds a token and the inner service is ready.
pub struct Throttle<S> {
    inner: S,
    bucket: Arc<Mutex<TokenBucket>>,
    sleep: Option<Pin<Box<Sleep>>>,
    /// A token taken in `poll_ready` and not yet spent by `call`.
    token: bool,
}

impl<S, R> tower_service::Service<R> for Throttle<S>
where
    S: tower_service::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        while !self.token {
            if let Some(sleep) = self.sleep.as_mut() {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.sleep = None;
            }
            let wait = self
                .bucket
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take(Instant::now());
            match wait {
                Ok(()) => self.token = true,
                Err(wait) => self.sleep = Some(Box::pin(tokio::time::sleep(wait))),
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        self.token = false;
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_qps() {
        let t0 = Instant::now();
        let mut b = TokenBucket::new(10.0, 3, t0);
        for _ in 0..3 {
            assert_eq!(b.take(t0), Ok(()));
        }
        let wait = b.take(t0).unwrap_err();
        assert!((wait.as_secs_f64() - 0.1).abs() < 1e-9, "{wait:?}");
        assert_eq!(b.take(t0 + Duration::from_millis(100)), Ok(()));
        // a long pause refills at most `burst`
        let later = t0 + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(b.take(later), Ok(()));
        }
        assert!(b.take(later).is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn the_layer_delays_requests_beyond_the_burst() {
        use tower_layer::Layer as _;
        use tower_service::Service as _;
        struct Echo;
        impl tower_service::Service<u32> for Echo {
            type Response = u32;
            type Error = std::convert::Infallible;
            type Future = std::future::Ready<Result<u32, Self::Error>>;
            fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
                Poll::Ready(Ok(()))
            }
            fn call(&mut self, n: u32) -> Self::Future {
                std::future::ready(Ok(n))
            }
        }
        let inner = Echo;
        let mut svc = ThrottleLayer::new(2.0, 2).layer(inner);
        let start = Instant::now();
        for n in 0..4 {
            std::future::poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
            assert_eq!(svc.call(n).await.unwrap(), n);
        }
        // two at once, then one every 500 ms
        assert_eq!(Instant::now() - start, Duration::from_secs(1));
    }
}
