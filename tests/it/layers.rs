//! The library's floors hold: a module uses only modules of the floors below its own
//! (never a sibling of its floor, never one above), no circle of imports joins three
//! top-level modules, and only `local/` names the storage crates. The rules are those
//! of `ARCHITECTURE.md` ("Layers"); this test reads `src/**/*.rs` with the standard
//! library alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, lowest first: a module may use the modules of lower floors only.
const FLOORS: &[&[&str]] = &[
    // Errors, crash points, test-only helpers, work handed between threads.
    &["error", "crash", "testing", "parallel"],
    // What everything is made of: the model (documents, ids, time, the vector math, the
    // limits) and the token counter.
    &["model", "tokens"],
    // Text to vectors.
    &["embed"],
    // Files to pieces: Markdown and text cut to a token size, front matter, trees walked.
    &["files"],
    // Pure stages over scored lists: no I/O.
    &["fusion", "select", "relevance", "eval", "chunk"],
    // Pure stages that build on the ones below (query analysis adapts fusion weights;
    // feedback is a factor on them).
    &["analysis", "feedback"],
    // What is asked and how the engine is set up.
    &["query", "config"],
    // The seam (where candidates come from, whatever the backend), and the action
    // policies over a response's hits.
    &["retrieve", "policy"],
    // The one ranking pipeline every backend runs.
    &["rank"],
    // A turn: the scenario, rules, memory and tools of one message, over that pipeline.
    &["turn"],
    // The local index: the only place that names sled, tantivy and hnsw_rs.
    &["local"],
    // Here is a directory, open it; here is a request, answer it.
    &["engine"],
];

/// Uses that break a rule and cannot be untied yet, as (from, to). The list may only
/// shrink: an entry no longer needed fails the test.
const ALLOWED: &[(&str, &str)] = &[];

