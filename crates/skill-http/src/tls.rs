//! TLS for a server: a certificate chain and its private key read from PEM files, served with
//! rustls (TLS 1.2 and 1.3, HTTP/1.1 by ALPN). The handshake counts against the header deadline,
//! so a client that stalls it is closed like one that stalls its header.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A server's TLS configuration.
#[derive(Clone)]
pub struct Tls(pub(crate) tokio_rustls::TlsAcceptor);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tls")
    }
}

impl Tls {
    /// Reads the certificate chain (`cert`, the server's certificate first) and its private key
    /// (`key`, PKCS#8, PKCS#1 or SEC1), each PEM; says which file is wrong and why.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<Self, String> {
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
            .map_err(|error| format!("--tls-cert {}: {error}", cert.display()))?
            .collect::<Result<_, _>>()
            .map_err(|error| format!("--tls-cert {}: {error}", cert.display()))?;
        if chain.is_empty() {
            return Err(format!("--tls-cert {}: no certificate in it", cert.display()));
        }
        let key = PrivateKeyDer::from_pem_file(key).map_err(|error| format!("--tls-key {}: {error}", key.display()))?;
        Self::new(chain, key)
    }

    /// From a chain and its key in memory.
    pub fn new(chain: Vec<CertificateDer<'static>>, key: PrivateKeyDer<'static>) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|error| format!("TLS: {error}"))?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(|error| format!("the certificate and the key do not go together: {error}"))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self(tokio_rustls::TlsAcceptor::from(Arc::new(config))))
    }
}
