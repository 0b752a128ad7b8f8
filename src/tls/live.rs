//! The rustls configuration of the webhook listener, replaceable while the
//! server runs (a new client CA bundle means a new configuration; the
//! server certificate is swapped inside the resolver and needs none).

use std::sync::Arc;

use arc_swap::ArcSwap;
use rustls::server::danger::ClientCertVerifier;

use super::{ReloadingResolver, TlsError, server_config_with};

/// The current configuration; each accepted connection takes the one
/// current at that moment.
#[derive(Debug)]
pub struct LiveServerConfig {
    resolver: Arc<ReloadingResolver>,
    current: ArcSwap<rustls::ServerConfig>,
}

impl LiveServerConfig {
    /// Certificates from `resolver`; client certificates required when a
    /// verifier is given.
    pub fn new(
        resolver: Arc<ReloadingResolver>,
        client_verifier: Option<Arc<dyn ClientCertVerifier>>,
    ) -> Result<Self, TlsError> {
        let config = server_config_with(resolver.clone(), client_verifier)?;
        Ok(LiveServerConfig {
            resolver,
            current: ArcSwap::from_pointee(config),
        })
    }

    /// An acceptor for the next handshake.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.current.load_full())
    }

    /// The configuration handshakes use now.
    pub fn current(&self) -> Arc<rustls::ServerConfig> {
        self.current.load_full()
    }

    /// Require client certificates `verifier` accepts from the next
    /// handshake on. Established connections are not affected; sessions
    /// cached under the previous configuration are not resumed.
    pub fn set_client_verifier(
        &self,
        verifier: Arc<dyn ClientCertVerifier>,
    ) -> Result<(), TlsError> {
        let config = server_config_with(self.resolver.clone(), Some(verifier))?;
        self.current.store(Arc::new(config));
        Ok(())
    }
}
