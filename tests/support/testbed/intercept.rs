//! A client-side layer in front of a real API server, for the few faults a
//! real kube-apiserver cannot be made to produce at a chosen request (a 500
//! on one Lease GET, every Lease request failing for a while, another writer
//! acting exactly between two of scion's requests). An [`Intercept`] sees
//! each request before it leaves: it may answer it itself (the fault), act
//! first (the other writer, after which the server answers for real), or let
//! it pass; it sees the server's status afterwards. Everything it lets pass
//! is the real server's: the protocol under test stays real.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use http::{Method, Request, Response, StatusCode};
use kube::client::Body;

/// What a test does at a request of the client.
pub trait Intercept: Send + Sync + 'static {
    /// Before `method path?query` is sent: `Some` answers it instead of the
    /// server (which never sees it); the future may also act on the server
    /// first (as another writer) and then let the request pass (`None`).
    fn before(
        &self,
        method: &Method,
        path: &str,
        query: &str,
    ) -> BoxFuture<'static, Option<Response<Body>>>;

    /// After the server answered a request that passed.
    fn after(&self, _method: &Method, _path: &str, _status: StatusCode) {}
}

/// `real` behind `intercept`, with `real`'s default namespace.
pub fn client(real: kube::Client, intercept: Arc<dyn Intercept>) -> kube::Client {
    let namespace = real.default_namespace().to_owned();
    kube::Client::new(Layer { real, intercept }, namespace)
}

/// An API error as a kube-apiserver writes it (a `Status` object).
pub fn status(code: u16, reason: &str, message: &str) -> Response<Body> {
    let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "reason": reason, "code": code, "message": message});
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(&status).unwrap()))
        .unwrap()
}

/// A future answering with nothing: the request passes.
pub fn pass() -> BoxFuture<'static, Option<Response<Body>>> {
    Box::pin(async { None })
}

#[derive(Clone)]
struct Layer {
    real: kube::Client,
    intercept: Arc<dyn Intercept>,
}

impl tower_service::Service<Request<Body>> for Layer {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = BoxFuture<'static, Result<Response<Body>, kube::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), kube::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let (real, intercept) = (self.real.clone(), self.intercept.clone());
        let method = request.method().clone();
        let path = request.uri().path().to_owned();
        let query = request.uri().query().unwrap_or_default().to_owned();
        let before = intercept.before(&method, &path, &query);
        Box::pin(async move {
            if let Some(answer) = before.await {
                return Ok(answer);
            }
            let response = real.send(request).await?;
            intercept.after(&method, &path, response.status());
            Ok(response)
        })
    }
}

/// An API server that never answers the first `n` requests of the client
/// (the client's own deadline, or the caller's, ends them); the rest pass.
#[derive(Debug, Default)]
pub struct Hold {
    left: std::sync::atomic::AtomicUsize,
    /// Requests held so far.
    pub held: std::sync::atomic::AtomicUsize,
    /// Notified at every request held.
    pub arrived: tokio::sync::Notify,
}

impl Hold {
    /// Hold the first `n` requests.
    pub fn first(n: usize) -> Arc<Hold> {
        let hold = Hold::default();
        hold.left.store(n, std::sync::atomic::Ordering::SeqCst);
        Arc::new(hold)
    }
}

impl Intercept for Hold {
    fn before(
        &self,
        _method: &Method,
        _path: &str,
        _query: &str,
    ) -> BoxFuture<'static, Option<Response<Body>>> {
        use std::sync::atomic::Ordering;
        if self
            .left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_err()
        {
            return pass();
        }
        self.held.fetch_add(1, Ordering::SeqCst);
        self.arrived.notify_one();
        Box::pin(std::future::pending())
    }
}

/// Answers the first requests of the client with `answers`, in order; the
/// rest pass.
#[derive(Default)]
pub struct Answer(std::sync::Mutex<std::collections::VecDeque<Response<Body>>>);

impl Answer {
    pub fn first(answers: Vec<Response<Body>>) -> Arc<Answer> {
        Arc::new(Answer(std::sync::Mutex::new(answers.into())))
    }
}

impl Intercept for Answer {
    fn before(
        &self,
        _method: &Method,
        _path: &str,
        _query: &str,
    ) -> BoxFuture<'static, Option<Response<Body>>> {
        let answer = self.0.lock().unwrap().pop_front();
        Box::pin(async move { answer })
    }
}
