//! Running the `ruche` binary the tests build, in a clean environment: no configuration,
//! log or fault-injection variable of the caller's shell leaks in.

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Variables that change what `ruche` does (the fault injections exist in test builds).
const CLEARED: &[&str] = &[
    "RUCHE_CONFIG",
    "RUCHE_LOG",
    "RUCHE_LOG_FORMAT",
    "RUCHE_CRASH_AT",
    "RUCHE_PAUSE_AT",
    "RUCHE_FAIL_AT",
];

/// `ruche ARGS` with the variables above cleared and no standard input.
pub(crate) fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ruche"));
    command.args(args).stdin(Stdio::null());
    for key in CLEARED {
        command.env_remove(key);
    }
    command
}

/// Runs `ruche ARGS` with `env` set on top of a clean environment.
pub(crate) fn ruche_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = command(args);
    command.envs(env.iter().copied());
    output_within(&mut command)
}

/// [`output_within`] as a method of a command being built.
pub(crate) trait OutputWithin {
    fn output_within(&mut self) -> Output;
}

impl OutputWithin for Command {
    #[track_caller]
    fn output_within(&mut self) -> Output {
        output_within(self)
    }
}

/// The longest any one command of the tests may run (debug build, shared machine).
const LIMIT: Duration = Duration::from_secs(300);

/// `command.output()`, except that a command still running after [`LIMIT`] is killed
/// and fails the test, naming it and what it printed: a hang is a failure to report,
/// never a wait that outlasts the run.
#[track_caller]
pub(crate) fn output_within(command: &mut Command) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{command:?} still ran after {LIMIT:?} and was killed; it printed: {}",
                String::from_utf8_lossy(&stderr.join().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Runs `ruche ARGS` in a clean environment.
pub(crate) fn ruche(args: &[&str]) -> Output {
    ruche_env(args, &[])
}

/// Whether a test that needs `tool` (missing here) may skip: on a developer's machine it
/// skips with a message naming what to install; where `RUCHE_REQUIRE_TOOLS=1` (`.ci/run`
/// sets it, having installed every tool) a missing tool fails the test.
#[track_caller]
pub(crate) fn skip_without(tool: &str, install: &str) -> bool {
    assert!(
        std::env::var("RUCHE_REQUIRE_TOOLS").as_deref() != Ok("1"),
        "{tool} is required here (RUCHE_REQUIRE_TOOLS=1): {install}"
    );
    eprintln!("skipped: {tool} is not available ({install})");
    true
}

/// Sends `signal` (`libc::SIGTERM`, ...) to the process `pid`: no `kill` binary needed.
pub(crate) fn signal(pid: u32, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).unwrap();
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    let sent = unsafe { libc::kill(pid, signal) };
    assert_eq!(sent, 0, "kill({pid}, {signal}) failed");
}
