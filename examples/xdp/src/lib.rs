//! The portable half of the AF_XDP example: the flows and their frames, and
//! the per-batch work leaparray does on the receive path (parse, count in
//! the queue's shard, police per flow). `main.rs` (Linux) moves the packets;
//! `benches/path.rs` runs the same [`Batch::process`] on synthetic frames.

use std::num::NonZeroU64;

use leaparray::keyed::LocalKeyedGate;
use leaparray::shard::{ShardWriter, Sharded};
use leaparray::Decision;
use leaparray::KeyedGate;

/// Descriptors taken off the ring per batch (one clock read each).
pub const BATCH: usize = 64;

/// Time is in µs of `CLOCK_MONOTONIC`.
/// The policing window: 50 ms, two of them per interval.
pub const GATE_WINDOW_US: u64 = 50_000;
/// Windows per policing interval.
pub const GATE_N: usize = 2;
/// Packets admitted per flow per interval of `GATE_N` windows (100 ms).
pub const LIMIT: u64 = 16;

/// The traffic counters: 10 windows of 100 ms (a sliding second), two
/// counters (packets, bytes), one shard per receive queue.
pub const TRAFFIC_N: usize = 10;
/// The traffic window (µs).
pub const TRAFFIC_WINDOW_US: u64 = 100_000;
/// Shards: one per receive queue (the veth has one; up to 4 could bind).
pub const QUEUES: usize = 4;
/// Counter index: packets.
pub const PACKETS: usize = 0;
/// Counter index: bytes.
pub const BYTES: usize = 1;

/// Per-queue traffic counters, read merged by the table printer.
pub type Traffic = Sharded<TRAFFIC_N, 2, QUEUES>;

/// A new traffic array (const, so it can be a `static`).
pub const fn traffic() -> Traffic {
    Sharded::new(NonZeroU64::new(TRAFFIC_WINDOW_US).unwrap())
}

/// A per-flow gate of `CAP` slots.
pub type FlowGate<const CAP: usize> = KeyedGate<GATE_N, CAP>;

/// A new per-flow gate (const, so it can be a `static`).
pub const fn flow_gate<const CAP: usize>() -> FlowGate<CAP> {
    KeyedGate::new(NonZeroU64::new(GATE_WINDOW_US).unwrap(), LIMIT)
}

/// A per-flow gate that one receive queue owns (under receive-side scaling
/// a flow always lands on the same queue): plain loads and stores.
pub type LocalFlowGate<const CAP: usize> = LocalKeyedGate<GATE_N, CAP>;

/// A new single-writer per-flow gate.
pub const fn local_flow_gate<const CAP: usize>() -> LocalFlowGate<CAP> {
    LocalKeyedGate::new(NonZeroU64::new(GATE_WINDOW_US).unwrap(), LIMIT)
}

/// A shared per-flow gate on the heap, leaked (it lives as long as the
/// process), on huge pages: see [`on_huge_pages`].
pub fn leak_gate<const CAP: usize>() -> &'static FlowGate<CAP> {
    Box::leak(on_huge_pages(flow_gate::<CAP>))
}

/// A single-writer per-flow gate on the heap, on huge pages: see [`on_huge_pages`].
pub fn boxed_local_gate<const CAP: usize>() -> Box<LocalFlowGate<CAP>> {
    on_huge_pages(local_flow_gate::<CAP>)
}

/// `make()` on the heap, on transparent huge pages where Linux gives them.
///
/// A table larger than the caches costs a cache miss per decision; with
/// 4 KiB pages, 32 MiB also spans 8,192 pages, more than the TLB holds, so
/// a random key costs a page walk as well (two-dimensional in a virtual
/// machine). 2 MiB pages take that walk away. The value is built in a
/// thread with a stack large enough for it (it may pass through the stack)
/// and written into memory advised `MADV_HUGEPAGE` before it is first
/// touched. A `static` would not do: its non-zero fields put all of it in
/// `.data`, file-backed memory that Linux does not back with huge pages.
pub fn on_huge_pages<T: Send + 'static>(make: fn() -> T) -> Box<T> {
    let size = std::mem::size_of::<T>();
    std::thread::Builder::new()
        .stack_size(2 * size + (1 << 20))
        .spawn(move || {
            let mut b = Box::<T>::new_uninit();
            advise_huge_pages(b.as_mut_ptr() as *mut u8, size);
            b.write(make());
            // SAFETY: written just above.
            unsafe { b.assume_init() }
        })
        .expect("thread for the table")
        .join()
        .expect("building the table")
}

