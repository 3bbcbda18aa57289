//! `leaparray-xdp`: UDP flows over a veth pair between two private network
//! namespaces, received through AF_XDP, counted and policed by leaparray.
//! Linux, root. See README.md; `--help` for the flags.

#[cfg(target_os = "linux")]
mod bpf;
#[cfg(target_os = "linux")]
mod netns;
#[cfg(target_os = "linux")]
mod rx;
#[cfg(target_os = "linux")]
mod tx;

#[cfg(not(target_os = "linux"))]
fn main() {
    eprintln!("leaparray-xdp: AF_XDP, veth and network namespaces are Linux only: unsupported on this system");
    std::process::exit(2);
}

#[cfg(target_os = "linux")]
fn main() {
    std::process::exit(linux::main());
}

/// Monotonic time in ns (`CLOCK_MONOTONIC`, the vDSO: no system call).
#[cfg(target_os = "linux")]
fn now_ns() -> u64 {
    // SAFETY: a valid timespec to write.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Monotonic time in µs: the ticks of every leaparray array here.
#[cfg(target_os = "linux")]
fn now_us() -> u64 {
    now_ns() / 1_000
}

#[cfg(target_os = "linux")]
mod linux {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use leaparray_xdp::{FlowGate, Traffic, BYTES, GATE_WINDOW_US, LIMIT, MAX_FLOWS, PACKETS};

    use crate::netns::{self, Net};
    use crate::rx::{self, Live, Mode};
    use crate::tx;

    /// The traffic counters, one shard per receive queue.
    static TRAFFIC: Traffic = leaparray_xdp::traffic();
    /// Per-flow gates for up to 16,384 flows (2^15 slots, 512 KiB).
    static SMALL: FlowGate<{ 1 << 15 }> = leaparray_xdp::flow_gate();

    const USAGE: &str = "\
usage: leaparray-xdp [--duration SECONDS] [--flows N] [--shared-gate] [--disable] [--no-ledger] [--check]

  --duration S   seconds of traffic (default 5)
  --flows N      flows (5-tuples) the sender cycles through, 1..=1000000
                 (default 4096); 16 of them are heavy (far over their limit)
  --shared-gate  police with one KeyedGate that every queue shares
                 (compare-and-swap) instead of the queue's own
                 LocalKeyedGate (plain loads and stores, prefetched)
  --disable      the baseline: the same receive loop without leaparray
                 (no counting, no policing)
  --no-ledger    without the checks' bookkeeping (for rate measurements)
  --check        verify exact counting, policing and cleanup; exit 1 on any
                 violation (CI)

Needs root. Creates network namespaces leaparray-xdp-tx/-rx and the veth
pair lpxdp0/lpxdp1, and removes them on exit, on failure and on Ctrl-C.";

    struct Args {
        duration: u64,
        flows: u32,
        disable: bool,
        shared_gate: bool,
        ledger: bool,
        check: bool,
    }

    fn args() -> Result<Args, String> {
        let mut a = Args {
            duration: 5,
            flows: 4096,
            disable: false,
            shared_gate: false,
            ledger: true,
            check: false,
        };
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value"));
            match arg.as_str() {
                "--duration" => {
                    a.duration = value("--duration")?
                        .parse()
                        .map_err(|e| format!("--duration: {e}"))?
                }
                "--flows" => {
                    a.flows = value("--flows")?
                        .parse()
                        .map_err(|e| format!("--flows: {e}"))?
                }
                "--disable" => a.disable = true,
                "--shared-gate" => a.shared_gate = true,
                "--no-ledger" => a.ledger = false,
                "--check" => a.check = true,
                "-h" | "--help" => {
                    println!("{USAGE}");
                    std::process::exit(0);
                }
                other => return Err(format!("unknown argument {other}\n\n{USAGE}")),
            }
        }
        if a.flows == 0 || a.flows > MAX_FLOWS {
            return Err(format!("--flows must be 1..={MAX_FLOWS}"));
        }
        if a.duration == 0 || a.duration > 3600 {
            return Err("--duration must be 1..=3600 seconds".into());
        }
        if a.check && (!a.ledger || a.disable) {
            return Err(
                "--check needs leaparray and the ledger (no --disable, no --no-ledger)".into(),
            );
        }
        Ok(a)
    }

    pub fn main() -> i32 {
        let a = match args() {
            Ok(a) => a,
            Err(e) => {
                eprintln!("leaparray-xdp: {e}");
                return 2;
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        {
            let stop = stop.clone();
            if let Err(e) = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst)) {
                eprintln!("leaparray-xdp: signal handler: {e}");
                return 1;
            }
        }
        let code = match run(&a, &stop) {
            Ok(true) => 0,
            Ok(false) => 1,
            Err(e) => {
                eprintln!("leaparray-xdp: {e}");
                1
            }
        };
        // `run` dropped the namespaces (on every path): check nothing is left.
        let left = netns::leftovers();
        if left.is_empty() {
            println!("cleanup: namespaces and veth pair removed");
            code
        } else {
            println!("cleanup: FAILED, left behind: {}", left.join(", "));
            1
        }
    }

    fn raise_memlock() {
        let lim = libc::rlimit {
            rlim_cur: libc::RLIM_INFINITY,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: a valid rlimit. Failure leaves the 8 MiB default, all of
        // which the 8 MiB UMEM (4,096 frames of 2 KiB) takes.
        unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim) };
    }

    fn run(a: &Args, stop: &Arc<AtomicBool>) -> Result<bool, String> {
        raise_memlock();
        let net = Net::create()?;
        let mode = Mode {
            leaparray: !a.disable,
            ledger: a.ledger,
            flows: a.flows,
            queue: 0,
        };
        println!(
            "leaparray-xdp: {} flows ({} heavy), {} s, limit {LIMIT} per flow per {} ms; receive loop: {}{}",
            a.flows,
            (0..a.flows).filter(|&i| tx::is_heavy(i, a.flows)).count(),
            a.duration,
            2 * GATE_WINDOW_US / 1000,
            match (a.disable, a.shared_gate) {
                (true, _) => "leaparray DISABLED (baseline)",
                (false, true) => "counting + policing (one shared KeyedGate)",
                (false, false) => "counting + policing (the queue's own LocalKeyedGate)",
            },
            if a.ledger { ", with the checks' ledger" } else { "" },
        );
        println!(
            "socket: AF_XDP on {} queue 0, copy mode (generic/SKB XDP on veth)",
            netns::RX_IF
        );
        let live = Arc::new(Live::default());
        let ready = Arc::new(AtomicBool::new(false));
        let rx_stop = Arc::new(AtomicBool::new(false));
        let receiver = {
            let (live, ready, rx_stop) = (live.clone(), ready.clone(), rx_stop.clone());
            let shared_gate = a.shared_gate;
            std::thread::Builder::new()
                .name("rx".into())
                .spawn(move || {
                    netns::enter(netns::RX_NS)?;
                    netns::pin(1);
                    let (i, t) = (netns::RX_IF, &TRAFFIC);
                    // Up to 16,384 flows: 2^15 slots (512 KiB); up to
                    // 1,000,000: 2^21 slots, 32 MiB, on huge pages
                    // (leaparray_xdp::on_huge_pages).
                    match (mode.flows <= 1 << 14, shared_gate) {
                        (true, true) => rx::run(i, mode, t, &SMALL, &live, &ready, &rx_stop),
                        (true, false) => {
                            let g = leaparray_xdp::boxed_local_gate::<{ 1 << 15 }>();
                            rx::run(i, mode, t, g, &live, &ready, &rx_stop)
                        }
                        (false, true) => {
                            let g: &FlowGate<{ 1 << 21 }> = leaparray_xdp::leak_gate();
                            rx::run(i, mode, t, g, &live, &ready, &rx_stop)
                        }
                        (false, false) => {
                            let g = leaparray_xdp::boxed_local_gate::<{ 1 << 21 }>();
                            rx::run(i, mode, t, g, &live, &ready, &rx_stop)
                        }
                    }
                })
                .map_err(|e| e.to_string())?
        };
        while !ready.load(Ordering::Acquire) {
            if receiver.is_finished() {
                let r = receiver
                    .join()
                    .map_err(|_| "receiver panicked".to_string())?;
                drop(net);
                return Err(format!("receiver: {}", r.err().unwrap_or_default()));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let sender = {
            let stop = stop.clone();
            let (flows, us) = (a.flows, a.duration * 1_000_000);
            std::thread::Builder::new()
                .name("tx".into())
                .spawn(move || {
                    netns::enter(netns::TX_NS)?;
                    netns::pin(0);
                    tx::run(netns::TX_IF, flows, us, &stop)
                })
                .map_err(|e| e.to_string())?
        };
        println!(
            "{:>4} {:>10} {:>7} {:>12} {:>10}  top flows (flow: received/dropped in the last second)",
            "s", "packets/s", "Mpps", "bytes/s", "drops/s"
        );
        let t0 = crate::now_us();
        let mut last_drops = 0;
        let mut last_plain = [0u64; 2];
        let mut second = 0;
        while !sender.is_finished() {
            std::thread::sleep(Duration::from_millis(20));
            let now = crate::now_us();
            if now - t0 < (second + 1) * 1_000_000 {
                continue;
            }
            second += 1;
            // The merged shards over the sliding second ending now (the
            // baseline: the loop's own totals, published once a second).
            let sums = if a.disable {
                let p = live.packets.load(Ordering::Relaxed);
                let b = live.bytes.load(Ordering::Relaxed);
                let d = [p - last_plain[0], b - last_plain[1]];
                last_plain = [p, b];
                d
            } else {
                TRAFFIC.sums(now)
            };
            let drops = live.drops.load(Ordering::Relaxed);
            let top = live.top.lock().unwrap().clone();
            let top: Vec<String> = top
                .iter()
                .map(|(f, r, d)| format!("#{f}: {r}/{d}"))
                .collect();
            println!(
                "{second:>4} {:>10} {:>7.3} {:>12} {:>10}  {}",
                sums[PACKETS],
                sums[PACKETS] as f64 / 1e6,
                sums[BYTES],
                drops - last_drops,
                top.join("  ")
            );
            last_drops = drops;
        }
        let sent = sender.join().map_err(|_| "sender panicked".to_string());
        // Let the last frames arrive, then stop the receiver once its ring is empty.
        std::thread::sleep(Duration::from_millis(100));
        rx_stop.store(true, Ordering::SeqCst);
        let got = receiver.join().map_err(|_| "receiver panicked".to_string());
        drop(net);
        let sent = sent??;
        let got = got??;
        Ok(report(a, &sent, &got))
    }

    fn report(a: &Args, sent: &tx::Sent, got: &rx::Received) -> bool {
        let secs = sent.elapsed_us.max(1) as f64 / 1e6;
        println!();
        println!(
            "sent {} frames ({} bytes), {:.3} Mpps; {} sendmmsg calls retried for buffers",
            sent.packets,
            sent.bytes,
            sent.packets as f64 / secs / 1e6,
            sent.nobufs
        );
        println!(
            "received {} frames ({} bytes) off the AF_XDP ring, {:.3} Mpps; {} not a flow's; {} policed drops",
            got.packets,
            got.bytes,
            got.packets as f64 / secs / 1e6,
            got.other,
            got.drops
        );
        if !a.disable {
            println!("gate: {} flows resident when traffic started", got.resident);
        }
        if let Some(s) = &got.xdp_stats {
            println!(
                "socket: rx_dropped {}, rx_ring_full {}, fill_ring_empty {}",
                s.rx_dropped, s.rx_ring_full, s.rx_fill_ring_empty_descs
            );
        }
        let ns = |c: u64| c as f64 * got.ns_per_cycle / got.packets.max(1) as f64;
        println!(
            "receive loop: {} batches, {:.2} frames per batch; idle polls {:.1}% of {}; busy {:.1}% of its core",
            got.batches,
            got.packets as f64 / got.batches.max(1) as f64,
            100.0 * got.idle_polls as f64 / got.polls.max(1) as f64,
            got.polls,
            100.0 * got.busy_cycles as f64 / got.total_cycles.max(1) as f64
        );
        println!(
            "receive loop per frame: {:.1} ns busy in all, {:.1} ns reading headers, {:.1} ns leaparray (count + police){}",
            ns(got.busy_cycles),
            ns(got.parse_cycles),
            ns(got.leaparray_cycles),
            if a.disable { " [disabled]" } else { "" }
        );
        let med = |h: &[u32]| rx::median(h) as f64 * got.ns_per_cycle;
        println!(
            "receive loop per frame, median over batches: {:.1} ns reading headers, {:.1} ns leaparray{} (each span includes an lfence and rdtsc; medians ignore preemptions)",
            med(&got.hist_parse),
            med(&got.hist_leaparray),
            if a.disable { " [disabled: an empty span]" } else { " (count + police)" }
        );
        if !a.check {
            return true;
        }
        let mut ok = true;
        let mut fail = |what: String| {
            println!("FAIL: {what}");
            ok = false;
        };
        // Exact counting.
        if got.packets == 0 {
            fail("no frames received".into());
        }
        if got.count_checks < 2 {
            fail(format!("only {} count checks", got.count_checks));
        }
        if got.verified != (got.packets, got.bytes) {
            fail(format!(
                "verified windows hold {:?} (packets, bytes), the ring gave {:?}",
                got.verified,
                (got.packets, got.bytes)
            ));
        }
        for v in &got.violations {
            fail(v.clone());
        }
        // Policing against the sender's ledger.
        let (mut light_rx, mut heavy_drops) = (0u64, 0u64);
        let (mut over_sent, mut light_policed) = (0u64, 0u64);
        for (i, f) in got.flows.iter().enumerate() {
            let s = sent.per_flow[i];
            if f.received > s {
                over_sent += 1;
                if over_sent <= 5 {
                    fail(format!("flow {i}: received {} of {s} sent", f.received));
                }
            }
            if tx::is_heavy(i as u32, a.flows) {
                heavy_drops += f.received - f.admitted;
            } else {
                light_rx += f.received;
                if f.admitted != f.received {
                    light_policed += 1;
                    if light_policed <= 5 {
                        fail(format!(
                            "flow {i} (under its limit): {} of {} received frames policed",
                            f.received - f.admitted,
                            f.received
                        ));
                    }
                }
            }
        }
        if over_sent > 5 {
            fail(format!("{over_sent} flows received more than was sent"));
        }
        if light_policed > 5 {
            fail(format!(
                "{light_policed} flows under their limit were policed"
            ));
        }
        if heavy_drops == 0 {
            fail("no heavy flow was policed".into());
        }
        if light_rx == 0 && a.flows > 1 {
            fail("no light flow received".into());
        }
        println!(
            "check: exact counting: {} windows' worth verified in {} checks, {} frames / {} bytes = the ring's",
            got.verified.0, got.count_checks, got.packets, got.bytes
        );
        println!(
            "check: policing: {} admissions checked, none over {LIMIT} in any 2-window interval; {} light-flow frames all admitted; {} heavy-flow frames policed",
            got.admissions_checked, light_rx, heavy_drops
        );
        println!("verdict: {}", if ok { "OK" } else { "FAILED" });
        ok
    }
}
