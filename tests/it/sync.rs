//! `Engine::sync`: an index kept in line with a tree of Markdown and text files.

use std::fs;
use std::path::{Path, PathBuf};

use ruchedb::engine::{FileChange, SyncOptions, SyncReport};
use ruchedb::{Chunk, Engine, ErrorKind, Kind, SearchRequest, TurnRequest};

use crate::common::ids;

fn write(root: &Path, name: &str, text: &str) {
    let path = root.join(name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// A small documentation tree: three Markdown files, a text file, a file of no format
/// sync reads, an ignored file and a hidden one.
fn tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "docs/install.md",
        "---\nowner: platform\n---\n# Install\n\nDownload the archive.\n\n## Linux\n\n### From source\n\nRun `make install` as root, then start the daemon with systemd.\n",
    );
    write(
        root,
        "docs/usage.md",
        "# Usage\n\nStart the server with `ruche serve`. Stop it with Ctrl-C.\n",
    );
    write(
        root,
        "docs/faq/billing.md",
        "# Billing\n\nInvoices are sent on the first day of each month by email.\n",
    );
    write(
        root,
        "notes.txt",
        "The staging cluster is rebuilt every Sunday night.\n",
    );
    write(root, "logo.png", "not an image");
    write(root, ".gitignore", "drafts/\n");
    write(
        root,
        "drafts/secret.md",
        "# Secret\n\nThe launch date is a secret.\n",
    );
    write(root, ".hidden/notes.md", "# Hidden\n\nNever read.\n");
    dir
}

fn sync(engine: &Engine, root: &Path) -> SyncReport {
    engine.sync(&[root], &SyncOptions::default()).unwrap()
}

