//! The receiver: an AF_XDP socket on the veth's one receive queue, in copy
//! mode (generic/SKB XDP: what a veth offers; the kernel copies each frame
//! into the UMEM), busy-polled by one thread that owns the queue's shard.
//!
//! Per batch of up to 64 descriptors: one clock read; the frames' packets
//! and bytes into the queue's `ShardWriter`; one decision per flow frame
//! from the queue's `LocalKeyedGate` or the shared `KeyedGate`
//! (`Policer::police`: a burst); the frames back to the fill ring.
//! With `ledger`, the loop also keeps what the checks need, apart from
//! leaparray: per window, the packets and bytes it took off the ring; per
//! flow, what it received and admitted, and admissions per gate window.

use std::num::NonZeroU32;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use leaparray::Decision;
use leaparray_xdp::{
    Batch, Policer, Traffic, BATCH, BYTES, GATE_N, GATE_WINDOW_US, LIMIT, PACKETS, TRAFFIC_N,
    TRAFFIC_WINDOW_US,
};
use xdpilone::{IfInfo, Socket, SocketConfig, Umem, UmemConfig};

const FRAME: u32 = 2048;
const FRAMES: u32 = 4096;

/// What the receiver shares with the table printer, once per second.
#[derive(Debug, Default)]
pub struct Live {
    /// Policed drops so far.
    pub drops: AtomicU64,
    /// Frames taken off the ring so far (for the baseline's table).
    pub packets: AtomicU64,
    /// Their bytes.
    pub bytes: AtomicU64,
    /// The busiest flows of the last second: (flow, received, dropped).
    pub top: Mutex<Vec<(u32, u64, u64)>>,
}

/// How the loop runs.
#[derive(Debug, Clone, Copy)]
pub struct Mode {
    /// Count and police with leaparray (off: the baseline loop).
    pub leaparray: bool,
    /// Keep the checks' ledger.
    pub ledger: bool,
    /// Flows the sender sends (ledger size).
    pub flows: u32,
    /// Receive queue (= shard index).
    pub queue: u32,
}

/// One flow's ledger.
#[derive(Debug, Clone, Copy, Default)]
pub struct FlowLedger {
    /// Frames received.
    pub received: u64,
    /// Frames the gate admitted.
    pub admitted: u64,
    /// Frames received up to the last second's snapshot (for "top flows").
    last_second: u64,
    dropped_last: u64,
    /// Admissions in the last `GATE_N` gate windows: (window id, count),
    /// at `id % GATE_N`.
    wins: [(u64, u32); GATE_N],
}

/// What the receiver saw.
#[derive(Debug, Default)]
pub struct Received {
    /// Frames taken off the ring.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Frames that were not a flow's (not policed).
    pub other: u64,
    /// Policed drops.
    pub drops: u64,
    /// Ledger per flow (empty without the ledger).
    pub flows: Vec<FlowLedger>,
    /// The first few violations found by the ledger.
    pub violations: Vec<String>,
    /// Exact-count checks done (every live window compared with the ledger).
    pub count_checks: u64,
    /// Packets and bytes of windows verified complete against the shard.
    pub verified: (u64, u64),
    /// Admissions checked against the limit.
    pub admissions_checked: u64,
    /// Keys resident in the gate when traffic started.
    pub resident: usize,
    /// Busy-poll accounting (cycles of the time-stamp counter).
    pub polls: u64,
    /// Polls that found nothing.
    pub idle_polls: u64,
    /// Cycles in polls that found frames (the whole loop body).
    pub busy_cycles: u64,
    /// Cycles reading the frames' headers (both loops).
    pub parse_cycles: u64,
    /// Cycles in leaparray's part (count, police) of those.
    pub leaparray_cycles: u64,
    /// Polls that found frames (batches).
    pub batches: u64,
    /// Histograms of cycles per frame, per batch (2-cycle buckets): reading
    /// headers, and leaparray's part. Their medians are robust to the
    /// preemptions of a shared machine, which the means above are not.
    pub hist_parse: Vec<u32>,
    /// See `hist_parse`.
    pub hist_leaparray: Vec<u32>,
    /// All cycles of the loop.
    pub total_cycles: u64,
    /// Nanoseconds per cycle (calibrated over the run).
    pub ns_per_cycle: f64,
    /// The socket's statistics.
    pub xdp_stats: Option<xdpilone::xdp::XdpStatisticsV2>,
}

