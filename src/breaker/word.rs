//! The breaker's state word: one `u128` holding the state, the transition
//! count, the probes granted and reported good, and the time that matters
//! in the state. Every change of it is one compare-and-swap (the protocol:
//! [`protocol`](super::protocol)).

use super::State;

/// The most probes a half-open breaker may admit: `2^15 - 1` (15 bits of
/// the state word each for probes granted and probes reported good).
///
/// ```
/// assert_eq!(leaparray::breaker::MAX_PROBES, 32_767);
/// ```
pub const MAX_PROBES: u16 = (1 << 15) - 1;

/// The state word, decoded. Encoding (`u128`): bits 0..64 `time`, 64..96
/// `seq` (the transition count, wrapping), 96..98 the state (0 closed, 1
/// open, 2 half-open), 98..113 `granted`, 113..128 `good`. All zero: closed
/// since 0, no transition yet.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Word {
    pub(super) state: State,
    pub(super) seq: u32,
    pub(super) time: u64,
    pub(super) granted: u16,
    pub(super) good: u16,
}

impl Word {
    pub(super) const fn pack(self) -> u128 {
        let tag: u128 = match self.state {
            State::Closed => 0,
            State::Open => 1,
            State::HalfOpen => 2,
        };
        (self.time as u128)
            | ((self.seq as u128) << 64)
            | (tag << 96)
            | (((self.granted & MAX_PROBES) as u128) << 98)
            | (((self.good & MAX_PROBES) as u128) << 113)
    }

    pub(super) const fn unpack(v: u128) -> Self {
        Word {
            time: v as u64,
            seq: (v >> 64) as u32,
            state: match (v >> 96) & 3 {
                0 => State::Closed,
                2 => State::HalfOpen,
                // 3 is never written.
                _ => State::Open,
            },
            granted: ((v >> 98) as u16) & MAX_PROBES,
            good: ((v >> 113) as u16) & MAX_PROBES,
        }
    }

    /// The first word of a new period in `state` at `time`.
    pub(super) const fn next(self, state: State, time: u64) -> Self {
        Word {
            state,
            seq: self.seq.wrapping_add(1),
            time,
            granted: 0,
            good: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_round_trips_at_its_extremes() {
        for w in [
            Word {
                state: State::HalfOpen,
                seq: u32::MAX,
                time: u64::MAX,
                granted: MAX_PROBES,
                good: MAX_PROBES,
            },
            Word {
                state: State::Open,
                seq: 1,
                time: 0,
                granted: 0,
                good: 0,
            },
            Word {
                state: State::Closed,
                seq: 0,
                time: 1,
                granted: 0,
                good: 0,
            },
        ] {
            assert!(Word::unpack(w.pack()) == w);
        }
        assert!(Word::unpack(0).state == State::Closed);
    }
}
