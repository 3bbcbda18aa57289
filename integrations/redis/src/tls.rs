//! TLS (feature `tls`): `rediss://` and `rediss+sentinel://` URLs, through
//! the redis crate's rustls connections.
//!
//! * Roots: the system's (the redis crate's `tls-rustls` reads them with
//!   `rustls-native-certs` at each new connection), or only
//!   [`Tls::roots`](crate::Tls) when set (a private CA, a self-signed
//!   server). A client certificate ([`Tls::client`](crate::Tls)) for a
//!   server that asks for one (`tls-auth-clients yes`, Redis's default).
//!   The server's name is checked: the URL's host, and on Cluster and
//!   Sentinel the host each node or sentinel names (an IP address unless
//!   the nodes announce hostnames), must be in its certificate.
//! * Every node a gate reaches (a `MOVED` target, a node of `CLUSTER
//!   SLOTS`, the master Sentinel names) and every sentinel is reached
//!   with the URL's TLS settings; a URL's seeds must have its scheme.
//! * The crypto provider: the process's default if one is installed
//!   (`rustls::crypto::CryptoProvider::install_default`), else ring's,
//!   installed as the default when a gate with a TLS URL is opened.
//! * A TLS failure (an unknown issuer, a name not in the certificate, a
//!   client certificate missing, a plain server on the port) is
//!   [`Error::Tls`](crate::Error::Tls) from `open` when it is the first
//!   connection's failure, and a `log::error!` of the keeper (once until a
//!   connection works) when it comes later: never a gate that refuses
//!   everything without saying why. A `redis://` URL to a TLS port cannot
//!   be told from a server that closes connections: the keeper's report
//!   (module `gate`) says decisions are lost.

use crate::config::Tls;
use redis::{ConnectionAddr, ConnectionInfo, RedisResult};

/// Whether `url` asks for TLS.
pub(crate) fn wanted(url: &str) -> bool {
    url.starts_with("rediss://") || url.starts_with("rediss+sentinel://")
}

/// `info` with `tls`'s roots and client certificate (a `rediss://` info;
/// any other is returned as it is).
#[cfg(feature = "tls")]
pub(crate) fn apply(info: ConnectionInfo, tls: &Tls) -> RedisResult<ConnectionInfo> {
    if !matches!(info.addr, ConnectionAddr::TcpTls { .. })
        || (tls.roots.is_none() && tls.client.is_none())
    {
        return Ok(info);
    }
    let certs = redis::TlsCertificates {
        client_tls: tls
            .client
            .as_ref()
            .map(|(cert, key)| redis::ClientTlsConfig {
                client_cert: cert.clone(),
                client_key: key.clone(),
            }),
        root_cert: tls.roots.clone(),
    };
    Ok(redis::Client::build_with_tls(info, certs)?
        .get_connection_info()
        .clone())
}

/// Without the feature no info is a TLS one (`Config::check` refuses the URLs).
#[cfg(not(feature = "tls"))]
pub(crate) fn apply(info: ConnectionInfo, _tls: &Tls) -> RedisResult<ConnectionInfo> {
    Ok(info)
}

/// Installs ring's crypto provider as the process's default, unless one is.
#[cfg(feature = "tls")]
pub(crate) fn provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Another thread may have installed one since: either is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

#[cfg(not(feature = "tls"))]
pub(crate) fn provider() {}

/// The TLS failure in `e`, if it is one (rustls's error inside the I/O
/// error the redis crate returns).
#[cfg(feature = "tls")]
pub(crate) fn failure(e: &redis::RedisError) -> Option<String> {
    let io = std::error::Error::source(e)?.downcast_ref::<std::io::Error>()?;
    let tls = io.get_ref()?.downcast_ref::<rustls::Error>()?;
    Some(tls.to_string())
}

#[cfg(not(feature = "tls"))]
pub(crate) fn failure(_e: &redis::RedisError) -> Option<String> {
    None
}

/// How many certificates a PEM holds (0 for text that is not PEM).
#[cfg(feature = "tls")]
pub(crate) fn certificates(pem: &[u8]) -> usize {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    CertificateDer::pem_slice_iter(pem)
        .filter(Result::is_ok)
        .count()
}

#[cfg(not(feature = "tls"))]
pub(crate) fn certificates(_pem: &[u8]) -> usize {
    0
}

/// `base`'s address kind (TCP, or TLS with its settings) at `host:port`.
pub(crate) fn at(base: &ConnectionAddr, host: &str, port: u16) -> ConnectionAddr {
    match base {
        ConnectionAddr::TcpTls {
            insecure,
            tls_params,
            ..
        } => ConnectionAddr::TcpTls {
            host: host.to_owned(),
            port,
            insecure: *insecure,
            tls_params: tls_params.clone(),
        },
        _ => ConnectionAddr::Tcp(host.to_owned(), port),
    }
}
