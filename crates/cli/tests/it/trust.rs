//! Trust with an agent's data: damage is found and named, nothing outside the index is
//! touched, and bad input gets a clear error (crashes at every step: `crashes.rs`).

use std::path::Path;

use ruchedb::{Chunk, Config, EmbedderSpec, Engine, ErrorKind, Kind, Rule, SearchRequest};

use crate::cli::{assert_code, stderr, stdout};
use crate::run::ruche;

fn notes(range: std::ops::Range<usize>) -> Vec<Chunk> {
    range
        .map(|i| {
            Chunk::new(
                format!("n{i:04}"),
                format!("note {i} about order NW-{}", 10_000 + i),
            )
        })
        .collect()
}

fn create(path: &Path, chunks: Vec<Chunk>) {
    let engine = Engine::builder()
        .with_embedder_spec(EmbedderSpec::None)
        .create(path)
        .unwrap();
    engine.upsert_chunks(chunks).unwrap();
    engine
        .upsert_rules([Rule::new("r", "the customer asks for a refund", "refund")])
        .unwrap();
    engine.commit().unwrap();
    engine.close().unwrap();
}

fn counts(path: &Path) -> (usize, usize) {
    let engine = Engine::builder().open(path).unwrap();
    let stats = engine.stats();
    (stats.rules, stats.chunks)
}

#[track_caller]
fn assert_corrupt(result: ruchedb::Result<Engine>) -> String {
    match result {
        Ok(engine) => panic!("opened with {:?}", engine.stats()),
        Err(err) => {
            assert!(matches!(err.kind(), ErrorKind::Corrupt { .. }), "{err}");
            err.to_string()
        }
    }
}

#[test]
fn a_store_that_lost_committed_data_is_found_out_and_salvaged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    create(&path, notes(0..100));
    let old_store = dir.path().join("old-store");
    copy_dir(&path.join("store"), &old_store);
    {
        let engine = Engine::builder().open(&path).unwrap();
        engine.upsert_chunks(notes(100..150)).unwrap();
        engine.commit().unwrap();
        engine.close().unwrap();
    }
    // The store goes back in time (a restore of an old copy, or sled dropping what it
    // could not read): the manifest and the text index know better.
    std::fs::remove_dir_all(path.join("store")).unwrap();
    copy_dir(&old_store, &path.join("store"));
    let message = assert_corrupt(Engine::builder().open(&path));
    assert!(
        message.contains("store/db lost committed changes"),
        "{message}"
    );
    assert!(message.contains("150 chunks"), "{message}");
    // Without the manifest, the text index ahead of the store tells the same.
    let manifest = std::fs::read(path.join("MANIFEST")).unwrap();
    std::fs::remove_file(path.join("MANIFEST")).unwrap();
    let message = assert_corrupt(Engine::builder().open(&path));
    assert!(message.contains("behind the text index"), "{message}");
    std::fs::write(path.join("MANIFEST"), manifest).unwrap();

    let report = Engine::check(&path, &Config::default()).unwrap();
    assert!(report.store_damaged(), "{report:?}");
    let index = path.to_str().unwrap();
    let output = ruche(&["check", index]);
    assert_code(&output, 1);
    assert!(
        stdout(&output).contains("DAMAGED  store/db"),
        "{}",
        stdout(&output)
    );

    // The files published for readers hold all 150: repair loses none of them.
    let output = ruche(&["repair", index]);
    assert_code(&output, 0);
    let text = stdout(&output);
    assert!(text.contains("nothing lost"), "{text}");
    assert!(path.join("store.damaged").join("db").exists());
    assert_eq!(counts(&path), (1, 150));
    assert_code(&ruche(&["check", index]), 0);
}

