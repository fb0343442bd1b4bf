//! Kills aimed at every step: the commit and its publish, `repair`, `compact`,
//! `reembed` and `backup`, each killed where a crash point names (the test builds
//! compile them in: `RUCHE_CRASH_AT`), stopped with `SIGSTOP` (`RUCHE_PAUSE_AT`), or
//! failed as a full disk would (`RUCHE_FAIL_AT`). After each: readers read a whole
//! commit, the next open for writing finds one complete index with every acknowledged
//! document, repair never ends with fewer documents than a reader could export before
//! it, and every file of the user's is where it was.

use crate::run::OutputWithin;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ruchedb::{Chunk, EmbedderSpec, Engine, ErrorKind, Rule};

use crate::cli::{assert_code, stderr, stdout};
use crate::run::{ruche, ruche_env};
use crate::trust::copy_dir;

/// Runs `args` with `RUCHE_CRASH_AT=point` and checks that it died there.
#[track_caller]
fn crash(args: &[&str], point: &str, tmp: &Path) -> Output {
    let output = ruche_env(
        args,
        &[("RUCHE_CRASH_AT", point), ("TMPDIR", tmp.to_str().unwrap())],
    );
    assert_eq!(
        output.status.code(),
        None,
        "{args:?} at {point} did not die: {}",
        stderr(&output)
    );
    let name = point.split('#').next().unwrap();
    assert!(
        stderr(&output).contains(&format!("crash point {name}")),
        "{args:?} at {point}: {}",
        stderr(&output)
    );
    // Scratch lives inside the index directory: nothing is left in the temporary one.
    let left: Vec<_> = std::fs::read_dir(tmp).unwrap().collect();
    assert!(
        left.is_empty(),
        "{args:?} at {point} left {left:?} in TMPDIR"
    );
    output
}

fn note(i: usize) -> Chunk {
    Chunk::new(
        format!("n{i:04}"),
        format!("note {i} about the parcel of order NW-{}", 10_000 + i),
    )
}

/// An index of 2 rules and `n` chunks (BM25 only: quick to build), with files of the
/// user's inside and beside it.
fn fixture(path: &Path, n: usize) {
    let engine = Engine::builder()
        .with_embedder_spec(EmbedderSpec::None)
        .create(path)
        .unwrap();
    engine.upsert_chunks((0..n).map(note)).unwrap();
    engine
        .upsert_rules([
            Rule::new("refund", "the customer asks for a refund", "refund"),
            Rule::new("greet", "the conversation starts", "greet"),
        ])
        .unwrap();
    engine.commit().unwrap();
    engine.close().unwrap();
    for (file, content) in USER_FILES {
        let at = path.join(file);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, content).unwrap();
    }
    for sibling in ["reembed", "reembed-old"] {
        let at = sibling_of(path, sibling);
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(at.join("keep.txt"), sibling).unwrap();
    }
}

/// Files of the user's, inside the index directory and inside the engine's own.
const USER_FILES: [(&str, &str); 6] = [
    ("notes.txt", "my notes"),
    ("sub/deeper.txt", "deeper"),
    ("store/mine.txt", "in store"),
    ("text/mine.txt", "in text"),
    ("view/mine.txt", "in view"),
    ("view/notes.rv", "a name like the engine's"),
];

fn sibling_of(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap().to_os_string();
    name.push(format!(".{suffix}"));
    path.with_file_name(name)
}

#[track_caller]
fn assert_user_files(path: &Path, context: &str) {
    for (file, content) in USER_FILES {
        assert_eq!(
            std::fs::read_to_string(path.join(file)).ok().as_deref(),
            Some(content),
            "{context}: {file}"
        );
    }
    for sibling in ["reembed", "reembed-old"] {
        assert_eq!(
            std::fs::read_to_string(sibling_of(path, sibling).join("keep.txt"))
                .ok()
                .as_deref(),
            Some(sibling),
            "{context}: the sibling {sibling}"
        );
    }
}

/// Every document, as `ruche export` (a reader) writes it.
#[track_caller]
fn exported(path: &Path) -> BTreeSet<String> {
    let output = ruche(&["export", path.to_str().unwrap()]);
    assert_code(&output, 0);
    stdout(&output).lines().map(str::to_string).collect()
}

/// A fresh copy of `pristine` (and its siblings) at `path`.
fn fresh(pristine: &Path, path: &Path) {
    for p in [
        path.to_path_buf(),
        sibling_of(path, "reembed"),
        sibling_of(path, "reembed-old"),
    ] {
        let _ = std::fs::remove_dir_all(p);
    }
    copy_dir(pristine, path);
    for sibling in ["reembed", "reembed-old"] {
        copy_dir(&sibling_of(pristine, sibling), &sibling_of(path, sibling));
    }
}

