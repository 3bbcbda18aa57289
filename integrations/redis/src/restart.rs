//! Redis restarted (empty, or from a snapshot or AOF that may miss
//! bookings, or a replica took over): how the fleet keeps its limit.
//!
//! # The protocol
//!
//! Every process keeps its own bookings per window in a
//! map by window id (the *ledger*: what it booked in Redis, less what it gave
//! back, plus what its fault policy admitted locally). Redis holds an
//! *epoch* token (`{name}:epoch`, never expiring) and the identity of the
//! redis-server process that made it (`{name}:run`: its `run_id` and its
//! replication id), and every call names the epoch its caller knows. The
//! script, atomically:
//!
//! 0. refuses every check on a server that is not a master (`INFO
//!    replication` `role`; `READONLY`: the process goes offline and
//!    reconnects), so nothing is checked or booked on a replica;
//! 1. if the epoch key is missing (Redis is empty: a first start, a
//!    restart without persistence, `FLUSHALL`), or, on a check (the first
//!    call of a fresh connection, and every heartbeat), if `{name}:run` is
//!    not this server's identity, or if the counters hash does not name
//!    the epoch (its counts were lost: "Eviction" below), creates a new
//!    epoch and a *fence*: the Redis time at which the restart grace ends,
//!    a field of the counters hash. The `run_id` (`INFO server`)
//!    is new at every start and a promoted replica's own; the replication
//!    id (`INFO replication` `master_replid`) is new whenever the process
//!    becomes a master (a promotion: also a failback to the same process,
//!    whose data, taken from its master while it was a replica, can miss
//!    bookings it had taken before: `replication::
//!    a_failback_to_the_same_process_is_a_restart`) and stays while it
//!    remains one;
//! 2. refuses any operation that names another epoch (*stale*): nothing is
//!    booked;
//! 3. refuses fresh bookings while the fence exists.
//!
//! A process told *stale* writes its live windows back (`restore`: one
//! `HINCRBY` per window, applied once per process and epoch) under the new
//! epoch, then retries. Its keeper thread checks the epoch every heartbeat,
//! so an idle process writes back too. Inside a process, a booking holds
//! the epoch's read lock from its call until its ledger entry; a restore
//! holds the write lock from reading the ledger until it has adopted the
//! new epoch.
//!
//! The rule for a restart that kept data: a restart breaks every
//! connection, and every new connection's first call is that check,
//! before any booking on it; so the first process to reach the new
//! redis-server (a new process too) makes the new epoch. A demotion need
//! not break connections (`REPLICAOF` keeps them; Sentinel turns an old
//! master into a replica seconds after a failover), but a booking on a
//! replica fails (`READONLY`) and so does the next heartbeat's check, so a
//! process drops its connections within one heartbeat of a demotion; a
//! demotion and a promotion back both within one heartbeat, with no
//! decision of the process in between, are not seen. What the persisted
//! data holds stays counted (bookings of the snapshot counted again by the
//! write-back: refused more, never over). Cost: `INFO replication`, `INFO
//! server` and `INFO cluster` inside the script per check (each new
//! connection and each heartbeat), `INFO memory` per new connection (on a
//! cluster also `CLUSTER MYID`); nothing per decision (a booking reads
//! neither `{name}:run` nor `INFO`).
//!
//! # Redis Cluster: migration or failover
//!
//! On Redis Cluster the slot can also move whole to another master
//! (`MIGRATE`), which loses nothing and must not fence; a promoted replica
//! can lack the last bookings and must. So there the epoch records
//! `run_id`, node id and replication id of the node that made or adopted
//! it, "run node replid", and a fresh connection's check on a node N whose
//! identity differs from the recorded one (node R, replid `r`) *adopts* the
//! epoch (no fence) only if all of these hold, else makes a new epoch:
//!
//! 1. **The vouch.** The connecting process saw R answer `MOVED` while R
//!    was a master *with the recorded identity*: the same redis-server
//!    process, node id and replication id (the client reads `CLUSTER
//!    MYID`, `INFO server` and `INFO replication` on that connection right
//!    after the `MOVED`, and sends the "run node replid" of the masters
//!    whose `MOVED` it saw in the last `heartbeat + max_backoff + timeout`
//!    with its fresh checks, until a check sent after them passes: that
//!    node then holds its own identity). A master gives a slot away only
//!    by `SETSLOT ... NODE` (a migration); after a failover the old master
//!    has lost every slot to its replica and turns into that replica's
//!    replica in the same step (Redis's `clusterUpdateSlotsConfigWith`),
//!    so it answers `MOVED` only as a replica (a dead master answers
//!    nothing; one restarted from its `nodes.conf` after a failover
//!    rejoins as a replica). A master keeps its replication id only while
//!    it stays a master: becoming a replica takes its new master's id
//!    (`PSYNC` or a full sync), and becoming a master again (`CLUSTER
//!    RESET`, `REPLICAOF NO ONE`, a promotion) makes a new one; a restart
//!    makes a new `run_id`. So a vouch equal to the recorded identity says
//!    R has been a master, in one process, since it recorded the epoch:
//!    it lost the slot by migration, not by failover.
//! 2. R is another node than N, and one N knows (`CLUSTER
//!    COUNT-FAILURE-REPORTS`: a node restarted without its `nodes.conf`
//!    knows nobody); and N holds the counters hash (one key, moved whole:
//!    a slot assigned to N while R still held it makes R delete it,
//!    `cluster_regressions::a_slot_assigned_before_its_counters_moved_is_a_restart`).
//! 3. **N's history rules out a replicated copy:** either N was never
//!    promoted since it started (`second_repl_offset:-1`) and `r` is
//!    neither of its replids, or `r` is its `master_replid2`: N was R's
//!    own replica and was detached (`CLUSTER RESET`, which flushes it) or
//!    promoted; by 1, R has been a master throughout, so it was not a
//!    failover of R (a promoted replica of another node, such as one of a
//!    migration target that missed the adoption, fails both).
//!
//! The race the vouch (1 with R's role) prevents, limit 100, intervals
//! longer than the failover (`cluster_regressions::
//! a_forced_failover_whose_old_master_answers_moved_is_a_restart`):
//!
//! | step | Process (gate) | Node X (owner) | Node Y (X's replica) |
//! |---|---|---|---|
//! | 1 | books 1 at X | epoch E, `run` = X | replicates E and `run` = X |
//! | 2 | | | cut off (lag) |
//! | 3 | books 99 more at X | holds 100 | holds 1 |
//! | 4 | | learns Y's takeover: Y's replica | `CLUSTER FAILOVER TAKEOVER`: owner, `master_replid2` = X's replid |
//! | 5 | a decision gets `MOVED` Y from X; `INFO`: X is a replica: no vouch | | |
//! | 6 | fresh check at Y, no vouch | | new epoch E', the fence |
//! | 7 | *stale*: writes back 100 under E'; refused | | holds 101 |
//!
//! Without the role test (any `MOVED` vouches), step 6 sends X's id: Y's
//! `master_replid2` is the recorded replid, as for a migration to a former
//! replica, so Y adopts E: no write-back, and 99 more are admitted in the
//! interval (199 of 100, the test's red run). Without the vouch at all,
//! the history test alone cannot tell Y from a former replica of X that
//! received the slot by `MIGRATE` (`cluster_regressions::
//! migration_to_a_former_replica_of_the_source_is_not_fenced`).
//!
//! Why the vouch is R's whole identity, not its node id and role alone
//! (`cluster_regressions::
//! a_failed_over_master_reset_into_an_empty_master_vouches_for_nothing`;
//! same limit, heartbeat 20 s so that the process does not reach Y before
//! step 6):
//!
//! | step | Process (gate) | Node X (owner) | Node Y (X's replica) |
//! |---|---|---|---|
//! | 1 | books 100 at X (Y cut off after 1) | records "run X replid x" | holds 1 |
//! | 2 | | Y's replica: replid `y'` (Y's, by `PSYNC`) | `TAKEOVER`: owner, replid `y'`, `master_replid2` = `x` |
//! | 3 | | `CLUSTER RESET SOFT` (flushed), `MEET` Y: a master without slots, replid `x''` | |
//! | 4 | a decision gets `MOVED` Y from X; X is a master: vouch "run X x''" | | |
//! | 5 | fresh check at Y with that vouch | | "run X x''" is not "run X x": new epoch E', the fence |
//! | 6 | *stale*: writes back 100 under E'; refused | | holds 101 |
//!
//! With the node id as the vouch, step 5 found X vouched for, X known,
//! the counters present and `master_replid2` = `x`, and adopted E: 99 more
//! in the interval (199 of 100, the test's red run).
//!
//! Why a replica's `MOVED` vouches for nothing, though draining a master's
//! last slot turns it into the new owner's replica (Redis 7,
//! `cluster-allow-replica-migration yes`) so that a migration is fenced
//! (`cluster_operations::draining_the_last_slot_of_a_master_is_fenced_for_one_grace_at_most`):
//! a replica keeps its old replication id until it has synced from its new
//! master (seconds: a full sync waits `repl-diskless-sync-delay`), so its
//! identity proves nothing about how it lost the slot. X stopped (or cut
//! off) through a failover to its lagging replica Y and a migration of
//! Y's copy to a node N that was never promoted, then back: X learns that N
//! holds its slots and turns into N's replica with its replid still `x`;
//! its vouch would equal the recorded identity, and N, never promoted,
//! would adopt Y's copy (over the limit by Y's lag). No reading of X or N
//! at that point tells this from a drain.
//!
//! What this costs and leaves open:
//!
//! * A process that did not see R's `MOVED` (it started after the
//!   migration, was offline through it, or its pool was empty and its
//!   first new connection went straight to the new owner), or whose role
//!   read after it failed (a timeout), or that reached the new owner only
//!   after its vouch expired (a timeout and the keeper's backoff on a
//!   loaded machine), makes a new epoch if it reaches the new owner first: a fence, refusals for
//!   `restart_grace`, never an admission over the limit. So does a
//!   migration of a master's last slot (it
//!   answers `MOVED` as the new owner's replica, above), and a migration
//!   from a master restarted (a new `run_id`) or once a replica since it
//!   recorded the epoch, when no process reached it in between.
//! * A vouch is a fact about the past. It is spent by the next fresh check
//!   that passes and expires after `heartbeat + max_backoff + timeout`
//!   (200 ms by default), so it could vouch wrongly only if, within that
//!   time, the slot went back to R and R was failed over to a lagging
//!   replica without this process reaching R: a failover faster than
//!   that time (Redis Cluster's takes at least `cluster-node-timeout`).
//! * R's role is read one round trip after its `MOVED`. R demoted, then
//!   promoted back in between, vouches as a master, but then the node its
//!   `MOVED` named is a replica again and adopts nothing (it answers
//!   `MOVED` itself).
//! * Not covered: a failover while R kept another slot its replica did not
//!   know of (a slot imported into R during the failover): R stays a master
//!   and vouches, and the promoted node adopts a copy that can miss what
//!   replication had not carried (at most the bookings of the replication
//!   lag, within one interval).
//! * A master on the minority side of a partition (two masters for the
//!   slot): the README's "Split brain" states what the limit means then.
//!
//! A proxy that keeps the client's connection across a restart of the
//! redis-server behind it (twemproxy, Envoy) delays what a fresh
//! connection's check would see at once: an empty restart is seen at the
//! next call (the epoch is gone), one that loaded a snapshot or AOF at
//! the next heartbeat's check (the identity is read inside the script, on
//! the server); bookings in between (one `heartbeat` and a round trip at
//! most) count against the loaded data. Not tested through a proxy.
//!
//! # Eviction
//!
//! No key of a limit has a TTL: under a `volatile-*` `maxmemory-policy`
//! none is a candidate (Redis answers `OOM` when nothing else can go, a
//! fault like `noeviction`'s). Under `allkeys-*` any can be evicted, and
//! each eviction is seen at the next call that reads the key (a booking,
//! a heartbeat's check) as what it is, lost data:
//!
//! * the counters hash `{name}` names the epoch its counts belong to (a
//!   field `epoch`, written with the epoch): every call compares it with
//!   `{name}:epoch` and makes a new epoch if they differ (the hash
//!   evicted: the counts are gone; or the epoch key evicted);
//! * the fence is a field of the same hash, so it cannot be evicted alone
//!   (a fence key of its own, evicted, would end the fence early);
//! * `{name}:run` evicted: the next check finds no identity, a new epoch;
//! * `{name}:restored` evicted: a retried write-back can be applied twice
//!   (counted twice: under, never over, the limit).
//!
//! So an eviction is a restart with nothing kept (the `FLUSHALL` row of
//! the README's table): the fence, every live process writes back within
//! it (`eviction::any_eviction_policy_set_at_run_time_keeps_the_limit`).
//! The hash stays bounded without a TTL by pruning (at most `2 (4N + 1)`
//! window fields); the restores' set is emptied at each new epoch.
//!
//! # How long a window matters
//!
//! One bound, used by the counters hash's expiry, the ledger, the fence's
//! cap and pruning. Let every two callers' clocks differ by less than
//! `N - 1` windows (the README's skew bound; Redis's `TIME` is the clock of
//! `try_acquire`), all running at Redis's rate. Caller A books at Redis time
//! `t`, in window `w = floor(A(t) / window)`. A booking by caller B at Redis
//! time `t' > t` shares an interval with `w` only if its window is at most
//! `w + N - 1`: `B(t') < (w + N) window`. And `B(t') > A(t') - (N - 1) window
//! = A(t) + (t' - t) - (N - 1) window >= w window + (t' - t) - (N - 1) window`.
//! Both hold only while `t' - t < (2N - 1)` windows. So a window matters for
//! less than `2N - 1` windows of Redis time after its latest booking,
//! whichever clock named it (less than `N` when every caller uses `TIME`:
//! `A = B`). Hence:
//!
//! * pruning deletes only fields more than `2N` windows away (below); the
//!   counters hash itself never expires (module "Eviction");
//! * the ledger keeps a window `2N` windows of local time ([`Ledger`]);
//! * the fence is capped at `2N - 1` windows: it starts after every lost
//!   booking, so past it no fresh booking shares an interval with one (a
//!   longer fence refuses for nothing); the cap is never below
//!   `Config::min_restart_grace` ("The fence" below), so a live process
//!   writes back before any fresh booking even when the interval is
//!   shorter;
//! * pruning deletes only fields more than `2N` windows from both the
//!   booking's window and Redis's: the bookings of callers within the
//!   bound of either are within `2N - 2` windows of it.
//!
//! A clock step is outside the bound: a step back of `k < N` windows
//! lands in an interval that holds the latest window booked (no fresh
//! room); a step of `N` windows or more can give the limit again.
//!
//! # The race it prevents
//!
//! Interval of 4 windows, limit 100; Redis restarts in window 10.
//!
//! | time | Process 1 | Process 2 |
//! |---|---|---|
//! | window 9 | books 100 (ledger: w9 = 100) | refused |
//! | window 10 | | Redis is back, empty: P2's call creates epoch E2 and the fence, is refused *stale* |
//! | | | restores its ledger (nothing) under E2 |
//! | | | books: refused, *fenced* (without the fence: 100 fresh, 200 in w7..w10) |
//! | | keeper: *stale*, restores w9 = 100 under E2 | |
//! | window 11 | | the fence is gone; books: w8..w11 holds 100, refused |
//!
//! And inside one process: thread A's booking in the old Redis that returns
//! while thread B restores is either in B's ledger snapshot or waits for
//! the new epoch (the lock), so no booking of a live process is lost.
//!
//! # The fence
//!
//! **Its length is the longest any process of the limit needs.** Every
//! check (a fresh connection's first call, `open`'s included, and every
//! heartbeat) raises the counters hash's field `grace` to its process's
//! own fence (its `restart_grace`, capped as above) and returns the field;
//! the process keeps the latest it read. A call that makes a new epoch
//! sends the longer of its own fence and that one, and the script fences
//! for the longer of it and the hash's field (kept when Redis kept the
//! hash). So after an empty restart, where the record is gone, the first
//! process to reach Redis still fences for the slowest process it had
//! heard of. The race it prevents (`review45::
//! a_far_process_writes_back_within_a_near_process_fence_*`: 140 and 200
//! of 100 with each process's own fence):
//!
//! | time | Process 1 (near; grace 130 ms) | Process 2 (far: 200 ms round trip, timeout 400 ms, grace 2.5 s) |
//! |---|---|---|
//! | before | its check reads `grace` = 2.5 s | its check wrote `grace` = 2.5 s |
//! | window 9 | | books 100 (ledger: w9 = 100) |
//! | window 10 | Redis is back, empty; P1 reconnects first: new epoch E2, fenced for max(130 ms, 2.5 s) | offline, in its backoff |
//! | +130 ms | books: refused, *fenced* (with its own fence: 100 fresh, 200 in w7..w10) | |
//! | +1.25 s | | connect, check (3 calls), *stale*, restores w9 = 100 under E2 |
//! | +2.5 s | the fence is over; books: w9's intervals hold 100, refused | |
//!
//! **Its least, `Config::min_restart_grace`:** `max(heartbeat,
//! max_backoff) + k x timeout`, the longest a live process can take, from
//! the moment Redis answers again, to write back when each of its calls
//! takes at most `timeout` (a longer call fails, and the process is late:
//! "What is and is not guaranteed"). A process connected when Redis went
//! away either still holds a connection to it (its keeper's next beat
//! comes within `heartbeat`) or is offline (its next attempt comes within
//! `max_backoff`); a failed beat reconnects at once, so never both. Then,
//! `k` = 6: the call that finds the old connection dead, or the attempt
//! in flight that fails (1); a connect with the `redis` crate's setup (1);
//! the check, 3 calls on a restarted Redis, whose script cache is empty
//! (`EVALSHA`, `NOSCRIPT`, `SCRIPT LOAD`, `EVALSHA`); the restore (1).
//! With Sentinel `k` = 8: the heartbeat's question (or the failed
//! attempt's), and the reconnection's, to the sentinel kept connected. On
//! Redis Cluster a failover adds the nodes tried before the new owner: 1
//! per node that does not answer, 5 per node that redirects (connect,
//! check, its role read); `open` cannot tell, the README says to add them.
//! The write-back of `FaultPolicy::Local`'s admissions is one call more,
//! outside the bound (they are over the limit while Redis is away anyway).
//!
//! # What is and is not guaranteed
//!
//! * Every live process that reaches Redis within the fence has its
//!   bookings back before any fresh booking: every interval stays within
//!   the limit. A live process whose calls each take at most its
//!   `timeout` reaches it within its own `restart_grace` (at least
//!   `Config::min_restart_grace`, "The fence"), and the fence is at least
//!   that long if the process that made the epoch had read it (any check
//!   since the process's first) or Redis kept the hash. Not covered: a
//!   process that opens while Redis is away and reaches it first fences
//!   for its own grace only; so one grace for every process of a limit,
//!   the largest any needs, is the setting to use.
//! * Bookings of a process that died with Redis, or that reaches Redis only
//!   after the grace, are missing until it writes them back: the intervals
//!   that contain their windows can pass the limit by them. A grace of
//!   `2N - 1` windows (the cap) closes this too, whichever clock named the
//!   lost windows (nothing fresh is booked until every interval containing
//!   one is over; one interval, `N` windows, is enough when every caller
//!   uses `try_acquire`), at the price of refusing that long after each
//!   restart.
//! * The recorded `grace` is never lowered: a process that left keeps the
//!   fleet's fence at its grace until `HDEL {name} grace` (each live
//!   process records its own again at its next heartbeat).
//! * The first start of a limit is indistinguishable from a restart, so it
//!   is fenced too.
//! * A restore is applied once per process and epoch; a flush of admissions
//!   made by the fault policy is not idempotent (a reply lost to a timeout
//!   may count them twice: under, never over, the limit).

