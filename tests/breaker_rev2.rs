//! Hostile review 2 of the circuit breaker's closed-period start
//! (`max(closing report's now, the open period's deadline)`, the deadline
//! kept beside the word). `review_defect_*` tests are red on the code they
//! were written against: each pins a claim of the docs that a sequential
//! run falsifies. `review_clean_*` tests are attacks that found nothing.

use leaparray::breaker::{CircuitBreaker, Config, Outcome, State, Strategy};

/// Two windows of 10, at most 0 errors from 1 request, open for 30, the
/// probe timeout 30, `k` probes.
fn breaker(k: u16) -> CircuitBreaker<2> {
    CircuitBreaker::<2>::new(
        Config::new(Strategy::ErrorCount { max_errors: 0 }, 20, 30)
            .with_min_requests(1)
            .with_probes(k),
    )
}

/// A plain permit at `now` reporting an error at `now`: the transition it made.
fn error_at(b: &CircuitBreaker<2>, now: u64) -> Option<State> {
    let p = b.try_acquire(now).expect("closed: admitted");
    assert!(!p.is_probe());
    b.report(now, p, 1, Outcome::Error).map(|t| t.to)
}

/// Attack: reopen -> half-open cycles, one of them ended by a lost probe's
/// timeout, each raising the side deadline; the close, with a clock that
/// lags every deadline, must start at the deadline of its own open period
/// (the last one), not an earlier one.
#[test]
fn review_clean_a_close_after_reopen_cycles_and_a_lost_probe_starts_at_the_last_deadline() {
    let b = breaker(1);
    assert_eq!(error_at(&b, 5), Some(State::Open));
    assert_eq!(b.snapshot().time, 35);
    // Cycle 1: half-open at 35 (deadline 35), the probe bad at 36.
    let p = b.try_acquire(35).unwrap();
    assert_eq!(
        b.report(36, p, 1, Outcome::Error).map(|t| t.to),
        Some(State::Open)
    );
    assert_eq!(b.snapshot().time, 66);
    // Cycle 2: half-open at 66 (deadline 66), the probe lost; the probe
    // timeout (30 from the grant) reopens at 96.
    let lost = b.try_acquire(66).unwrap();
    assert!(b.try_acquire(95).is_none());
    assert!(b.try_acquire(96).is_none());
    assert_eq!((b.state(), b.snapshot().time), (State::Open, 126));
    // Cycle 3: half-open at 126, the probe good with a clock at 50.
    let p = b.try_acquire(126).unwrap();
    assert_eq!(
        b.report(50, p, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    assert_eq!(b.snapshot().time, 126, "closed from an older deadline");
    // The lost probe, reported now, changes nothing.
    assert_eq!(b.report(127, lost, 1, Outcome::Error), None);
    assert_eq!(b.state(), State::Closed);
    // A report in a window before the start's is uncounted; one after trips,
    // open for 30 from it.
    assert_eq!(error_at(&b, 119), None);
    assert_eq!(b.uncounted_reports(), 1);
    assert_eq!(error_at(&b, 131), Some(State::Open));
    assert_eq!(b.snapshot().time, 161);
}

/// Attack: one far-future glitch, at `u64::MAX` itself, on the call that
/// half-opens the breaker. The side deadline is raised to the open word's
/// deadline, not to the caller's `now`, so the close starts on time and the
/// breaker trips and recovers as if there had been no glitch.
#[test]
fn review_clean_a_half_open_at_u64_max_never_raises_the_side_deadline() {
    for glitch in [u64::MAX, u64::MAX - 1, 1 << 40] {
        let b = breaker(1);
        assert_eq!(error_at(&b, 5), Some(State::Open));
        let p = b.try_acquire(glitch).unwrap();
        assert_eq!(
            b.report(40, p, 1, Outcome::Success).map(|t| t.to),
            Some(State::Closed)
        );
        assert_eq!(b.snapshot().time, 40, "glitch {glitch}");
        assert_eq!(error_at(&b, 41), Some(State::Open));
        assert_eq!(b.snapshot().time, 71, "glitch {glitch}");
        // The next close, lagging, starts at the new deadline (71), and the
        // breaker keeps working: the side deadline was never the glitch.
        let p = b.try_acquire(71).unwrap();
        assert_eq!(
            b.report(60, p, 1, Outcome::Success).map(|t| t.to),
            Some(State::Closed)
        );
        assert_eq!(b.snapshot().time, 71, "glitch {glitch}");
        assert_eq!(error_at(&b, 75), Some(State::Open));
        assert_eq!((b.snapshot().time, b.uncounted_reports()), (105, 0));
    }
}

/// Attack: a far-ahead time (within the 2^47-window range) that does raise
/// the side deadline: a stale report at F raises the latest time, a reopen
/// then opens until F + 30, and a second far-ahead call half-opens at F + 30.
/// The closed period starts at F + 30 and cannot trip until the real time
/// gets there (documented: "until the real time catches up"). The raised
/// side deadline is then harmless: once real time passes it, later closes
/// start at their own `now`, and the breaker trips and recovers.
#[test]
fn review_clean_a_far_ahead_side_deadline_lasts_only_until_real_time_passes_it() {
    const F: u64 = 1_000_000_000_000; // 10^11 windows of 10: within 2^47
    let b = breaker(1);
    let stale = b.try_acquire(0).unwrap();
    assert_eq!(error_at(&b, 5), Some(State::Open));
    assert_eq!(b.report(F, stale, 1, Outcome::Success), None); // raises `latest`
    let p = b.try_acquire(35).unwrap();
    assert_eq!(
        b.report(36, p, 1, Outcome::Error).map(|t| t.to),
        Some(State::Open)
    );
    assert_eq!(b.snapshot().time, F + 30);
    let p = b.try_acquire(F + 30).unwrap(); // the second glitch: side deadline F + 30
    assert_eq!(
        b.report(40, p, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    assert_eq!(b.snapshot().time, F + 30);
    for t in 41..61 {
        assert_eq!(error_at(&b, t), None);
    }
    assert_eq!((b.state(), b.uncounted_reports()), (State::Closed, 20));
    // Real time reaches F + 30: the period counts and trips, for 30.
    assert_eq!(error_at(&b, F + 31), Some(State::Open));
    assert_eq!(b.snapshot().time, F + 61);
    // The next close with a lagging clock starts at its own deadline, not
    // at any older one, and the breaker trips again from on-time reports.
    let p = b.try_acquire(F + 61).unwrap();
    assert_eq!(
        b.report(F + 62, p, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    assert_eq!(b.snapshot().time, F + 62);
    assert_eq!(error_at(&b, F + 70), Some(State::Open));
    assert_eq!(b.uncounted_reports(), 20);
}

/// Defect (docs): module "Times", "A closed period's start": "A report of
/// the new period whose `now` is before the start ... is in no window of
/// the period: it is counted in `uncounted_reports`"; GUARANTEES: "one
/// with an earlier `now` ... may be [before the start], and is then
/// counted in `uncounted_reports()`". The code compares window ids: a
/// report before the start but in the start's window is counted, and here
/// trips the breaker, with `uncounted_reports() == 0`.
#[test]
fn review_defect_a_report_before_the_start_in_its_window_counts() {
    let b = breaker(1);
    assert_eq!(error_at(&b, 5), Some(State::Open)); // open until 35
    let p = b.try_acquire(35).unwrap();
    assert_eq!(
        b.report(43, p, 1, Outcome::Success).map(|t| t.to),
        Some(State::Closed)
    );
    assert_eq!(b.snapshot().time, 43);
    // A permit of the new period with a clock at 41, before the start (43).
    let p = b.try_acquire(41).unwrap();
    let t = b.report(41, p, 1, Outcome::Error);
    assert_eq!(
        (t.map(|t| t.to), b.uncounted_reports()),
        (None, 1),
        "the docs: a report before the start is in no window of the period, \
         counted in uncounted_reports"
    );
}

/// Defect (docs, the glitch list): module "Times" lists what one time far
/// ahead does: a report at it, a close at it, a probe grant at it. Missing:
/// a *refused* `try_acquire` at it while half-open with all `k` probes out.
/// It takes the probes for lost, though they are neither lost nor late,
/// ends the period (their good reports change nothing), and opens the
/// breaker until the glitch plus the recovery timeout. GUARANTEES "A lost
/// probe (never reported) is taken as bad ..." and "All `k` must report
/// good to close" do not say that a probe reported good 5 ticks after its
/// grant is discarded by one far-ahead clock read of another caller.
#[test]
fn review_defect_a_far_ahead_refused_acquire_ends_a_half_open_period_with_no_lost_probe() {
    const F: u64 = 1_000_000_000_000; // within 2^47 windows
    let b = breaker(2);
    assert_eq!(error_at(&b, 5), Some(State::Open)); // open until 35
    let (p, q) = (b.try_acquire(35).unwrap(), b.try_acquire(36).unwrap());
    assert!(b.try_acquire(F).is_none()); // refused: all 2 probes granted
    assert_eq!(b.report(40, p, 1, Outcome::Success), None);
    let closed = b.report(41, q, 1, Outcome::Success).map(|t| t.to);
    assert_eq!(
        (closed, b.state()),
        (Some(State::Closed), State::Closed),
        "two probes good 5 ticks after their grants did not close it: the \
         far-ahead refused call reopened it until {}",
        b.snapshot().time
    );
}

/// Defect (docs): "a report from an earlier period changes nothing"
/// (module "Permits", `report`'s docs, GUARANTEES "Probes decide, and only
/// probes of the period"). It changes the breaker's latest time: every
/// report raises it before it loads the word, stale or not, and every
/// later trip and reopen counts from it. One stale report with a glitched
/// `now` near `u64::MAX` makes every later open period last until a `now`
/// of `u64::MAX`: the breaker never half-opens again.
#[test]
fn review_defect_a_report_from_an_earlier_period_moves_every_later_deadline() {
    let b = breaker(1);
    let stale = b.try_acquire(0).unwrap();
    assert_eq!(error_at(&b, 5), Some(State::Open)); // open until 35
    assert_eq!(b.report(u64::MAX - 1, stale, 1, Outcome::Success), None);
    let p = b.try_acquire(35).unwrap();
    assert_eq!(
        b.report(36, p, 1, Outcome::Error).map(|t| t.to),
        Some(State::Open)
    );
    assert_eq!(
        b.snapshot().time,
        66,
        "the stale report changed the reopen deadline (the docs: it changes nothing)"
    );
}

/// Defect (docs, a missing bound): module "Times": "One time far ahead
/// (a clock step, a glitch), fewer than 2^47 windows ahead of the real
/// time ... a report at that time ...: every report at the real time is
/// counted in `uncounted_reports` and none trips the breaker". There is an
/// upper bound but no lower one: a report fewer than `N` windows ahead
/// leaves the real-time reports counting, and they trip.
#[test]
fn review_defect_a_report_ahead_by_fewer_than_n_windows_leaves_real_time_counting() {
    let b = breaker(1); // N = 2 windows of 10
    let p = b.try_acquire(5).unwrap();
    assert_eq!(b.report(15, p, 1, Outcome::Success), None); // one window ahead of 5
    let t = error_at(&b, 5);
    assert_eq!(
        (t, b.uncounted_reports()),
        (None, 1),
        "the docs: after a report ahead, a report at the real time is uncounted and never trips"
    );
}
