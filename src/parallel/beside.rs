//! Two closures side by side: one on the calling thread, the other on a helper thread
//! that waits for work by polling a moment (yielding its CPU) before it sleeps.
//!
//! A search's two legs take a few hundred microseconds each. Handing both to a pool (the
//! caller injects a job, one worker wakes for it, a second wakes to steal the other half,
//! the caller wakes at the end) costs three thread wake-ups, each of which can take
//! tens to hundreds of microseconds (more on a virtual machine): when the second worker
//! wakes late, the legs run one after the other. Here the caller runs its leg at once; the helper, still polling
//! after the last search most of the time, starts the other at once too; and when the
//! helper has not started it by the time the caller is done with its own, the caller
//! takes it back and runs it itself, so a late wake-up never costs more than running
//! both legs on one thread.
//!
//! The helper runs a closure that borrows the caller's stack, through a
//! [`Handoff`](super::handoff::Handoff): see the [module docs](super) for why that is
//! sound.
//!
//! The helper only helps from another CPU than the caller's. When the scheduler sees
//! CPUs that share no cache (as on many virtual machines), Linux wakes a thread on the
//! CPU it last ran on or on its waker's, never on an idle third one, so a helper placed
//! on its caller's CPU stays there, waiting for the caller's time slice, until the
//! periodic balancing moves it, and the first searches of a process run their legs one
//! after the other. A caller that takes its closure back therefore leaves its CPU's number, and a helper that
//! finds itself on that CPU moves off it (`cpu::move_off`).

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, Ordering};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use super::handoff::{DONE, Handoff, POSTED};

/// How long the helper polls for the next closure before it sleeps, and a caller for
/// its closure's end before it sleeps. A batch of searches comes back within that
/// time; an occasional search costs the helper this much polling afterwards.
///
/// Between polls the thread yields its CPU: when the scheduler has put the caller and
/// the helper on one CPU (the other one busy with another process), a poll that spun
/// would hold the CPU the other thread needs to finish, for a whole time slice, and the
/// two threads would take turns on one CPU for a whole run of searches.
const SPIN: Duration = Duration::from_micros(200);

/// How many closures the helper ran and how many their callers took back (for the
/// tests: both paths must run).
#[cfg(test)]
static PATHS: [std::sync::atomic::AtomicUsize; 2] = [
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
];

struct Helper {
    handoff: Handoff,
    /// The helper's thread, set once it is spawned.
    thread: OnceLock<Thread>,
    /// The CPU of the last caller that ran its closure itself because the helper had not
    /// started it (-1: none), for the helper to move off if it is there too.
    crowded: AtomicI32,
}

/// The helper, started on first use; `None` if its thread could not be started.
///
/// The new thread starts without its spawner waiting for it: a spawner that blocked
/// until it had started (a channel's handshake) was woken on the new thread's CPU. It
/// moves off its spawner's CPU if it starts there.
fn helper() -> Option<&'static Helper> {
    static HELPER: OnceLock<Option<&'static Helper>> = OnceLock::new();
    *HELPER.get_or_init(|| {
        let helper: &'static Helper = Box::leak(Box::new(Helper {
            handoff: Handoff::new(),
            thread: OnceLock::new(),
            crowded: AtomicI32::new(cpu::current()),
        }));
        let spawned = thread::Builder::new()
            .name("ruche-beside".to_string())
            .spawn(move || helper.serve())
            .ok()?;
        let _ = helper.thread.set(spawned.thread().clone());
        Some(helper)
    })
}

/// Starts the helper ahead of the first [`join`], so that it has found its CPU by then.
pub(crate) fn start() {
    let _ = helper();
}

