//! Progress of long commands, on stderr: on a terminal, a bar per phase with its count,
//! rate and time left; otherwise a plain line when a phase ends and every
//! [`LINE_EVERY`] of a long one; nothing with `--quiet`.

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// How often a phase that is not on a terminal says where it is.
const LINE_EVERY: Duration = Duration::from_secs(10);

static QUIET: OnceLock<bool> = OnceLock::new();

/// `--quiet`: no progress and no status lines.
pub fn set_quiet(quiet: bool) {
    let _ = QUIET.set(quiet);
}

fn quiet() -> bool {
    QUIET.get().copied().unwrap_or(false)
}

/// A status line on stderr, unless `--quiet`.
pub fn note(line: &str) {
    if !quiet() {
        eprintln!("{line}");
    }
}

/// What a phase counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes of input.
    Bytes,
    /// Documents, vectors: whatever the phase names.
    Items(&'static str),
}

impl Unit {
    fn format(self, n: u64) -> String {
        match self {
            Unit::Bytes => format!("{}", indicatif::HumanBytes(n)),
            Unit::Items(what) => format!("{} {what}", indicatif::HumanCount(n)),
        }
    }
}

enum Display {
    Bar(ProgressBar),
    Lines { last: Instant },
    Quiet,
}

/// One phase of a command (read, embed, commit, graph).
pub struct Phase {
    name: &'static str,
    unit: Unit,
    total: u64,
    done: u64,
    started: Instant,
    display: Display,
}

impl Phase {
    /// Starts a phase of `total` units (0: unknown, a spinner).
    pub fn start(name: &'static str, total: u64, unit: Unit) -> Phase {
        let display = if quiet() {
            Display::Quiet
        } else if std::io::stderr().is_terminal() {
            let bar = if total == 0 {
                let bar = ProgressBar::new_spinner();
                bar.enable_steady_tick(Duration::from_millis(120));
                bar
            } else {
                let template = match unit {
                    Unit::Bytes => {
                        "{msg:>10} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)"
                    }
                    Unit::Items(_) => {
                        "{msg:>10} [{bar:40}] {human_pos}/{human_len} ({per_sec}, {eta} left)"
                    }
                };
                let bar = ProgressBar::new(total);
                bar.set_style(
                    ProgressStyle::with_template(template)
                        .expect("the template is valid")
                        .progress_chars("=> "),
                );
                bar
            };
            bar.set_message(name);
            Display::Bar(bar)
        } else {
            Display::Lines {
                last: Instant::now(),
            }
        };
        Phase {
            name,
            unit,
            total,
            done: 0,
            started: Instant::now(),
            display,
        }
    }

    /// Records that `done` units are done.
    pub fn set(&mut self, done: u64) {
        self.done = done;
        match &mut self.display {
            Display::Bar(bar) => bar.set_position(done),
            Display::Lines { last } => {
                if last.elapsed() >= LINE_EVERY {
                    *last = Instant::now();
                    eprintln!("{}", self.status());
                }
            }
            Display::Quiet => {}
        }
    }

    /// Records `n` more units done.
    pub fn inc(&mut self, n: u64) {
        self.set(self.done + n);
    }

    /// "graph: 40,000/100,000 vectors (3,100/s, 19 s left)".
    fn status(&self) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let rate = if elapsed > 0.0 {
            self.done as f64 / elapsed
        } else {
            0.0
        };
        let mut line = format!("{}: {}", self.name, self.unit.format(self.done));
        if self.total > 0 {
            line = format!(
                "{}: {}/{}",
                self.name,
                indicatif::HumanCount(self.done),
                self.unit.format(self.total)
            );
        }
        line += &format!(" ({}/s", self.unit.format(rate as u64));
        if self.total > self.done && rate > 0.0 {
            let left = (self.total - self.done) as f64 / rate;
            line += &format!(
                ", {} left",
                indicatif::HumanDuration(Duration::from_secs_f64(left))
            );
        }
        line + ")"
    }

    /// Ends the phase with one line: its name, `summary`, and how long it took.
    pub fn finish(self, summary: &str) {
        if let Display::Bar(bar) = &self.display {
            bar.finish_and_clear();
        }
        if !matches!(self.display, Display::Quiet) {
            eprintln!(
                "{}: {summary} in {:.1} s",
                self.name,
                self.started.elapsed().as_secs_f64()
            );
        }
    }
}

/// Runs `work` on another thread while `poll` reports its progress to `phase` every
/// 100 ms; returns what `work` returned.
pub fn watch<T: Send>(
    phase: &mut Phase,
    work: impl FnOnce() -> T + Send,
    poll: impl Fn() -> u64,
) -> T {
    std::thread::scope(|scope| {
        let handle = scope.spawn(work);
        while !handle.is_finished() {
            phase.set(poll());
            std::thread::sleep(Duration::from_millis(100));
        }
        phase.set(poll());
        match handle.join() {
            Ok(value) => value,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