/// The per-flow policer of a receive loop: one gate shared by every queue
/// (`&KeyedGate`: a 128-bit compare-and-swap per decision) or one owned by
/// this queue (`LocalKeyedGate`: plain loads and stores, each request's
/// home slot prefetched 16 requests before its decision).
pub trait Policer {
    /// One decision per request, in order, at `now`; returns how many.
    fn police(&mut self, now: u64, requests: &[(u64, u64)], decisions: &mut [Decision]) -> usize;
    /// One request alone.
    fn police_one(&mut self, key: u64, now: u64, n: u64) -> Decision;
    /// Keys resident at `now`.
    fn resident(&self, now: u64) -> usize;
    /// A hint that `key` is decided soon: prefetch its slot (nothing for
    /// a shared `KeyedGate`, whose burst reads its slots ahead itself).
    #[inline(always)]
    fn prefetch(&self, key: u64) {
        let _ = key;
    }
}

impl<const CAP: usize> Policer for &FlowGate<CAP> {
    #[inline(always)]
    fn police(&mut self, now: u64, requests: &[(u64, u64)], decisions: &mut [Decision]) -> usize {
        self.try_acquire_burst(now, requests, decisions)
    }
    #[inline(always)]
    fn police_one(&mut self, key: u64, now: u64, n: u64) -> Decision {
        self.try_acquire(key, now, n)
    }
    fn resident(&self, now: u64) -> usize {
        self.occupancy(now).resident
    }
}

impl<const CAP: usize> Policer for LocalFlowGate<CAP> {
    #[inline(always)]
    fn police(&mut self, now: u64, requests: &[(u64, u64)], decisions: &mut [Decision]) -> usize {
        self.try_acquire_burst(now, requests, decisions, prefetch)
    }
    #[inline(always)]
    fn police_one(&mut self, key: u64, now: u64, n: u64) -> Decision {
        self.try_acquire(key, now, n)
    }
    fn resident(&self, now: u64) -> usize {
        self.occupancy(now).resident
    }
    #[inline(always)]
    fn prefetch(&self, key: u64) {
        prefetch(self.home_addr(key));
    }
}

impl<P: Policer + ?Sized> Policer for Box<P> {
    #[inline(always)]
    fn police(&mut self, now: u64, requests: &[(u64, u64)], decisions: &mut [Decision]) -> usize {
        (**self).police(now, requests, decisions)
    }
    #[inline(always)]
    fn police_one(&mut self, key: u64, now: u64, n: u64) -> Decision {
        (**self).police_one(key, now, n)
    }
    fn resident(&self, now: u64) -> usize {
        (**self).resident(now)
    }
    #[inline(always)]
    fn prefetch(&self, key: u64) {
        (**self).prefetch(key)
    }
}

/// A prefetch of the cache line at `p` into every cache level (x86-64;
/// elsewhere nothing): the hint a `LocalKeyedGate` burst asks for.
#[inline(always)]
pub fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing and cannot fault.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(p: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    let (start, end) = (p as usize, p as usize + len);
    let (a, b) = ((start + HUGE - 1) & !(HUGE - 1), end & !(HUGE - 1));
    if b > a {
        // SAFETY: advice on memory this process owns; it changes no contents.
        unsafe { libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE) };
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_: *mut u8, _: usize) {}

/// The most flows the sender can make (the big gate has 2^21 slots).
pub const MAX_FLOWS: u32 = 1_000_000;

/// Flow `i`'s 5-tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tuple {
    /// Source IPv4 address.
    pub src: u32,
    /// Destination IPv4 address.
    pub dst: u32,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// IP protocol (17, UDP).
    pub proto: u8,
}

impl Tuple {
    /// Flow `i` (`i < 2^24`): 10.x.y.z:port -> 10.200.0.2:9000-9015, UDP.
    /// Distinct flows have distinct source addresses.
    pub const fn of_flow(i: u32) -> Tuple {
        Tuple {
            src: 0x0a00_0000 | (i + 1),
            dst: 0x0ac8_0002,
            sport: 1024 + (i % 50_000) as u16,
            dport: 9000 + (i % 16) as u16,
            proto: 17,
        }
    }

