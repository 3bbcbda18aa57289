//! Picks the memory layout of the QEMU board that runs each target.
use std::{env, fs, path::PathBuf};

fn main() {
    let target = env::var("TARGET").unwrap_or_default();
    let memory = if target.starts_with("thumbv6m") {
        // BBC micro:bit (nRF51822, Cortex-M0): 256 KiB flash, 16 KiB RAM.
        "MEMORY { FLASH : ORIGIN = 0x00000000, LENGTH = 256K\n RAM : ORIGIN = 0x20000000, LENGTH = 16K }\n"
    } else {
        // TI LM3S6965 (Cortex-M3): 256 KiB flash, 64 KiB RAM.
        "MEMORY { FLASH : ORIGIN = 0x00000000, LENGTH = 256K\n RAM : ORIGIN = 0x20000000, LENGTH = 64K }\n"
    };
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    fs::write(out.join("memory.x"), memory).unwrap();
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=build.rs");
}
