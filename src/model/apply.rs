//! How a rule comes to apply ([`Apply`]), and the globs of the files a rule is for.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// How a rule comes to apply, as the coding agents' rule files say it.
///
/// - [`Apply::Relevant`]: the relevance gate and the ranking decide from the rule's text
///   (for a rule file, its description), as for any rule; with globs, a request naming a
///   matching file also applies it.
/// - [`Apply::Always`]: in every search and turn of its tenant, agent and scope, whatever
///   the gate says (within a turn's budget).
/// - [`Apply::Files`]: when a request names a file one of its globs matches.
/// - [`Apply::Manual`]: only when a request names the rule (its id, or `@name` in the
///   message, the name being its file's stem).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Apply {
    /// The gate decides (the default).
    #[default]
    Relevant,
    /// Every time.
    Always,
    /// When a named file matches the rule's globs.
    Files,
    /// Only when named.
    Manual,
}

impl Apply {
    /// The mode's name (`relevant`, `always`, `files`, `manual`).
    pub fn name(self) -> &'static str {
        match self {
            Apply::Relevant => "relevant",
            Apply::Always => "always",
            Apply::Files => "files",
            Apply::Manual => "manual",
        }
    }
}

/// Why a rule applies whatever its relevance (see [`Apply`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AppliedBy {
    /// [`Apply::Always`].
    Always,
    /// A file the request names matches its globs.
    File,
    /// The request names it (by id or name, or `@name` in its text).
    Named,
}

impl AppliedBy {
    /// The reason's name (`always`, `file`, `named`).
    pub fn name(self) -> &'static str {
        match self {
            AppliedBy::Always => "always",
            AppliedBy::File => "file",
            AppliedBy::Named => "named",
        }
    }
}

/// Checks a rule's globs against its mode: [`Apply::Files`] needs at least one, `always`
/// and `manual` take none, and each must compile.
pub(crate) fn check_globs(id: &str, apply: Apply, globs: &[String]) -> Result<()> {
    match (apply, globs.is_empty()) {
        (Apply::Files, true) => {
            return Err(Error::invalid_input(format!(
                "rule `{id}`: `apply` `files` needs `globs`"
            )));
        }
        (Apply::Always | Apply::Manual, false) => {
            return Err(Error::invalid_input(format!(
                "rule `{id}`: `globs` apply to `relevant` and `files` rules, not `{}` ones",
                apply.name()
            )));
        }
        _ => {}
    }
    for glob in globs {
        compile(glob).map_err(|err| {
            Error::invalid_input(format!(
                "rule `{id}`: `globs`: {glob:?} is not a glob: {err}"
            ))
        })?;
    }
    Ok(())
}

/// A glob as rule files write them: `*.py` matches a Python file in any folder (it has
/// no `/`), `src/**/*.ts` matches from the project's root.
fn compile(glob: &str) -> std::result::Result<globset::GlobMatcher, globset::Error> {
    let pattern = glob.trim().trim_start_matches("./");
    let pattern = if pattern.contains('/') {
        pattern.trim_start_matches('/').to_string()
    } else {
        format!("**/{pattern}")
    };
    Ok(globset::GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()?
        .compile_matcher())
}

/// Whether one of `globs` matches one of `files` (paths relative to the project's root,
/// `/`-separated; a leading `./` is ignored).
pub(crate) fn globs_match(globs: &[String], files: &[String]) -> bool {
    globs.iter().filter_map(|g| compile(g).ok()).any(|glob| {
        files
            .iter()
            .any(|file| glob.is_match(file.trim_start_matches("./")))
    })
}

/// Whether `file` is inside `folder` (`.` and the empty folder hold everything).
pub(crate) fn in_folder(folder: &str, file: &str) -> bool {
    let folder = folder.trim_start_matches("./").trim_end_matches('/');
    let file = file.trim_start_matches("./");
    folder.is_empty()
        || folder == "."
        || file
            .strip_prefix(folder)
            .is_some_and(|rest| rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_as_rule_files_write_them() {
        let files = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(globs_match(&["*.py".into()], &files(&["src/app/main.py"])));
        assert!(globs_match(
            &["src/**/*.ts".into()],
            &files(&["./src/a/b.ts"])
        ));
        assert!(!globs_match(
            &["src/**/*.ts".into()],
            &files(&["lib/src/a.ts"])
        ));
        assert!(!globs_match(&["src/*.ts".into()], &files(&["src/a/b.ts"])));
        assert!(globs_match(
            &["docs/**/*.{md,mdx}".into()],
            &files(&["docs/x/y.mdx"])
        ));
        assert!(!globs_match(&["*.py".into()], &files(&[])));
        assert!(check_globs("r", Apply::Files, &[]).is_err());
        assert!(check_globs("r", Apply::Always, &["*.py".into()]).is_err());
        assert!(check_globs("r", Apply::Files, &["src/[".into()]).is_err());
        assert!(check_globs("r", Apply::Relevant, &["*.rs".into()]).is_ok());
        assert!(in_folder("crates/cli", "crates/cli/src/main.rs"));
        assert!(!in_folder("crates/cli", "crates/client/x.rs"));
        assert!(in_folder(".", "anything.rs"));
    }
}