fn synced_paths(engine: &Engine) -> Vec<String> {
    let mut paths: Vec<String> = engine
        .export(Kind::Chunk, None)
        .unwrap()
        .iter()
        .filter_map(|d| d.as_chunk()?.source.as_ref().map(|s| s.path.clone()))
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn name(root: &Path, file: &str) -> String {
    ruchedb::files::walk::name_of(&root.join(file)).unwrap()
}

fn changes(report: &SyncReport) -> Vec<(String, FileChange)> {
    report
        .files
        .iter()
        .map(|f| (f.path.rsplit('/').next().unwrap().to_string(), f.change))
        .collect()
}

#[test]
fn a_second_sync_of_the_same_tree_changes_nothing() {
    let dir = tree();
    let root = dir.path();
    let engine = Engine::builder().temporary().unwrap();
    let first = sync(&engine, root);
    assert_eq!(
        (first.added, first.changed, first.removed, first.failed),
        (4, 0, 0, 0),
        "{first:#?}"
    );
    // .gitignore'd and hidden files are not walked; the image is of no format sync reads.
    assert_eq!(first.other_files, 1, "{first:#?}");
    assert_eq!(
        synced_paths(&engine),
        [
            name(root, "docs/faq/billing.md"),
            name(root, "docs/install.md"),
            name(root, "docs/usage.md"),
            name(root, "notes.txt"),
        ]
    );
    let again = sync(&engine, root);
    assert_eq!(again.changes(), 0, "{again:#?}");
    assert_eq!((again.unchanged, again.documents_written), (4, 0));
    assert!(again.files.is_empty());
}

#[test]
fn an_edit_re_reads_one_file_and_a_deleted_file_s_chunks_go() {
    let dir = tree();
    let root = dir.path();
    let engine = Engine::builder().temporary().unwrap();
    sync(&engine, root);
    write(
        root,
        "docs/usage.md",
        "# Usage\n\nStart the server with `ruche serve --port 7700`.\n",
    );
    let edited = sync(&engine, root);
    assert_eq!(changes(&edited), [("usage.md".into(), FileChange::Changed)]);
    assert_eq!(edited.unchanged, 3);
    let usage = engine
        .get(
            Kind::Chunk,
            "default",
            &format!("{}#1", name(root, "docs/usage.md")),
        )
        .unwrap()
        .unwrap();
    assert!(usage.as_chunk().unwrap().content.contains("--port 7700"));

    fs::remove_file(root.join("docs/faq/billing.md")).unwrap();
    fs::rename(root.join("notes.txt"), root.join("staging.txt")).unwrap();
    let moved = sync(&engine, root);
    let mut seen = changes(&moved);
    seen.sort();
    assert_eq!(
        seen,
        [
            ("billing.md".into(), FileChange::Removed),
            ("notes.txt".into(), FileChange::Removed),
            ("staging.txt".into(), FileChange::Added),
        ]
    );
    let hits = engine
        .search(&SearchRequest::chunks("when are invoices sent").with_top_k(10))
        .unwrap();
    assert!(
        hits.hits.iter().all(|h| !h.id.contains("billing")),
        "{:?}",
        hits.hits
    );
    // The file's chunks come back when it does.
    write(
        root,
        "docs/faq/billing.md",
        "# Billing\n\nInvoices go out monthly.\n",
    );
    assert_eq!(sync(&engine, root).added, 1);
}

#[test]
fn hand_indexed_documents_survive_every_sync_and_are_never_replaced() {
    let dir = tree();
    let root = dir.path();
    let engine = Engine::builder().temporary().unwrap();
    let usage_id = format!("{}#1", name(root, "docs/usage.md"));
    // A chunk indexed by hand, even one naming a file of the tree as its source (without
    // a hash: sync did not make it), and one whose id a file's chunk would take.
    engine
        .upsert_chunks([
            Chunk::new("mine", "The on-call phone number is in the wiki.")
                .with_source(ruchedb::Source::new(name(root, "docs/install.md"))),
            Chunk::new(usage_id.clone(), "A note of my own."),
        ])
        .unwrap();
    engine.commit().unwrap();
    let first = sync(&engine, root);
    assert_eq!(changes(&first).len(), 4, "{first:#?}");
    let failed: Vec<_> = first
        .files
        .iter()
        .filter(|f| f.change == FileChange::Failed)
        .collect();
    assert_eq!(failed.len(), 1, "{first:#?}");
    assert!(failed[0].path.ends_with("docs/usage.md"));
    assert!(failed[0].error.as_deref().unwrap().contains("did not make"));
    fs::remove_dir_all(root.join("docs")).unwrap();
    fs::remove_file(root.join("notes.txt")).unwrap();
    let emptied = sync(&engine, root);
    assert_eq!(emptied.removed, 3, "{emptied:#?}");
    let mut left: Vec<String> = engine
        .export(Kind::Chunk, None)
        .unwrap()
        .iter()
        .map(|d| d.id().to_string())
        .collect();
    left.sort();
    let mut expected = vec!["mine".to_string(), usage_id];
    expected.sort();
    assert_eq!(left, expected);
    let mine = engine.get(Kind::Chunk, "default", "mine").unwrap().unwrap();
    assert!(mine.as_chunk().unwrap().content.contains("on-call"));
}

#[test]
fn a_file_that_cannot_be_read_is_named_and_the_others_are_synced() {
    let dir = tree();
    let root = dir.path();
    let engine = Engine::builder().temporary().unwrap();
    sync(&engine, root);
    // A front matter broken on its third line, and bytes that are not UTF-8.
    write(
        root,
        "docs/install.md",
        "---\nowner: platform\ntags: [unclosed\n---\n# Install\n\nNew text.\n",
    );
    fs::write(root.join("docs/binary.md"), b"# Title\n\n\xff\xfe bad\n").unwrap();
    write(
        root,
        "docs/usage.md",
        "# Usage\n\nRun `ruche serve` in a terminal.\n",
    );
    let report = sync(&engine, root);
    assert_eq!((report.failed, report.changed), (2, 1), "{report:#?}");
    let install = report
        .files
        .iter()
        .find(|f| f.path.ends_with("install.md"))
        .unwrap();
    assert_eq!(install.change, FileChange::Failed);
    assert!(matches!(install.line, Some(3..=4)), "{install:?}");
    assert!(
        install.error.as_deref().unwrap().contains("YAML"),
        "{install:?}"
    );
    assert_eq!(install.documents, 1, "its previous chunks are counted");
    let binary = report
        .files
        .iter()
        .find(|f| f.path.ends_with("binary.md"))
        .unwrap();
    assert_eq!(binary.line, Some(3));
    // The broken file's previous version is still searchable; the good edit landed.
    let old = engine
        .search(&SearchRequest::chunks("make install from source").with_top_k(10))
        .unwrap();
    assert!(old.hits.iter().any(|h| h.id.contains("install.md")));
    let usage = engine
        .get(
            Kind::Chunk,
            "default",
            &format!("{}#1", name(root, "docs/usage.md")),
        )
        .unwrap()
        .unwrap();
    assert!(usage.as_chunk().unwrap().content.contains("terminal"));
    // Fixed, it syncs.
    write(root, "docs/install.md", "# Install\n\nNew text.\n");
    let fixed = sync(&engine, root);
    assert_eq!((fixed.changed, fixed.failed), (1, 1), "{fixed:#?}");
}

#[test]
fn a_hit_points_to_its_file_lines_and_heading_path_which_is_searched() {
    let dir = tree();
    let root = dir.path();
    let index = tempfile::tempdir().unwrap();
    let small = SyncOptions::default().with_chunk_tokens(16);
    {
        let engine = Engine::builder().create(index.path()).unwrap();
        engine.sync(&[root], &small).unwrap();
        engine.close().unwrap();
    }
    // Reopened: the source is stored with the chunk.
    let engine = Engine::builder().open(index.path()).unwrap();
    let all = engine.export(Kind::Chunk, None).unwrap();
    let make = all
        .iter()
        .filter_map(|d| d.as_chunk())
        .find(|c| c.content.contains("make install"))
        .unwrap();
    let source = make.source.as_ref().unwrap();
    assert!(source.path.ends_with("docs/install.md"), "{source:?}");
    assert_eq!(source.headings, ["Install", "Linux", "From source"]);
    // The front matter took lines 1-3; the sentence is on line 12.
    assert_eq!(source.lines, Some([12, 12]));
    assert!(source.hash.is_some());
    assert_eq!(make.metadata["owner"], "platform");
    // "from source" is in its heading path, not in its text: the heading is searched.
    assert!(!make.content.to_lowercase().contains("source"));
    let response = engine
        .search(&SearchRequest::chunks("build from source on linux").with_top_k(10))
        .unwrap();
    assert!(
        response.hits.iter().any(|h| h.id == make.id),
        "{:?}",
        ids(&response.hits)
    );
    let rendered = engine
        .turn(&TurnRequest::new("how do I build from source on linux"))
        .unwrap()
        .render();
    assert!(
        rendered.contains(&format!("({}:", source.path)),
        "{rendered}"
    );
}

#[test]
fn a_dry_run_changes_nothing_and_a_missing_path_is_an_error() {
    let dir = tree();
    let root = dir.path();
    let engine = Engine::builder().temporary().unwrap();
    let dry = engine
        .sync(&[root], &SyncOptions::default().with_dry_run(true))
        .unwrap();
    assert_eq!((dry.added, dry.dry_run), (4, true));
    assert_eq!(engine.export(Kind::Chunk, None).unwrap().len(), 0);
    sync(&engine, root);
    let before = engine.export(Kind::Chunk, None).unwrap();
    let missing: PathBuf = root.join("doc");
    let err = engine
        .sync(&[missing.as_path()], &SyncOptions::default())
        .unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io { .. }), "{err}");
    assert!(err.to_string().contains("doc"), "{err}");
    assert_eq!(engine.export(Kind::Chunk, None).unwrap(), before);
    // A sync of one folder leaves the files of another alone.
    let docs = sync(&engine, &root.join("docs/faq"));
    assert_eq!((docs.unchanged, docs.changes()), (1, 0));
    assert_eq!(engine.export(Kind::Chunk, None).unwrap(), before);
    // Another chunk size re-cuts every file.
    let recut = engine
        .sync(&[root], &SyncOptions::default().with_chunk_tokens(16))
        .unwrap();
    assert_eq!(recut.changed, 4, "{recut:#?}");
    assert!(recut.documents_written > before.len());
    let bad = engine.sync(&[root], &SyncOptions::default().with_chunk_tokens(1));
    assert!(bad.is_err());
}