#[test]
fn derived_parts_are_rebuilt_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    create(&path, notes(0..300));
    let index = path.to_str().unwrap();
    let before = search_ids(&path);
    // A damaged text file: check names it, repair rebuilds it, results are the same.
    let text = path.join("text");
    let file = std::fs::read_dir(&text)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "term"))
        .unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&file, bytes).unwrap();
    let output = ruche(&["check", index]);
    assert_code(&output, 1);
    assert!(
        stdout(&output).contains("DAMAGED  text/"),
        "{}",
        stdout(&output)
    );
    let output = ruche(&["repair", index]);
    assert_code(&output, 0);
    assert_code(&ruche(&["check", index]), 0);
    assert_eq!(search_ids(&path), before);
    // A damaged manifest is rewritten from the intact store.
    std::fs::write(path.join("MANIFEST"), b"{not json").unwrap();
    assert_code(&ruche(&["check", index]), 1);
    assert_code(&ruche(&["repair", index]), 0);
    assert_code(&ruche(&["check", index]), 0);
    assert_eq!(counts(&path), (1, 300));
}

fn search_ids(path: &Path) -> Vec<Vec<String>> {
    try_search_ids(path).unwrap()
}

/// The answers to a few queries, or the first error.
fn try_search_ids(path: &Path) -> ruchedb::Result<Vec<Vec<String>>> {
    let engine = Engine::builder().open(path)?;
    answers(&engine)
}

fn answers(engine: &ruchedb::Reader) -> ruchedb::Result<Vec<Vec<String>>> {
    ["note 7", "NW-10042", "refund", "order about"]
        .iter()
        .map(|q| {
            Ok(engine
                .search(&SearchRequest::chunks(*q).with_top_k(5))?
                .hits
                .into_iter()
                .map(|h| h.id)
                .collect())
        })
        .collect()
}

#[track_caller]
fn assert_typed(err: &ruchedb::Error, context: &str) {
    assert!(
        matches!(
            err.kind(),
            ErrorKind::Corrupt { .. }
                | ErrorKind::IncompatibleFormat { .. }
                | ErrorKind::Storage { .. }
                | ErrorKind::Io { .. }
        ),
        "{context}: {err:?}"
    );
}