#[inline(always)]
fn cycles() -> u64 {
    // LFENCE first: RDTSC does not wait for earlier loads, so without it
    // the misses of reading a frame's headers (written by the other core)
    // land in whichever span ends after them.
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence and rdtsc have no preconditions (SSE2 is baseline).
    unsafe {
        core::arch::x86_64::_mm_lfence();
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    crate::now_ns()
}

/// The socket and everything it needs alive.
struct Xsk {
    area: NonNull<[u8]>,
    // Drop order: program first, then the rings, then the UMEM.
    _redirect: crate::bpf::Redirect,
    rx: xdpilone::RingRx,
    device: xdpilone::DeviceQueue,
    _user: xdpilone::User,
    _sock: Socket,
    _umem: Umem,
}

fn open(ifname: &str, queue: u32) -> Result<(Xsk, Mmap), String> {
    let len = (FRAME * FRAMES) as usize;
    let map = Mmap::new(len)?;
    let area = NonNull::slice_from_raw_parts(map.ptr, len);
    let cfg = UmemConfig {
        fill_size: FRAMES,
        complete_size: FRAMES,
        frame_size: FRAME,
        headroom: 0,
        flags: 0,
    };
    // SAFETY: page-aligned mapping of `len` bytes, alive as long as the
    // UMEM (the caller keeps `map` until the socket is dropped).
    let umem = unsafe { Umem::new(cfg, area) }.map_err(|e| format!("UMEM: {e:?}"))?;
    let mut info = IfInfo::invalid();
    let cname = std::ffi::CString::new(ifname).unwrap();
    info.from_name(&cname)
        .map_err(|e| format!("interface {ifname}: {e:?}"))?;
    info.set_queue(queue);
    let sock = Socket::with_shared(&info, &umem).map_err(|e| format!("AF_XDP socket: {e:?}"))?;
    let device = umem
        .fq_cq(&sock)
        .map_err(|e| format!("fill/completion rings: {e:?}"))?;
    let user = umem
        .rx_tx(
            &sock,
            &SocketConfig {
                rx_size: NonZeroU32::new(FRAMES),
                tx_size: None,
                bind_flags: SocketConfig::XDP_BIND_COPY,
            },
        )
        .map_err(|e| format!("RX ring: {e:?}"))?;
    let rx = user.map_rx().map_err(|e| format!("map RX ring: {e:?}"))?;
    // A previous socket on this queue may still be going away: EBUSY.
    let mut tries = 0;
    loop {
        match umem.bind(&user) {
            Ok(()) => break,
            Err(e) if e.get_raw() == libc::EBUSY && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => {
                return Err(format!(
                    "bind AF_XDP (copy mode) to {ifname} queue {queue}: {e:?}"
                ))
            }
        }
    }
    let mut device = device;
    {
        let mut fill = device.fill(FRAMES);
        let n = fill.insert((0..FRAMES).map(|i| u64::from(i * FRAME)));
        fill.commit();
        if n != FRAMES {
            return Err(format!("fill ring took {n} of {FRAMES} frames"));
        }
    }
    let redirect = crate::bpf::redirect(
        info.ifindex(),
        queue,
        rx.as_raw_fd(),
        crate::bpf::XDP_FLAGS_SKB_MODE,
    )
    .map_err(|e| e.to_string())?;
    Ok((
        Xsk {
            area,
            _redirect: redirect,
            rx,
            device,
            _user: user,
            _sock: sock,
            _umem: umem,
        },
        map,
    ))
}

/// An anonymous, populated, page-aligned mapping.
struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mmap {
    fn new(len: usize) -> Result<Mmap, String> {
        // SAFETY: an anonymous private mapping; checked for failure.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("mmap UMEM: {}", std::io::Error::last_os_error()));
        }
        Ok(Mmap {
            ptr: NonNull::new(p as *mut u8).unwrap(),
            len,
        })
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: our own mapping, no longer used (the socket is closed).
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len) };
    }
}

/// The exact-count ledger: per traffic window, packets and bytes taken off
/// the ring, at `id % TRAFFIC_N`.
#[derive(Default)]
struct Windows {
    slots: [(u64, u64, u64); TRAFFIC_N],
    /// Windows below this id were verified complete.
    verified_below: u64,
}