/// Crates only `local/` may name.
const STORAGE_CRATES: &[&str] = &["tantivy", "sled", "hnsw_rs"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The file's code without comments and with string literals blanked (they may hold
/// `//` or a path that is only text).
fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            match c {
                '\\' => {
                    chars.next();
                    out.push(' ');
                }
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                '\n' => out.push('\n'),
                _ => out.push(' '),
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            // A char literal holding a quote (`'"'`) opens no string.
            '\'' if chars.peek() == Some(&'"') => {
                out.push(c);
                out.push(chars.next().unwrap());
            }
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The top-level module a file belongs to, and its depth below the crate root (`src/a.rs`
/// and `src/a/mod.rs`: 1; `src/a/b.rs`: 2).
fn module_of(file: &Path) -> Option<(String, usize)> {
    let relative = file.strip_prefix(src()).ok()?;
    let parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let top = parts.first()?.trim_end_matches(".rs").to_string();
    if top == "lib" {
        return None;
    }
    let depth = if parts.last().is_some_and(|l| l == "mod.rs") {
        parts.len() - 1
    } else {
        parts.len()
    };
    Some((top, depth))
}

/// What each name the crate root re-exports comes from (`Kind` -> `model`).
fn root_names() -> BTreeMap<String, String> {
    let lib = code(&std::fs::read_to_string(src().join("lib.rs")).unwrap());
    let mut names = BTreeMap::new();
    for statement in lib.split(';') {
        // Past its attributes (`#[cfg(feature = "bert")]`).
        let statement = statement.trim().rsplit(']').next().unwrap().trim();
        let Some(rest) = statement.strip_prefix("pub use crate::") else {
            continue;
        };
        let module = rest.split("::").next().unwrap().trim().to_string();
        let list = match (rest.find('{'), rest.rfind('}')) {
            (Some(open), Some(close)) => rest[open + 1..close].to_string(),
            _ => rest.rsplit("::").next().unwrap().to_string(),
        };
        for name in list.split(',') {
            let name = name.trim();
            if !name.is_empty() {
                names.insert(name.to_string(), module.clone());
            }
        }
    }
    names
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The top-level modules `code` (of a file at `depth`) uses through `crate::` or through
/// `super::` paths that reach the crate root.
fn uses(code: &str, depth: usize, roots: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let resolve = |segment: &str, found: &mut BTreeSet<String>| {
        if let Some(module) = roots.get(segment) {
            found.insert(module.clone());
        } else if segment
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase())
        {
            found.insert(segment.to_string());
        }
    };
    let bytes = code.as_bytes();
    let mut at = 0;
    while at < code.len() {
        // A path starts at `crate::` or a run of `super::`, not inside another name.
        let starts = at == 0 || !is_ident(bytes[at - 1] as char) && bytes[at - 1] != b':';
        let rest = &code[at..];
        let root = if starts && rest.starts_with("crate::") {
            Some(&rest["crate::".len()..])
        } else if starts && rest.starts_with("super::") {
            let mut tail = rest;
            let mut ups = 0;
            while let Some(next) = tail.strip_prefix("super::") {
                tail = next;
                ups += 1;
            }
            (ups >= depth).then_some(tail)
        } else {
            None
        };
        if let Some(root) = root {
            if let Some(group) = root.strip_prefix('{') {
                // `use crate::{a::b, C, d::{e, f}}`: the first segment of each item.
                let mut level = 0;
                let mut item = String::new();
                for c in group.chars() {
                    match c {
                        '{' => level += 1,
                        '}' if level == 0 => break,
                        '}' => level -= 1,
                        ',' if level == 0 => {
                            resolve(item.trim().split("::").next().unwrap(), &mut found);
                            item.clear();
                            continue;
                        }
                        _ => {}
                    }
                    if level == 0 {
                        item.push(c);
                    }
                }
                resolve(item.trim().split("::").next().unwrap(), &mut found);
            } else {
                let segment: String = root.chars().take_while(|c| is_ident(*c)).collect();
                resolve(&segment, &mut found);
            }
        }
        at += rest.chars().next().map_or(1, char::len_utf8);
    }
    found
}

fn floor_of(module: &str) -> usize {
    FLOORS
        .iter()
        .position(|floor| floor.contains(&module))
        .unwrap_or_else(|| panic!("module `{module}` is on no floor: add it to FLOORS"))
}

/// The modules each top-level module uses, with a file that does for each.
fn graph() -> BTreeMap<String, BTreeMap<String, PathBuf>> {
    let roots = root_names();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut graph: BTreeMap<String, BTreeMap<String, PathBuf>> = BTreeMap::new();
    for file in files {
        let Some((module, depth)) = module_of(&file) else {
            continue;
        };
        let text = code(&std::fs::read_to_string(&file).unwrap());
        let used = graph.entry(module.clone()).or_default();
        for other in uses(&text, depth, &roots) {
            if other != module {
                used.entry(other).or_insert_with(|| file.clone());
            }
        }
    }
    graph
}

#[test]
fn layers_hold() {
    let graph = graph();
    let mut broken = Vec::new();
    let mut needed = BTreeSet::new();
    for (from, used) in &graph {
        for (to, file) in used {
            if floor_of(to) < floor_of(from) {
                continue;
            }
            if ALLOWED.contains(&(from.as_str(), to.as_str())) {
                needed.insert((from.as_str(), to.as_str()));
                continue;
            }
            let how = if floor_of(to) == floor_of(from) {
                "a sibling of its floor"
            } else {
                "a floor above"
            };
            broken.push(format!(
                "{from} uses {to}, {how} ({})",
                file.strip_prefix(src()).unwrap().display()
            ));
        }
    }
    assert!(
        broken.is_empty(),
        "imports that break the floors:\n{}",
        broken.join("\n")
    );
    let stale: Vec<_> = ALLOWED
        .iter()
        .filter(|pair| !needed.contains(*pair))
        .collect();
    assert!(
        stale.is_empty(),
        "allowed but no longer used (remove them): {stale:?}"
    );
}

/// No circle of uses joins three or more top-level modules (allowed or not).
#[test]
fn no_circle_joins_three_modules() {
    let graph = graph();
    let modules: Vec<&String> = graph.keys().collect();
    // Reachability by repeated closure: small graphs.
    let mut reach: BTreeMap<&str, BTreeSet<&str>> = graph
        .iter()
        .map(|(m, used)| (m.as_str(), used.keys().map(String::as_str).collect()))
        .collect();
    loop {
        let mut grew = false;
        for m in &modules {
            let next: BTreeSet<&str> = reach[m.as_str()]
                .iter()
                .flat_map(|n| reach.get(n).cloned().unwrap_or_default())
                .collect();
            let entry = reach.get_mut(m.as_str()).unwrap();
            let before = entry.len();
            entry.extend(next);
            grew |= entry.len() > before;
        }
        if !grew {
            break;
        }
    }
    for m in &modules {
        let circle: Vec<&str> = modules
            .iter()
            .map(|n| n.as_str())
            .filter(|n| reach[m.as_str()].contains(n) && reach[*n].contains(m.as_str()))
            .collect();
        assert!(circle.len() < 3, "a circle of imports: {circle:?}");
    }
}

/// Only `local/` names sled, tantivy or hnsw_rs.
#[test]
fn only_local_names_the_storage_crates() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut naming = Vec::new();
    for file in files {
        if file.starts_with(src().join("local")) {
            continue;
        }
        let text = code(&std::fs::read_to_string(&file).unwrap());
        for name in STORAGE_CRATES {
            let path = format!("{name}::");
            if text.match_indices(&path).any(|(at, _)| {
                at == 0
                    || !is_ident(text[..at].chars().last().unwrap()) && !text[..at].ends_with("::")
            }) {
                naming.push(format!(
                    "{} names {name}",
                    file.strip_prefix(src()).unwrap().display()
                ));
            }
        }
    }
    assert!(naming.is_empty(), "{}", naming.join("\n"));
}

/// The checker itself: paths through `crate::`, groups, root names and `super::`.
#[test]
fn the_checker_finds_every_kind_of_use() {
    let roots: BTreeMap<String, String> = [("Kind".to_string(), "model".to_string())]
        .into_iter()
        .collect();
    let text = code(
        "use crate::{Kind, fusion::{A, B}, select};\nlet x = crate::rank::rank(); // crate::engine\nuse super::super::local::x;\nlet s = \"crate::config\";",
    );
    let found = uses(&text, 2, &roots);
    let expected: BTreeSet<String> = ["model", "fusion", "select", "rank", "local"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(found, expected);
    // `super::` inside a module stays in it.
    assert!(uses(&code("use super::x;"), 2, &roots).is_empty());
}

/// The crate root stays a short list: at most 70 names, each `pub mod` counted as one
/// (the stages' own types live in their modules).
#[test]
fn the_public_root_stays_small() {
    let lib = code(&std::fs::read_to_string(src().join("lib.rs")).unwrap());
    let modules = lib
        .split(';')
        .filter(|statement| {
            let statement = statement.trim();
            let statement = statement.rsplit(']').next().unwrap().trim();
            statement.starts_with("pub mod ")
        })
        .count();
    let names = root_names().len();
    assert!(modules >= 10, "pub mods not found: {modules}");
    assert!(
        names + modules <= 70,
        "{names} names and {modules} modules at the root"
    );
}

// ---------------------------------------------------------------------------------------
// Files and sub-modules: no circle at any level of `src/`, and floors inside `local/` and
// `engine/`.

/// Floors inside a directory module, lowest first: a child may use the children of lower
/// floors only (its own files and sub-modules aside). Every child must be on a floor.
const INNER_FLOORS: &[(&str, &[&[&str]])] = &[
    (
        "local",
        &[
            // The HNSW graphs as built and stored, the text index (tantivy), the entity graph.
            &["hnsw", "text", "graph"],
            // The store (sled and the published view), whose files hold graphs.
            &["store"],
            // The in-memory catalog built from the store, with its entity graph and text
            // statistics.
            &["catalog"],
            // The vector leg: the graphs and exact scans over the catalog's vectors.
            &["vector"],
            // The local index: the four parts as one backend.
            &["index"],
            // Its commit, and its search (the `Retriever`).
            &["commit", "search"],
        ],
    ),
    (
        "engine",
        &[
            // What an open engine holds.
            &["state"],
            // The builder, the manifest, publishing for readers, statistics.
            &["builder", "manifest", "publish", "stats"],
            // Embedders chosen at open, swapping a rebuilt index in, feedback, the graph
            // worker, writes.
            &["embedders", "swap", "feedback", "maintain", "write"],
            // The directory's lock; searches.
            &["lock", "search"],
            // Whole operations: opening and closing, check and repair, compaction,
            // re-embedding, sync with files.
            &["open", "check", "compact", "reembed", "sync"],
        ],
    ),
];

/// The modules of a source tree: `a::b` -> its file (`a/b.rs` or `a/b/mod.rs`); the root
/// (`lib.rs`) is the empty path.
fn module_files(root: &Path) -> BTreeMap<String, PathBuf> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(root).unwrap();
        let mut parts: Vec<String> = relative
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let last = parts.pop().unwrap();
        if last != "mod.rs" && last != "lib.rs" {
            parts.push(last.trim_end_matches(".rs").to_string());
        } else if last == "lib.rs" && !parts.is_empty() {
            continue;
        }
        modules.insert(parts.join("::"), file);
    }
    modules
}

fn parent(module: &str) -> &str {
    module.rsplit_once("::").map_or("", |(parent, _)| parent)
}

fn join(module: &str, child: &str) -> String {
    if module.is_empty() {
        child.to_string()
    } else {
        format!("{module}::{child}")
    }
}

/// `code` with char literals blanked (`'{'` would count as a brace).
fn without_chars(code: &str) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '\'' {
            let close = if chars.get(i + 1) == Some(&'\\') {
                (i + 3..(i + 12).min(chars.len())).find(|&j| chars[j] == '\'')
            } else {
                (chars.get(i + 2) == Some(&'\'')).then_some(i + 2)
            };
            if let Some(close) = close {
                out.extend(std::iter::repeat_n(' ', close - i + 1));
                i = close + 1;
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// One `use` leaf: the path, and the name it binds (`None` for a glob).
struct UseLeaf {
    path: Vec<String>,
    binds: Option<String>,
}

/// The leaves of a use tree (`a::{b::C, D as E, self}`), each with the full path.
fn use_leaves(tree: &str, prefix: &[String], out: &mut Vec<UseLeaf>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let mut base = prefix.to_vec();
        base.extend(head);
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut level = 0;
        let mut item = String::new();
        for c in inner.chars() {
            match c {
                '{' => level += 1,
                '}' => level -= 1,
                ',' if level == 0 => {
                    use_leaves(&item, &base, out);
                    item.clear();
                    continue;
                }
                _ => {}
            }
            item.push(c);
        }
        use_leaves(&item, &base, out);
        return;
    }
    if tree.is_empty() {
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path.trim(), Some(alias.trim().to_string())),
        None => (tree, None),
    };
    let mut full = prefix.to_vec();
    full.extend(path.split("::").map(|s| s.trim().to_string()));
    let last = full.last().cloned().unwrap_or_default();
    let binds = if last == "*" {
        full.pop();
        None
    } else if last == "self" {
        full.pop();
        Some(alias.unwrap_or_else(|| full.last().cloned().unwrap_or_default()))
    } else {
        Some(alias.unwrap_or(last))
    };
    out.push(UseLeaf { path: full, binds });
}

/// A `use` statement of a file: its leaves, whether it is `pub` (a re-export), the inline
/// module it sits in (`tests`), and where it is (so the rest of the file can be told
/// apart).
struct UseStatement {
    leaves: Vec<UseLeaf>,
    public: bool,
    inline: Vec<String>,
    span: std::ops::Range<usize>,
}

/// What one file of the tree says: its `use` statements, and the paths its code names
/// outside them (each with the inline module it is in).
struct Parsed {
    uses: Vec<UseStatement>,
    paths: Vec<(Vec<String>, Vec<String>)>,
    code: String,
}

fn parse(text: &str) -> Parsed {
    let code = without_chars(&code(text));
    let bytes = code.as_bytes();
    let mut uses = Vec::new();
    let mut paths = Vec::new();
    // Inline modules (`mod tests { ... }`): their names and the brace depth inside them.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut at = 0;
    let word_at = |at: usize, word: &str| {
        code[at..].starts_with(word)
            && (at == 0 || !is_ident(bytes[at - 1] as char))
            && !code[at + word.len()..].chars().next().is_some_and(is_ident)
    };
    while at < code.len() {
        let c = bytes[at] as char;
        if c == '{' {
            depth += 1;
        } else if c == '}' {
            depth = depth.saturating_sub(1);
            while inline.last().is_some_and(|(_, d)| *d > depth) {
                inline.pop();
            }
        } else if word_at(at, "mod") && code[..at].trim_end().ends_with("#[cfg(test)]") {
            // A file's own unit tests may lean on the modules above it: skipped whole.
            if let Some(open) = code[at..]
                .find(['{', ';'])
                .filter(|o| code.as_bytes()[at + o] == b'{')
            {
                let mut level = 0;
                for (i, c) in code[at + open..].char_indices() {
                    match c {
                        '{' => level += 1,
                        '}' => {
                            level -= 1;
                            if level == 0 {
                                at += open + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                continue;
            }
        } else if word_at(at, "mod") {
            let rest = &code[at + 3..];
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| is_ident(*c))
                .collect();
            let after = rest.trim_start()[name.len()..].trim_start();
            if after.starts_with('{') {
                inline.push((name, depth + 1));
            }
        } else if word_at(at, "use") {
            let end = code[at..].find(';').map_or(code.len(), |e| at + e);
            let before = code[..at].trim_end();
            let public = before.ends_with("pub")
                || before.ends_with(')') && {
                    let open = before.rfind('(').unwrap_or(0);
                    before[..open].trim_end().ends_with("pub")
                };
            let mut leaves = Vec::new();
            use_leaves(&code[at + 3..end], &[], &mut leaves);
            uses.push(UseStatement {
                leaves,
                public,
                inline: inline.iter().map(|(n, _)| n.clone()).collect(),
                span: at..end,
            });
            at = end;
            continue;
        } else if is_ident(c) && (at == 0 || !is_ident(bytes[at - 1] as char)) {
            // A path: identifiers joined by `::`, not itself after `::`.
            let after_colons = code[..at].trim_end().ends_with("::");
            let mut segments = Vec::new();
            let mut end = at;
            loop {
                let segment: String = code[end..].chars().take_while(|c| is_ident(*c)).collect();
                if segment.is_empty() {
                    break;
                }
                end += segment.len();
                segments.push(segment);
                if code[end..].starts_with("::")
                    && code[end + 2..].chars().next().is_some_and(is_ident)
                {
                    end += 2;
                } else {
                    break;
                }
            }
            if !after_colons && segments.len() > 1 {
                paths.push((segments, inline.iter().map(|(n, _)| n.clone()).collect()));
            }
            at = end.max(at + 1);
            continue;
        }
        at += 1;
    }
    Parsed { uses, paths, code }
}

/// The module graph of a source tree: which module each module's file uses, with the
/// names a `use` statement binds resolved through re-exports to the module that holds
/// the item.
struct Tree {
    files: BTreeMap<String, PathBuf>,
    parsed: BTreeMap<String, Parsed>,
}

impl Tree {
    fn read(root: &Path) -> Tree {
        // A file's unit tests (`tests.rs`, declared `#[cfg(test)] mod tests;`) may lean on
        // the modules above it, as inline `#[cfg(test)]` modules may: left out.
        let mut files = module_files(root);
        files.retain(|module, _| module.rsplit("::").next() != Some("tests"));
        let parsed = files
            .iter()
            .map(|(m, f)| (m.clone(), parse(&std::fs::read_to_string(f).unwrap())))
            .collect();
        Tree { files, parsed }
    }

    /// The module `path` names from inside `from` (a module, with the inline modules of
    /// the file around the path): the module that holds its last item, or `None` when it
    /// leaves the tree (`std::`, a dependency).
    fn resolve(
        &self,
        from: &str,
        inline: &[String],
        path: &[String],
        hops: usize,
    ) -> Option<String> {
        if hops > 16 || path.is_empty() {
            return None;
        }
        let mut rest = path;
        // The module the path starts from, inline modules counted as levels of `from`.
        let mut here: Vec<String> = if from.is_empty() {
            Vec::new()
        } else {
            from.split("::").map(String::from).collect()
        };
        let file_depth = here.len();
        here.extend(inline.iter().cloned());
        let mut module = match rest[0].as_str() {
            "crate" => {
                rest = &rest[1..];
                String::new()
            }
            "super" | "self" => {
                while let Some(first) = rest.first() {
                    match first.as_str() {
                        "super" => {
                            here.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    rest = &rest[1..];
                }
                // Still inside one of the file's inline modules: the file itself.
                if here.len() > file_depth {
                    return Some(from.to_string());
                }
                here.join("::")
            }
            first => {
                let child = join(from, first);
                if self.files.contains_key(&child) {
                    rest = &rest[1..];
                    child
                } else if let Some(target) = self.bound(from, first, hops) {
                    // A name a `use` of this module binds.
                    match target {
                        Bound::Module(m) => {
                            rest = &rest[1..];
                            m
                        }
                        Bound::Item(m) => return Some(m),
                    }
                } else {
                    return None;
                }
            }
        };
        for segment in rest {
            let child = join(&module, segment);
            if self.files.contains_key(&child) {
                module = child;
                continue;
            }
            // An item of `module`: where it is defined, through the module's own `use`.
            return Some(match self.bound(&module, segment, hops + 1) {
                Some(Bound::Module(m) | Bound::Item(m)) => m,
                None => module,
            });
        }
        Some(module)
    }

    /// What `name`, bound by a `use` of `module` (outside inline modules), stands for.
    fn bound(&self, module: &str, name: &str, hops: usize) -> Option<Bound> {
        let parsed = self.parsed.get(module)?;
        for statement in parsed.uses.iter().filter(|s| s.inline.is_empty()) {
            for leaf in &statement.leaves {
                if leaf.binds.as_deref() != Some(name) {
                    continue;
                }
                let target = self.resolve(module, &[], &leaf.path, hops + 1)?;
                let is_module = self.files.contains_key(&target)
                    && leaf
                        .path
                        .last()
                        .is_some_and(|l| target.ends_with(l.as_str()) || l == "self");
                return Some(if is_module {
                    Bound::Module(target)
                } else {
                    Bound::Item(target)
                });
            }
        }
        None
    }

    /// Each module's uses of other modules of the tree: a private `use`, a `pub use`
    /// whose name the file's code also names, a glob, and every path in the code.
    fn edges(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (module, parsed) in &self.parsed {
            let used = edges.entry(module.clone()).or_default();
            let mut rest = parsed.code.clone();
            for statement in &parsed.uses {
                rest.replace_range(statement.span.clone(), &" ".repeat(statement.span.len()));
            }
            let outside_uses = |name: &str| {
                rest.match_indices(name).any(|(at, _)| {
                    let before = rest[..at].chars().last();
                    let after = rest[at + name.len()..].chars().next();
                    !before.is_some_and(is_ident) && !after.is_some_and(is_ident)
                })
            };
            for statement in &parsed.uses {
                for leaf in &statement.leaves {
                    let counts = match &leaf.binds {
                        None => true,
                        Some(name) => !statement.public || outside_uses(name),
                    };
                    if !counts {
                        continue;
                    }
                    if let Some(target) = self.resolve(module, &statement.inline, &leaf.path, 0) {
                        used.insert(target);
                    }
                }
            }
            for (path, inline) in &parsed.paths {
                if let Some(target) = self.resolve(module, inline, path, 0) {
                    used.insert(target);
                }
            }
            used.remove(module);
        }
        edges
    }
}

enum Bound {
    Module(String),
    Item(String),
}

/// The child of directory module `dir` that `module` is in (`dir` itself for its own
/// file), or `None` outside `dir`.
fn child_of(dir: &str, module: &str) -> Option<String> {
    if module == dir {
        return Some(dir.to_string());
    }
    let rest = if dir.is_empty() {
        module
    } else {
        module.strip_prefix(dir)?.strip_prefix("::")?
    };
    Some(join(dir, rest.split("::").next().unwrap()))
}

/// The uses between the children of each directory module (its own file one of them):
/// `dir` -> (from child -> to children).
fn levels(tree: &Tree) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    let edges = tree.edges();
    let dirs: BTreeSet<String> = tree
        .files
        .keys()
        .filter(|m| !m.is_empty())
        .map(|m| parent(m).to_string())
        .collect();
    let mut levels = BTreeMap::new();
    for dir in dirs {
        let mut level: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, used) in &edges {
            let Some(a) = child_of(&dir, from) else {
                continue;
            };
            for to in used {
                if let Some(b) = child_of(&dir, to)
                    && a != b
                {
                    level.entry(a.clone()).or_default().insert(b);
                }
            }
        }
        levels.insert(dir, level);
    }
    levels
}

/// Every circle of uses at any level of the tree, each as the shortest way round from
/// its first member.
fn circles(tree: &Tree) -> Vec<Vec<String>> {
    let mut found: Vec<Vec<String>> = Vec::new();
    for level in levels(tree).values() {
        for start in level.keys() {
            // Breadth first from `start` back to it.
            let mut back: BTreeMap<&str, &str> = BTreeMap::new();
            let mut queue = std::collections::VecDeque::from([start.as_str()]);
            let mut closed = None;
            while let Some(at) = queue.pop_front() {
                for next in level.get(at).into_iter().flatten() {
                    if next == start {
                        closed = Some(at);
                        break;
                    }
                    if !back.contains_key(next.as_str()) {
                        back.insert(next, at);
                        queue.push_back(next);
                    }
                }
                if closed.is_some() {
                    break;
                }
            }
            let Some(mut at) = closed else {
                continue;
            };
            let mut circle = vec![start.clone()];
            let mut tail = Vec::new();
            while at != start {
                tail.push(at.to_string());
                at = back[at];
            }
            circle.extend(tail.into_iter().rev());
            let mut key = circle.clone();
            key.sort();
            if !found.iter().any(|c| {
                let mut k = c.clone();
                k.sort();
                k == key
            }) {
                found.push(circle);
            }
        }
    }
    found
}

fn shown(circle: &[String]) -> String {
    let name = |m: &String| {
        if m.is_empty() {
            "lib".to_string()
        } else {
            m.clone()
        }
    };
    let mut text: Vec<String> = circle.iter().map(name).collect();
    text.push(name(&circle[0]));
    text.join(" -> ")
}

/// Circles not untied yet, each as its members. The list may only shrink: a circle no
/// longer found fails the test until it is removed here.
const KNOWN_CIRCLES: &[&[&str]] = &[];

/// No circle of uses joins files or sub-modules anywhere in `src/`: at each directory,
/// its own file and its children (each taken whole) use one another one way only.
#[test]
fn no_circle_of_files_or_sub_modules() {
    let tree = Tree::read(&src());
    let members = |circle: &[String]| -> BTreeSet<String> { circle.iter().cloned().collect() };
    let known: Vec<BTreeSet<String>> = KNOWN_CIRCLES
        .iter()
        .map(|c| c.iter().map(|m| m.to_string()).collect())
        .collect();
    let found = circles(&tree);
    let new: Vec<String> = found
        .iter()
        .filter(|c| !known.contains(&members(c)))
        .map(|c| shown(c))
        .collect();
    assert!(new.is_empty(), "circles of uses:\n{}", new.join("\n"));
    let gone: Vec<&BTreeSet<String>> = known
        .iter()
        .filter(|k| !found.iter().any(|c| members(c) == **k))
        .collect();
    assert!(
        gone.is_empty(),
        "untied (remove them from KNOWN_CIRCLES): {gone:?}"
    );
}

/// The floors inside `local/` and `engine/` hold: a child uses only children of the
/// floors below its own.
#[test]
fn inner_floors_hold() {
    let tree = Tree::read(&src());
    let levels = levels(&tree);
    let mut broken = Vec::new();
    for (dir, floors) in INNER_FLOORS {
        let floor_of = |child: &str| {
            let name = child.rsplit("::").next().unwrap();
            floors
                .iter()
                .position(|floor| floor.contains(&name))
                .unwrap_or_else(|| panic!("`{child}` is on no floor of `{dir}`"))
        };
        for (from, used) in &levels[*dir] {
            if from == dir {
                continue;
            }
            for to in used {
                if to != dir && floor_of(to) >= floor_of(from) {
                    broken.push(format!("{from} uses {to}"));
                }
            }
        }
        for child in tree.files.keys().filter(|m| parent(m) == *dir) {
            floor_of(child);
        }
    }
    assert!(
        broken.is_empty(),
        "uses that break the inner floors:\n{}",
        broken.join("\n")
    );
}

/// The checker finds a planted circle of files, one of sub-modules, and one through a
/// re-export, and none where a module only re-exports what its children use.
#[test]
fn the_checker_finds_a_planted_circle() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("lib.rs", "mod a;\nmod b;\npub use crate::a::A;\n");
    write(
        "a/mod.rs",
        "mod x;\nmod y;\npub(crate) use x::X;\npub struct A;\n",
    );
    // Files: x uses y, y uses x through the parent's re-export.
    write("a/x.rs", "pub struct X;\nfn f() { super::y::g(); }\n");
    write("a/y.rs", "use super::X;\npub fn g() { let _ = X; }\n");
    // Sub-modules: b uses a, a's file x... no: a (its file) uses b below.
    write("b.rs", "use crate::a::A;\npub fn h() -> A { A }\n");
    let tree = Tree::read(dir.path());
    let found: Vec<String> = circles(&tree).iter().map(|c| shown(c)).collect();
    assert_eq!(found, ["a::x -> a::y -> a::x"], "{found:?}");

    // A use of the parent's own item from a child, and the parent using that child:
    // a circle between a file and its directory's file.
    write(
        "a/mod.rs",
        "mod x;\nmod y;\npub(crate) use x::X;\npub struct A;\nfn k() { y::g(); }\n",
    );
    write("a/x.rs", "pub struct X;\n");
    write(
        "a/y.rs",
        "use super::{A, X};\npub fn g() { let _ = (A, X); }\n",
    );
    let found: Vec<String> = circles(&Tree::read(dir.path()))
        .iter()
        .map(|c| shown(c))
        .collect();
    assert_eq!(found, ["a -> a::y -> a"], "{found:?}");

    // Sub-modules: b uses a, and a's child x uses b.
    write(
        "a/mod.rs",
        "mod x;\nmod y;\npub(crate) use x::X;\npub struct A;\n",
    );
    write("a/x.rs", "pub struct X;\nfn f() { crate::b::h(); }\n");
    let found: Vec<String> = circles(&Tree::read(dir.path()))
        .iter()
        .map(|c| shown(c))
        .collect();
    assert_eq!(found, ["a -> b -> a"], "{found:?}");

    // Untied: nothing in `a` uses `b`; inline `mod tests { use super::*; }` stays in its
    // file, and a file's `#[cfg(test)]` tests may use what is above it.
    write(
        "a/x.rs",
        "pub struct X;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    fn t() { let _ = X; }\n}\n",
    );
    assert!(circles(&Tree::read(dir.path())).is_empty());
}
