//! TLS against a real `redis-server` started with `--tls-port` (and a
//! sentinel with only a TLS port), on loopback. The certificates are made
//! at test time with `rcgen`: a CA, the servers' certificate (IP
//! 127.0.0.1, `localhost`), a client certificate (Redis asks for one by
//! default: `tls-auth-clients yes`), and a second CA nobody uses.
//!
//! Run with the feature (`cargo test -p leaparray-redis --features tls
//! --test tls`, as .ci/redis.sh does); without it, only the test that a
//! `rediss://` URL is a clear configuration error runs.
mod common;

#[cfg(not(feature = "tls"))]
#[test]
fn a_rediss_url_without_the_feature_is_a_clear_error() {
    use leaparray_redis::{Config, Error, RedisGate};
    use std::time::Duration;
    for url in ["rediss://127.0.0.1:1/", "rediss+sentinel://127.0.0.1:1/m"] {
        let cfg = Config::new(url, "tls", Duration::from_millis(250), 100);
        match RedisGate::<4>::open(cfg) {
            Err(Error::Config(why)) => assert!(why.contains("feature `tls`"), "{why}"),
            other => panic!("{url} without the feature: {other:?}"),
        }
    }
}

#[cfg(feature = "tls")]
mod with_tls {
    use super::common::{free_port, serial, wait, Server};
    use leaparray_redis::{Config, Error, RedisGate};
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    use std::net::TcpStream;
    use std::path::PathBuf;
    use std::process::{Child, Command, Stdio};
    use std::sync::{Mutex, Once};
    use std::time::{Duration, Instant};

    /// PEMs of a CA, a certificate it signed for the servers, one for the
    /// client, and another CA's certificate for the servers.
    struct Pki {
        dir: PathBuf,
        ca: String,
        client: (String, String),
    }