/// Flips, truncates or deletes every file of an index, one at a time: each time, the
/// index either opens with every document and the same answers, or fails with a typed
/// error; `check` reports the damage, and `repair` either restores every document or
/// says what was lost. Never a successful open with less data.
#[test]
#[ignore = "a long campaign: `cargo test -- --ignored` runs it, and .ci/run does"]
fn every_file_damaged_in_turn_is_an_error_or_an_exact_repair() {
    let dir = tempfile::tempdir().unwrap();
    let pristine = dir.path().join("pristine");
    create(&pristine, notes(0..400));
    let before = search_ids(&pristine);
    let mut files = Vec::new();
    collect_files(&pristine, &mut files);
    let mut tried = 0;
    for file in &files {
        let relative = file.strip_prefix(&pristine).unwrap().to_path_buf();
        if relative == Path::new("LOCK") {
            continue; // Empty; its content means nothing.
        }
        let len = std::fs::metadata(file).unwrap().len() as usize;
        let mut damages: Vec<(&str, usize)> = vec![("delete", 0), ("truncate", len / 2)];
        for pct in [0, 37, 75, 99] {
            damages.push(("flip", len * pct / 100));
        }
        for (what, at) in damages {
            if len == 0 && what != "delete" {
                continue;
            }
            tried += 1;
            let copy = dir.path().join(format!("copy{tried}"));
            copy_dir(&pristine, &copy);
            let target = copy.join(&relative);
            match what {
                "delete" => std::fs::remove_file(&target).unwrap(),
                "truncate" => std::fs::OpenOptions::new()
                    .write(true)
                    .open(&target)
                    .unwrap()
                    .set_len(at as u64)
                    .unwrap(),
                _ => {
                    let mut bytes = std::fs::read(&target).unwrap();
                    let at = at.min(bytes.len() - 1);
                    bytes[at] ^= 0x10;
                    std::fs::write(&target, bytes).unwrap();
                }
            }
            let context = format!("{what} {} at {at}", relative.display());
            // A reader reads only what was published: every document and the same
            // answers, or a typed error. What it can export, repair must keep.
            let mut readable = 0;
            match Engine::builder().open_read_only(&copy) {
                Ok(reader) => {
                    let stats = reader.stats();
                    assert_eq!((stats.rules, stats.chunks), (1, 400), "reader, {context}");
                    match answers(&reader) {
                        Ok(found) => assert_eq!(found, before, "reader, {context}"),
                        Err(err) => assert_typed(&err, &format!("reader, {context}")),
                    }
                    if let (Ok(rules), Ok(chunks)) = (
                        reader.export(Kind::Rule, None),
                        reader.export(Kind::Chunk, None),
                    ) {
                        readable = rules.len() + chunks.len();
                    }
                }
                Err(err)
                    if matches!(
                        err.kind(),
                        ErrorKind::NotPublished { .. } | ErrorKind::Uncommitted { .. }
                    ) => {}
                Err(err) => assert_typed(&err, &format!("reader, {context}")),
            }
            // Opened: every document, and the same answers or a typed error (a damaged
            // text file that opening does not read fails the search that reads it).
            match Engine::builder().open(&copy) {
                Ok(engine) => {
                    let stats = engine.stats();
                    assert_eq!((stats.rules, stats.chunks), (1, 400), "{context}");
                    drop(engine);
                    match try_search_ids(&copy) {
                        Ok(found) => assert_eq!(found, before, "{context}"),
                        Err(err) => assert_typed(&err, &context),
                    }
                }
                Err(err) => assert_typed(&err, &context),
            }
            match Engine::repair(&copy, &Config::default()) {
                Ok(report) => {
                    let (rules, chunks) = counts(&copy);
                    assert!(
                        rules + chunks >= readable,
                        "{context}: repair kept {} of the {readable} documents a reader exported: {report:?}",
                        rules + chunks
                    );
                    if report.lost.is_none() {
                        assert_eq!((rules, chunks), (1, 400), "{context}: {report:?}");
                        assert_eq!(search_ids(&copy), before, "{context}");
                    } else {
                        assert!(rules + chunks <= 401, "{context}");
                        assert!(copy.join("store.damaged").exists(), "{context}");
                    }
                }
                Err(err) => {
                    // Only an index whose store is gone entirely cannot be repaired.
                    assert!(
                        matches!(err.kind(), ErrorKind::IndexNotFound { .. }),
                        "{context}: {err:?}"
                    );
                }
            }
            std::fs::remove_dir_all(&copy).unwrap();
        }
    }
    println!("corruptions tried: {tried} over {} files", files.len());
    assert!(tried >= 20, "{tried}");
}

fn collect_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_files(&path, out);
        } else {
            out.push(path);
        }
    }
    out.sort();
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `repair` of derived parts only (the store intact): the text index and the files for
/// readers rebuilt, and a user's files inside `text/`, `view/`, `store/` and beside them
/// kept as they were.
#[test]
fn repairing_derived_parts_keeps_every_file_of_the_user_s() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("index");
    create(&index, notes(0..200));
    let before = counts(&index);
    let mine = [
        "mine.txt",
        "text/mine.txt",
        "view/mine.txt",
        "store/mine.txt",
    ];
    for (i, file) in mine.iter().enumerate() {
        std::fs::write(index.join(file), format!("user {i}")).unwrap();
    }
    // One byte changed in the text index's largest file.
    let largest = std::fs::read_dir(index.join("text"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.file_name().unwrap() != "mine.txt")
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&largest).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&largest, bytes).unwrap();
    let path = index.to_str().unwrap();
    assert_code(&ruche(&["check", path]), 1);
    let output = ruche(&["repair", path]);
    assert_code(&output, 0);
    assert!(
        !stdout(&output).contains("store.damaged"),
        "the store was intact: {}",
        stdout(&output)
    );
    assert_code(&ruche(&["check", path]), 0);
    assert_eq!(counts(&index), before);
    for (i, file) in mine.iter().enumerate() {
        assert_eq!(
            std::fs::read_to_string(index.join(file)).unwrap(),
            format!("user {i}"),
            "{file}"
        );
    }
}

