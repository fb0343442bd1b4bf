//! The library's floors hold: a module uses only modules of the floors below its own
//! (never a sibling of its floor, never one above), no circle of imports joins three
//! top-level modules, and only `local/` names the storage crates. The rules are those
//! of `ARCHITECTURE.md` ("Layers"); this test reads `src/**/*.rs` with the standard
//! library alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The floors, lowest first: a module may use the modules of lower floors only.
const FLOORS: &[&[&str]] = &[
    // Errors, crash points, test-only helpers.
    &["error", "crash", "testing"],
    // What everything is made of: the model (documents, ids, time, the vector math, the
    // limits) and the token counter.
    &["model", "tokens"],
    // Text to vectors.
    &["embed"],
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