fn flip(file: &Path, at: usize) {
    let mut bytes = std::fs::read(file).unwrap();
    let at = at.min(bytes.len() - 1);
    bytes[at] ^= 0x10;
    std::fs::write(file, bytes).unwrap();
}

/// `compact`, `reembed` and `repair` killed at each of their steps: readers read one
/// whole index at once (the old one, or the new one where a stopped swap left its
/// parts), and neither they nor `check` write anything; the next open for writing (or
/// the same command again) finds one whole index with every document, and the user's
/// files stay where they were. `repair` runs twice: on a damaged store (one bit of
/// `store/conf`), so that it salvages and swaps, and on an intact one, so that it
/// rebuilds the derived parts beside the old ones and swaps.
#[test]
#[ignore = "a long campaign: `cargo test -- --ignored` runs it, and .ci/run does"]
fn maintenance_killed_at_every_step_leaves_one_whole_index() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine");
    fixture(&pristine, 200);
    let expected = exported(&pristine);
    let expected_hits = searched(&pristine, "parcel of order NW-10042");
    assert_eq!(expected.len(), 202);
    let path = dir.path().join("idx");
    let index = path.to_str().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let swap_steps = [
        "swap:journal-written",
        "swap:retired",
        "swap:installed",
        "swap:retired#2",
        "swap:installed#3",
        "swap:installed#4",
        "swap:carried",
    ];
    let commands: [(&str, Vec<&str>, Vec<&str>); 4] = [
        (
            "compact",
            vec!["compact", index],
            vec!["compact:copied", "compact:built"],
        ),
        (
            "reembed",
            vec!["reembed", index, "--embedder", "default"],
            vec!["reembed:built"],
        ),
        (
            "repair",
            vec!["repair", index],
            vec!["repair:store-read", "repair:built", "repair:before-open"],
        ),
        (
            "repair of an intact store",
            vec!["repair", index],
            vec!["repair:before-open", "repair:rebuilt"],
        ),
    ];
    let mut kills = 0;
    for (name, args, own_steps) in &commands {
        for point in own_steps.iter().chain(&swap_steps) {
            fresh(&pristine, &path);
            if *name == "repair" {
                flip(&path.join("store/conf"), 10);
                assert_eq!(exported(&path), expected, "a reader still reads it all");
            }
            crash(args, point, &tmp);
            kills += 1;
            let context = format!("{name} killed at {point}");
            // Killed mid-swap, a file of the user's inside an old part is in the
            // scratch with it until the swap is finished; the others are where they were.
            assert_eq!(
                std::fs::read_to_string(path.join("notes.txt")).unwrap(),
                "my notes"
            );
            assert_eq!(
                std::fs::read_to_string(path.join("sub/deeper.txt")).unwrap(),
                "deeper"
            );
            // Readers read a whole index, and write nothing; `check` writes nothing.
            let before = tree(&path);
            let reader = Engine::builder()
                .open_read_only(&path)
                .unwrap_or_else(|err| panic!("{context}: {err}"));
            assert_eq!(reader.stats().chunks, 200, "{context}");
            drop(reader);
            assert_eq!(exported(&path), expected, "{context}");
            if *name != "reembed" {
                assert_eq!(
                    searched(&path, "parcel of order NW-10042"),
                    expected_hits,
                    "{context}"
                );
            }
            assert_code(&ruche(&["stats", index]), 0);
            let checked = ruche(&["check", index]);
            assert!(
                matches!(checked.status.code(), Some(0 | 1)),
                "{context}: {}",
                stderr(&checked)
            );
            assert!(tree(&path) == before, "{context}: a reader or check wrote");
            // The same command again finishes the job.
            let output = ruche(args);
            assert_code(&output, 0);
            assert_eq!(exported(&path), expected, "{context}");
            assert_user_files(&path, &context);
            assert_code(&ruche(&["check", index]), 0);
            assert!(!path.join(".ruche").exists(), "{context}: scratch left");
        }
    }
    println!("maintenance kill points: {kills}");
}

