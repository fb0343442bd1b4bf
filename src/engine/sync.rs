//! Keeping an index in line with files ([`Engine::sync`]): chunks cut from Markdown and
//! text files, rules read from the coding agents' rule files, tools from Agent Skills;
//! re-read when a file changes, removed with it.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use super::Engine;
use crate::files::walk::{Found, Walked, walk};
use crate::files::{self, CHUNK_TOKENS_RANGE, DEFAULT_CHUNK_TOKENS, Format};
use crate::model::doc::{DEFAULT_TENANT, Document};
use crate::model::fields::check_name;
use crate::model::source::Source;
use crate::model::time::micros;
use crate::{Error, Kind, Result};

/// How [`Engine::sync`] reads files and whose documents it makes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncOptions {
    /// The tenant the documents belong to (default [`DEFAULT_TENANT`]); a sync compares
    /// only with the documents it made in this tenant.
    pub tenant: String,
    /// The agent the documents are restricted to (default none: every agent).
    pub agent: Option<String>,
    /// The most tokens of a chunk ([`files::DEFAULT_CHUNK_TOKENS`] by default).
    pub chunk_tokens: usize,
    /// Report what would change, and change nothing.
    pub dry_run: bool,
    /// The folder paths are read from and recorded relative to (default: none, paths
    /// are read and recorded as given).
    pub base: Option<PathBuf>,
}

impl Default for SyncOptions {
    fn default() -> SyncOptions {
        SyncOptions {
            tenant: DEFAULT_TENANT.to_string(),
            agent: None,
            chunk_tokens: DEFAULT_CHUNK_TOKENS,
            dry_run: false,
            base: None,
        }
    }
}

impl SyncOptions {
    /// The tenant.
    #[must_use]
    pub fn with_tenant(mut self, tenant: impl Into<String>) -> SyncOptions {
        self.tenant = tenant.into();
        self
    }

    /// The agent.
    #[must_use]
    pub fn with_agent(mut self, agent: impl Into<String>) -> SyncOptions {
        self.agent = Some(agent.into());
        self
    }

    /// The most tokens of a chunk.
    #[must_use]
    pub fn with_chunk_tokens(mut self, tokens: usize) -> SyncOptions {
        self.chunk_tokens = tokens;
        self
    }

    /// Whether to change nothing.
    #[must_use]
    pub fn with_dry_run(mut self, dry_run: bool) -> SyncOptions {
        self.dry_run = dry_run;
        self
    }

    /// The folder paths are read from and recorded relative to: `docs/a.md` for
    /// `BASE/docs/a.md`, whatever the current directory.
    #[must_use]
    pub fn with_base(mut self, base: impl Into<PathBuf>) -> SyncOptions {
        self.base = Some(base.into());
        self
    }
}

/// What a sync did (or, dry, would do) to one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChange {
    /// New: its documents were added.
    Added,
    /// Changed: its documents were replaced.
    Changed,
    /// Gone (deleted, renamed, now ignored): its documents were removed.
    Removed,
    /// Unchanged: not read, not touched.
    Unchanged,
    /// New or changed, but with no text: nothing to add.
    Empty,
    /// Could not be read: its documents, if any, were left as they were.
    Failed,
}

impl FileChange {
    /// The change's name (`added`, `changed`, ...).
    pub fn name(self) -> &'static str {
        match self {
            FileChange::Added => "added",
            FileChange::Changed => "changed",
            FileChange::Removed => "removed",
            FileChange::Unchanged => "unchanged",
            FileChange::Empty => "empty",
            FileChange::Failed => "failed",
        }
    }
}

/// One file a sync changed, removed or could not read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SyncedFile {
    /// The file's path as its documents record it.
    pub path: String,
    /// What happened to it.
    pub change: FileChange,
    /// How many documents it has now (for a removed or failed file: that it had).
    pub documents: usize,
    /// The line to blame, for a failed file, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl SyncedFile {
    /// `path:line: reason` for a failed file, `path` otherwise.
    pub fn location(&self) -> String {
        match self.line {
            Some(line) => format!("{}:{line}", self.path),
            None => self.path.clone(),
        }
    }
}

/// What [`Engine::sync`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SyncReport {
    /// Every file added, changed, removed, empty or failed, by path (unchanged files are
    /// only counted).
    pub files: Vec<SyncedFile>,
    /// Files whose documents were added.
    pub added: usize,
    /// Files whose documents were replaced.
    pub changed: usize,
    /// Files whose documents were removed.
    pub removed: usize,
    /// Files not touched.
    pub unchanged: usize,
    /// Files with no text.
    pub empty: usize,
    /// Files that could not be read.
    pub failed: usize,
    /// Files of no format sync reads (left alone).
    pub other_files: usize,
    /// Documents written (added or replaced).
    pub documents_written: usize,
    /// Documents deleted.
    pub documents_deleted: usize,
    /// Whether nothing was changed because it was a dry run.
    pub dry_run: bool,
    /// Microseconds the sync took.
    pub micros: u64,
}