#[test]
fn nothing_outside_the_index_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("d");
    std::fs::create_dir_all(d.join("text")).unwrap();
    std::fs::write(d.join("text/notes.txt"), "x").unwrap();
    let chunks = dir.path().join("ok.jsonl");
    std::fs::write(&chunks, "{\"id\": \"a\", \"content\": \"hello\"}\n").unwrap();
    let output = ruche(&[
        "index",
        d.to_str().unwrap(),
        "--chunks",
        chunks.to_str().unwrap(),
    ]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("is not empty and holds no index"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("text/notes.txt")).unwrap(),
        "x"
    );
    let err = Engine::builder().create(&d).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::NotAnIndex { .. }), "{err}");

    // A failed first import into an empty directory leaves it as it was.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(d.join("other.txt"), "y").unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"id\": \"a\", \"content\": \"x\", \"embedding\": [1, 0]}\n{\"id\": \"b\", \"content\": \"y\", \"embedding\": [1, 0, 0]}\n").unwrap();
    let output = ruche(&[
        "index",
        empty.to_str().unwrap(),
        "--chunks",
        bad.to_str().unwrap(),
    ]);
    assert_code(&output, 2);
    assert!(
        std::fs::read_dir(&empty).unwrap().next().is_none(),
        "left as it was"
    );
    let fresh = dir.path().join("fresh");
    let output = ruche(&[
        "index",
        fresh.to_str().unwrap(),
        "--chunks",
        bad.to_str().unwrap(),
    ]);
    assert_code(&output, 2);
    assert!(!fresh.exists(), "a directory the import made goes with it");
    // Removing an index keeps what is not the engine's.
    let kept = dir.path().join("kept");
    create(&kept, notes(0..3));
    std::fs::write(kept.join("mine.txt"), "z").unwrap();
    Engine::remove(&kept).unwrap();
    let left: Vec<_> = std::fs::read_dir(&kept)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["mine.txt"]);
}

#[test]
fn a_writer_waits_for_the_lock_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    create(&path, notes(0..3));
    let holder = Engine::builder().open(&path).unwrap();
    let index = path.to_str().unwrap().to_string();
    let delete = ["delete", &index, "--kind", "chunks", "n0001"].map(str::to_string);
    let output = ruche(&delete.each_ref().map(String::as_str));
    assert_code(&output, 2);
    assert!(stderr(&output).contains("is locked"), "{}", stderr(&output));
    let waiter = std::thread::spawn(move || {
        let mut args = delete.to_vec();
        args.extend(["--wait".to_string(), "20".to_string()]);
        ruche(&args.iter().map(String::as_str).collect::<Vec<_>>())
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(holder);
    let output = waiter.join().unwrap();
    assert_code(&output, 0);
    assert_eq!(counts(&path), (1, 2));
    let err = Engine::builder()
        .with_wait(std::time::Duration::from_millis(50))
        .open(&path)
        .and_then(|engine| {
            let second = Engine::builder()
                .with_wait(std::time::Duration::from_millis(50))
                .open(&path);
            drop(engine);
            second
        })
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Locked { .. }), "{err}");
}

#[test]
fn bounded_numbers_are_checked_the_same_everywhere() {
    let engine = Engine::builder().temporary().unwrap();
    engine.upsert_chunks(notes(0..3)).unwrap();
    engine.commit().unwrap();
    for request in [
        SearchRequest::chunks("note").with_top_k(1_000_001),
        SearchRequest::chunks("note").with_top_k(0),
        SearchRequest::chunks("note").with_max_k(0),
        SearchRequest::chunks("note").with_max_k(2_000_000),
        SearchRequest::chunks("note").with_min_k(50).with_max_k(2),
    ] {
        let err = engine.search(&request).unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidInput { .. }),
            "{err}"
        );
    }
    assert_eq!(
        engine
            .search(&SearchRequest::chunks("note").with_top_k(1_000_000))
            .unwrap()
            .hits
            .len(),
        3
    );
    let err = Config::from_toml("[pipeline.retrieval]\nmax_k = 2000000\n").unwrap_err();
    assert!(
        err.to_string().contains("pipeline.retrieval.max_k"),
        "{err}"
    );
    // Query text is words, never syntax.
    for text in [
        "AND", "(", "\"", "*", "~2", "^3", "[x TO y]", "field:", "a OR (b", "\\",
    ] {
        for request in [SearchRequest::chunks(text), SearchRequest::rules(text)] {
            engine.search(&request).unwrap();
        }
    }
}