/// Receives until `stop` is set and the ring is empty.
pub fn run(
    ifname: &str,
    mode: Mode,
    traffic: &Traffic,
    mut gate: impl Policer,
    live: &Live,
    ready: &AtomicBool,
    stop: &AtomicBool,
) -> Result<Received, String> {
    let (mut xsk, map) = open(ifname, mode.queue)?;
    let mut writer = traffic
        .claim(mode.queue as usize)
        .map_err(|e| format!("claim shard {}: {e}", mode.queue))?;
    let base = xsk.area.cast::<u8>();
    let area_len = xsk.area.len();
    let mut out = Received {
        hist_parse: vec![0; HIST],
        hist_leaparray: vec![0; HIST],
        flows: if mode.ledger {
            vec![FlowLedger::default(); mode.flows as usize]
        } else {
            Vec::new()
        },
        ..Received::default()
    };
    let mut batch = Batch::default();
    let mut frames: [(u64, u32); BATCH] = [(0, 0); BATCH];
    let mut windows = Windows::default();
    let mut pending: Vec<u64> = Vec::with_capacity(FRAMES as usize);
    if mode.leaparray {
        // Every flow resident in the gate before the first frame (one
        // permit each, now: at most 1 of a flow's 16 in its first
        // interval), so the loop measures decisions, not insertions.
        let now = crate::now_us();
        let w = now / GATE_WINDOW_US;
        for i in 0..mode.flows {
            let d = gate.police_one(leaparray_xdp::Tuple::of_flow(i).key(), now, 1);
            // The ledger counts this admission in its window too (not in
            // `admitted`, which is compared with frames received).
            if let (Decision::Pass, Some(f)) = (d, out.flows.get_mut(i as usize)) {
                f.wins[(w % GATE_N as u64) as usize] = (w, 1);
            }
        }
        out.resident = gate.resident(now);
    }
    let (c0, t0) = (cycles(), crate::now_ns());
    let mut next_second = crate::now_us() + 1_000_000;
    let mut next_check = crate::now_us() + 250_000;
    let mut quiet_since: Option<u64> = None;
    ready.store(true, Ordering::Release);
    loop {
        let start = cycles();
        out.polls += 1;
        let mut n = 0;
        {
            let mut rx = xsk.rx.receive(BATCH as u32);
            while let Some(d) = rx.read() {
                frames[n] = (d.addr, d.len);
                n += 1;
            }
            rx.release();
        }
        if n == 0 {
            out.idle_polls += 1;
            if stop.load(Ordering::Relaxed) {
                let now = crate::now_us();
                match quiet_since {
                    None => quiet_since = Some(now),
                    Some(q) if now - q > 50_000 => break,
                    _ => {}
                }
            }
            if mode.ledger && crate::now_us() >= next_check {
                let now = crate::now_us();
                next_check = now + 250_000;
                check_counts(traffic, &mut windows, now, false, &mut out);
            }
            continue;
        }
        quiet_since = None;
        out.batches += 1;
        // One clock read per batch.
        let now = crate::now_us();
        // Both loops read each frame's headers (a receive loop that looks
        // at its packets); only the leaparray loop counts and polices.
        let parse_start = cycles();
        batch.clear();
        for &(addr, len) in &frames[..n] {
            let (a, l) = (addr as usize, len as usize);
            if a + l > area_len {
                continue; // never: the kernel gives descriptors in the UMEM
            }
            // SAFETY: the kernel wrote this frame and handed it over on
            // the RX ring; it is ours until it goes back to the fill ring.
            let frame = unsafe { std::slice::from_raw_parts(base.as_ptr().add(a), l) };
            batch.push(frame);
        }
        let lp_start = cycles();
        out.parse_cycles += lp_start - parse_start;
        if mode.leaparray {
            out.drops += batch.process(&mut writer, &mut gate, now);
        }
        let lp_end = cycles();
        out.leaparray_cycles += lp_end - lp_start;
        record(&mut out.hist_parse, (lp_start - parse_start) / n as u64);
        record(&mut out.hist_leaparray, (lp_end - lp_start) / n as u64);
        let mut bytes = 0u64;
        for &(addr, len) in &frames[..n] {
            bytes += u64::from(len);
            pending.push(addr & !u64::from(FRAME - 1));
        }
        out.packets += n as u64;
        out.bytes += bytes;
        if mode.ledger {
            ledger(&mut out, &mut windows, &batch, mode, now, n as u64, bytes);
        }
        // Frames back to the kernel.
        {
            let mut fill = xsk.device.fill(pending.len() as u32);
            let k = fill.insert(pending.iter().copied()) as usize;
            fill.commit();
            pending.drain(..k);
        }
        out.busy_cycles += cycles() - start;
        if now >= next_second {
            next_second = now + 1_000_000;
            live.drops.store(out.drops, Ordering::Relaxed);
            live.packets.store(out.packets, Ordering::Relaxed);
            live.bytes.store(out.bytes, Ordering::Relaxed);
            if mode.ledger {
                publish_top(&mut out.flows, live);
            }
        }
        if mode.ledger && now >= next_check {
            next_check = now + 250_000;
            check_counts(traffic, &mut windows, now, false, &mut out);
        }
    }
    let (c1, t1) = (cycles(), crate::now_ns());
    out.total_cycles = c1 - c0;
    out.ns_per_cycle = (t1 - t0) as f64 / (c1 - c0).max(1) as f64;
    live.drops.store(out.drops, Ordering::Relaxed);
    if mode.ledger && mode.leaparray {
        check_counts(traffic, &mut windows, crate::now_us(), true, &mut out);
    }
    out.xdp_stats = xsk.device.statistics_v2().ok();
    drop(writer);
    drop(xsk);
    drop(map);
    Ok(out)
}

const HIST: usize = 4096;