impl SyncReport {
    /// Files added, changed or removed: 0 for a sync of an unchanged tree.
    pub fn changes(&self) -> usize {
        self.added + self.changed + self.removed
    }
}

/// Where a sync is while it reads files: `done` of `total` files read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncProgress {
    /// Files read (or found unchanged) so far.
    pub done: usize,
    /// Files to read.
    pub total: usize,
}

/// Bumped when sync cuts the same file into other documents: every file's hash changes,
/// so the next sync re-reads it.
const CUT_VERSION: u32 = 1;

/// Files read per batch (the progress steps; their chunks are embedded together).
const FILES_PER_BATCH: usize = 64;

/// The documents sync made from one file, as the index holds them.
#[derive(Debug, Default)]
struct Held {
    hash: String,
    ids: Vec<(Kind, String)>,
}

/// What reading one file gave.
enum Outcome {
    Unchanged,
    Read { docs: Vec<Document> },
    Failed { line: Option<u32>, reason: String },
}

/// The kinds sync writes.
const SYNCED_KINDS: [Kind; 3] = [Kind::Chunk, Kind::Rule, Kind::Tool];

impl Engine {
    /// Brings the index in line with the files under `paths` (files or folders, walked
    /// as ripgrep walks them: `.gitignore` respected, hidden files skipped except the
    /// agents' rule folders): Markdown and text cut into chunks, the coding agents' rule
    /// files (Cursor, Windsurf, Continue, Claude Code, `AGENTS.md`) read into rules that
    /// apply as their format says ([`Apply`](crate::Apply)), Agent Skills into tools (see
    /// [`files::Format`]). A new file's documents are added, a changed file's replaced, a
    /// deleted, renamed or newly ignored file's removed, and an unchanged file is not
    /// read. One commit for the whole sync (with whatever else was buffered); none when
    /// nothing changed, so a second sync of the same tree makes no change.
    ///
    /// Each document carries its [`Source`]: the file's path (as given, `/`-separated),
    /// its lines, its heading path (a chunk's is searched with its text) and the file's
    /// hash. Sync manages only the documents that carry a source with a hash: documents
    /// indexed by hand are never changed or removed, and a file whose ids would replace
    /// one fails. A file that cannot be read (not UTF-8, a front matter that does not
    /// parse) is reported with its line and reason and its documents are left as they
    /// were; the other files are synced.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) naming a path that does not exist (nothing
    /// is changed: a mistyped path must not look like a deleted tree),
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) for bad options,
    /// embedder and storage errors (nothing is buffered when reading or embedding fails).
    ///
    /// # Example
    ///
    /// ```
    /// use ruchedb::engine::SyncOptions;
    ///
    /// let dir = tempfile::tempdir()?;
    /// std::fs::write(dir.path().join("install.md"), "# Install\n\nRun `make install`.\n")?;
    /// let engine = ruchedb::Engine::builder().temporary()?;
    /// let first = engine.sync(&[dir.path()], &SyncOptions::default())?;
    /// assert_eq!((first.added, first.documents_written), (1, 1));
    /// let again = engine.sync(&[dir.path()], &SyncOptions::default())?;
    /// assert_eq!((again.changes(), again.unchanged), (0, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sync<P: AsRef<std::path::Path>>(
        &self,
        paths: &[P],
        options: &SyncOptions,
    ) -> Result<SyncReport> {
        self.sync_with_progress(paths, options, &mut |_| {})
    }

    /// [`Engine::sync`], calling `progress` as files are read.
    ///
    /// # Errors
    ///
    /// As [`Engine::sync`].
    pub fn sync_with_progress<P: AsRef<std::path::Path>>(
        &self,
        paths: &[P],
        options: &SyncOptions,
        progress: &mut dyn FnMut(SyncProgress),
    ) -> Result<SyncReport> {
        let started = Instant::now();
        check_options(options)?;
        if paths.is_empty() {
            return Err(Error::invalid_input("sync needs at least one path"));
        }
        let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
        let walked = walk(&paths, options.base.as_deref())?;
        // The folder relative paths are relative to: only what sync made from it is
        // compared (the same relative path synced from another folder is another file).
        let base = options.base.clone().unwrap_or_else(|| PathBuf::from("."));
        let root = std::fs::canonicalize(&base)
            .map_err(|err| Error::io_at(&base, err))?
            .to_str()
            .map(str::to_string)
            .ok_or_else(|| Error::invalid_input(format!("{} is not UTF-8", base.display())))?;
        let held = self.held(&options.tenant, &root, &walked)?;
        let mut report = SyncReport {
            dry_run: options.dry_run,
            other_files: walked.other_files,
            ..SyncReport::default()
        };
        let total = walked.files.len();
        progress(SyncProgress { done: 0, total });
        let mut ready = Vec::new();
        let mut deletes: Vec<(Kind, String)> = Vec::new();
        let mut done = 0;
        for batch in walked.files.chunks(FILES_PER_BATCH) {
            let outcomes: Vec<Outcome> = batch
                .par_iter()
                .map(|found| read_one(found, held.get(&found.name), options, &root))
                .collect();
            let mut batch_docs = Vec::new();
            for (found, outcome) in batch.iter().zip(outcomes) {
                let before = held.get(&found.name);
                let outcome = match outcome {
                    Outcome::Read { docs } => self.owned(&options.tenant, &root, docs)?,
                    other => other,
                };
                match outcome {
                    Outcome::Unchanged => report.unchanged += 1,
                    Outcome::Failed { line, reason } => {
                        report.failed += 1;
                        report.files.push(SyncedFile {
                            path: found.name.clone(),
                            change: FileChange::Failed,
                            documents: before.map_or(0, |b| b.ids.len()),
                            line,
                            error: Some(reason),
                        });
                    }
                    Outcome::Read { docs } => {
                        let change = match (before, docs.is_empty()) {
                            (None, true) => FileChange::Empty,
                            (None, false) => FileChange::Added,
                            (Some(_), _) => FileChange::Changed,
                        };
                        match change {
                            FileChange::Empty => report.empty += 1,
                            FileChange::Added => report.added += 1,
                            _ => report.changed += 1,
                        }
                        let kept: HashSet<(Kind, &str)> =
                            docs.iter().map(|d| (d.kind(), d.id())).collect();
                        if let Some(before) = before {
                            deletes.extend(
                                before
                                    .ids
                                    .iter()
                                    .filter(|(kind, id)| !kept.contains(&(*kind, id.as_str())))
                                    .cloned(),
                            );
                        }
                        report.documents_written += docs.len();
                        report.files.push(SyncedFile {
                            path: found.name.clone(),
                            change,
                            documents: docs.len(),
                            line: None,
                            error: None,
                        });
                        batch_docs.extend(docs);
                    }
                }
            }
            if !options.dry_run && !batch_docs.is_empty() {
                ready.push(self.ready(batch_docs)?);
            }
            done += batch.len();
            progress(SyncProgress { done, total });
        }
        for (path, reason) in &walked.unreadable {
            report.failed += 1;
            report.files.push(SyncedFile {
                path: path.clone(),
                change: FileChange::Failed,
                documents: 0,
                line: None,
                error: Some(format!("cannot be walked: {reason}")),
            });
        }
        let found: HashSet<&str> = walked.files.iter().map(|f| f.name.as_str()).collect();
        for (path, before) in &held {
            if !found.contains(path.as_str()) {
                report.removed += 1;
                deletes.extend(before.ids.iter().cloned());
                report.files.push(SyncedFile {
                    path: path.clone(),
                    change: FileChange::Removed,
                    documents: before.ids.len(),
                    line: None,
                    error: None,
                });
            }
        }
        report.documents_deleted = deletes.len();
        report.files.sort_by(|a, b| a.path.cmp(&b.path));
        if !options.dry_run && (report.documents_written > 0 || !deletes.is_empty()) {
            for (kind, id) in &deletes {
                self.delete(*kind, &options.tenant, id);
            }
            for batch in ready {
                self.buffer(batch)?;
            }
            self.commit()?;
        }
        report.micros = micros(started);
        Ok(report)
    }

    /// The documents sync made in `tenant` from files under the walked roots, read from
    /// `root`, by path.
    fn held(&self, tenant: &str, root: &str, walked: &Walked) -> Result<BTreeMap<String, Held>> {
        let mut held: BTreeMap<String, Held> = BTreeMap::new();
        let catalog = self.inner.local.snapshot();
        for (_, entry) in catalog.iter() {
            if !SYNCED_KINDS.contains(&entry.kind()) || entry.tenant_id() != tenant {
                continue;
            }
            let doc = entry.doc_passing()?;
            let Some(
                source @ Source {
                    path,
                    hash: Some(hash),
                    ..
                },
            ) = doc.source()
            else {
                continue;
            };
            if !from_root(source, root) || !walked.covers(path) {
                continue;
            }
            let file = held.entry(path.clone()).or_default();
            // A file's documents share one hash; should they not (an interrupted
            // edit by hand), any difference re-reads the file.
            if file.ids.is_empty() || file.hash == *hash {
                file.hash.clone_from(hash);
            } else {
                file.hash.clear();
            }
            file.ids.push((doc.kind(), doc.id().to_string()));
        }
        Ok(held)
    }

    /// `docs` if none of their ids is a document sync did not make from `root`; the file
    /// fails otherwise (a document indexed by hand, or synced from another folder, is
    /// never replaced).
    fn owned(&self, tenant: &str, root: &str, docs: Vec<Document>) -> Result<Outcome> {
        let catalog = self.inner.local.snapshot();
        for doc in &docs {
            let Some(found) = catalog.lookup(doc.kind(), tenant, doc.id()) else {
                continue;
            };
            let Some(entry) = catalog.get(found) else {
                continue;
            };
            let existing = entry.doc_passing()?;
            let theirs = match existing.source() {
                Some(source) if source.hash.is_some() && from_root(source, root) => None,
                Some(source) if source.hash.is_some() => Some(format!(
                    "synced from another folder ({})",
                    source.root.as_deref().unwrap_or("unknown")
                )),
                _ => Some("sync did not make".to_string()),
            };
            if let Some(theirs) = theirs {
                return Ok(Outcome::Failed {
                    line: doc.source().and_then(|s| s.lines).map(|[first, _]| first),
                    reason: format!(
                        "{} id `{}` is taken by a document {theirs} (it is left as it is)",
                        doc.kind(),
                        doc.id()
                    ),
                });
            }
        }
        Ok(Outcome::Read { docs })
    }
}