impl Helper {
    /// Runs every closure posted, forever.
    fn serve(&self) {
        loop {
            if !self.wait_for(POSTED) {
                thread::park();
                continue;
            }
            // Not run: taken back by its caller.
            if self.handoff.run_posted() {
                #[cfg(test)]
                PATHS[0].fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Polls for `state` for up to [`SPIN`], yielding between polls; whether it was
    /// seen.
    fn wait_for(&self, state: u8) -> bool {
        let started = Instant::now();
        loop {
            if state == POSTED {
                // Before it looks for a closure: one started on its caller's CPU runs
                // after the caller's own.
                self.leave_crowded_cpu();
            }
            if self.handoff.state() == state {
                return true;
            }
            if started.elapsed() >= SPIN {
                return false;
            }
            thread::yield_now();
        }
    }

    /// Moves the helper off the CPU a caller left in `crowded` if it runs there.
    fn leave_crowded_cpu(&self) {
        if self.crowded.load(Ordering::Relaxed) < 0 {
            return;
        }
        let crowded = self.crowded.swap(-1, Ordering::Relaxed);
        if crowded >= 0 && crowded == cpu::current() {
            cpu::move_off(crowded);
        }
    }
}

/// Where the calling thread runs, and moving it elsewhere (Linux; elsewhere the helper
/// stays where the scheduler puts it).
mod cpu {
    /// The CPU the calling thread runs on, or -1 if unknown.
    #[cfg(target_os = "linux")]
    pub(super) fn current() -> i32 {
        // SAFETY: no arguments; returns -1 on error.
        unsafe { libc::sched_getcpu() }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn current() -> i32 {
        -1
    }

    /// Moves the calling thread off `cpu` to another CPU it may run on, then gives it
    /// back the CPUs it had (the scheduler leaves a thread where it is). Nothing happens
    /// when `cpu` is the only one it may run on, or when its CPUs cannot be read.
    #[cfg(target_os = "linux")]
    pub(super) fn move_off(cpu: i32) {
        let Ok(cpu) = usize::try_from(cpu) else {
            return;
        };
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: `cpu_set_t` is plain bits, valid zeroed; the calls take its size, and
        // pid 0 is the calling thread.
        unsafe {
            let mut allowed: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, size, &mut allowed) != 0
                || cpu >= 8 * size
                || !libc::CPU_ISSET(cpu, &allowed)
                || libc::CPU_COUNT(&allowed) < 2
            {
                return;
            }
            let mut elsewhere = allowed;
            libc::CPU_CLR(cpu, &mut elsewhere);
            if libc::sched_setaffinity(0, size, &elsewhere) == 0 {
                libc::sched_setaffinity(0, size, &allowed);
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn move_off(_cpu: i32) {}
}

/// Runs `a` on the calling thread and `b` beside it on the helper thread when the helper
/// is free (otherwise after `a`, on the calling thread), and returns both results. A
/// panic in either is resumed on the caller once neither runs any more (`b` does not
/// run at all when `a` panics and `b` was not handed to the helper).
pub(crate) fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA,
    B: FnOnce() -> RB + Send,
    RB: Send,
{
    // The helper, if it is free: claimed by this caller.
    let Some(helper) = helper().filter(|helper| helper.handoff.claim()) else {
        let ra = a();
        return (ra, b());
    };
    let mut b = Some(b);
    let mut out: Option<thread::Result<RB>> = None;
    let mut job = || {
        if let Some(b) = b.take() {
            out = Some(catch_unwind(AssertUnwindSafe(b)));
        }
    };
    // SAFETY: claimed above; the posting is finished below (`a` cannot unwind past it).
    let posting = unsafe { helper.handoff.post(&mut job, Some(thread::current())) };
    if let Some(thread) = helper.thread.get() {
        thread.unpark();
    }

    let ra = catch_unwind(AssertUnwindSafe(a));

    let ran = posting.finish(
        |_| {
            if !helper.wait_for(DONE) {
                thread::park();
            }
        },
        // The helper has not started it: it runs here, and the helper moves off this
        // CPU if it is waiting on it.
        || helper.crowded.store(cpu::current(), Ordering::Relaxed),
    );
    #[cfg(test)]
    if ran == super::handoff::Ran::Here {
        PATHS[1].fetch_add(1, Ordering::Relaxed);
    }
    let _ = ran;
    let rb = out.expect("the closure ran");
    match (ra, rb) {
        (Ok(ra), Ok(rb)) => (ra, rb),
        (Err(panic), _) | (_, Err(panic)) => resume_unwind(panic),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn busy(micros: u64) -> u64 {
        let started = Instant::now();
        let mut spins = 0;
        while started.elapsed() < Duration::from_micros(micros) {
            spins += 1;
            std::hint::spin_loop();
        }
        spins
    }

    /// Both closures run once, with what they borrow, and return their results, whoever
    /// runs the second: the helper, or the caller that took it back.
    #[test]
    fn both_run_once_and_return_what_they_borrow() {
        let data: Vec<u64> = (0..1_000).collect();
        let runs = AtomicUsize::new(0);
        for round in 0..2_000u64 {
            // Sometimes the caller's closure is long (the helper starts the other),
            // sometimes empty (the caller may take the other back), with gaps that
            // let the helper fall asleep.
            let (a_micros, gap) = match round % 4 {
                0 => (0, 0),
                1 => (50, 0),
                2 => (0, 300),
                _ => (20, 30),
            };
            busy(gap);
            let (x, y) = join(
                || {
                    busy(a_micros);
                    runs.fetch_add(1, Ordering::Relaxed);
                    data[..500].iter().sum::<u64>() + round
                },
                || {
                    runs.fetch_add(1, Ordering::Relaxed);
                    data[500..].iter().sum::<u64>() * 2
                },
            );
            assert_eq!(x, 124_750 + round);
            assert_eq!(y, 2 * 374_750);
        }
        assert_eq!(runs.load(Ordering::Relaxed), 4_000);
        let [helped, taken_back] = PATHS.each_ref().map(|n| n.load(Ordering::Relaxed));
        assert!(helped > 0 && taken_back > 0, "{helped} {taken_back}");
    }

    /// Callers on many threads at once: one has the helper, the others run both
    /// closures themselves; every result is its own caller's.
    #[test]
    fn concurrent_callers_each_get_their_own_results() {
        thread::scope(|scope| {
            for t in 0..6u64 {
                scope.spawn(move || {
                    for round in 0..500u64 {
                        let mine = t * 1_000_000 + round;
                        let (x, y) = join(
                            || {
                                busy(round % 7);
                                mine
                            },
                            || {
                                busy(round % 5);
                                mine + 1
                            },
                        );
                        assert_eq!((x, y), (mine, mine + 1));
                    }
                });
            }
        });
    }

    fn fail(which: &str) {
        panic!("{which} fails")
    }

    /// A panic in either closure reaches the caller, never while the other still runs
    /// (the caller's stack is what it borrows), and the helper serves the next caller.
    /// (Other tests use the helper meanwhile: `b` may run beside or after `a`.)
    #[test]
    fn a_panic_in_either_reaches_the_caller_never_while_the_other_runs() {
        for _ in 0..50 {
            let a_finished = AtomicUsize::new(0);
            let in_b = catch_unwind(AssertUnwindSafe(|| {
                join(
                    || {
                        busy(100);
                        a_finished.fetch_add(1, Ordering::Relaxed);
                    },
                    || fail("b"),
                )
            }));
            assert!(in_b.is_err());
            assert_eq!(a_finished.load(Ordering::Relaxed), 1, "a ran to its end");
            let [b_started, b_finished] = [AtomicUsize::new(0), AtomicUsize::new(0)];
            let in_a = catch_unwind(AssertUnwindSafe(|| {
                join(
                    || fail("a"),
                    || {
                        b_started.fetch_add(1, Ordering::Relaxed);
                        busy(100);
                        b_finished.fetch_add(1, Ordering::Relaxed);
                    },
                )
            }));
            assert!(in_a.is_err());
            assert_eq!(
                b_started.load(Ordering::Relaxed),
                b_finished.load(Ordering::Relaxed),
                "b was not left running"
            );
        }
        assert_eq!(join(|| 1, || 2), (1, 2));
    }

    /// The CPUs a thread may run on.
    #[cfg(target_os = "linux")]
    fn allowed() -> libc::cpu_set_t {
        // SAFETY: as in `cpu::move_off`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            assert_eq!(libc::sched_getaffinity(0, size, &mut set), 0);
            set
        }
    }

    #[cfg(target_os = "linux")]
    fn same(a: &libc::cpu_set_t, b: &libc::cpu_set_t) -> bool {
        // SAFETY: reads plain bit sets, within their size.
        (0..8 * std::mem::size_of::<libc::cpu_set_t>())
            .all(|cpu| unsafe { libc::CPU_ISSET(cpu, a) == libc::CPU_ISSET(cpu, b) })
    }

    /// A thread moved off its CPU runs on another and may still run on every CPU it
    /// could; one that may only run on its own stays there, its CPUs unchanged.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_moved_off_its_cpu_runs_elsewhere_with_the_cpus_it_had() {
        std::thread::spawn(|| {
            let before = allowed();
            // SAFETY: reads a plain bit set.
            if unsafe { libc::CPU_COUNT(&before) } >= 2 {
                let mut moved = 0;
                for _ in 0..20 {
                    let here = cpu::current();
                    cpu::move_off(here);
                    moved += usize::from(cpu::current() != here);
                    assert!(same(&allowed(), &before), "its CPUs are given back");
                }
                // The scheduler may move it back between the two reads, rarely.
                assert!(moved >= 15, "moved off its CPU {moved} times in 20");
            }
            let here = cpu::current();
            let size = std::mem::size_of::<libc::cpu_set_t>();
            // SAFETY: as in `cpu::move_off`.
            unsafe {
                let mut only = std::mem::zeroed::<libc::cpu_set_t>();
                libc::CPU_SET(usize::try_from(here).unwrap(), &mut only);
                assert_eq!(libc::sched_setaffinity(0, size, &only), 0);
                cpu::move_off(here);
                assert_eq!(cpu::current(), here);
                assert!(same(&allowed(), &only));
            }
        })
        .join()
        .unwrap();
    }
}