    /// The gate's key: a 64-bit hash of the 104-bit 5-tuple (the gate mixes
    /// keys again with its seed to pick a slot). A collision would make two
    /// flows share a limit; for 10^6 flows its probability is about 3e-8.
    #[inline(always)]
    pub const fn key(&self) -> u64 {
        let a = ((self.src as u64) << 32) | self.dst as u64;
        let b = ((self.sport as u64) << 24) | ((self.dport as u64) << 8) | self.proto as u64;
        mix(a ^ mix(b))
    }
}

/// MurmurHash3's 64-bit finalizer (a bijection).
#[inline(always)]
const fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// Frame length of flow `i`: 60 to 172 bytes (so bytes and packets differ).
pub const fn frame_len(i: u32) -> usize {
    60 + (i % 8) as usize * 16
}

/// The destination MAC (the receiving veth's, set when it is created).
pub const DST_MAC: [u8; 6] = [0x02, 0x1e, 0xa9, 0, 0, 2];
/// The source MAC (the sending veth's).
pub const SRC_MAC: [u8; 6] = [0x02, 0x1e, 0xa9, 0, 0, 1];

/// Writes flow `i`'s frame into `buf` (at least [`frame_len`]`(i)` bytes):
/// Ethernet, IPv4 (with its checksum), UDP (checksum 0: none), and a payload
/// that starts with the flow's index. Returns the length.
pub fn write_frame(buf: &mut [u8], i: u32) -> usize {
    let t = Tuple::of_flow(i);
    let len = frame_len(i);
    let buf = &mut buf[..len];
    buf.fill(0);
    buf[0..6].copy_from_slice(&DST_MAC);
    buf[6..12].copy_from_slice(&SRC_MAC);
    buf[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut buf[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = t.proto;
    ip[12..16].copy_from_slice(&t.src.to_be_bytes());
    ip[16..20].copy_from_slice(&t.dst.to_be_bytes());
    let mut sum: u32 = 0;
    for w in ip.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    let udp = &mut buf[34..42];
    udp[0..2].copy_from_slice(&t.sport.to_be_bytes());
    udp[2..4].copy_from_slice(&t.dport.to_be_bytes());
    udp[4..6].copy_from_slice(&((len - 34) as u16).to_be_bytes());
    buf[42..46].copy_from_slice(&i.to_be_bytes());
    len
}

/// A frame's 5-tuple (IPv4 without options, UDP or TCP) and the flow index
/// its payload starts with; `None` for anything else (ARP, IPv6, ...).
#[inline(always)]
pub fn parse(frame: &[u8]) -> Option<(Tuple, u32)> {
    if frame.len() < 46 || frame[12..14] != [0x08, 0x00] || frame[14] != 0x45 {
        return None;
    }
    let be16 = |o: usize| u16::from_be_bytes([frame[o], frame[o + 1]]);
    let be32 = |o: usize| u32::from_be_bytes([frame[o], frame[o + 1], frame[o + 2], frame[o + 3]]);
    let t = Tuple {
        src: be32(26),
        dst: be32(30),
        sport: be16(34),
        dport: be16(36),
        proto: frame[23],
    };
    Some((t, be32(42)))
}

/// One batch of received frames on its way through leaparray: the gate's
/// requests, their decisions, and what the batch held.
#[derive(Debug, Clone)]
pub struct Batch {
    /// `(key, 1)` per policed frame, in order.
    pub requests: [(u64, u64); BATCH],
    /// The flow index of each policed frame (from its payload; for the
    /// ledger, not for the gate).
    pub flows: [u32; BATCH],
    /// The gate's decision per policed frame.
    pub decisions: [Decision; BATCH],
    /// Policed frames (IPv4 UDP/TCP).
    pub policed: usize,
    /// Frames in the batch (all of them are counted).
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            requests: [(0, 0); BATCH],
            flows: [0; BATCH],
            decisions: [Decision::Block; BATCH],
            policed: 0,
            packets: 0,
            bytes: 0,
        }
    }
}

impl Batch {
    /// Starts a new batch.
    #[inline(always)]
    pub fn clear(&mut self) {
        self.policed = 0;
        self.packets = 0;
        self.bytes = 0;
    }

    /// Adds one received frame (at most [`BATCH`] per batch): counted, and
    /// queued for the gate if it is a flow's.
    #[inline(always)]
    pub fn push(&mut self, frame: &[u8]) {
        self.packets += 1;
        self.bytes += frame.len() as u64;
        if let Some((t, flow)) = parse(frame) {
            let k = self.policed;
            if k < BATCH {
                self.requests[k] = (t.key(), 1);
                self.flows[k] = flow;
                self.policed = k + 1;
            }
        }
    }