fn check_options(options: &SyncOptions) -> Result<()> {
    check_name("tenant", &options.tenant)?;
    if let Some(agent) = &options.agent {
        check_name("agent", agent)?;
    }
    if !CHUNK_TOKENS_RANGE.contains(&options.chunk_tokens) {
        return Err(Error::invalid_input(format!(
            "`chunk_tokens` must be between {} and {}, got {}",
            CHUNK_TOKENS_RANGE.start(),
            CHUNK_TOKENS_RANGE.end(),
            options.chunk_tokens
        )));
    }
    Ok(())
}

/// Reads one file: unchanged when its hash is the one its documents carry, its chunks
/// otherwise, or why it cannot be read.
fn read_one(found: &Found, held: Option<&Held>, options: &SyncOptions, root: &str) -> Outcome {
    let bytes = match std::fs::read(&found.path) {
        Ok(bytes) => bytes,
        Err(err) => {
            return Outcome::Failed {
                line: None,
                reason: format!("cannot be read: {err}"),
            };
        }
    };
    let hash = file_hash(&bytes, found.format, options);
    if held.is_some_and(|held| held.hash == hash) {
        return Outcome::Unchanged;
    }
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        Err(err) => {
            let line = bytes[..err.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            return Outcome::Failed {
                line: Some(u32::try_from(line).unwrap_or(u32::MAX)),
                reason: format!("is not UTF-8 text (byte {})", err.valid_up_to()),
            };
        }
    };
    let read = files::documents(
        &found.name,
        &found.from_root,
        text,
        found.format,
        options.chunk_tokens,
        &hash,
    );
    let mut docs = match read {
        Ok(docs) => docs,
        Err(err) => {
            return Outcome::Failed {
                line: err.line,
                reason: err.reason,
            };
        }
    };
    for doc in &mut docs {
        set_owner(doc, &options.tenant, options.agent.as_deref(), root);
    }
    Outcome::Read { docs }
}

