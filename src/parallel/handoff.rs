//! The one hand-off: a closure on its poster's stack, run once, by another thread that
//! starts it or by its poster that takes it back. The states and the safety argument
//! are in the [module docs](super).

use std::marker::PhantomData;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::thread::Thread;

/// No closure posted: a poster may claim the hand-off.
pub(crate) const IDLE: u8 = 0;
/// A poster owns the hand-off (posting a closure, or taking it back).
pub(crate) const CLAIMED: u8 = 1;
/// A closure waits for another thread.
pub(crate) const POSTED: u8 = 2;
/// Another thread runs the closure.
pub(crate) const RUNNING: u8 = 3;
/// The other thread has finished the closure; its poster has not seen it yet.
pub(crate) const DONE: u8 = 4;

/// A posted closure, its lifetime erased (see the module docs).
type Job = *mut (dyn FnMut() + Send + 'static);

/// What a poster leaves in the slot: its closure and the thread to wake when it is done.
struct Posted {
    job: Job,
    waker: Option<Thread>,
}

// SAFETY: the closure is `Send`; the pointer is used by one thread at a time, as the
// states hand it over, and only while its poster waits.
unsafe impl Send for Posted {}

/// A slot through which one thread hands a closure to another.
pub(crate) struct Handoff {
    state: AtomicU8,
    slot: Mutex<Option<Posted>>,
}

impl Default for Handoff {
    fn default() -> Handoff {
        Handoff::new()
    }
}

impl Handoff {
    pub(crate) const fn new() -> Handoff {
        Handoff {
            state: AtomicU8::new(IDLE),
            slot: Mutex::new(None),
        }
    }

    /// The current state (one of the constants above).
    pub(crate) fn state(&self) -> u8 {
        self.state.load(Ordering::Acquire)
    }

    /// `IDLE` → `CLAIMED`: whether this caller now owns the hand-off, to post one closure.
    pub(crate) fn claim(&self) -> bool {
        self.state
            .compare_exchange(IDLE, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// `CLAIMED` → `POSTED`: offers `job` to another thread ([`Handoff::run_posted`]),
    /// which wakes `waker` when it is done. The returned [`Posting`] settles it: when
    /// finished, or dropped (as when its poster unwinds), it takes the job back or waits
    /// until the thread that started it has finished it.
    ///
    /// # Safety
    ///
    /// The caller has claimed the hand-off, and must not leak the [`Posting`] (with
    /// `mem::forget`): its settling is what keeps `job` alive until no other thread can
    /// reach it.
    pub(crate) unsafe fn post<'h, 'j>(
        &'h self,
        job: &'j mut (dyn FnMut() + Send + 'j),
        waker: Option<Thread>,
    ) -> Posting<'h, 'j> {
        debug_assert_eq!(self.state(), CLAIMED, "post after claim");
        // SAFETY: only the lifetime is erased; `Posting` keeps the borrow of `job` until
        // no other thread can reach the pointer.
        let job: Job = unsafe { std::mem::transmute::<*mut (dyn FnMut() + Send + 'j), Job>(job) };
        *self.lock() = Some(Posted { job, waker });
        self.state.store(POSTED, Ordering::Release);
        Posting {
            handoff: self,
            job,
            settled: false,
            _job: PhantomData,
        }
    }

    /// `POSTED` → `RUNNING` → `DONE`: runs the posted closure on this thread and wakes its
    /// poster; whether there was one to run.
    pub(crate) fn run_posted(&self) -> bool {
        if self
            .state
            .compare_exchange(POSTED, RUNNING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return false;
        }
        let posted = self.lock().take().expect("a posted closure is in the slot");
        // SAFETY: its poster does not let the closure go out of scope before it sees
        // `DONE` (`Posting::settle`), and no other thread holds the pointer while the
        // state is `RUNNING`. Posted closures catch their own panics.
        unsafe { (*posted.job)() };
        self.state.store(DONE, Ordering::Release);
        if let Some(waker) = posted.waker {
            waker.unpark();
        }
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Posted>> {
        self.slot
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }
}

/// A posted closure, until its poster has settled it.
pub(crate) struct Posting<'h, 'j> {
    handoff: &'h Handoff,
    job: Job,
    settled: bool,
    _job: PhantomData<&'j mut ()>,
}

/// How a posted closure was run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ran {
    /// By the thread that started it.
    There,
    /// By its poster, which took it back before any other thread started it.
    Here,
}

impl Posting<'_, '_> {
    /// Takes the closure back and runs it here when no other thread has started it
    /// (calling `taking_back` first), or waits until the thread that started it has
    /// finished it (calling `wait` until then: it polls, yields or parks). Either way the
    /// closure has run once, and the hand-off is idle again.
    pub(crate) fn finish(mut self, wait: impl FnMut(&Handoff), taking_back: impl FnOnce()) -> Ran {
        let ran = self.settle(wait, true, taking_back);
        self.settled = true;
        ran
    }

    fn settle(
        &self,
        mut wait: impl FnMut(&Handoff),
        run_here: bool,
        taking_back: impl FnOnce(),
    ) -> Ran {
        let handoff = self.handoff;
        if handoff
            .state
            .compare_exchange(POSTED, CLAIMED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            handoff.lock().take();
            handoff.state.store(IDLE, Ordering::Release);
            if run_here {
                taking_back();
                // SAFETY: taken back: no other thread can reach the pointer, and the
                // borrow it came from lives as long as `self`.
                unsafe { (*self.job)() };
            }
            Ran::Here
        } else {
            while handoff.state() != DONE {
                wait(handoff);
            }
            handoff.state.store(IDLE, Ordering::Release);
            Ran::There
        }
    }
}

impl Drop for Posting<'_, '_> {
    /// An unfinished posting (its poster unwinds): the closure is taken back without
    /// running, or waited for.
    fn drop(&mut self) {
        if !self.settled {
            self.settle(|_| std::thread::yield_now(), false, || {});
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Whoever runs it, a posted closure runs once and the hand-off is idle after; both
    /// ways happen.
    #[test]
    fn a_posted_closure_runs_once_here_or_there() {
        let handoff = Handoff::new();
        let mut ways = [0usize; 2];
        for round in 0..2_000u64 {
            let runs = AtomicUsize::new(0);
            std::thread::scope(|scope| {
                assert!(handoff.claim());
                let mut job = || {
                    runs.fetch_add(1, Ordering::Relaxed);
                };
                // SAFETY: the posting is finished below.
                let posting = unsafe { handoff.post(&mut job, None) };
                let helper = scope.spawn(|| {
                    if round % 2 == 0 {
                        std::thread::yield_now();
                    }
                    handoff.run_posted()
                });
                if round % 3 == 0 {
                    std::thread::yield_now();
                }
                let ran = posting.finish(|_| std::thread::yield_now(), || {});
                let helped = helper.join().unwrap();
                assert_eq!(helped, ran == Ran::There);
                ways[usize::from(helped)] += 1;
            });
            assert_eq!(runs.load(Ordering::Relaxed), 1);
            assert_eq!(handoff.state(), IDLE);
        }
        assert!(ways[0] > 0 && ways[1] > 0, "{ways:?}");
    }

    /// A posting dropped unfinished (its poster unwinding) is taken back without running,
    /// and the hand-off can be claimed again.
    #[test]
    fn a_dropped_posting_is_taken_back() {
        let handoff = Handoff::new();
        assert!(handoff.claim());
        assert!(!handoff.claim(), "claimed once");
        let mut job = || panic!("never runs");
        // SAFETY: dropped below.
        drop(unsafe { handoff.post(&mut job, None) });
        assert_eq!(handoff.state(), IDLE);
        assert!(!handoff.run_posted());
        assert!(handoff.claim());
    }
}