#[test]
fn bad_records_get_one_line_number_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("index");
    let index = index.to_str().unwrap();
    let cases = [
        (
            "{\"id\": \"a\", \"content\": \"x\"}\n{\"id\": \"b\", \"content\": \"y\", \"importance\": \"high\"}\n",
            "line 2: field `importance`",
        ),
        (
            "{\"id\": \"  \", \"content\": \"x\"}\n",
            "line 1: invalid input: `id` must not be empty or blank",
        ),
        (
            "{\"id\": \"a\", \"content\": \" \"}\n",
            "line 1: invalid input: chunk `a`: `content` must not be empty",
        ),
        (
            "{\"id\": \"a\", \"content\": \"x\"}\n{\"id\": \"b\", \"content\": \"y\"}\n{\"id\": \"a\", \"content\": \"z\"}\n",
            "line 3: duplicate id `a` (tenant `default`) first at line 1",
        ),
        (
            "{\"id\": \"a\", \"content\": \"x\", \"colour\": 1}\n",
            "line 1: field `colour`: unknown field `colour`",
        ),
    ];
    // Past the reader's batches of 4,096 lines, read ahead and checked in parallel: the
    // first bad line is named, whichever comes later in the file.
    let long = |bad: &[(usize, &str)]| {
        (1..=10_000)
            .map(|line| match bad.iter().find(|(at, _)| *at == line) {
                Some((_, text)) => format!("{text}\n"),
                None => format!("{{\"id\": \"c{line}\", \"content\": \"note {line}\"}}\n"),
            })
            .collect::<String>()
    };
    let long_cases = [
        (
            long(&[(5_000, "{\"id\": 5}"), (9_000, "not json"), (9_500, "{")]),
            "line 5000: field `id`",
        ),
        (
            long(&[
                (8_193, "{\"id\": \"x\", \"content\": \"\"}"),
                (9_999, "{\"id\": \" \", \"content\": \"y\"}"),
            ]),
            "line 8193: invalid input: chunk `x`",
        ),
        (
            long(&[(9_000, "{\"id\": \"c7\", \"content\": \"again\"}")]),
            "line 9000: duplicate id `c7` (tenant `default`) first at line 7",
        ),
    ];
    let cases = cases
        .map(|(content, expected)| (content.to_string(), expected))
        .into_iter()
        .chain(long_cases);
    for (content, expected) in cases {
        let file = dir.path().join("chunks.jsonl");
        std::fs::write(&file, content).unwrap();
        let output = ruche(&["index", index, "--chunks", file.to_str().unwrap()]);
        assert_code(&output, 2);
        let message = stderr(&output);
        assert!(message.contains(expected), "{message}");
        if !expected.contains("duplicate") {
            assert_eq!(
                message.matches("line ").count(),
                1,
                "one line number: {message}"
            );
        }
        assert!(!Path::new(index).exists(), "nothing created: {message}");
    }
    let rules = dir.path().join("rules.jsonl");
    std::fs::write(
        &rules,
        "{\"id\": \"r\", \"condition\": \"c\", \"action\": \"\"}\n",
    )
    .unwrap();
    let output = ruche(&["index", index, "--rules", rules.to_str().unwrap()]);
    assert_code(&output, 2);
    assert!(
        stderr(&output).contains("`action` must not be empty"),
        "{}",
        stderr(&output)
    );
    // A byte-order mark is not an error.
    let file = dir.path().join("bom.jsonl");
    std::fs::write(&file, "\u{feff}{\"id\": \"a\", \"content\": \"hello\"}\n").unwrap();
    assert_code(
        &ruche(&["index", index, "--chunks", file.to_str().unwrap()]),
        0,
    );
}