/// A backup killed at each step leaves no index in the destination (a clear error, no
/// manifest written for an empty store) or a complete one; the source is untouched.
#[test]
fn a_backup_killed_at_any_step_is_no_index_or_a_whole_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    fixture(&path, 150);
    let expected = exported(&path);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    for (n, point) in [
        "backup:copied",
        "backup:built",
        "swap:journal-written",
        "swap:installed",
        "swap:installed#3",
        "swap:carried",
    ]
    .into_iter()
    .enumerate()
    {
        let dest = dir.path().join(format!("copy{n}"));
        let args = ["backup", path.to_str().unwrap(), dest.to_str().unwrap()];
        crash(&args, point, &tmp);
        assert_eq!(exported(&path), expected, "the source, {point}");
        let stats = ruche(&["stats", dest.to_str().unwrap(), "--json"]);
        match stats.status.code() {
            Some(0) => {
                let found: serde_json::Value = serde_json::from_str(&stdout(&stats)).unwrap();
                assert_eq!(found["chunks"], 150, "{point}: {found}");
                assert_eq!(exported(&dest), expected, "{point}");
            }
            Some(2) => {
                assert!(
                    !dest.join("MANIFEST").exists(),
                    "{point}: a manifest for an incomplete copy"
                );
                assert!(
                    !stderr(&stats).contains("0 chunks"),
                    "{point}: {}",
                    stderr(&stats)
                );
            }
            other => panic!("{point}: exit {other:?}: {}", stderr(&stats)),
        }
        // The same backup again: a killed copy's leftovers are cleared and it runs; a
        // complete copy (a killed swap, finished now) is kept and named.
        let again = ruche(&args);
        match again.status.code() {
            Some(0) => assert_eq!(exported(&dest), expected, "{point}: backup again"),
            Some(2) => assert!(
                stderr(&again).contains("already"),
                "{point}: backup again: {}",
                stderr(&again)
            ),
            other => panic!("{point}: backup again: exit {other:?}: {}", stderr(&again)),
        }
        // A writer's open finishes a complete copy or finds none.
        match Engine::builder().open(&dest) {
            Ok(engine) => {
                assert_eq!(engine.stats().chunks, 150, "{point}");
                drop(engine);
                assert_eq!(exported(&dest), expected, "{point}");
                assert_code(&ruche(&["check", dest.to_str().unwrap()]), 0);
            }
            Err(err) => assert!(
                matches!(err.kind(), ErrorKind::IndexNotFound { .. }),
                "{point}: {err}"
            ),
        }
    }
    // Not killed: a whole copy, searchable read-only at once.
    let dest = dir.path().join("whole");
    assert_code(
        &ruche(&["backup", path.to_str().unwrap(), dest.to_str().unwrap()]),
        0,
    );
    let reader = Engine::builder().open_read_only(&dest).unwrap();
    assert_eq!(reader.stats().chunks, 150);
    assert_eq!(exported(&dest), expected);
}

fn more_chunks(dir: &Path, range: std::ops::Range<usize>) -> String {
    let path = dir.join(format!("more-{}.jsonl", range.start));
    let lines: Vec<String> = range
        .map(|i| {
            serde_json::json!({"id": format!("m{i:04}"), "content": format!("marker note {i} of the new batch")})
                .to_string()
        })
        .collect();
    std::fs::write(&path, lines.join("\n")).unwrap();
    path.to_str().unwrap().to_string()
}

/// The ids a reader's search returns for `query` (every candidate: no gate).
#[track_caller]
fn searched(path: &Path, query: &str) -> Vec<String> {
    let output = ruche(&[
        "search",
        path.to_str().unwrap(),
        "--kind",
        "chunks",
        query,
        "--min-relevance",
        "0",
        "--top-k",
        "1000",
        "--json",
    ]);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "search {query}: {}",
        stderr(&output)
    );
    let response: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    response["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["id"].as_str().unwrap().to_string())
        .collect()
}

/// An import killed at each step of its commit and publish: readers read the commit
/// before or the new one, whole (never "damaged data" from a text index ahead of what
/// was published); `check` says intact (a text index only behind is not damage); the
/// next open for writing holds the commit once the store has it.
#[test]
fn an_import_killed_at_every_publish_step_leaves_readers_a_whole_commit() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine");
    // Many documents with the query's word: a text index ahead of the published view
    // has more of them than the view's catalog.
    fixture(&pristine, 400);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let more = more_chunks(dir.path(), 0..300);
    let path = dir.path().join("idx");
    let index = path.to_str().unwrap();
    for point in [
        "commit:stored",
        "commit:text-committed",
        "publish:files-written",
        "manifest:staged",
        "manifest:renamed",
        "publish:manifest-written",
    ] {
        fresh(&pristine, &path);
        crash(&["index", index, "--chunks", &more], point, &tmp);
        let found = searched(&path, "note marker");
        let ours = found.iter().filter(|id| id.starts_with('m')).count();
        assert!(
            ours == 0 || ours == 300,
            "{point}: a reader saw {ours} of the 300 new documents"
        );
        assert!(found.len() >= 400, "{point}: {}", found.len());
        let check = ruche(&["check", index]);
        assert_code(&check, 0);
        let engine = Engine::builder().open(&path).unwrap();
        // Every point is after the store's commit: the import happened.
        assert_eq!(engine.stats().chunks, 700, "{point}");
        drop(engine);
        assert_eq!(searched(&path, "marker").len(), 300, "{point}");
        assert_user_files(&path, point);
    }
}

