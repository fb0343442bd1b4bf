//! A walk shared with a helper thread: one segment's walk cut into ranges, handed over
//! without allocation. The states and the safety argument of the hand-off are here.

use std::sync::Mutex;

/// Work of a search's text leg that another thread may do: parts of a long walk
/// ([`term_at_a_time`]), taken by the search's other leg once its own work is done
/// ([`WalkShare::help_while_running`]). One per search.
#[derive(Default)]
pub(crate) struct WalkShare {
    /// [`IDLE`], [`POSTED`] (a job waits in `job`), [`RUNNING`] (another thread took
    /// it) or [`DONE`].
    pub(crate) state: std::sync::atomic::AtomicU8,
    pub(crate) job: Mutex<Option<SharedJob>>,
    /// Whether the text leg has started, and whether it has finished.
    pub(crate) leg: std::sync::atomic::AtomicU8,
    /// Whether the text leg's walk will offer parts (known once it has its plan).
    pub(crate) coming: std::sync::atomic::AtomicBool,
}

pub(crate) const IDLE: u8 = 0;

pub(crate) const POSTED: u8 = 1;

pub(crate) const RUNNING: u8 = 2;

pub(crate) const DONE: u8 = 3;

/// A posted job: a closure on the stack of the thread that posted it, which does not
/// return (or unwind) before the job is done or taken back ([`WalkShare::share`]).
pub(crate) struct SharedJob(*const (dyn Fn() + Sync + 'static));

// SAFETY: the closure is `Sync`, so calling it from another thread through a shared
// reference is sound; the pointer is only dereferenced while the posting frame waits.
unsafe impl Send for SharedJob {}

impl WalkShare {
    /// Marks the text leg started; it is marked finished when the guard drops (also on
    /// a panic, so that no helper waits for it forever).
    pub(crate) fn leg(&self) -> impl Drop + '_ {
        use std::sync::atomic::Ordering::Release;
        struct Finished<'s>(&'s WalkShare);
        impl Drop for Finished<'_> {
            fn drop(&mut self) {
                self.0.leg.store(DONE, Release);
            }
        }
        self.leg.store(RUNNING, Release);
        Finished(self)
    }

    /// Does the posted job, if there is one; whether it did.
    pub(crate) fn help(&self) -> bool {
        use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
        if self
            .state
            .compare_exchange(POSTED, RUNNING, AcqRel, Acquire)
            .is_err()
        {
            return false;
        }
        let job = self
            .job
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .expect("a posted job is in the slot");
        // SAFETY: its poster waits until the state is `DONE` before the closure goes out
        // of scope (`share`'s guard, also when unwinding). The closure catches its own
        // panics.
        unsafe { (*job.0)() };
        self.state.store(DONE, Release);
        true
    }

    /// Whether the text leg has said that its walk will offer parts to walk.
    pub(crate) fn coming(&self) -> bool {
        self.coming.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Runs the jobs the text leg posts while it runs on another thread; returns at
    /// once when it has not started (it may be this thread's to run next) or is done.
    pub(crate) fn help_while_running(&self) {
        while self.leg.load(std::sync::atomic::Ordering::Acquire) == RUNNING {
            if !self.help() {
                std::thread::yield_now();
            }
        }
    }

    /// Posts `job`, runs `own`, then runs `job` too unless another thread took it
    /// (waiting for that thread to finish it).
    pub(crate) fn share<R>(&self, job: &(dyn Fn() + Sync), own: impl FnOnce() -> R) -> R {
        use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};
        /// Takes the job back, or waits until its taker is done with it: the closure
        /// must outlive every use (also when `own` unwinds).
        struct Settle<'s> {
            share: &'s WalkShare,
            job: &'s (dyn Fn() + Sync),
        }
        impl Drop for Settle<'_> {
            fn drop(&mut self) {
                let share = self.share;
                if share
                    .state
                    .compare_exchange(POSTED, IDLE, AcqRel, Acquire)
                    .is_ok()
                {
                    share.job.lock().unwrap_or_else(|p| p.into_inner()).take();
                    if !std::thread::panicking() {
                        (self.job)();
                    }
                } else {
                    while share.state.load(Acquire) != DONE {
                        std::thread::yield_now();
                    }
                }
                share.state.store(IDLE, Release);
            }
        }
        // SAFETY: only the lifetime is erased; `Settle` keeps the closure alive until
        // no other thread can reach it.
        let erased: *const (dyn Fn() + Sync + 'static) =
            unsafe { std::mem::transmute::<*const (dyn Fn() + Sync + '_), _>(job) };
        *self.job.lock().unwrap_or_else(|p| p.into_inner()) = Some(SharedJob(erased));
        self.state.store(POSTED, Release);
        let settle = Settle { share: self, job };
        let own = own();
        drop(settle);
        own
    }
}
