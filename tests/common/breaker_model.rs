//! The model of a `CircuitBreaker<N>`, the slow way: the state machine of
//! the `breaker` module's documentation written out one step at a time,
//! every period's probes and every closed period's reports kept in full
//! (a map from window id to counts), no word, no packing. Times may arrive
//! in any order; the model follows the module docs' "Times": every
//! deadline counts from the latest time the breaker has seen, a closed
//! period starts at the later of the closing report's `now` and the
//! deadline of the open period before it, and a plain report is counted only in its period's first window or later and in the
//! `N` windows ending at the newest window counted so far (by window id),
//! otherwise in `uncounted`. Sequential: one call at a time (the races are
//! loom's subject, the array's exactness `tests/model.rs`'s).

use std::collections::BTreeMap;

use leaparray::breaker::{Config, Outcome, State, Strategy, Transition};

/// A permit as the model hands it out: the period it was granted in and
/// whether it is a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelPermit {
    pub period: u32,
    pub probe: bool,
}

#[derive(Debug, Clone)]
pub struct BreakerModel<const N: usize> {
    config: Config,
    window: u64,
    pub state: State,
    /// Transitions so far.
    pub transitions: u32,
    /// Closed: since; Open: retry at; HalfOpen: latest grant.
    pub time: u64,
    pub granted: u16,
    pub good: u16,
    /// The current closed period's reports: window id -> (total, bad).
    reports: BTreeMap<u64, (u64, u64)>,
    /// The newest window any counted report landed in, in any period.
    newest: Option<u64>,
    /// The latest `now` of any report.
    pub latest: u64,
    /// The deadline of the latest open period (a half-open period's close
    /// starts no earlier).
    deadline: u64,
    /// Plain reports of a current closed period not counted.
    pub uncounted: u64,
}

impl<const N: usize> BreakerModel<N> {
    pub fn new(config: Config) -> Self {
        BreakerModel {
            config,
            window: config.stat_interval / N as u64,
            state: State::Closed,
            transitions: 0,
            time: 0,
            granted: 0,
            good: 0,
            reports: BTreeMap::new(),
            newest: None,
            latest: 0,
            deadline: 0,
            uncounted: 0,
        }
    }

    fn enter(&mut self, state: State, time: u64, now: u64) -> Transition {
        let t = Transition {
            from: self.state,
            to: state,
            at: now,
            number: self.transitions.wrapping_add(1),
        };
        self.state = state;
        self.transitions = self.transitions.wrapping_add(1);
        self.time = time;
        self.granted = 0;
        self.good = 0;
        self.reports.clear();
        t
    }

    /// Open for the recovery timeout from the latest time seen: `now`,
    /// the close or latest grant (`time`, closed or half-open) and every
    /// report's `now`.
    fn open(&mut self, now: u64) -> Transition {
        self.open_from(now, now)
    }

    /// Open for the recovery timeout from the latest of `from`, `time` and
    /// every report's `now`; the transition at `now`.
    fn open_from(&mut self, from: u64, now: u64) -> Transition {
        let from = from.max(self.time).max(self.latest);
        let until = from.saturating_add(self.config.recovery_timeout);
        self.enter(State::Open, until, now)
    }

    /// The probe or plain permit the breaker grants at `now`, and the
    /// transition that grant (or refusal) made.
    pub fn try_acquire(&mut self, now: u64) -> (Option<ModelPermit>, Option<Transition>) {
        match self.state {
            State::Closed => (
                Some(ModelPermit {
                    period: self.transitions,
                    probe: false,
                }),
                None,
            ),
            State::Open if now < self.time => (None, None),
            State::Open => {
                self.deadline = self.time;
                let t = self.enter(State::HalfOpen, now, now);
                self.granted = 1;
                (
                    Some(ModelPermit {
                        period: self.transitions,
                        probe: true,
                    }),
                    Some(t),
                )
            }
            State::HalfOpen if self.granted < self.config.probes => {
                self.granted += 1;
                self.time = self.time.max(now);
                (
                    Some(ModelPermit {
                        period: self.transitions,
                        probe: true,
                    }),
                    None,
                )
            }
            State::HalfOpen => {
                // A lost probe: open from when it became lost (the latest
                // grant plus the probe timeout), not from this `now`.
                let lost = self.time.saturating_add(self.config.probe_timeout);
                if now >= lost {
                    (None, Some(self.open_from(lost, now)))
                } else {
                    (None, None)
                }
            }
        }
    }

    fn is_bad(&self, rt: u64, outcome: Outcome) -> bool {
        match self.config.strategy {
            Strategy::SlowRequestRatio { max_rt, .. } => rt > max_rt,
            _ => outcome == Outcome::Error,
        }
    }

    /// `(total, bad)` of the current closed period over the windows live at
    /// `now` (for a `now` no older than every report's).
    pub fn counts(&self, now: u64) -> (u64, u64) {
        if self.state != State::Closed {
            return (0, 0);
        }
        self.counts_at(now / self.window)
    }

    /// `(total, bad)` over the `N` windows ending at window `newest`.
    fn counts_at(&self, newest: u64) -> (u64, u64) {
        let oldest = newest.saturating_sub(N as u64 - 1);
        let since = self.time / self.window;
        self.reports
            .range(oldest.max(since)..=newest)
            .fold((0, 0), |(t, b), (_, c)| (t + c.0, b + c.1))
    }

    fn trips(&self, total: u64, bad: u64) -> bool {
        if total < self.config.min_requests {
            return false;
        }
        match self.config.strategy {
            Strategy::SlowRequestRatio { max_ratio, .. } | Strategy::ErrorRatio { max_ratio } => {
                let (num, den) = (
                    u128::from(max_ratio.numerator()),
                    u128::from(max_ratio.denominator()),
                );
                // As a fraction: bad / total > num / den, or every one bad
                // under a ratio of 1.
                u128::from(bad) * den > num * u128::from(total) || (num == den && bad == total)
            }
            Strategy::ErrorCount { max_errors } => bad > max_errors,
        }
    }

    pub fn report(
        &mut self,
        now: u64,
        permit: ModelPermit,
        rt: u64,
        outcome: Outcome,
    ) -> Option<Transition> {
        let bad = self.is_bad(rt, outcome);
        self.latest = self.latest.max(now);
        if permit.period != self.transitions {
            return None;
        }
        if permit.probe {
            if self.state != State::HalfOpen {
                return None;
            }
            if bad {
                return Some(self.open(now));
            }
            self.good += 1;
            if self.good == self.config.probes {
                return Some(self.enter(State::Closed, now.max(self.deadline), now));
            }
            return None;
        }
        if self.state != State::Closed {
            return None;
        }
        let own = now / self.window;
        let newest = self.newest.map_or(own, |n| n.max(own));
        if own < self.time / self.window || newest - own >= N as u64 {
            self.uncounted += 1;
            return None;
        }
        self.newest = Some(newest);
        let c = self.reports.entry(own).or_default();
        c.0 += 1;
        c.1 += u64::from(bad);
        let (total, bad) = self.counts_at(newest);
        if self.trips(total, bad) {
            return Some(self.open(now));
        }
        None
    }
}
