//! No document points at a file that does not exist: every relative Markdown link and
//! every repository path a document or a source file names (`src/rank/mod.rs`,
//! `docs/format.md`, `ARCHITECTURE.md`) is a file or directory of the repository.
//! Standard library only.

use std::path::{Path, PathBuf};

/// The extensions of the paths checked outside Markdown links.
const EXTENSIONS: &[&str] = &["md", "rs", "toml", "py", "sh", "jsonl", "json"];

/// Names a path may be given without a directory and still be checked (besides any
/// `.md`): the repository's root files.
const ROOT_FILES: &[&str] = &["Cargo.toml", "Cargo.lock", "rustfmt.toml"];

/// Path segments that stand for a user's value (`DIR/rules.toml`, `PATH.json`).
const PLACEHOLDERS: &[&str] = &[
    "DIR", "PATH", "FILE", "NAME", "KIND", "OP", "N", "SPEC", "BASE",
];

/// Paths that name a user's files, not the repository's: in example queries, inside an
/// index directory, a model directory and an evaluation set.
const USER_PATHS: &[&str] = &[
    "src/main.rs",
    "src/index.md",
    "docs/guide.md",
    "text/meta.json",
    "1_Pooling/config.json",
    "clinc150/domains.json",
    // The files `ruche sync` reads, by the names their formats give them, and examples
    // of a user's tree.
    "AGENTS.md",
    "CLAUDE.md",
    "SKILL.md",
    "docs/a.md",
    "docs//a.md",
    "docs/install.md",
    "install.md",
    "skills/x/SKILL.md",
    ".claude/CLAUDE.md",
    // The gateway's servers, a user's file.
    "servers.json",
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether `path` is not a repository path to check: outside the repository
/// (`../shared/...`, an absolute path), one of [`USER_PATHS`], or a placeholder
/// (`<dir>/x.toml`, `{name}.rs`, `crates/*/README.md`, `DIR/rules.toml`).
fn allowed(path: &str) -> bool {
    path.starts_with("../shared/")
        || path.starts_with('/')
        || USER_PATHS.contains(&path)
        || path.contains(['<', '>', '{', '}', '*', '$', '~', '%'])
        || path.split('/').any(|segment| {
            let stem = segment.split('.').next().unwrap_or(segment);
            PLACEHOLDERS.contains(&segment) || PLACEHOLDERS.contains(&stem)
        })
}

/// The path of a bare mention, if it is one to check: a file name with one of
/// [`EXTENSIONS`] that has a directory, is a Markdown document or is a root file.
fn bare_path(token: &str) -> Option<&str> {
    if token.contains("://") {
        return None;
    }
    let token = token.trim_start_matches("./");
    let token = token.split('#').next().unwrap_or(token);
    // `src/lib.rs:42`: the file.
    let token = match token.split_once(':') {
        Some((file, rest)) if rest.bytes().all(|b| b.is_ascii_digit() || b == b':') => file,
        Some(_) => return None,
        None => token,
    };
    let token = token.trim_end_matches(['.', ',', '!', '?']);
    let (stem, extension) = token.rsplit_once('.')?;
    let named = !stem.is_empty() && !stem.ends_with('/') && EXTENSIONS.contains(&extension);
    let checked = token.contains('/') || extension == "md" || ROOT_FILES.contains(&token);
    (named && checked && !allowed(token)).then_some(token)
}

/// The target of each relative Markdown link of `line` (`[text](target)`), its anchor
/// and title dropped; in a Rust file, links to items (`[x](crate::a::B)`) are not paths.
fn link_targets(line: &str, rust: bool) -> Vec<&str> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find(')').unwrap_or(after.len());
        let target = after[..end].split_whitespace().next().unwrap_or("");
        rest = &after[end..];
        let target = target.trim_matches(['<', '>']);
        let file = target.split('#').next().unwrap_or("");
        let external = target.contains(':') && !target.contains("::")
            || target.starts_with("mailto")
            || file.is_empty();
        let item = rust && (target.contains("::") || !target.contains(['/', '.']));
        if !external && !item && !allowed(file) {
            targets.push(file);
        }
    }
    targets
}

/// Every reference of `text` (the document `doc`, a path under `root`) that names no
/// file or directory relative to the document's directory or a directory above it in
/// the repository, as `doc:line: path`.
fn broken_references(root: &Path, doc: &Path, text: &str) -> Vec<String> {
    let relative = doc.strip_prefix(root).unwrap_or(doc);
    let rust = doc.extension().is_some_and(|e| e == "rs");
    let bases: Vec<&Path> = doc
        .ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(root))
        .collect();
    let exists = |path: &str| bases.iter().any(|base| base.join(path).exists());
    let mut broken = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let mut seen: Vec<&str> = Vec::new();
        let bare = line
            .split(|c: char| c.is_whitespace() || "`\"'()[],;|=\\".contains(c))
            .filter_map(bare_path);
        for path in link_targets(line, rust).into_iter().chain(bare) {
            if !seen.contains(&path) && !exists(path) {
                broken.push(format!("{}:{}: {path}", relative.display(), number + 1));
            }
            seen.push(path);
        }
    }
    broken
}

