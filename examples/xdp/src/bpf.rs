//! The XDP redirect program and its XSKMAP, with raw `bpf(2)` calls (no C
//! library, no BPF toolchain): five instructions that send every frame of
//! receive queue `q` to the AF_XDP socket at key `q` of the map, or pass it
//! to the kernel's stack if there is none. Attached with `BPF_LINK_CREATE`,
//! so it detaches when the link's fd closes (also when the process dies).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const BPF_MAP_CREATE: i64 = 0;
const BPF_MAP_UPDATE_ELEM: i64 = 2;
const BPF_PROG_LOAD: i64 = 5;
const BPF_LINK_CREATE: i64 = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
/// `XDP_FLAGS_SKB_MODE`: generic XDP, in the stack after the skb is built.
pub const XDP_FLAGS_SKB_MODE: u32 = 2;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const XDP_PASS: i32 = 2;

#[repr(C)]
struct MapCreate {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
}

#[repr(C)]
struct MapUpdate {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

#[repr(C)]
struct LinkCreate {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

/// One `struct bpf_insn`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    /// dst in the low nibble, src in the high one.
    regs: u8,
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

fn bpf<T>(cmd: i64, attr: &mut T) -> io::Result<i64> {
    // SAFETY: `attr` is a properly laid out, fully initialized bpf_attr
    // prefix of the given size.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T as *mut libc::c_void,
            std::mem::size_of::<T>(),
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn fd(r: i64) -> OwnedFd {
    // SAFETY: a new fd the kernel just returned, owned by nobody else.
    unsafe { OwnedFd::from_raw_fd(r as i32) }
}

/// The attached program; dropping it detaches the program.
#[derive(Debug)]
pub struct Redirect {
    // Field order is drop order: the link (attachment) goes first.
    _link: OwnedFd,
    _prog: OwnedFd,
    _map: OwnedFd,
}

/// Creates the XSKMAP with `xsk_fd` at key `queue`, loads the program and
/// attaches it to `ifindex` with `flags` (`XDP_FLAGS_SKB_MODE`).
pub fn redirect(ifindex: u32, queue: u32, xsk_fd: i32, flags: u32) -> io::Result<Redirect> {
    let map = fd(bpf(
        BPF_MAP_CREATE,
        &mut MapCreate {
            map_type: BPF_MAP_TYPE_XSKMAP,
            key_size: 4,
            value_size: 4,
            max_entries: queue + 1,
            map_flags: 0,
        },
    )
    .map_err(|e| io::Error::new(e.kind(), format!("BPF_MAP_CREATE (XSKMAP): {e}")))?);
    let (key, value) = (queue, xsk_fd as u32);
    bpf(
        BPF_MAP_UPDATE_ELEM,
        &mut MapUpdate {
            map_fd: map.as_raw_fd() as u32,
            _pad: 0,
            key: &key as *const u32 as u64,
            value: &value as *const u32 as u64,
            flags: 0,
        },
    )
    .map_err(|e| io::Error::new(e.kind(), format!("BPF_MAP_UPDATE_ELEM: {e}")))?;
    let prog = [
        // r2 = ctx->rx_queue_index (struct xdp_md, offset 16)
        insn(0x61, 2, 1, 16, 0),
        // r1 = the map (ld_imm64, src = BPF_PSEUDO_MAP_FD), two slots
        insn(0x18, 1, 1, 0, map.as_raw_fd()),
        insn(0, 0, 0, 0, 0),
        // r3 = XDP_PASS: the action if the map has no socket at r2
        insn(0xb7, 3, 0, 0, XDP_PASS),
        // r0 = bpf_redirect_map(r1, r2, r3)
        insn(0x85, 0, 0, 0, BPF_FUNC_REDIRECT_MAP),
        // return r0
        insn(0x95, 0, 0, 0, 0),
    ];
    let license = b"Dual MIT/GPL\0";
    let mut log = vec![0u8; 1 << 16];
    let mut name = [0u8; 16];
    name[..9].copy_from_slice(b"leaparray");
    let mut attr = ProgLoad {
        prog_type: BPF_PROG_TYPE_XDP,
        insn_cnt: prog.len() as u32,
        insns: prog.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 1,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        kern_version: 0,
        prog_flags: 0,
        prog_name: name,
        prog_ifindex: 0,
        expected_attach_type: 0,
    };
    let prog = fd(bpf(BPF_PROG_LOAD, &mut attr).map_err(|e| {
        let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
        io::Error::new(
            e.kind(),
            format!(
                "BPF_PROG_LOAD: {e}; verifier: {}",
                String::from_utf8_lossy(&log[..end])
            ),
        )
    })?);
    let link = fd(bpf(
        BPF_LINK_CREATE,
        &mut LinkCreate {
            prog_fd: prog.as_raw_fd() as u32,
            target_ifindex: ifindex,
            attach_type: BPF_XDP,
            flags,
        },
    )
    .map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("BPF_LINK_CREATE (XDP, flags {flags}): {e}"),
        )
    })?);
    Ok(Redirect {
        _link: link,
        _prog: prog,
        _map: map,
    })
}
