//! Items published once by one thread and taken, each once, by whichever threads are
//! free: a search's vector leg publishes its hits, and both legs' threads decode them.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Items published once, each taken once.
pub(crate) struct TakeOnce<T> {
    items: OnceLock<Vec<T>>,
    next: AtomicUsize,
}

impl<T> Default for TakeOnce<T> {
    fn default() -> TakeOnce<T> {
        TakeOnce {
            items: OnceLock::new(),
            next: AtomicUsize::new(0),
        }
    }
}

impl<T> TakeOnce<T> {
    /// Publishes the items; a second publication is ignored.
    pub(crate) fn publish(&self, items: Vec<T>) {
        let _ = self.items.set(items);
    }

    /// Hands each item not taken yet to `f`, until none is left (none before they are
    /// published).
    pub(crate) fn take_each(&self, mut f: impl FnMut(&T)) {
        let Some(items) = self.items.get() else {
            return;
        };
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else {
                return;
            };
            f(item);
        }
    }

    /// Waits (yielding the CPU) for the items to be published, for at most `patience`;
    /// whether they were.
    pub(crate) fn wait(&self, patience: Duration) -> bool {
        let started = Instant::now();
        while self.items.get().is_none() {
            if started.elapsed() >= patience {
                return false;
            }
            std::thread::yield_now();
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two threads share the items: each is taken once, whoever takes it, and a thread
    /// that comes first waits for them to be published.
    #[test]
    fn shared_items_are_each_taken_once() {
        for round in 0..200u64 {
            let shared = TakeOnce::default();
            let items: Vec<u64> = (0..50 + round % 7).collect();
            let taken = std::sync::Mutex::new(Vec::new());
            std::thread::scope(|scope| {
                scope.spawn(|| {
                    assert!(shared.wait(Duration::from_secs(10)));
                    shared.take_each(|item| taken.lock().unwrap().push(*item));
                });
                if round % 2 == 0 {
                    std::thread::sleep(Duration::from_micros(50));
                }
                shared.publish(items.clone());
                shared.take_each(|item| taken.lock().unwrap().push(*item));
            });
            let mut taken = taken.into_inner().unwrap();
            taken.sort_unstable();
            assert_eq!(taken, items);
        }
    }

    /// Nothing published: the wait gives up after its patience, and nothing is taken.
    #[test]
    fn the_wait_for_items_never_published_ends() {
        let shared = TakeOnce::<u64>::default();
        let started = Instant::now();
        assert!(!shared.wait(Duration::from_millis(5)));
        assert!(started.elapsed() >= Duration::from_millis(5));
        shared.take_each(|_| panic!("nothing was published"));
    }
}
