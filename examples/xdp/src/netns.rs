//! The example's own network namespaces and veth pair, removed on drop.
//!
//! ```text
//!  netns leaparray-xdp-tx             netns leaparray-xdp-rx
//!  lpxdp0 (02:1e:a9:00:00:01) ======= lpxdp1 (02:1e:a9:00:00:02)
//!  sender: AF_PACKET, sendmmsg         receiver: XDP redirect -> AF_XDP (copy mode)
//! ```
//!
//! Deleting a namespace deletes the veth end inside it, and a veth end
//! takes its peer with it. The names are fixed, so a run first removes what
//! a crashed run (SIGKILL: no destructor) left behind.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::Command;

/// The sender's namespace.
pub const TX_NS: &str = "leaparray-xdp-tx";
/// The receiver's namespace.
pub const RX_NS: &str = "leaparray-xdp-rx";
/// The sender's veth end.
pub const TX_IF: &str = "lpxdp0";
/// The receiver's veth end.
pub const RX_IF: &str = "lpxdp1";

fn mac(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Runs `ip args...`, with its error output on failure.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| {
        format!("cannot run `ip` ({e}): install iproute2 (apt-get install -y iproute2)")
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn exists(ns: &str) -> bool {
    Path::new("/run/netns").join(ns).exists()
}

/// Removes both namespaces (and with them the veth pair) if they exist.
pub fn remove() -> Result<(), String> {
    for ns in [TX_NS, RX_NS] {
        if exists(ns) {
            ip(&["netns", "del", ns])?;
        }
    }
    Ok(())
}

/// Whether anything of the setup is left: a namespace (in `ip netns list`)
/// or a veth end visible from here.
pub fn leftovers() -> Vec<String> {
    let mut left = Vec::new();
    if let Ok(out) = Command::new("ip").args(["netns", "list"]).output() {
        let list = String::from_utf8_lossy(&out.stdout);
        for ns in [TX_NS, RX_NS] {
            if list
                .lines()
                .any(|l| l.split_whitespace().next() == Some(ns))
            {
                left.push(format!("namespace {ns}"));
            }
        }
    }
    for ifc in [TX_IF, RX_IF] {
        if Path::new("/sys/class/net").join(ifc).exists() {
            left.push(format!("interface {ifc}"));
        }
    }
    left
}

/// The namespaces and the veth pair; dropping it removes them.
#[derive(Debug)]
pub struct Net(());

impl Net {
    /// Removes a previous run's leftovers, then creates both namespaces and
    /// the veth pair (one queue each way, fixed MACs, no IPv6 addresses so
    /// that the kernel sends nothing of its own), both ends up.
    pub fn create() -> Result<Net, String> {
        remove()?;
        let net = Net(()); // from here on, a failure removes what exists
        ip(&["netns", "add", TX_NS])?;
        ip(&["netns", "add", RX_NS])?;
        let (src, dst) = (mac(leaparray_xdp::SRC_MAC), mac(leaparray_xdp::DST_MAC));
        ip(&[
            "-n",
            TX_NS,
            "link",
            "add",
            TX_IF,
            "address",
            &src,
            "numtxqueues",
            "1",
            "numrxqueues",
            "1",
            "type",
            "veth",
            "peer",
            "name",
            RX_IF,
            "address",
            &dst,
            "numtxqueues",
            "1",
            "numrxqueues",
            "1",
            "netns",
            RX_NS,
        ])?;
        for (ns, ifc) in [(TX_NS, TX_IF), (RX_NS, RX_IF)] {
            ip(&["-n", ns, "link", "set", "dev", ifc, "addrgenmode", "none"])?;
            ip(&["-n", ns, "link", "set", "dev", ifc, "up"])?;
        }
        Ok(net)
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        if let Err(e) = remove() {
            eprintln!("cleanup: {e}");
        }
    }
}

/// Moves the calling thread (only it) into namespace `ns`.
pub fn enter(ns: &str) -> Result<(), String> {
    let f = File::open(Path::new("/run/netns").join(ns))
        .map_err(|e| format!("open netns {ns}: {e}"))?;
    // SAFETY: a valid namespace fd; setns affects only this thread.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!("setns {ns}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Pins the calling thread to `cpu` (ignored if it does not exist).
pub fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is valid; CPU_SET within its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        let _ = libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set);
    }
}