/// A writer stopped (`SIGSTOP`) between its text commit and its publish, as a slow
/// commit is for a moment: a reader beside it reads the commit before, at once.
#[cfg(target_os = "linux")]
#[test]
fn a_reader_beside_a_stopped_writer_reads_the_published_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    fixture(&path, 400);
    let more = more_chunks(dir.path(), 0..300);
    let mut writer = Command::new(env!("CARGO_BIN_EXE_ruche"))
        .args(["index", path.to_str().unwrap(), "--chunks", &more, "-q"])
        .env_remove("RUCHE_CONFIG")
        .env("RUCHE_PAUSE_AT", "commit:text-committed")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stat = format!("/proc/{}/stat", writer.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let state = std::fs::read_to_string(&stat).unwrap_or_default();
        // The state follows the command name in parentheses.
        if state
            .rsplit(") ")
            .next()
            .is_some_and(|s| s.starts_with('T'))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the writer never paused"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let found = searched(&path, "note marker");
    assert_eq!(found.len(), 400, "the commit before, whole");
    assert!(found.iter().all(|id| id.starts_with('n')));
    assert_code(&ruche(&["export", path.to_str().unwrap()]), 0);
    crate::run::signal(writer.id(), libc::SIGCONT);
    assert!(writer.wait().unwrap().success());
    assert_eq!(searched(&path, "marker").len(), 300);
}

/// A damaged `store/conf`, a deleted `store/db`: a reader still exports every document
/// (the published files hold them), and `repair` recovers every one of them instead of
/// reporting them lost.
#[test]
fn repair_salvages_what_readers_can_read() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine");
    fixture(&pristine, 300);
    let expected = exported(&pristine);
    let path = dir.path().join("idx");
    let index = path.to_str().unwrap();
    type Damage<'a> = &'a dyn Fn(&Path);
    let damages: [(&str, Damage); 3] = [
        ("one bit of store/conf", &|p: &Path| {
            flip(&p.join("store/conf"), 20)
        }),
        ("store/db deleted", &|p: &Path| {
            std::fs::remove_file(p.join("store/db")).unwrap()
        }),
        ("store/db truncated", &|p: &Path| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(p.join("store/db"))
                .unwrap()
                .set_len(1000)
                .unwrap()
        }),
    ];
    for (what, damage) in damages {
        fresh(&pristine, &path);
        damage(&path);
        assert_eq!(exported(&path), expected, "{what}: a reader reads it all");
        assert_code(&ruche(&["check", index]), 1);
        let output = ruche(&["repair", index]);
        assert_code(&output, 0);
        assert!(
            stdout(&output).contains("nothing lost"),
            "{what}: {}",
            stdout(&output)
        );
        assert!(path.join("store.damaged").exists(), "{what}");
        assert_eq!(exported(&path), expected, "{what}");
        assert_code(&ruche(&["check", index]), 0);
        assert_user_files(&path, what);
    }
}

/// A repair that fails (a full disk while it builds the new index) leaves the index as
/// it was: no half-made state, no `MANIFEST.tmp`, nothing moved aside; the next repair
/// succeeds.
#[test]
fn a_repair_that_fails_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    fixture(&path, 100);
    let expected = exported(&path);
    flip(&path.join("store/conf"), 20);
    let before = tree(&path);
    let index = path.to_str().unwrap();
    let output = ruche_env(&["repair", index], &[("RUCHE_FAIL_AT", "repair:build")]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("No space left"),
        "{}",
        stderr(&output)
    );
    assert_eq!(tree(&path), before);
    assert_code(&ruche(&["repair", index]), 0);
    assert_eq!(exported(&path), expected);
}

/// Every file under `dir` with its bytes.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                let bytes = std::fs::read(entry.path()).unwrap();
                files.push((entry.path().strip_prefix(dir).unwrap().to_path_buf(), bytes));
            }
        }
    }
    files.sort();
    files
}