#[test]
fn export_is_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first");
    let first = first.to_str().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../index_data");
    let output = ruche(&[
        "index",
        first,
        "--rules",
        root.join("rules.toml").to_str().unwrap(),
        "--chunks",
        root.join("chunks.jsonl").to_str().unwrap(),
    ]);
    assert_code(&output, 0);
    let exported = ruche(&["export", first]);
    assert_code(&exported, 0);
    let file = dir.path().join("export.jsonl");
    std::fs::write(&file, &exported.stdout).unwrap();
    let second = dir.path().join("second");
    let second = second.to_str().unwrap();
    assert_code(
        &ruche(&["index", second, "--records", file.to_str().unwrap()]),
        0,
    );
    let again = ruche(&["export", second]);
    assert_eq!(stdout(&again), stdout(&exported));
    let engine = Engine::builder().open(second).unwrap();
    assert_eq!(engine.stats().rules, 145);
    assert_eq!(engine.stats().chunks, 362);
    assert!(
        engine
            .get(Kind::Rule, "acme-sports", "acme-refund")
            .unwrap()
            .is_some()
    );
}

#[test]
fn feedback_counts_once_per_query() {
    let engine = Engine::builder().temporary().unwrap();
    engine
        .upsert_rules(
            [Rule::new("refund", "the customer wants a refund", "refund")
                .with_patterns(["I want my money back"])],
        )
        .unwrap();
    engine.commit().unwrap();
    let response = engine
        .search(&SearchRequest::rules("I want my money back"))
        .unwrap();
    let once = engine.feedback(&response.query_id, true).unwrap();
    let twice = engine.feedback(&response.query_id, true).unwrap();
    assert_eq!(once, twice);
    let err = engine.feedback(&response.query_id, false).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::InvalidInput { .. }),
        "{err}"
    );
}

#[test]
fn stats_after_open_report_the_loaded_graph() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    {
        let engine = Engine::builder().create(&path).unwrap();
        engine.upsert_chunks(notes(0..50)).unwrap();
        engine.commit().unwrap();
        engine.close().unwrap();
    }
    let engine = Engine::builder().open(&path).unwrap();
    let stats = engine.stats();
    assert_eq!(stats.chunk_graph.points, 50, "{stats:?}");
    assert_eq!(stats.chunk_graph.checkpoint_seq, stats.last_seq);
}

/// The engine is shared between threads as is.
#[test]
fn the_engine_is_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Engine>();
}

/// Every file under `dir`, searched for `needle` (bytes).
fn files_containing(dir: &Path, needle: &[u8]) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    collect_files(dir, &mut files);
    files
        .into_iter()
        .filter(|f| {
            let bytes = std::fs::read(f).unwrap_or_default();
            bytes.windows(needle.len()).any(|w| w == needle)
        })
        .collect()
}