/// Gives a document the tenant and agent of the sync, and its source the root.
fn set_owner(doc: &mut Document, tenant: &str, agent: Option<&str>, root: &str) {
    let mut no_source = None;
    let (tenant_id, agent_id, source) = match doc {
        Document::Chunk(c) => (&mut c.tenant_id, &mut c.agent_id, &mut c.source),
        Document::Rule(r) => (&mut r.tenant_id, &mut r.agent_id, &mut r.source),
        Document::Tool(t) => (&mut t.tenant_id, &mut t.agent_id, &mut t.source),
        Document::Scenario(s) => (&mut s.tenant_id, &mut s.agent_id, &mut no_source),
    };
    tenant.clone_into(tenant_id);
    *agent_id = agent.map(str::to_string);
    if let Some(source) = source {
        source.root = Some(root.to_string());
    }
}

/// Whether a document's source was read from `root` (an absolute path is the same file
/// from anywhere).
fn from_root(source: &Source, root: &str) -> bool {
    source.path.starts_with('/') || source.root.as_deref() == Some(root)
}

/// The hash a file's documents carry: of its bytes, of how sync cut it and of whose
/// documents they are (another agent's sync re-reads the file).
fn file_hash(bytes: &[u8], format: Format, options: &SyncOptions) -> String {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    hasher.update(&CUT_VERSION.to_le_bytes());
    hasher.update(format.name().as_bytes());
    hasher.update(&(options.chunk_tokens as u64).to_le_bytes());
    hasher.update(options.agent.as_deref().unwrap_or("").as_bytes());
    hasher.update(&[0]);
    hasher.update(bytes);
    format!("{:032x}", hasher.digest128())
}
