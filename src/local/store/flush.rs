//! A flush that cannot wait forever on a failed disk.
//!
//! sled 0.34 writes its log buffers on its own threads. When such a write fails (a full
//! disk), it records the error for the whole store but wakes nobody, so a thread that is
//! already waiting in `flush` for that buffer to become durable waits forever: a lost
//! wakeup (seen as `ruche index` hanging after `hit error while writing iobuf`). Any
//! later `flush` sees the recorded error, wakes every waiter and returns it. So while a
//! flush is outstanding, [`flush`] starts another one now and then: on a healthy disk it
//! waits like the first and changes nothing; on a failed one it ends the wait with the
//! error.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

/// How long a flush runs before a second one is started beside it, and again after each.
const NUDGE_EVERY: Duration = Duration::from_millis(200);

/// Flushes `db` (see the module docs).
pub(super) fn flush(db: &sled::Db) -> sled::Result<usize> {
    let db = db.clone();
    nudged(move || db.flush())
}

/// Runs `flush` here and, every [`NUDGE_EVERY`] until it returns, once more on a
/// detached thread. A detached run that waits as the first one does is woken as it is,
/// by a later run, so every run ends once the first does.
fn nudged<R>(flush: impl Fn() -> R + Clone + Send + 'static) -> R {
    let finished = Arc::new((Mutex::new(false), Condvar::new()));
    let watcher = {
        let finished = Arc::clone(&finished);
        let flush = flush.clone();
        std::thread::Builder::new()
            .name("ruche-flush".to_string())
            .spawn(move || {
                let (lock, wake) = &*finished;
                let mut done = lock.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    // Checked before each wait too: the flush may be over before this
                    // thread first takes the lock.
                    if *done {
                        return;
                    }
                    let (still, waited) = wake
                        .wait_timeout(done, NUDGE_EVERY)
                        .unwrap_or_else(PoisonError::into_inner);
                    done = still;
                    if *done || !waited.timed_out() {
                        continue;
                    }
                    let flush = flush.clone();
                    // Without a thread to spare, the next round tries again.
                    let _ = std::thread::Builder::new()
                        .name("ruche-flush".to_string())
                        .spawn(move || drop(flush()));
                }
            })
    };
    let result = flush();
    let (lock, wake) = &*finished;
    *lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
    wake.notify_all();
    if let Ok(watcher) = watcher {
        let _ = watcher.join();
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A store with sled's lost wakeup: the first flush waits until a later flush runs
    /// (which, in sled, finds the recorded error and wakes it).
    #[derive(Default)]
    struct LostWakeup {
        calls: Mutex<usize>,
        woken: Condvar,
    }

    impl LostWakeup {
        fn flush(&self) -> usize {
            let mut calls = self.calls.lock().unwrap();
            *calls += 1;
            if *calls == 1 {
                while *calls == 1 {
                    calls = self.woken.wait(calls).unwrap();
                }
            } else {
                self.woken.notify_all();
            }
            *calls
        }
    }

    /// The waiting flush returns: a second flush ran beside it and woke it. Without the
    /// nudge the test hangs until the channel times out, and fails.
    #[test]
    fn a_flush_that_lost_its_wakeup_returns() {
        let store = Arc::new(LostWakeup::default());
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn({
            let store = Arc::clone(&store);
            move || sender.send(nudged(move || store.flush())).unwrap()
        });
        let calls = receiver
            .recv_timeout(Duration::from_secs(30))
            .expect("the flush returned");
        assert!(calls >= 2, "{calls}");
    }

    /// What a flush returns is what the flush run here returned.
    #[test]
    fn the_result_is_the_first_flush_s() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        assert_eq!(
            nudged(move || counted.fetch_add(1, Ordering::SeqCst) + 41),
            41
        );
    }
}