#[test]
fn forgetting_is_real_after_compact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let secret: Vec<f32> = vec![0.123_456_7, -0.765_432_1, 0.314_159_2, 0.271_828_2];
    let secret_bytes: Vec<u8> = secret.iter().flat_map(|x| x.to_le_bytes()).collect();
    {
        let engine = Engine::builder()
            .with_embedder_spec(EmbedderSpec::None)
            .create(&path)
            .unwrap();
        let other = |i: usize| {
            Chunk::new(format!("keep{i}"), format!("an ordinary note number {i}"))
                .with_embedding(vec![1.0, i as f32, 0.5, 0.25])
        };
        engine.upsert_chunks((0..200).map(other)).unwrap();
        engine
            .upsert_chunks([
                Chunk::new("zebra", "the password hint is ZEBRA-UNIQUE-4242")
                    .with_embedding(secret.clone()),
                Chunk::new("a1", "acme note ACME-SECRET-777")
                    .with_tenant("acme")
                    .with_embedding(vec![0.0, 0.0, 1.0, 0.0]),
            ])
            .unwrap();
        engine
            .upsert_rules([Rule::new("a2", "acme rule ACME-RULE-888", "do it").with_tenant("acme")])
            .unwrap();
        engine.commit().unwrap();
        engine.sync_graph().unwrap();
        engine.close().unwrap();
    }
    let index = path.to_str().unwrap();
    assert_code(&ruche(&["delete", index, "--kind", "chunks", "zebra"]), 0);
    let output = ruche(&["delete", index, "--tenant", "acme", "--all"]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("deleted 2 documents"),
        "{}",
        stdout(&output)
    );
    let output = ruche(&["stats", index, "--tenant", "acme", "--json"]);
    assert_code(&output, 0);
    assert!(
        stdout(&output).contains("\"rules\":0,\"chunks\":0"),
        "{}",
        stdout(&output)
    );
    let output = ruche(&["compact", index]);
    assert_code(&output, 0);
    for needle in [
        b"ZEBRA-UNIQUE-4242".as_slice(),
        b"zebra-unique-4242",
        b"ACME-SECRET-777",
        b"acme-secret-777",
        b"ACME-RULE-888",
        b"acme-rule-888",
        &secret_bytes,
    ] {
        let found = files_containing(&path, needle);
        assert!(
            found.is_empty(),
            "{:?} still in {found:?}",
            String::from_utf8_lossy(needle)
        );
    }
    assert_eq!(counts(&path), (0, 200));
    assert_code(&ruche(&["check", index]), 0);
    let engine = Engine::builder().open(&path).unwrap();
    let hits = engine
        .search(&SearchRequest::chunks("ordinary note number 7").with_top_k(3))
        .unwrap()
        .hits;
    assert_eq!(hits[0].id, "keep7");
}

#[test]
fn a_backup_taken_while_writing_is_one_committed_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let engine = std::sync::Arc::new(
        Engine::builder()
            .with_embedder_spec(EmbedderSpec::None)
            .create(&path)
            .unwrap(),
    );
    let writer = {
        let engine = std::sync::Arc::clone(&engine);
        std::thread::spawn(move || {
            for batch in 0..30 {
                engine
                    .upsert_chunks(notes(batch * 50..batch * 50 + 50))
                    .unwrap();
                engine.commit().unwrap();
            }
        })
    };
    let mut copies = Vec::new();
    for i in 0..4 {
        std::thread::sleep(std::time::Duration::from_millis(30));
        let dest = dir.path().join(format!("backup{i}"));
        engine.backup(&dest).unwrap();
        copies.push(dest);
    }
    writer.join().unwrap();
    for dest in copies {
        let (rules, chunks) = counts(&dest);
        assert_eq!(rules, 0);
        assert_eq!(chunks % 50, 0, "whole commits only: {chunks}");
        let copy = Engine::builder().open(&dest).unwrap();
        for i in (0..chunks).step_by(17) {
            let id = format!("n{i:04}");
            assert!(
                copy.get(Kind::Chunk, "default", &id).unwrap().is_some(),
                "{id}"
            );
        }
        assert!(
            copy.get(Kind::Chunk, "default", &format!("n{chunks:04}"))
                .unwrap()
                .is_none()
        );
        drop(copy);
        assert_code(&ruche(&["check", dest.to_str().unwrap()]), 0);
    }
    let err = engine.backup(dir.path().join("backup0")).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::IndexExists { .. }), "{err}");
}

mod tenants {
    //! One tenant cannot measure another: nothing a tenant sees changes when another
    //! tenant's documents change.

    use proptest::prelude::*;
    use ruchedb::{Chunk, Config, EmbedderSpec, Engine, Rule, SearchRequest};

    const WORDS: [&str; 10] = [
        "refund", "parcel", "tent", "boots", "label", "invoice", "stove", "jacket", "order", "late",
    ];

    fn text(words: &[u8]) -> String {
        let mut text: Vec<&str> = words.iter().map(|w| WORDS[usize::from(*w) % 10]).collect();
        text.push("note");
        text.join(" ")
    }

    fn vector(words: &[u8]) -> Vec<f32> {
        let mut v = vec![0.1f32; 10];
        for w in words {
            v[usize::from(*w) % 10] += 1.0;
        }
        v
    }

