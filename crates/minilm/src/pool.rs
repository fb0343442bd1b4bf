//! Helper threads that share the work of one forward pass.
//!
//! The calling thread drives the pass; each parallel step (a linear layer, attention) is a
//! *job* of independent *units* (column blocks, heads; or, for a large batch, whole groups
//! of sentences) that threads claim one at a time from an atomic counter. The caller claims units too and never waits for a helper to arrive:
//! if the other cores are busy, it simply does every unit itself. It only waits for units
//! a helper has already claimed and is computing.
//!
//! Helpers are persistent (a thread spawn costs ~100 us here, a whole query ~2-4 ms) and
//! spin briefly between jobs, then sleep on a condition variable until the next pass.
//! Everything is safe code: data goes through `Arc`, mutexes and atomics.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::forward::{Job, Scratch, Work};

/// How long an idle helper spins before sleeping: longer than the gaps between the jobs of
/// a pass (so it never sleeps mid-pass), short enough not to waste a core between queries.
const SPIN: Duration = Duration::from_micros(300);

/// A helper that makes the caller wait this long (and longer than the caller's own share
/// of the job took) was most likely preempted by another process mid-unit: the helpers are
/// then left out for `BACKOFF`, since on a busy machine they only add such waits. Same if
/// the caller has been running over 90% of the units itself (moving average over passes),
/// or spent over a fifth of a pass waiting for helpers.
const PREEMPTED: Duration = Duration::from_micros(200);
const BACKOFF: Duration = Duration::from_millis(100);

pub(crate) struct Pool {
    shared: Arc<Shared>,
    helpers: Vec<JoinHandle<()>>,
    /// One pass at a time: a concurrent `embed` runs without helpers.
    busy: Mutex<()>,
    /// When helpers may be used again, and how much of the recent passes' work the caller
    /// did itself (see `PREEMPTED`).
    health: Mutex<Health>,
}

struct Health {
    backoff_until: Option<Instant>,
    /// Moving average of the caller's share of the units of a pass (0.5 = even split with
    /// one helper; near 1 = the helpers hardly get a core).
    caller_share: f32,
}

struct Shared {
    /// Current job's epoch (high 32 bits) and next unclaimed unit (low 32 bits), in one
    /// word so that a helper still holding an old epoch can never claim a new job's unit.
    claim: AtomicU64,
    /// Units of the current job finished.
    done: AtomicU32,
    current: Mutex<Current>,
    /// Helpers asleep, and the condition variable they sleep on (with `current`'s mutex).
    sleepers: AtomicUsize,
    wake: Condvar,
    stop: AtomicBool,
    /// A unit panicked on a helper (a bug); the caller re-raises it.
    failed: AtomicBool,
}

#[derive(Default)]
struct Current {
    epoch: u32,
    job: Option<(Job, u32)>,
    work: Option<Arc<dyn Work>>,
}

impl Pool {
    /// Starts `helpers` threads (none if 0).
    pub fn new(helpers: usize) -> Pool {
        let shared = Arc::new(Shared {
            claim: AtomicU64::new(0),
            done: AtomicU32::new(0),
            current: Mutex::new(Current::default()),
            sleepers: AtomicUsize::new(0),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            failed: AtomicBool::new(false),
        });
        let helpers = (0..helpers)
            .filter_map(|i| {
                let shared = Arc::clone(&shared);
                // A helper that cannot be started only costs parallelism.
                std::thread::Builder::new()
                    .name(format!("minilm-helper-{i}"))
                    .spawn(move || helper(&shared))
                    .ok()
            })
            .collect();
        Pool {
            shared,
            helpers,
            busy: Mutex::new(()),
            health: Mutex::new(Health {
                backoff_until: None,
                caller_share: 0.5,
            }),
        }
    }

    pub fn helpers(&self) -> usize {
        self.helpers.len()
    }

