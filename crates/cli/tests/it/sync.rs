//! `ruche sync` as a user runs it: what it prints, its exit codes, hits that point back to
//! their files.

use std::path::Path;

use serde_json::Value;

use crate::cli::{assert_code, stdout};
use crate::run::OutputWithin;

fn write(root: &Path, name: &str, text: &str) {
    let path = root.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// `ruche ARGS` run in `dir`.
fn ruche_in(dir: &Path, args: &[&str]) -> std::process::Output {
    crate::run::command(args).current_dir(dir).output_within()
}

#[test]
fn sync_prints_what_it_did_names_a_bad_file_and_hits_point_to_their_lines() {
    let tree = tempfile::tempdir().unwrap();
    let root = tree.path();
    write(
        root,
        "docs/install.md",
        "# Install\n\n## Linux\n\nRun `make install` as root.\n",
    );
    write(
        root,
        "docs/usage.md",
        "# Usage\n\nStart the server with `ruche serve`.\n",
    );
    // A new index is not created by a dry run.
    let dry = ruche_in(root, &["sync", "idx", "docs", "--dry-run"]);
    assert_code(&dry, 0);
    assert!(
        stdout(&dry).contains("would be added    docs/install.md (1 document)"),
        "{}",
        stdout(&dry)
    );
    assert!(!root.join("idx").exists());

    let first = ruche_in(root, &["sync", "idx", "docs"]);
    assert_code(&first, 0);
    let out = stdout(&first);
    assert!(
        out.contains("added    docs/install.md (1 document)"),
        "{out}"
    );
    assert!(
        out.contains("2 added, 0 changed, 0 removed, 0 unchanged"),
        "{out}"
    );

    let again = ruche_in(root, &["sync", "idx", "docs", "--json"]);
    assert_code(&again, 0);
    let report: Value = serde_json::from_str(stdout(&again).trim()).unwrap();
    assert_eq!(report["unchanged"], 2);
    assert_eq!(report["added"], 0);
    assert_eq!(report["files"], serde_json::json!([]));

    let search = ruche_in(
        root,
        &[
            "search",
            "idx",
            "make install on linux",
            "--kind",
            "chunks",
            "--json",
        ],
    );
    assert_code(&search, 0);
    let response: Value = serde_json::from_str(stdout(&search).lines().next().unwrap()).unwrap();
    let top = &response["hits"][0];
    assert_eq!(top["location"], "docs/install.md:1-5");
    assert_eq!(top["source"]["headings"], serde_json::json!(["Install"]));
    let text = ruche_in(
        root,
        &["search", "idx", "make install on linux", "--kind", "chunks"],
    );
    assert!(
        stdout(&text).contains("[docs/install.md:1-5]"),
        "{}",
        stdout(&text)
    );

    // A broken front matter: named with its line, exit 1, the rest synced.
    write(
        root,
        "docs/bad.md",
        "---\ntitle: ok\nglobs: [\"*.py\"\n---\nBody\n",
    );
    std::fs::remove_file(root.join("docs/usage.md")).unwrap();
    let broken = ruche_in(root, &["sync", "idx", "docs"]);
    assert_code(&broken, 1);
    let out = stdout(&broken);
    assert!(out.contains("failed   docs/bad.md:"), "{out}");
    assert!(out.contains("front matter is not valid YAML"), "{out}");
    assert!(out.contains("removed  docs/usage.md (1 document)"), "{out}");
    assert!(out.contains("1 failed"), "{out}");

    // A mistyped path changes nothing and exits 2.
    let missing = ruche_in(root, &["sync", "idx", "doc"]);
    assert_code(&missing, 2);
    let export = ruche_in(root, &["export", "idx"]);
    assert_code(&export, 0);
    assert!(
        stdout(&export).contains("docs/install.md#1"),
        "{}",
        stdout(&export)
    );
}
