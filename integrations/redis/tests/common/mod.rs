//! The tests' own `redis-server`: started on a free loopback port, killed
//! and restarted at will, killed on drop (also when a test panics).
#![allow(dead_code)] // each test binary uses a part

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The tests launch processes and servers: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the test lock (a failed test does not poison it for the others).
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct Server {
    pub port: u16,
    pub child: Option<Child>,
    /// Its working directory (RDB and AOF files), removed on drop.
    pub dir: std::path::PathBuf,
    /// Options after the defaults (`--save '' --appendonly no`), which they override.
    pub extra: Vec<String>,
}

impl Server {
    /// A server that persists nothing.
    pub fn start() -> Self {
        Self::start_with(&[])
    }

    /// A server with `extra` options (e.g. `--appendonly yes`); it keeps
    /// its files in its own directory, so a restart loads them.
    pub fn start_with(extra: &[&str]) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = std::env::temp_dir().join(format!(
            "leaparray-redis-server-{}-{port}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = Server {
            port,
            child: None,
            dir,
            extra: extra.iter().map(|a| a.to_string()).collect(),
        };
        s.restart();
        s
    }

    pub fn restart(&mut self) {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                &self.dir.display().to_string(),
            ])
            .args(&self.extra)
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start redis-server ({e}): these tests need a real Redis; \
                     install it (`apt-get install -y redis-server`, as .ci/redis.sh does)"
                )
            });
        self.child = Some(child);
        let t = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "redis-server did not listen on {}",
                self.port
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `sig` (`-STOP`, `-CONT`, `-KILL`) to the server.
    pub fn signal(&self, sig: &str) {
        let pid = self.child.as_ref().unwrap().id().to_string();
        assert!(Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
            .success());
    }

    /// A connection of the test's own (not the gate's).
    pub fn con(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