fn files_with_extension(dir: &Path, extension: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_with_extension(&path, extension, out);
        } else if path.extension().is_some_and(|e| e == extension) {
            out.push(path);
        }
    }
}

/// The documents checked: the root's Markdown, `docs/`, each crate's README, and the
/// Rust sources of the library, its examples and benches, and the crates.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CHANGELOG.md"]
        .iter()
        .map(|name| root.join(name))
        .filter(|path| path.exists())
        .collect();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            docs.push(path);
        }
    }
    let crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    for krate in &crates {
        let readme = krate.join("README.md");
        if readme.exists() {
            docs.push(readme);
        }
        files_with_extension(&krate.join("src"), "rs", &mut docs);
    }
    for dir in ["src", "examples", "benches"] {
        files_with_extension(&root.join(dir), "rs", &mut docs);
    }
    docs.sort();
    docs
}

#[test]
fn every_referenced_file_exists() {
    let root = root();
    let docs = documents(&root);
    assert!(docs.len() > 50, "documents not found: {}", docs.len());
    let mut broken = Vec::new();
    for doc in &docs {
        let text = std::fs::read_to_string(doc).unwrap();
        // A file's unit tests name made-up files of their own; they are no document.
        if doc.file_name().is_some_and(|name| name == "tests.rs") {
            continue;
        }
        let text = text.split("\n#[cfg(test)]").next().unwrap_or(&text);
        broken.extend(broken_references(&root, doc, text));
    }
    assert!(
        broken.is_empty(),
        "references to files that do not exist:\n{}",
        broken.join("\n")
    );
}

/// The checker itself: a planted broken link and path are found, with their lines; what
/// exists, URLs, anchors, items and placeholders are not.
#[test]
fn the_checker_finds_a_planted_broken_link() {
    let root = root();
    let doc = root.join("docs").join("planted.md");
    let text = "\
# Planted
See [the numbers](benchmarks.md#method), [the readme](../README.md) and [a site](https://example.com/x.md).
A broken [link](missing/nowhere.md) and `src/no_such_file.rs`, and DESIGN.md 3.5.
Fine: `src/lib.rs:12`, tests/it/docs.rs, Cargo.toml, [top](#planted), `rules.toml`,
`DIR/rules.toml`, `<dir>/chunks.jsonl`, `crates/*/README.md`, ../shared/seeds/README.md.
";
    assert_eq!(
        broken_references(&root, &doc, text),
        [
            "docs/planted.md:3: missing/nowhere.md",
            "docs/planted.md:3: src/no_such_file.rs",
            "docs/planted.md:3: DESIGN.md",
        ]
    );
    // In Rust, a link to an item is no path; one to a file is.
    let source = root.join("src").join("planted.rs");
    let text = "//! [`rank`](crate::rank::search_with), [`Engine`](Engine) and [gone](gone.md).";
    assert_eq!(
        broken_references(&root, &source, text),
        ["src/planted.rs:1: gone.md"]
    );
}

/// Every saved proptest seed is replayed: proptest reads `P/proptest-regressions/a/b.txt`
/// for the test file `P/D/a/b.rs`, where `D` holds the crate root (`lib.rs`, `main.rs`);
/// a seed file whose test file moved is silently never read.
#[test]
fn every_saved_proptest_seed_has_its_test_file() {
    let root = root();
    // The repository's folders, not `target/` or hidden ones.
    let mut seeds = Vec::new();
    for entry in std::fs::read_dir(&root).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.path().is_dir() && !name.starts_with('.') && name != "target" {
            files_with_extension(&entry.path(), "txt", &mut seeds);
        }
    }
    let mut orphans = Vec::new();
    for seed in seeds {
        let relative = seed.strip_prefix(&root).unwrap();
        let parts: Vec<_> = relative.iter().collect();
        let Some(at) = parts.iter().position(|p| *p == "proptest-regressions") else {
            continue;
        };
        let base: PathBuf = parts[..at].iter().collect();
        let rest: PathBuf = parts[at + 1..].iter().collect();
        let found = std::fs::read_dir(root.join(&base))
            .unwrap()
            .flatten()
            .map(|entry| entry.path())
            .filter(|dir| dir.join("lib.rs").is_file() || dir.join("main.rs").is_file())
            .any(|dir| dir.join(&rest).with_extension("rs").is_file());
        if !found {
            orphans.push(relative.display().to_string());
        }
    }
    assert!(
        orphans.is_empty(),
        "seed files no test file reads: {orphans:?}"
    );
}