use std::collections::BTreeMap;
use std::sync::Mutex;

/// One process's bookings per Redis window.
#[derive(Debug)]
pub(crate) struct Ledger<const N: usize> {
    window_us: u64,
    /// Bookings present in Redis under the current epoch (and before it):
    /// window id -> (permits, local time of its latest booking, µs).
    booked: Mutex<BTreeMap<u64, (u64, u64)>>,
    /// Admissions of the local fault policy not yet written to Redis.
    pending: Mutex<BTreeMap<u64, u64>>,
}

fn guard<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<const N: usize> Ledger<N> {
    pub fn new(window_us: u64) -> Self {
        Self {
            window_us,
            booked: Mutex::new(BTreeMap::new()),
            pending: Mutex::new(BTreeMap::new()),
        }
    }

    /// How long (local µs) a window is kept after its latest booking:
    /// `2N` windows. Whichever clock named the window (Redis's, or a
    /// caller's within the skew bound of `N - 1` windows), every clock is
    /// past its last interval `2N - 1` windows after it was booked.
    fn keep_us(&self) -> u64 {
        self.window_us.saturating_mul(2 * N as u64)
    }

    /// Records `n` permits booked in Redis window `id` at local time
    /// `local_us`. Windows kept longer than [`Self::keep_us`] are dropped
    /// when the ledger holds more than `4N`.
    pub fn book(&self, id: u64, n: u64, local_us: u64) {
        let mut b = guard(&self.booked);
        let e = b.entry(id).or_insert((0, local_us));
        e.0 = e.0.saturating_add(n);
        e.1 = e.1.max(local_us);
        if b.len() > 4 * N {
            let keep = self.keep_us();
            b.retain(|_, &mut (_, t)| local_us.saturating_sub(t) < keep);
        }
    }

    /// Records `n` permits of window `id` given back.
    pub fn give_back(&self, id: u64, n: u64) {
        if let Some(e) = guard(&self.booked).get_mut(&id) {
            e.0 = e.0.saturating_sub(n);
        }
    }

    /// Records `n` permits admitted by the fault policy in window `id`.
    pub fn admit_pending(&self, id: u64, n: u64) {
        let mut p = guard(&self.pending);
        *p.entry(id).or_insert(0) += n;
        let oldest = id.saturating_sub(N as u64);
        p.retain(|&w, _| w > oldest);
    }

    /// Takes the pending admissions still live at `now_us`.
    pub fn take_pending(&self, now_us: u64) -> Vec<(u64, u64)> {
        let cur = now_us / self.window_us;
        let mut p = guard(&self.pending);
        let out = p
            .iter()
            .filter(|(&w, _)| w + N as u64 > cur)
            .map(|(&w, &n)| (w, n))
            .collect();
        p.clear();
        out
    }

    /// Puts back pending admissions that could not be written.
    pub fn untake_pending(&self, windows: &[(u64, u64)]) {
        let mut p = guard(&self.pending);
        for &(w, n) in windows {
            *p.entry(w).or_insert(0) += n;
        }
    }

    /// Every booked window that can still be inside an interval at local
    /// time `local_us`, whichever clock named it (window id, permits).
    pub fn live(&self, local_us: u64) -> Vec<(u64, u64)> {
        let keep = self.keep_us();
        guard(&self.booked)
            .iter()
            .filter(|(_, &(n, t))| n > 0 && local_us.saturating_sub(t) < keep)
            .map(|(&id, &(n, _))| (id, n))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_windows_are_those_booked_in_the_last_2n_windows_of_local_time() {
        let l = Ledger::<2>::new(100);
        // Window ids of any clock: Redis's (10), a caller's ahead (12), a
        // test's (1_000_000), booked at local times 0, 50 and 250.
        l.book(10, 5, 0);
        l.book(12, 3, 50);
        l.give_back(12, 1);
        l.book(1_000_000, 4, 250);
        assert_eq!(l.live(399), vec![(10, 5), (12, 2), (1_000_000, 4)]);
        assert_eq!(l.live(400), vec![(12, 2), (1_000_000, 4)]);
        assert_eq!(l.live(649), vec![(1_000_000, 4)]);
        assert_eq!(l.live(650), vec![]);
    }

    #[test]
    fn pending_is_taken_once_and_can_be_put_back() {
        let l = Ledger::<2>::new(100);
        l.admit_pending(5, 2);
        l.admit_pending(6, 1);
        assert_eq!(l.take_pending(650), vec![(5, 2), (6, 1)]);
        assert_eq!(l.take_pending(650), vec![]);
        l.untake_pending(&[(6, 1)]);
        assert_eq!(l.take_pending(750), vec![(6, 1)]);
        l.untake_pending(&[(6, 1)]);
        assert_eq!(l.take_pending(850), vec![]); // window 6 is out of every interval of window 8
    }
}