    /// [`push`](Self::push), then [`Policer::prefetch`] of the frame's
    /// flow: its slot's cache miss overlaps with reading the batch's other
    /// frames, before the burst decides.
    #[inline(always)]
    pub fn push_prefetching(&mut self, frame: &[u8], gate: &impl Policer) {
        let k = self.policed;
        self.push(frame);
        if self.policed > k {
            gate.prefetch(self.requests[k].0);
        }
    }

    /// leaparray's part, at one `now` for the batch: the packets and bytes
    /// into this queue's shard (two single-writer adds per batch: every
    /// frame of a batch is in the window of `now`), then one decision per
    /// policed frame from the flow gate, as a burst ([`Policer::police`]).
    /// Returns the policed drops.
    #[inline(always)]
    pub fn process(
        &mut self,
        writer: &mut ShardWriter<'_, TRAFFIC_N, 2>,
        gate: &mut impl Policer,
        now: u64,
    ) -> u64 {
        // Errors: `Stale` needs a clock that went back (CLOCK_MONOTONIC
        // does not); `Saturated` needs 2^62 packets in one window.
        let _ = writer.add(now, PACKETS, self.packets);
        let _ = writer.add(now, BYTES, self.bytes);
        let k = self.policed;
        let decided = gate.police(now, &self.requests[..k], &mut self.decisions[..k]);
        self.decisions[..decided]
            .iter()
            .filter(|d| **d != Decision::Pass)
            .count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_parse_back_to_their_flow() {
        let mut buf = [0u8; 256];
        for i in [0, 1, 7, 4095, 999_999] {
            let len = write_frame(&mut buf, i);
            assert_eq!(len, frame_len(i));
            let (t, flow) = parse(&buf[..len]).unwrap();
            assert_eq!((t, flow), (Tuple::of_flow(i), i));
        }
        assert_eq!(parse(&buf[..40]), None);
    }

    #[test]
    fn distinct_flows_have_distinct_keys() {
        let mut keys: Vec<u64> = (0..MAX_FLOWS).map(|i| Tuple::of_flow(i).key()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), MAX_FLOWS as usize);
    }

    #[test]
    fn a_batch_counts_every_frame_and_polices_each_flow_to_its_limit() {
        static T: Traffic = traffic();
        static G: FlowGate<4096> = flow_gate();
        let mut w = T.claim(0).unwrap();
        let mut buf = [0u8; 256];
        let mut b = Batch::default();
        let (mut drops, mut packets, mut bytes) = (0, 0, 0);
        for _ in 0..4 {
            b.clear();
            for k in 0..BATCH as u32 {
                let flow = k % 4; // 4 flows, 64 packets each over 4 batches
                let len = write_frame(&mut buf, flow);
                b.push(&buf[..len]);
                bytes += len as u64;
            }
            b.push(&[0u8; 20]); // not a flow's: counted, not policed
            bytes += 20;
            packets += BATCH as u64 + 1;
            drops += b.process(&mut w, &mut &G, 1_000);
        }
        assert_eq!(T.sums(1_000), [packets, bytes]);
        assert_eq!(drops, 4 * (64 - LIMIT));
    }

    #[test]
    fn the_local_gate_polices_a_batch_as_the_shared_one() {
        static T: Traffic = traffic();
        static SHARED: FlowGate<4096> = flow_gate();
        let mut owned = boxed_local_gate::<4096>();
        let (mut ws, mut wo) = (T.claim(2).unwrap(), T.claim(3).unwrap());
        let mut buf = [0u8; 256];
        let (mut a, mut b) = (Batch::default(), Batch::default());
        let mut drops = 0;
        for round in 0..8u64 {
            a.clear();
            b.clear();
            for k in 0..BATCH as u32 {
                let len = write_frame(&mut buf, (k * 7 + round as u32) % 9);
                a.push(&buf[..len]);
                b.push(&buf[..len]);
            }
            let now = 1_000 + round * 20_000;
            let (da, db) = (
                a.process(&mut ws, &mut &SHARED, now),
                b.process(&mut wo, &mut owned, now),
            );
            assert_eq!(da, db, "round {round}");
            assert_eq!(a.decisions, b.decisions, "round {round}");
            drops += da;
        }
        assert!(drops > 0, "some flows went over their limit");
        assert_eq!(owned.resident(1_000), 9);
    }
}
