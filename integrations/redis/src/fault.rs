//! What a failed Redis call means, decided in one place: every call site
//! (decisions, give-backs, the keeper) acts on [`classify`]'s answer.

use redis::RedisError;

/// The three kinds of failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Cluster's `MOVED`: another node serves the limit's slot (it
    /// migrated, or a replica took over). The gate makes that node the
    /// owner and retries there within the decision's `timeout`; past it,
    /// as [`Failure::Offline`].
    Moved,
    /// Cluster's `ASK` and `TRYAGAIN`: the limit's slot is migrating. The
    /// call is retried at the owner after a pause within the decision's
    /// `timeout`; past it, as [`Failure::Unbooked`].
    Migrating,
    /// This connection cannot serve the limit: I/O, timeout, refused or
    /// dropped, or a server that is not a writable master for the limit
    /// (`READONLY`, `LOADING`, `MASTERDOWN`, Cluster's `CLUSTERDOWN`; and
    /// `NOREPLICAS`: a master with `min-replicas-to-write` that has lost
    /// its replicas, which is what a deposed master in a split brain
    /// answers, so the process looks for the master again: Sentinel is
    /// asked, a DNS name resolved again). The process goes offline and the
    /// keeper reconnects (to any node it knows, on a cluster); the fault
    /// policy decides meanwhile.
    Offline,
    /// Redis is reachable but could not book: out of memory under
    /// `noeviction` (`OOM`), writes stopped after a failed save (`MISCONF`),
    /// a busy script (`BUSY`). The fault
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
        Some("MOVED") => Failure::Moved,
        Some("ASK" | "TRYAGAIN") => Failure::Migrating,
        Some("READONLY" | "LOADING" | "MASTERDOWN" | "CLUSTERDOWN" | "NOREPLICAS") => {
            Failure::Offline
        }
        Some("OOM" | "MISCONF" | "BUSY") => Failure::Unbooked,
        _ => Failure::Request,
    }
}

/// A connection refused for a reason in the configuration, which no
/// retry fixes: the reason, named for the operator. A password or user
/// Redis refuses (the `redis` crate's `AuthenticationFailed`, Redis's
/// `WRONGPASS`), a password missing (`NOAUTH`), a database index Redis
/// does not have (`SELECT` refused), a master name no sentinel that
/// answered knows.
pub(crate) fn misconfigured(e: &RedisError) -> Option<String> {
    if e.kind() == redis::ErrorKind::AuthenticationFailed || e.code() == Some("WRONGPASS") {
        return Some(format!(
            "Redis refused the URL's user or password ({e}); fix the URL's credentials"
        ));
    }
    if e.code() == Some("NOAUTH") {
        return Some(format!(
            "Redis requires a password and the URL gives none ({e}); add it to the URL"
        ));
    }
    let text = e.to_string();
    if e.kind() == redis::ErrorKind::ResponseError && text.contains("switch database") {
        return Some(format!(
            "Redis refused the URL's database index ({e}); use one below its `databases`"
        ));
    }
    if text.contains(crate::sentinel::UNKNOWN_MASTER) {
        return Some(format!(
            "{e}; fix the master's name in the URL (`sentinel monitor <name> ...`)"
        ));
    }
    None
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
        assert_eq!(classify(&server("NOREPLICAS")), Failure::Offline);
        assert_eq!(classify(&server("NOSUCHTHING")), Failure::Request);
        let io: RedisError = std::io::Error::from(std::io::ErrorKind::ConnectionReset).into();
        assert_eq!(classify(&io), Failure::Offline);
        let ro: RedisError = (ErrorKind::ReadOnly, "replica").into();
        assert_eq!(classify(&ro), Failure::Offline);
        let script: RedisError = (ErrorKind::ResponseError, "script").into();
        assert_eq!(classify(&script), Failure::Request);
        let moved: RedisError =
            (ErrorKind::Moved, "moved", "6541 127.0.0.1:7001".to_owned()).into();
        assert_eq!(classify(&moved), Failure::Moved);
        assert_eq!(moved.redirect_node(), Some(("127.0.0.1:7001", 6541)));
        let ask: RedisError = (ErrorKind::Ask, "ask", "6541 127.0.0.1:7001".to_owned()).into();
        assert_eq!(classify(&ask), Failure::Migrating);
        let again: RedisError = (ErrorKind::TryAgain, "try again").into();
        assert_eq!(classify(&again), Failure::Migrating);
        let down: RedisError = (ErrorKind::ClusterDown, "down").into();
        assert_eq!(classify(&down), Failure::Offline);
    }

    #[test]
    fn a_refused_password_database_or_master_name_is_named() {
        let auth: RedisError = (
            ErrorKind::AuthenticationFailed,
            "Password authentication failed",
        )
            .into();
        assert!(misconfigured(&auth).unwrap().contains("password"));
        assert!(misconfigured(&server("WRONGPASS"))
            .unwrap()
            .contains("password"));
        assert!(misconfigured(&server("NOAUTH"))
            .unwrap()
            .contains("gives none"));
        let db: RedisError = (
            ErrorKind::ResponseError,
            "Redis server refused to switch database",
            "DB index is out of range".to_owned(),
        )
            .into();
        assert!(misconfigured(&db).unwrap().contains("database index"));
        let master: RedisError = (
            ErrorKind::InvalidClientConfig,
            crate::sentinel::UNKNOWN_MASTER,
            "\"typo\"".to_owned(),
        )
            .into();
        assert!(misconfigured(&master).unwrap().contains("typo"));
        // Faults that a retry can fix are not named so.
        let io: RedisError = std::io::Error::from(std::io::ErrorKind::ConnectionRefused).into();
        assert_eq!(misconfigured(&io), None);
        assert_eq!(misconfigured(&server("READONLY")), None);
        assert_eq!(misconfigured(&server("NOPERM")), None);
    }
}
