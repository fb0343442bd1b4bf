//! Parts of a long walk offered to the other leg's thread: the text leg posts a part
//! through a [`Handoff`], the vector leg, once done with its own work, runs the parts
//! offered while the text leg runs ([`WalkShare::help_while_running`]).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use super::handoff::{Handoff, Ran};

/// The text leg has not started.
const LEG_WAITING: u8 = 0;
/// The text leg runs: it may post parts of its walk.
const LEG_RUNNING: u8 = 1;
/// The text leg has finished (or unwound): no part will come.
const LEG_FINISHED: u8 = 2;

/// Work of a search's text leg that another thread may do: parts of a long walk, taken by
/// the search's other leg once its own work is done. One per search.
pub(crate) struct WalkShare {
    handoff: Handoff,
    /// Whether the text leg is waiting, running or finished.
    leg: AtomicU8,
    /// Whether the text leg's walk will offer parts (known once it has its plan).
    coming: AtomicBool,
}

impl Default for WalkShare {
    fn default() -> WalkShare {
        WalkShare {
            handoff: Handoff::new(),
            leg: AtomicU8::new(LEG_WAITING),
            coming: AtomicBool::new(false),
        }
    }
}

impl WalkShare {
    /// Marks the text leg started; it is marked finished when the guard drops (also on
    /// a panic, so that no helper waits for it forever).
    pub(crate) fn leg(&self) -> impl Drop + '_ {
        struct Finished<'s>(&'s WalkShare);
        impl Drop for Finished<'_> {
            fn drop(&mut self) {
                self.0.leg.store(LEG_FINISHED, Ordering::Release);
            }
        }
        self.leg.store(LEG_RUNNING, Ordering::Release);
        Finished(self)
    }

    /// Says that the text leg's walk will offer parts.
    pub(crate) fn announce(&self) {
        self.coming.store(true, Ordering::Release);
    }

    /// Whether the text leg has said that its walk will offer parts to walk.
    pub(crate) fn coming(&self) -> bool {
        self.coming.load(Ordering::Acquire)
    }

    /// Does the posted part, if there is one; whether it did.
    pub(crate) fn help(&self) -> bool {
        self.handoff.run_posted()
    }

    /// Runs the parts the text leg posts while it runs on another thread; returns at
    /// once when it has not started (it may be this thread's to run next) or is done.
    pub(crate) fn help_while_running(&self) {
        while self.leg.load(Ordering::Acquire) == LEG_RUNNING {
            if !self.help() {
                std::thread::yield_now();
            }
        }
    }

    /// Posts `job`, runs `own`, then runs `job` too unless another thread took it
    /// (waiting for that thread to finish it). When `own` unwinds, `job` is taken back
    /// without running, or waited for.
    pub(crate) fn share<R>(&self, job: &(dyn Fn() + Sync), own: impl FnOnce() -> R) -> R {
        if !self.handoff.claim() {
            // Never so (the text leg posts one part at a time and settles it before
            // the next): both run here.
            let own = own();
            job();
            return own;
        }
        let mut call = || job();
        // SAFETY: claimed above (the text leg is the only poster); the posting is
        // finished below, or dropped while `own` unwinds.
        let posting = unsafe { self.handoff.post(&mut call, None) };
        let own = own();
        let _: Ran = posting.finish(|_| std::thread::yield_now(), || {});
        own
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Each part runs once, on the helper or on the leg, and the helper stops when the
    /// leg finishes.
    #[test]
    fn every_part_runs_once_and_the_helper_stops_with_the_leg() {
        for round in 0..200 {
            let share = WalkShare::default();
            let runs = AtomicUsize::new(0);
            std::thread::scope(|scope| {
                let leg = share.leg();
                let helper = scope.spawn(|| share.help_while_running());
                for _ in 0..(round % 5 + 1) {
                    let job = || {
                        runs.fetch_add(1, Ordering::Relaxed);
                    };
                    share.share(&job, || runs.fetch_add(1, Ordering::Relaxed));
                }
                drop(leg);
                helper.join().unwrap();
            });
            assert_eq!(runs.load(Ordering::Relaxed), 2 * (round % 5 + 1));
        }
    }
}