#[test]
fn a_sync_from_another_folder_or_for_another_agent_never_loses_documents() {
    let dir = tree();
    let root = dir.path();
    let engine = Engine::builder().temporary().unwrap();
    let whole = SyncOptions::default().with_base(root);
    assert_eq!(engine.sync(&["."], &whole).unwrap().added, 4);
    let before = engine.export(Kind::Chunk, None).unwrap();
    // The same tree seen from `docs/`: another folder's documents, compared with none.
    let from_docs = engine
        .sync(&["."], &SyncOptions::default().with_base(root.join("docs")))
        .unwrap();
    assert_eq!(
        (from_docs.removed, from_docs.added),
        (0, 3),
        "{from_docs:#?}"
    );
    let after = engine.export(Kind::Chunk, None).unwrap();
    for doc in &before {
        assert!(after.contains(doc), "{} lost", doc.id());
    }
    // Another agent: every file is read again, and its documents are that agent's.
    let agent = engine
        .sync(&["."], &whole.clone().with_agent("support-bot"))
        .unwrap();
    assert_eq!(agent.changed, 4, "{agent:#?}");
    let usage = engine
        .get(Kind::Chunk, "default", "docs/usage.md#1")
        .unwrap()
        .unwrap();
    assert_eq!(usage.agent_id(), Some("support-bot"));
}
