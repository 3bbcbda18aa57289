//! A static `KeyedGate`: enough to instantiate `KeyedGate::new`.
#![no_std]

use core::num::NonZeroU64;
use leaparray::KeyedGate;

/// The table whose construction the trap checks.
pub static TABLE: KeyedGate<2, 4> = KeyedGate::new(NonZeroU64::MIN, 1);