    fn corpus(tenant: &str, docs: &[Vec<u8>]) -> (Vec<Rule>, Vec<Chunk>) {
        let rules = docs
            .iter()
            .enumerate()
            .take(6)
            .map(|(i, words)| {
                Rule::new(format!("r{i}"), text(words), "act")
                    .with_tenant(tenant)
                    .with_priority(i as i32 * 10)
                    .with_embedding(vector(words))
            })
            .collect();
        let chunks = docs
            .iter()
            .enumerate()
            .map(|(i, words)| {
                Chunk::new(format!("c{i}"), text(words))
                    .with_tenant(tenant)
                    .with_importance((i % 10) as u8 + 1)
                    .with_embedding(vector(words))
            })
            .collect();
        (rules, chunks)
    }

    fn engine(a: &[Vec<u8>], b: &[Vec<u8>], b_deletes: usize) -> Engine {
        let mut config = Config::default();
        config.fusion.feedback = true;
        let engine = Engine::builder()
            .with_config(config)
            .with_embedder_spec(EmbedderSpec::None)
            .temporary()
            .unwrap();
        for (tenant, docs) in [("a", a), ("b", b)] {
            let (rules, chunks) = corpus(tenant, docs);
            engine.upsert_rules(rules).unwrap();
            engine.upsert_chunks(chunks).unwrap();
        }
        engine.commit().unwrap();
        for i in 0..b_deletes.min(b.len()) {
            engine.delete(ruchedb::Kind::Chunk, "b", &format!("c{i}"));
        }
        engine.commit().unwrap();
        engine
    }

    /// What tenant `a` sees of a search: everything but the query id and timings.
    fn seen(engine: &Engine, request: &SearchRequest) -> String {
        let response = engine.search(request).unwrap();
        let hits: Vec<String> = response
            .hits
            .iter()
            .map(|h| format!("{} {:?} {:?}", h.id, h.score, h.breakdown))
            .collect();
        format!(
            "{hits:?} {:?} {:?} {:?} {:?}",
            response.selection, response.fusion, response.gate, response.leg_candidates
        )
    }

    fn docs() -> impl Strategy<Value = Vec<Vec<u8>>> {
        prop::collection::vec(prop::collection::vec(0u8..10, 1..6), 1..25)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

        #[test]
        fn nothing_of_tenant_a_depends_on_tenant_b(
            a in docs(),
            b1 in docs(),
            b2 in docs(),
            deletes in 0usize..10,
            queries in prop::collection::vec(prop::collection::vec(0u8..10, 1..4), 1..6),
        ) {
            let one = engine(&a, &b1, 0);
            let two = engine(&a, &b2, deletes);
            // Tenant b gives feedback in the second index only.
            for q in &queries {
                let response = two
                    .search(&SearchRequest::chunks(text(q)).with_tenant("b").with_min_relevance(0.0))
                    .unwrap();
                if !response.hits.is_empty() {
                    two.feedback(&response.query_id, false).unwrap();
                }
            }
            for q in &queries {
                for request in [
                    SearchRequest::chunks(text(q)).with_tenant("a").with_embedding(vector(q)),
                    SearchRequest::chunks(text(q)).with_tenant("a").with_embedding(vector(q)).with_min_relevance(0.0).with_top_k(10),
                    SearchRequest::rules(text(q)).with_tenant("a").with_embedding(vector(q)).with_min_relevance(0.0).with_top_k(10),
                    SearchRequest::chunks(text(q)).with_tenant("a").with_min_relevance(0.0).with_top_k(10),
                ] {
                    prop_assert_eq!(seen(&one, &request), seen(&two, &request));
                }
            }
            for kind in ruchedb::Kind::ALL {
                prop_assert_eq!(one.tenant_count("a", kind), two.tenant_count("a", kind));
            }
            prop_assert_eq!(
                one.export(ruchedb::Kind::Chunk, Some("a")).unwrap(),
                two.export(ruchedb::Kind::Chunk, Some("a")).unwrap()
            );
            for kind in [ruchedb::Kind::Rule, ruchedb::Kind::Chunk] {
                prop_assert_eq!(one.feedback_window("a", kind), two.feedback_window("a", kind));
            }
        }
    }
}