    fn ca(name: &str) -> (rcgen::Certificate, KeyPair) {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, name);
        (p.self_signed(&key).unwrap(), key)
    }

    fn leaf(name: &str, by: &(rcgen::Certificate, KeyPair)) -> (String, String) {
        let key = KeyPair::generate().unwrap();
        let mut p =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
        p.distinguished_name.push(DnType::CommonName, name);
        let cert = p.signed_by(&key, &by.0, &by.1).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    impl Pki {
        fn make() -> Self {
            let dir =
                std::env::temp_dir().join(format!("leaparray-redis-tls-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let ours = ca("leaparray test CA");
            let other = ca("another CA");
            let server = leaf("redis", &ours);
            let stranger = leaf("redis", &other);
            let client = leaf("client", &ours);
            for (file, pem) in [
                ("ca.crt", ours.0.pem()),
                ("server.crt", server.0),
                ("server.key", server.1),
                ("other.crt", stranger.0),
                ("other.key", stranger.1),
            ] {
                std::fs::write(dir.join(file), pem).unwrap();
            }
            Pki {
                dir,
                ca: ours.0.pem(),
                client,
            }
        }

        fn file(&self, name: &str) -> String {
            self.dir.join(name).display().to_string()
        }

        /// `redis-server` options: a TLS port beside the plain one (the
        /// test's own connections), this CA's server certificate, client
        /// certificates required (Redis's default).
        fn server_args(&self, tls_port: u16) -> Vec<String> {
            vec![
                "--tls-port".into(),
                tls_port.to_string(),
                "--tls-cert-file".into(),
                self.file("server.crt"),
                "--tls-key-file".into(),
                self.file("server.key"),
                "--tls-ca-cert-file".into(),
                self.file("ca.crt"),
            ]
        }

        /// A gate's configuration with this CA and the client certificate.
        fn config(&self, url: String, name: &str) -> Config {
            Config::new(url, name, Duration::from_millis(250), 100)
                .timeout(Duration::from_millis(100))
                .restart_grace(GRACE)
                .tls_roots(self.ca.clone())
                .tls_client(self.client.0.clone(), self.client.1.clone())
        }
    }

    impl Drop for Pki {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    fn tls_server(pki: &Pki) -> (Server, u16) {
        let port = free_port();
        let args = pki.server_args(port);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let server = Server::start_with(&args);
        wait("the TLS port listens", Duration::from_secs(10), || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        (server, port)
    }

    /// A sentinel with a TLS port only (`port 0`), reaching the master
    /// with TLS too (`tls-replication yes`); killed on drop.
    struct TlsSentinel {
        port: u16,
        child: Child,
        dir: PathBuf,
    }

    impl TlsSentinel {
        fn start(pki: &Pki, master_tls_port: u16) -> Self {
            let port = free_port();
            let dir = pki.dir.join(format!("sentinel-{port}"));
            std::fs::create_dir_all(&dir).unwrap();
            let conf = dir.join("sentinel.conf");
            let f = |n: &str| pki.file(n);
            std::fs::write(
                &conf,
                format!(
                    "port 0\ntls-port {port}\nbind 127.0.0.1\ndir {}\n\
                     tls-cert-file {}\ntls-key-file {}\ntls-ca-cert-file {}\ntls-replication yes\n\
                     sentinel monitor m 127.0.0.1 {master_tls_port} 1\n",
                    dir.display(),
                    f("server.crt"),
                    f("server.key"),
                    f("ca.crt"),
                ),
            )
            .unwrap();
            let child = Command::new("redis-server")
                .arg(&conf)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .spawn()
                .expect("redis-server --sentinel (as .ci/redis.sh installs)");
            let s = TlsSentinel { port, child, dir };
            wait("the sentinel listens", Duration::from_secs(10), || {
                TcpStream::connect(("127.0.0.1", port)).is_ok()
            });
            s
        }
    }

    impl Drop for TlsSentinel {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// The restart fence of the tests' gates (the first gate on an empty
    /// Redis makes the epoch: fresh bookings wait this long): the least a
    /// Sentinel URL with a timeout of 100 ms allows (100 + 8 x 100 ms).
    const GRACE: Duration = Duration::from_millis(900);

    /// 150 requests of two gates at one caller time, past the first
    /// start's fence: exactly the limit is admitted, and Redis (read on
    /// the plain port) counts it.
    fn books_exactly(gates: &[RedisGate<4>], server: &Server, name: &str) {
        // A first TLS handshake can outlast the URL's 100 ms timeout on a
        // loaded host; the gate's keeper then connects again.
        for g in gates {
            wait(
                &format!("{name}: connected over TLS"),
                Duration::from_secs(10),
                || g.is_connected(),
            );
        }
        std::thread::sleep(GRACE * 2);
        let at = 1_000_000_000_000;
        let admitted = (0..150)
            .filter(|i| gates[i % gates.len()].try_acquire_at(at, 1).is_admitted())
            .count();
        let counts = super::common::counts(&mut server.con(), name);
        println!("tls-table | {name} | {admitted} of 150 admitted, Redis counts {counts:?} |");
        assert_eq!(admitted, 100, "{name}");
        assert_eq!(counts.values().sum::<i64>(), 100, "{name}");
    }

    #[test]
    fn rediss_books_the_limit_exactly_also_through_sentinel() {
        let _g = serial();
        let pki = Pki::make();
        let (server, tls_port) = tls_server(&pki);
        let url = format!("rediss://127.0.0.1:{tls_port}/");
        let t = Instant::now();
        let gates: Vec<RedisGate<4>> = (0..2)
            .map(|_| RedisGate::<4>::open(pki.config(url.clone(), "direct")).unwrap())
            .collect();
        println!(
            "tls-table | two opens (TLS handshake, the first check) | {:?}; round trip {:?} |",
            t.elapsed(),
            gates[1].round_trip()
        );
        books_exactly(&gates, &server, "direct");
        drop(gates);

        // Sentinel: the sentinel is reached with TLS (it has no plain
        // port), then the master it names.
        let sentinel = TlsSentinel::start(&pki, tls_port);
        let url = format!("rediss+sentinel://127.0.0.1:{}/m", sentinel.port);
        let gates: Vec<RedisGate<4>> = (0..2)
            .map(|_| RedisGate::<4>::open(pki.config(url.clone(), "sentinel")).unwrap())
            .collect();
        books_exactly(&gates, &server, "sentinel");
    }

    /// Each TLS failure of the first connection is `Error::Tls` from
    /// `open` (never a gate that refuses everything without saying why).
    #[test]
    fn a_tls_failure_is_a_clear_error_of_open() {
        let _g = serial();
        let pki = Pki::make();
        let (_server, tls_port) = tls_server(&pki);
        let url = format!("rediss://127.0.0.1:{tls_port}/");
        let other_ca = std::fs::read(pki.dir.join("other.crt")).unwrap();
        let cases = [
            (
                "another CA's roots",
                pki.config(url.clone(), "t").tls_roots(other_ca),
            ),
            ("the system's roots", {
                let mut c = pki.config(url.clone(), "t");
                c.tls.roots = None;
                c
            }),
            ("no client certificate", {
                let mut c = pki.config(url.clone(), "t");
                c.tls.client = None;
                c
            }),
        ];
        for (what, cfg) in cases {
            match RedisGate::<4>::open(cfg) {
                Err(Error::Tls(why)) => println!("tls-table | {what} | Error::Tls({why}) |"),
                other => panic!("{what}: {other:?}"),
            }
        }
        // A CA file that holds no certificate is a configuration error.
        let bad = pki.config(url, "t").tls_roots(b"not PEM".to_vec());
        assert!(matches!(RedisGate::<4>::open(bad), Err(Error::Config(_))));
    }

    static LOGGED: Mutex<Vec<String>> = Mutex::new(Vec::new());

    struct Capture;

    impl log::Log for Capture {
        fn enabled(&self, m: &log::Metadata) -> bool {
            m.level() <= log::Level::Error
        }
        fn log(&self, r: &log::Record) {
            if self.enabled(r.metadata()) {
                LOGGED.lock().unwrap().push(r.args().to_string());
            }
        }
        fn flush(&self) {}
    }

    /// A server whose certificate changes at run time to one the gate does
    /// not trust: the gate's reconnections fail, and it says why once.
    #[test]
    fn a_tls_failure_at_run_time_is_logged_once() {
        let _g = serial();
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            log::set_logger(&Capture).unwrap();
            log::set_max_level(log::LevelFilter::Error);
        });
        let pki = Pki::make();
        let (server, tls_port) = tls_server(&pki);
        let gate =
            RedisGate::<4>::open(pki.config(format!("rediss://127.0.0.1:{tls_port}/"), "runtime"))
                .unwrap();
        // The first handshake may outlast the 100 ms timeout on a loaded
        // host (one CI run): the gate's keeper connects again.
        let up = Instant::now();
        while !gate.is_connected() && up.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(gate.is_connected(), "premise: connected: {gate:?}");
        let mut con = server.con();
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("tls-cert-file")
            .arg(pki.file("other.crt"))
            .arg("tls-key-file")
            .arg(pki.file("other.key"))
            .query(&mut con)
            .unwrap();
        let _: redis::Value = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("normal")
            .query(&mut con)
            .unwrap();
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(1_500) {
            let _ = gate.try_acquire(1);
            std::thread::sleep(Duration::from_millis(10));
        }
        let lines: Vec<String> = LOGGED
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains("leaparray-redis runtime: TLS failed"))
            .cloned()
            .collect();
        println!("tls-table | certificate changed at run time | offline: {}, {} error lines: {lines:?} |", !gate.is_connected(), lines.len());
        assert!(
            !gate.is_connected(),
            "premise: the new certificate is refused"
        );
        assert_eq!(lines.len(), 1, "{lines:#?}");
        assert!(gate.stats().faulted > 0);
    }
}
