//! Running the `ruche` binary the tests build, in a clean environment: no configuration,
//! log or fault-injection variable of the caller's shell leaks in.

use std::process::{Command, Output, Stdio};

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
    command.output().unwrap()
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