#[inline(always)]
fn record(hist: &mut [u32], cycles_per_frame: u64) {
    let b = ((cycles_per_frame / 2) as usize).min(HIST - 1);
    hist[b] = hist[b].saturating_add(1);
}

/// The median of a histogram, in cycles.
pub fn median(hist: &[u32]) -> u64 {
    let total: u64 = hist.iter().map(|&c| u64::from(c)).sum();
    let mut seen = 0;
    for (b, &c) in hist.iter().enumerate() {
        seen += u64::from(c);
        if 2 * seen >= total {
            return 2 * b as u64 + 1;
        }
    }
    0
}

fn violation(out: &mut Received, v: String) {
    if out.violations.len() < 10 {
        out.violations.push(v);
    }
}

/// The checks' bookkeeping for one batch (apart from leaparray).
fn ledger(
    out: &mut Received,
    windows: &mut Windows,
    batch: &Batch,
    mode: Mode,
    now: u64,
    n: u64,
    bytes: u64,
) {
    let id = now / TRAFFIC_WINDOW_US;
    let slot = &mut windows.slots[(id % TRAFFIC_N as u64) as usize];
    if slot.0 != id {
        *slot = (id, 0, 0);
    }
    slot.1 += n;
    slot.2 += bytes;
    out.other += n - batch.policed as u64;
    let w = now / GATE_WINDOW_US;
    for k in 0..batch.policed {
        let f = batch.flows[k] as usize;
        let Some(fl) = out.flows.get_mut(f) else {
            out.other += 1;
            continue;
        };
        fl.received += 1;
        if !mode.leaparray || batch.decisions[k] != Decision::Pass {
            continue;
        }
        fl.admitted += 1;
        let s = &mut fl.wins[(w % GATE_N as u64) as usize];
        if s.0 != w {
            *s = (w, 0);
        }
        s.1 += 1;
        // The interval of GATE_N windows ending at w.
        let in_interval: u64 = fl
            .wins
            .iter()
            .filter(|(id, _)| *id + GATE_N as u64 > w && *id <= w)
            .map(|(_, c)| u64::from(*c))
            .sum();
        out.admissions_checked += 1;
        if in_interval > LIMIT {
            let v = format!("flow {f}: {in_interval} admitted in the {GATE_N} windows ending at window {w} (limit {LIMIT})");
            violation(out, v);
        }
    }
}

/// Compares every live traffic window of the merged shards with the
/// ledger's; windows that ended are added to the verified totals once.
fn check_counts(
    traffic: &Traffic,
    windows: &mut Windows,
    now: u64,
    last: bool,
    out: &mut Received,
) {
    out.count_checks += 1;
    let current = now / TRAFFIC_WINDOW_US;
    let merged = traffic.windows(now);
    let oldest = current.saturating_sub(TRAFFIC_N as u64 - 1);
    for id in oldest..=current {
        let mine = windows.slots[(id % TRAFFIC_N as u64) as usize];
        let mine = if mine.0 == id {
            (mine.1, mine.2)
        } else {
            (0, 0)
        };
        let theirs = merged
            .iter()
            .find(|w| w.start / TRAFFIC_WINDOW_US == id)
            .map_or((0, 0), |w| (w.counts[PACKETS], w.counts[BYTES]));
        if mine != theirs {
            let v = format!(
                "window {id}: shards hold {theirs:?} (packets, bytes), the ring gave {mine:?}"
            );
            violation(out, v);
        }
        if id >= windows.verified_below && (id < current || last) {
            out.verified.0 += mine.0;
            out.verified.1 += mine.1;
        }
    }
    windows.verified_below = if last { current + 1 } else { current };
    let sums = traffic.sums(now);
    let total = windows
        .slots
        .iter()
        .filter(|s| s.0 + TRAFFIC_N as u64 > current && s.0 <= current)
        .fold((0, 0), |a, s| (a.0 + s.1, a.1 + s.2));
    if (sums[PACKETS], sums[BYTES]) != total {
        let v = format!("sliding second at {now}: shards sum to {sums:?}, the ring gave {total:?}");
        violation(out, v);
    }
}

/// The three flows that received the most in the last second.
fn publish_top(flows: &mut [FlowLedger], live: &Live) {
    let mut top: Vec<(u32, u64, u64)> = Vec::with_capacity(4);
    for (i, f) in flows.iter_mut().enumerate() {
        let dropped = f.received - f.admitted;
        let (rx, dr) = (f.received - f.last_second, dropped - f.dropped_last);
        f.last_second = f.received;
        f.dropped_last = dropped;
        if rx > 0 && (top.len() < 3 || rx > top[2].1) {
            top.push((i as u32, rx, dr));
            top.sort_by_key(|t| std::cmp::Reverse(t.1));
            top.truncate(3);
        }
    }
    *live.top.lock().unwrap() = top;
}
