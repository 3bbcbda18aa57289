//! What a failed Redis call means, decided in one place: every call site
//! (decisions, give-backs, the keeper) acts on [`classify`]'s answer.

use redis::RedisError;

/// The three kinds of failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// This connection cannot serve the limit: I/O, timeout, refused or
    /// dropped, or a server that is not a writable master for the limit
    /// (`READONLY`, `LOADING`, `MASTERDOWN`, and Cluster's `MOVED`, `ASK`,
    /// `TRYAGAIN`, `CLUSTERDOWN`). The process goes offline and the keeper
    /// reconnects; the fault policy decides meanwhile.
    Offline,
    /// Redis is reachable but could not book: out of memory under
    /// `noeviction` (`OOM`), writes stopped after a failed save (`MISCONF`),
    /// too few replicas (`NOREPLICAS`), a busy script (`BUSY`). The fault
    /// policy decides this decision; the connection is kept.
    Unbooked,
    /// Anything else (a script or decode error): this request alone is
    /// refused and its connection dropped.
    Request,
}

/// Classifies a failed call.
pub(crate) fn classify(e: &RedisError) -> Failure {
    if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_connection_refusal() {
        return Failure::Offline;
    }
    match e.code() {
        Some(
            "READONLY" | "LOADING" | "MASTERDOWN" | "MOVED" | "ASK" | "TRYAGAIN" | "CLUSTERDOWN",
        ) => Failure::Offline,
        Some("OOM" | "MISCONF" | "NOREPLICAS" | "BUSY") => Failure::Unbooked,
        _ => Failure::Request,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::ErrorKind;

    fn server(code: &str) -> RedisError {
        redis::make_extension_error(code.to_owned(), Some("detail".to_owned()))
    }

    #[test]
    fn each_error_has_its_class() {
        assert_eq!(classify(&server("OOM")), Failure::Unbooked);
        assert_eq!(classify(&server("MISCONF")), Failure::Unbooked);
        assert_eq!(classify(&server("NOSUCHTHING")), Failure::Request);
        let io: RedisError = std::io::Error::from(std::io::ErrorKind::ConnectionReset).into();
        assert_eq!(classify(&io), Failure::Offline);
        let ro: RedisError = (ErrorKind::ReadOnly, "replica").into();
        assert_eq!(classify(&ro), Failure::Offline);
        let script: RedisError = (ErrorKind::ResponseError, "script").into();
        assert_eq!(classify(&script), Failure::Request);
    }
}