/// An import whose publish fails after its commit (a full disk) exits 3 and says the
/// commit happened; the documents are there, and readers see them after the next open
/// for writing. A first import that fails so is kept, not removed.
#[test]
fn an_import_committed_but_not_published_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    fixture(&path, 50);
    let index = path.to_str().unwrap();
    let more = more_chunks(dir.path(), 0..20);
    let output = ruche_env(
        &["index", index, "--chunks", &more],
        &[("RUCHE_FAIL_AT", "publish")],
    );
    assert_code(&output, 3);
    assert!(stderr(&output).contains("durable"), "{}", stderr(&output));
    let stats = ruche(&["stats", index, "--json"]);
    assert_code(&stats, 0);
    let found: serde_json::Value = serde_json::from_str(&stdout(&stats)).unwrap();
    assert_eq!(found["chunks"], 70);

    let first = dir.path().join("first");
    let output = ruche_env(
        &["index", first.to_str().unwrap(), "--chunks", &more],
        &[("RUCHE_FAIL_AT", "publish")],
    );
    assert_code(&output, 3);
    assert_eq!(exported(&first).len(), 20);
}

/// A first import killed before its store recorded anything: the directory is an empty
/// index (readers say nothing was committed), and the import run again succeeds.
#[test]
fn a_first_import_killed_early_is_an_empty_index() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let more = more_chunks(dir.path(), 0..40);
    let path = dir.path().join("idx");
    let index = path.to_str().unwrap();
    crash(&["index", index, "--chunks", &more], "store:created", &tmp);
    let output = ruche(&["search", index, "marker"]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("nothing was committed"),
        "{}",
        stderr(&output)
    );
    assert_code(&ruche(&["index", index, "--chunks", &more]), 0);
    assert_eq!(exported(&path).len(), 40);
    assert_code(&ruche(&["check", index]), 0);
}

/// An index on a read-only volume (a backup, a container image): searched, exported,
/// counted and checked without writing anything (a mount namespace of the test's own
/// makes the directory read-only; where none can be made, the test says so and stops).
#[cfg(target_os = "linux")]
#[test]
fn an_index_on_a_read_only_volume_is_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    fixture(&path, 80);
    let index = path.to_str().unwrap();
    let bin = env!("CARGO_BIN_EXE_ruche");
    let probe = Command::new("unshare")
        .args(["-rm", "sh", "-c"])
        .arg(format!(
            "mount --bind {index} {index} && mount -o remount,bind,ro {index} && ! touch {index}/probe 2>/dev/null"
        ))
        .output();
    if !probe.is_ok_and(|output| output.status.success()) {
        crate::run::skip_without(
            "a read-only bind mount (`unshare -rm`, util-linux, user namespaces)",
            "util-linux's unshare with unprivileged user namespaces",
        );
        return;
    }
    let read_only = |command: &str| {
        Command::new("unshare")
            .args(["-rm", "sh", "-c"])
            .arg(format!(
                "mount --bind {index} {index} && mount -o remount,bind,ro {index} && {command}"
            ))
            .env_remove("RUCHE_CONFIG")
            .output_within()
    };
    for (command, expect) in [
        (
            format!("{bin} search {index} --kind chunks parcel --top-k 3 --json"),
            "n0",
        ),
        (format!("{bin} export {index}"), "n0079"),
        (format!("{bin} stats {index}"), "80"),
        (format!("{bin} check {index}"), "intact"),
    ] {
        let output = read_only(&command);
        assert_code(&output, 0);
        assert!(
            stdout(&output).contains(expect),
            "{command}: {}",
            stdout(&output)
        );
    }
    // A compaction killed half-way through its swap: the new index is read where its
    // parts are, on the read-only mount too.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    crash(&["compact", index], "swap:installed#3", &tmp);
    for (command, expect) in [
        (
            format!("{bin} search {index} --kind chunks parcel --top-k 3 --json"),
            "n0",
        ),
        (format!("{bin} export {index}"), "n0079"),
        (format!("{bin} stats {index}"), "80"),
    ] {
        let output = read_only(&command);
        assert_code(&output, 0);
        assert!(
            stdout(&output).contains(expect),
            "{command}: {}",
            stdout(&output)
        );
    }
    let output = read_only(&format!("{bin} check {index}"));
    assert_code(&output, 1);
    assert!(
        stdout(&output).contains(".ruche/SWAP"),
        "{}",
        stdout(&output)
    );
}
