//! The sender: raw frames of many UDP flows on an AF_PACKET socket
//! (`sendmmsg`, 64 frames a call, `PACKET_QDISC_BYPASS`), with a ledger of
//! what it sent per flow.
//!
//! Flows: 16 flows (every 256th of 4,096; evenly spread over more) are
//! *heavy* and send as fast as the socket takes frames (far over
//! [`LIMIT`](leaparray_xdp::LIMIT), whatever the number of flows); every
//! other flow
//! is *light*: at most one frame per 50 ms window of the sender's clock,
//! so at most about 3 in any 100 ms interval the receiver sees (its windows
//! are not aligned with the sender's, and frames wait in queues), far under
//! the limit of 16. Up to half of each batch goes to light flows.

use std::sync::atomic::{AtomicBool, Ordering};

use leaparray_xdp::{frame_len, write_frame, BATCH, GATE_WINDOW_US};

/// Whether flow `i` of `flows` is heavy (over its limit by design): every
/// 256th, or every `flows / 16`-th when there are more than 4,096 flows, so
/// that at most 16 heavy flows share half the frames and each stays far
/// over its limit (3,907 heavy flows of 1,000,000 would each get about 70
/// frames a second, under it).
pub const fn is_heavy(i: u32, flows: u32) -> bool {
    let stride = if flows / 16 > 256 { flows / 16 } else { 256 };
    i.is_multiple_of(stride)
}

/// What the sender sent.
#[derive(Debug, Default)]
pub struct Sent {
    /// Frames per flow.
    pub per_flow: Vec<u64>,
    /// All frames.
    pub packets: u64,
    /// All bytes.
    pub bytes: u64,
    /// `sendmmsg` calls that the kernel refused for want of buffers (retried).
    pub nobufs: u64,
    /// How long it sent (µs): the duration, or less after Ctrl-C.
    pub elapsed_us: u64,
}

const SLOT: usize = 256;

/// Sends until `stop`, or `duration_us` after the start.
pub fn run(ifname: &str, flows: u32, duration_us: u64, stop: &AtomicBool) -> Result<Sent, String> {
    let cname = std::ffi::CString::new(ifname).unwrap();
    // SAFETY: plain libc calls with valid arguments.
    let (sock, ifindex) = unsafe {
        let ifindex = libc::if_nametoindex(cname.as_ptr());
        if ifindex == 0 {
            return Err(format!("no interface {ifname}"));
        }
        let sock = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
        if sock < 0 {
            return Err(format!(
                "AF_PACKET socket: {}",
                std::io::Error::last_os_error()
            ));
        }
        (sock, ifindex)
    };
    let sock = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(sock) };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&sock);
    let one: libc::c_int = 1;
    // SAFETY: valid option pointer and length. Bypassing the qdisc is an
    // optimisation only: its failure is not an error.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_QDISC_BYPASS,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of_val(&one) as u32,
        );
    }
    // SAFETY: a zeroed sockaddr_ll is valid; then filled.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_ifindex = ifindex as i32;
    addr.sll_protocol = 0;
    // SAFETY: addr is a valid sockaddr_ll of the given size.
    if unsafe {
        libc::bind(
            fd,
            &addr as *const _ as *const libc::sockaddr,
            std::mem::size_of_val(&addr) as u32,
        )
    } != 0
    {
        return Err(format!(
            "bind AF_PACKET: {}",
            std::io::Error::last_os_error()
        ));
    }

    let light: Vec<u32> = (0..flows).filter(|&i| !is_heavy(i, flows)).collect();
    let heavy: Vec<u32> = (0..flows).filter(|&i| is_heavy(i, flows)).collect();
    let mut sent = Sent {
        per_flow: vec![0; flows as usize],
        ..Sent::default()
    };
    let mut buf = vec![0u8; BATCH * SLOT];
    let mut batch_flows = [0u32; BATCH];
    let mut iov: [libc::iovec; BATCH] = unsafe { std::mem::zeroed() };
    let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    let (mut light_at, mut heavy_at) = (0usize, 0usize);
    let mut window = u64::MAX;
    let mut light_in_window = 0usize;
    let start = crate::now_us();
    loop {
        let now = crate::now_us();
        if stop.load(Ordering::Relaxed) || now - start >= duration_us {
            break;
        }
        if now / GATE_WINDOW_US != window {
            window = now / GATE_WINDOW_US;
            light_in_window = 0;
        }
        let mut n = 0;
        // Light flows: each at most once per window.
        while n < BATCH / 2 && light_in_window < light.len() {
            batch_flows[n] = light[light_at];
            light_at = (light_at + 1) % light.len();
            light_in_window += 1;
            n += 1;
        }
        while n < BATCH && !heavy.is_empty() {
            batch_flows[n] = heavy[heavy_at];
            heavy_at = (heavy_at + 1) % heavy.len();
            n += 1;
        }
        if n == 0 {
            std::thread::yield_now();
            continue;
        }
        for k in 0..n {
            let slot = &mut buf[k * SLOT..(k + 1) * SLOT];
            let len = write_frame(slot, batch_flows[k]);
            iov[k] = libc::iovec {
                iov_base: slot.as_mut_ptr() as *mut libc::c_void,
                iov_len: len,
            };
            msgs[k].msg_hdr.msg_iov = &mut iov[k];
            msgs[k].msg_hdr.msg_iovlen = 1;
        }
        let mut done = 0;
        while done < n {
            // SAFETY: msgs[done..n] point at live iovecs and buffers.
            let r = unsafe { libc::sendmmsg(fd, msgs[done..].as_mut_ptr(), (n - done) as u32, 0) };
            if r < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::ENOBUFS) || e.raw_os_error() == Some(libc::EAGAIN)
                {
                    sent.nobufs += 1;
                    std::thread::yield_now();
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    continue;
                }
                return Err(format!("sendmmsg: {e}"));
            }
            for &f in &batch_flows[done..done + r as usize] {
                sent.per_flow[f as usize] += 1;
                sent.packets += 1;
                sent.bytes += frame_len(f) as u64;
            }
            done += r as usize;
        }
        // Light flows whose frames were not sent (stopped mid-batch) are
        // simply sent less: the ledger has what was sent.
    }
    sent.elapsed_us = crate::now_us() - start;
    Ok(sent)
}