    /// Reserves the helpers until the returned crew is dropped, or returns `None` if
    /// another pass holds them (or there are none).
    pub fn crew(&self) -> Option<Crew<'_>> {
        if self.helpers.is_empty() {
            return None;
        }
        let guard = self.busy.try_lock().ok()?;
        {
            let mut health = lock(&self.health);
            if let Some(until) = health.backoff_until {
                if Instant::now() < until {
                    return None;
                }
                *health = Health {
                    backoff_until: None,
                    caller_share: 0.5,
                };
            }
        }
        // Wake sleeping helpers now: the pass's first job comes after the embeddings.
        {
            let _current = lock(&self.shared.current);
            if self.shared.sleepers.load(Ordering::Relaxed) > 0 {
                self.shared.wake.notify_all();
            }
        }
        Some(Crew {
            shared: &self.shared,
            health: &self.health,
            left_out: Cell::new(false),
            by_caller: Cell::new(0),
            total: Cell::new(0),
            started: Instant::now(),
            waited: Cell::new(Duration::ZERO),
            _busy: guard,
        })
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        {
            let _current = lock(&self.shared.current);
            self.shared.wake.notify_all();
        }
        for h in self.helpers.drain(..) {
            let _ = h.join();
        }
    }
}

/// The helpers, lent to one pass.
pub(crate) struct Crew<'p> {
    shared: &'p Shared,
    health: &'p Mutex<Health>,
    /// Helpers were found preempted during this pass: the remaining jobs run alone.
    left_out: Cell<bool>,
    /// Units of this pass's jobs run by the caller, and in all.
    by_caller: Cell<usize>,
    total: Cell<usize>,
    /// When the pass started, and how long the caller has waited for helpers in it.
    started: Instant,
    waited: Cell<Duration>,
    _busy: MutexGuard<'p, ()>,
}

impl Crew<'_> {
    /// Lends the helpers to `work` (until the next call or the crew's end).
    pub fn begin(&self, work: Arc<dyn Work>) {
        lock(&self.shared.current).work = Some(work);
    }

    /// Runs units `0..units` of `job` on this thread and any helper that joins; returns when
    /// all are done.
    pub fn run(&self, job: Job, units: usize, mut unit: impl FnMut(usize)) {
        if self.left_out.get() {
            return (0..units).for_each(unit);
        }
        let s = self.shared;
        let started = Instant::now();
        let units = u32::try_from(units).unwrap_or(u32::MAX);
        let epoch = {
            let mut current = lock(&s.current);
            current.epoch = current.epoch.wrapping_add(1);
            current.job = Some((job, units));
            // `done` is reset before the new epoch opens claims; every unit of the previous
            // job has been counted (we waited for it), so no late increment can follow.
            s.done.store(0, Ordering::Relaxed);
            s.claim
                .store(u64::from(current.epoch) << 32, Ordering::Release);
            if s.sleepers.load(Ordering::Relaxed) > 0 {
                s.wake.notify_all();
            }
            current.epoch
        };
        let mut by_caller = 0;
        while let Some(u) = claim(s, epoch, units) {
            unit(u as usize);
            s.done.fetch_add(1, Ordering::Release);
            by_caller += 1;
        }
        self.by_caller.set(self.by_caller.get() + by_caller);
        self.total.set(self.total.get() + units as usize);
        // Wait for the units helpers are still computing (short: at most one unit each).
        let mine = started.elapsed();
        let mut spins = 0u32;
        while s.done.load(Ordering::Acquire) < units {
            spins += 1;
            pause(spins);
        }
        assert!(
            !s.failed.load(Ordering::Acquire),
            "a helper thread panicked during the forward pass"
        );
        let waited = started.elapsed() - mine;
        self.waited.set(self.waited.get() + waited);
        if waited > PREEMPTED.max(mine) {
            self.left_out.set(true);
            self.back_off();
        }
    }

    fn back_off(&self) {
        lock(self.health).backoff_until = Some(Instant::now() + BACKOFF);
    }
}

