//! Crash, pause and failure points: named steps where a test makes the process die as
//! `kill -9` would, stop as `SIGSTOP` would, or meet an I/O error as a full disk would,
//! to check that every step of a commit, a publish or a maintenance command leaves an
//! index that opens whole, and that readers beside a stopped writer still read.
//!
//! Compiled in only with the `crash-points` feature (the test suites enable it); without
//! it, [`point`] and [`fail`] are empty inline functions. With it:
//!
//! - `RUCHE_CRASH_AT=STEP` (or `STEP#N`, the N-th time the step is reached, from 1)
//!   aborts the process there;
//! - `RUCHE_PAUSE_AT=STEP` (or `STEP#N`) stops the process there with `SIGSTOP` (a test
//!   sends `SIGCONT`);
//! - `RUCHE_FAIL_AT=STEP` makes [`fail`] return "No space left on device" there.

#[cfg(feature = "crash-points")]
mod enabled {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A step named by an environment variable, and how many times it was reached.
    struct Target {
        step: String,
        nth: u64,
        seen: AtomicU64,
    }

    impl Target {
        fn from_env(var: &str) -> Option<Target> {
            let value = std::env::var(var).ok()?;
            let (step, nth) = match value.split_once('#') {
                Some((step, n)) => (step.to_string(), n.parse().unwrap_or(1)),
                None => (value, 1),
            };
            Some(Target {
                step,
                nth,
                seen: AtomicU64::new(0),
            })
        }

        /// Whether `step` is the target, reached for the N-th time now.
        fn hit(&self, step: &str) -> bool {
            self.step == step && self.seen.fetch_add(1, Ordering::SeqCst) + 1 == self.nth
        }
    }

    fn target(cell: &'static OnceLock<Option<Target>>, var: &str) -> Option<&'static Target> {
        cell.get_or_init(|| Target::from_env(var)).as_ref()
    }

    pub(crate) fn point(step: &'static str) {
        static CRASH: OnceLock<Option<Target>> = OnceLock::new();
        static PAUSE: OnceLock<Option<Target>> = OnceLock::new();
        if target(&CRASH, "RUCHE_CRASH_AT").is_some_and(|t| t.hit(step)) {
            eprintln!("crash point {step}: aborting");
            std::process::abort();
        }
        if target(&PAUSE, "RUCHE_PAUSE_AT").is_some_and(|t| t.hit(step)) {
            eprintln!("pause point {step}: stopping");
            pause();
        }
    }

    #[cfg(target_os = "linux")]
    fn pause() {
        // SAFETY: raise only sends a signal to this process.
        unsafe {
            libc::raise(libc::SIGSTOP);
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn pause() {}

    pub(crate) fn fail(step: &'static str) -> std::io::Result<()> {
        static FAIL: OnceLock<Option<Target>> = OnceLock::new();
        if target(&FAIL, "RUCHE_FAIL_AT").is_some_and(|t| t.step == step) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                format!("No space left on device (failure point {step})"),
            ));
        }
        Ok(())
    }
}

/// Dies, or stops, here when `RUCHE_CRASH_AT` or `RUCHE_PAUSE_AT` names `step` (feature
/// `crash-points`).
#[cfg(feature = "crash-points")]
pub(crate) fn point(step: &'static str) {
    enabled::point(step);
}

/// Fails here as a full disk would when `RUCHE_FAIL_AT` names `step` (feature
/// `crash-points`).
#[cfg(feature = "crash-points")]
pub(crate) fn fail(step: &'static str) -> std::io::Result<()> {
    enabled::fail(step)
}

/// Does nothing: the `crash-points` feature is off.
#[cfg(not(feature = "crash-points"))]
#[inline(always)]
pub(crate) fn point(_step: &'static str) {}

/// Does nothing: the `crash-points` feature is off.
#[cfg(not(feature = "crash-points"))]
#[inline(always)]
pub(crate) fn fail(_step: &'static str) -> std::io::Result<()> {
    Ok(())
}
