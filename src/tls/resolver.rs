//! A certificate resolver whose pair can be swapped while the server runs.

use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Serves the current certificate pair to every handshake; the pair is
/// replaced atomically by [`ReloadingResolver::swap`] (lock-free reads).
#[derive(Debug)]
pub struct ReloadingResolver {
    current: ArcSwap<CertifiedKey>,
}

impl ReloadingResolver {
    pub fn new(initial: Arc<CertifiedKey>) -> Self {
        ReloadingResolver {
            current: ArcSwap::new(initial),
        }
    }

    /// Replace the served pair; handshakes that start afterwards see it,
    /// established connections keep theirs.
    pub fn swap(&self, next: Arc<CertifiedKey>) {
        self.current.store(next);
    }

    /// The pair currently served.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current.load_full()
    }
}

impl ResolvesServerCert for ReloadingResolver {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}