impl Drop for Crew<'_> {
    fn drop(&mut self) {
        {
            let mut current = lock(&self.shared.current);
            current.job = None;
            current.work = None;
        }
        // Helpers that hardly get to run (the cores are busy with other work) only compete
        // with the caller for CPU time: leave them out for a while too.
        // So do helpers that keep the caller waiting for a sizeable part of the pass, even
        // if each wait is short.
        let (by_caller, total) = (self.by_caller.get(), self.total.get());
        if total >= 16 {
            let mut health = lock(self.health);
            health.caller_share = 0.5 * health.caller_share + 0.5 * by_caller as f32 / total as f32;
            if health.caller_share > 0.9 || self.waited.get() > self.started.elapsed() / 5 {
                health.backoff_until = Some(Instant::now() + BACKOFF);
            }
        }
    }
}

/// Claims the next unit of job `epoch`, if any is left.
fn claim(s: &Shared, epoch: u32, units: u32) -> Option<u32> {
    let mut c = s.claim.load(Ordering::Acquire);
    loop {
        let unit = c as u32;
        if (c >> 32) as u32 != epoch || unit >= units {
            return None;
        }
        match s
            .claim
            .compare_exchange_weak(c, c + 1, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => return Some(unit),
            Err(now) => c = now,
        }
    }
}

fn helper(s: &Shared) {
    let mut scratch = Scratch::default();
    let mut seen = 0u32;
    loop {
        // Wait for a job newer than `seen`: spin, then sleep.
        let started = Instant::now();
        let mut polls = 0u32;
        while (s.claim.load(Ordering::Acquire) >> 32) as u32 == seen
            && !s.stop.load(Ordering::Relaxed)
        {
            polls += 1;
            if !polls.is_multiple_of(256) || started.elapsed() < SPIN {
                pause(polls);
                continue;
            }
            let mut current = lock(&s.current);
            s.sleepers.fetch_add(1, Ordering::Relaxed);
            while current.epoch == seen && !s.stop.load(Ordering::Relaxed) {
                current = s.wake.wait(current).unwrap_or_else(|e| e.into_inner());
            }
            s.sleepers.fetch_sub(1, Ordering::Relaxed);
            break;
        }
        if s.stop.load(Ordering::Acquire) {
            return;
        }
        let (epoch, job, work) = {
            let current = lock(&s.current);
            (current.epoch, current.job, current.work.clone())
        };
        seen = epoch;
        let (Some((job, units)), Some(work)) = (job, work) else {
            continue;
        };
        while let Some(u) = claim(s, epoch, units) {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                work.run_unit(job, u as usize, &mut scratch)
            }));
            if run.is_err() {
                s.failed.store(true, Ordering::Release);
            }
            s.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// One step of a busy wait: a CPU pause, and every 1024th step (~20 us) a yield, so that a thread
/// waiting on this core for another of ours (or any other runnable thread) gets it; on an
/// idle core the yield returns at once.
fn pause(step: u32) {
    if step.is_multiple_of(1024) {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Poisoning would mean a panic in a unit; the state itself stays consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts how often each unit ran.
    struct Counter(Vec<AtomicU32>);

    impl Work for Counter {
        fn run_unit(&self, _job: Job, unit: usize, _scratch: &mut Scratch) {
            self.0[unit].fetch_add(1, Ordering::Relaxed);
        }
    }

    #[test]
    fn every_unit_runs_exactly_once() {
        for helpers in 0..3 {
            let pool = Pool::new(helpers);
            for round in 0..200 {
                let units = round % 37;
                let work = Arc::new(Counter((0..units).map(|_| AtomicU32::new(0)).collect()));
                let mut scratch = Scratch::default();
                match pool.crew() {
                    Some(crew) => {
                        crew.begin(work.clone());
                        crew.run(Job::Groups, units, |u| {
                            work.run_unit(Job::Groups, u, &mut scratch)
                        });
                    }
                    None => (0..units).for_each(|u| work.run_unit(Job::Groups, u, &mut scratch)),
                }
                assert!(
                    work.0.iter().all(|c| c.load(Ordering::Relaxed) == 1),
                    "{helpers} helpers, round {round}"
                );
            }
        }
    }

    #[test]
    fn one_pass_at_a_time() {
        let pool = Pool::new(1);
        let first = pool.crew();
        assert!(first.is_some());
        assert!(pool.crew().is_none());
        drop(first);
        assert!(pool.crew().is_some());
    }
}
