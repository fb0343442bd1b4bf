//! Work handed between threads within one search or turn: the only place in the crate
//! where a closure on one thread's stack runs on another.
//!
//! - [`join`] runs two closures side by side, the second on a helper thread that polls
//!   for work before it sleeps (a search's two legs; a turn's memory search beside its
//!   other parts).
//! - [`WalkShare`] lets the text leg offer parts of a long walk to the vector leg's
//!   thread once that one is done with its own work.
//! - [`TakeOnce`] holds items published once and taken, each once, by whichever thread
//!   is free (the vector leg's documents to decode).
//!
//! # The hand-off and why it is sound
//!
//! The first two post a closure that borrows its poster's stack, its lifetime erased,
//! through one state machine ([`handoff::Handoff`]):
//!
//! ```text
//!   IDLE --claim--> CLAIMED --post--> POSTED --run_posted--> RUNNING --> DONE
//!    ^                 |                 |                                |
//!    |                 +<---take back----+                                |
//!    +------------------ the poster settles (after DONE, or taken back) ---+
//! ```
//!
//! Another thread can only start the closure by moving the state from `POSTED` to
//! `RUNNING`; the poster can only take it back by moving it from `POSTED` to `CLAIMED`;
//! one of the two wins. The poster does not let the closure go out of scope, by
//! returning or by unwinding, before it has either taken it back or seen `DONE`: the
//! [`Posting`](handoff::Posting) guard settles on `finish` and on drop. So the erased
//! pointer is only ever dereferenced while the closure is alive and by one thread at a
//! time. Posted closures catch their own panics; the poster resumes them.

mod beside;
pub(crate) mod handoff;
mod queue;
mod walk;

pub(crate) use beside::{join, start};
pub(crate) use queue::TakeOnce;
pub(crate) use walk::WalkShare;
