//! Opening an index directory (a writer, with its lock, catching up and publishing; a
//! reader, from the published files), refreshing a reader, closing, and removing an index.

use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use crate::embed::Embedders;
use crate::local::LocalIndex;
use crate::local::catalog::Catalog;
use crate::local::store::Store;
use crate::local::store::view::{self, ViewList};
use crate::local::text::TextIndex;
use crate::local::vector::VectorIndex;
use crate::{Error, ErrorKind, Result};

use super::builder::EngineBuilder;
use super::lock::{LOCK_FILE, is_empty_or_missing, lock, take_lock, writer_alive};
use super::manifest::manifest_of;
use super::publish::{last_text_commit, protect_snapshot, text_snapshot};
use super::state::{
    Counters, Engine, Inner, OpenMode, Pending, Reader, STORE_DIR, TEXT_DIR, WorkerSignal,
};
use super::{embedders, maintain, manifest, publish, swap};

impl Drop for Engine {
    fn drop(&mut self) {
        if self.worker.is_none() {
            return;
        }
        self.stop_worker();
        if let Err(err) = maintain::checkpoint_all(&self.inner, false) {
            tracing::warn!(error = %err, "could not store the graph checkpoint at close");
        }
        if let Err(err) = self.inner.local.store.flush() {
            tracing::warn!(error = %err, "could not flush the store at close");
        }
    }
}

impl Engine {
    /// Deletes the index in `dir`: the files the engine made there (in `store/`,
    /// `text/`, `view/`; `MANIFEST`, `LOCK`, its scratch directories). Anything else in
    /// `dir` (a directory of the engine's that holds a file of the user's too), and `dir`
    /// itself, are kept.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::IndexNotFound`] when `dir` holds no index,
    /// [`ErrorKind::Locked`] when it is open, and I/O errors naming the path.
    pub fn remove(dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        if !swap::holds_index(dir) {
            return Err(Error::new(ErrorKind::IndexNotFound {
                path: dir.to_path_buf(),
            }));
        }
        let lock_file = lock(dir, std::time::Duration::ZERO)?;
        maintain::remove_scratch(dir);
        swap::recover(dir)?;
        // The engine's own files only: a file of the user's stays, and its directory.
        for owned in [STORE_DIR, TEXT_DIR, view::VIEW_DIR, manifest::MANIFEST_FILE] {
            swap::remove_part(&dir.join(owned), owned)?;
        }
        swap::remove_part(&dir.join("MANIFEST.tmp"), manifest::MANIFEST_FILE)?;
        drop(lock_file);
        let path = dir.join(LOCK_FILE);
        std::fs::remove_file(&path).map_err(|err| Error::io_at(&path, err))?;
        Ok(())
    }
}

/// The feedback windows the store keeps, by window key.
pub(crate) fn feedback_windows(
    store: &Store,
) -> Result<std::collections::HashMap<String, crate::feedback::FeedbackWindow>> {
    Ok(store
        .feedback_windows()?
        .into_iter()
        .map(|(tenant, entries)| {
            (
                tenant,
                crate::feedback::FeedbackWindow::from_entries(entries),
            )
        })
        .collect())
}

/// What an open read from the store, and the embedder it loaded meanwhile.
pub(crate) struct Opened {
    embedders: Embedders,
    /// Whether the index is still undecided about its embedders (see `Inner::undecided`).
    undecided: bool,
    catalog: Catalog,
    /// The entity lists derived because the store did not keep them.
    derived: Vec<(crate::model::id::DocId, Vec<String>)>,
    /// The documents whose token counts are still to read (`None`: all).
    untokened: Option<Vec<crate::model::id::DocId>>,
}

/// Loads the catalog from `store`, with the embedders (`created`: those of a new index,
/// chosen already; otherwise the asked or recorded ones, [`embedders::open`]) loading on
/// a thread of their own meanwhile (the compiled-in models take tens of milliseconds: a
/// one-shot search waits for both, not for their sum).
pub(crate) fn load_with_embedders(
    store: &Store,
    asks: &embedders::Asks,
    created: Option<embedders::Chosen>,
) -> Result<Opened> {
    let meta = store.meta();
    let phase = std::time::Instant::now();
    let (chosen, loaded) = std::thread::scope(|scope| {
        let choosing = created
            .is_none()
            .then(|| scope.spawn(|| embedders::open(asks, &meta)));
        let loaded = maintain::load_catalog(store, false);
        let chosen = match choosing {
            Some(handle) => handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            None => Ok(created.expect("a new index's embedders")),
        };
        (chosen, loaded)
    });
    let embedders::Chosen {
        embedders,
        undecided,
    } = chosen?;
    let maintain::Loaded {
        catalog,
        derived,
        untokened,
        ..
    } = loaded?;
    tracing::debug!(
        elapsed_ms = phase.elapsed().as_millis() as u64,
        docs = catalog.len(),
        "catalog loaded"
    );
    Ok(Opened {
        embedders,
        undecided,
        catalog,
        derived,
        untokened,
    })
}

/// Reads the manifest, the published files it lists and the text index, until they
/// are of one commit: a writer may publish meanwhile (a file listed is then gone: read
/// again), and commits its text index just before it publishes (the text index is then
/// one commit ahead for a moment: wait for the manifest, for at most 5 seconds while a
/// writer holds the index, then take the text index as it is: its extra versions are
/// not in the catalog, so they are never returned, but the versions that commit replaced
/// or deleted have no text leg until the next writer publishes).
///
/// A text index that cannot be read while no writer holds the index is damaged: the
/// documents are read all the same (`export`, `get`, `stats` need no text index), with
/// an empty text index in its place and the error kept, which every search returns.
pub(crate) fn read_published(
    dir: &Path,
    patterns_in_text: bool,
) -> Result<(Store, TextIndex, Option<String>)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let late = std::time::Instant::now() >= deadline;
        // A new index being swapped in (repair, compact, reembed, backup): wait for the
        // writer that swaps it. A swap stopped half-way (its writer gone) is finished
        // by the next open for writing; until then the new index is read where its
        // parts are.
        while swap::pending(dir) && writer_alive(dir) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let layout = swap::Layout::of(dir);
        let Some((manifest, list)) = manifest::read_with_view(&layout.manifest)? else {
            return Err(if dir.join(STORE_DIR).exists() {
                Error::new(ErrorKind::Uncommitted {
                    path: dir.to_path_buf(),
                })
            } else {
                Error::new(ErrorKind::IndexNotFound {
                    path: dir.to_path_buf(),
                })
            });
        };
        let Some(list) = list.filter(|list| list.seq == manifest.seq && list.base.is_some()) else {
            return Err(Error::new(ErrorKind::NotPublished {
                path: dir.to_path_buf(),
            }));
        };
        let Some(published) = view::Published::load(&layout.view, &list)? else {
            if late {
                return Err(Error::corrupt(format!(
                    "{}: the published files changed faster than they could be read",
                    dir.join(view::VIEW_DIR).display()
                )));
            }
            continue;
        };
        let manifest_moved = || {
            manifest::read_with_view(&swap::Layout::of(dir).manifest)
                .ok()
                .flatten()
                .is_none_or(|(now, view)| (now, view) != (manifest, Some(list.clone())))
        };
        // The text commit the manifest names (an earlier version's manifest names none:
        // the text index's last commit then, whatever it holds).
        let text_dir = layout.text.join(TEXT_DIR);
        let opened = match &list.text {
            Some(meta) => TextIndex::open_snapshot(&text_dir, patterns_in_text, meta),
            None => last_text_commit(&text_dir)
                .and_then(|meta| TextIndex::open_snapshot(&text_dir, patterns_in_text, &meta)),
        };
        match opened {
            Ok((text, seq)) => {
                if seq != list.seq {
                    tracing::warn!(
                        text = seq,
                        published = list.seq,
                        "the text index and the published files are of different commits"
                    );
                }
                return Ok((Store::published(published), text, None));
            }
            Err(err) => {
                // A file of the commit is gone: a writer published a newer one (read
                // the manifest again), is rebuilding the text index (wait for its
                // manifest), or is swapping in a new index. Without any, the text
                // index is damaged.
                if (manifest_moved() || swap::pending(dir)) && !late {
                    continue;
                }
                if !writer_alive(dir) {
                    let damaged = format!(
                        "{}: the text index cannot be read ({err}); `ruche repair` rebuilds it",
                        text_dir.display()
                    );
                    let empty = TextIndex::empty_in_memory(patterns_in_text)?;
                    return Ok((Store::published(published), empty, Some(damaged)));
                }
                while !manifest_moved() && std::time::Instant::now() < deadline {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                if std::time::Instant::now() < deadline {
                    continue;
                }
                return Err(err);
            }
        }
    }
}

impl Engine {
    /// Starts configuring an engine.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    pub(crate) fn open_dir(
        builder: EngineBuilder,
        dir: &Path,
        mode: OpenMode,
        temp_dir: Option<tempfile::TempDir>,
    ) -> Result<Engine> {
        builder.config.validate()?;
        let store_dir = dir.join(STORE_DIR);
        // In a directory that holds an index (or a swap of one under way), the lock
        // comes first: a repair, reembed, compaction or backup stopped half-way is
        // finished (or its scratch removed) before anything is read.
        let holds_index = [
            STORE_DIR,
            swap::SCRATCH_DIR,
            manifest::MANIFEST_FILE,
            LOCK_FILE,
        ]
        .iter()
        .any(|name| std::fs::symlink_metadata(dir.join(name)).is_ok());
        let mut lock_file = None;
        if holds_index {
            lock_file = Some(take_lock(&builder, dir)?);
            swap::recover(dir)?;
            maintain::remove_scratch(dir);
        }
        let exists = store_dir.exists();
        let create = match (mode, exists) {
            (OpenMode::Create, true) => {
                return Err(Error::new(ErrorKind::IndexExists {
                    path: dir.to_path_buf(),
                }));
            }
            (OpenMode::Open, false) => {
                return Err(Error::new(ErrorKind::IndexNotFound {
                    path: dir.to_path_buf(),
                }));
            }
            (OpenMode::Create, false) | (OpenMode::OpenOrCreate, false) => true,
            (_, true) => false,
        };
        if create && !is_empty_or_missing(dir)? {
            return Err(Error::new(ErrorKind::NotAnIndex {
                path: dir.to_path_buf(),
            }));
        }
        let asks = embedders::Asks::of(&builder)?;
        if create {
            std::fs::create_dir_all(dir)?;
        }
        let lock_file = match lock_file {
            Some(lock_file) => lock_file,
            None => take_lock(&builder, dir)?,
        };
        let phase = std::time::Instant::now();
        let store = Store::open(&store_dir, create, builder.cache_bytes)?;
        // A first import killed before its store recorded anything left a blank store:
        // an empty index, made now.
        let create = create || store.was_blank();
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "store opened"
        );
        let created = create
            .then(|| embedders::create(&asks, &store))
            .transpose()?;
        let Opened {
            embedders,
            undecided,
            catalog,
            derived,
            ..
        } = load_with_embedders(&store, &asks, created)?;

        // The store must hold at least what the manifest says was committed: sled drops
        // what it cannot read, so a damaged store can open with less and no error.
        let found = manifest_of(&store, &catalog);
        let recorded = manifest::read_with_view(dir)?;
        if let Some((recorded, _)) = &recorded {
            manifest::verify(recorded, &found)?;
        }
        // After the check above: a damaged store is not written to.
        if !derived.is_empty() {
            // Written before the store kept entity lists, or dropped by a repair.
            store.add_entity_lists(&derived)?;
            tracing::info!(documents = derived.len(), "entity lists stored");
        }
        // Indexes made before query ids were signed get their key.
        let id_key = store.id_key()?;
        let feedback = feedback_windows(&store)?;
        let counters = Counters::default();
        let phase = std::time::Instant::now();
        // Readers open the text commit the manifest names: its files are kept until
        // another is published, through the catch-up or rebuild below too.
        let protected = crate::local::text::Protected::default();
        if let Some(meta) = recorded
            .as_ref()
            .and_then(|(_, view)| view.as_ref())
            .and_then(|view| view.text.as_deref())
        {
            match TextIndex::snapshot_files(&dir.join(TEXT_DIR), meta) {
                Ok(files) => {
                    protected.set(files);
                }
                // Gone or damaged: the text index is rebuilt below.
                Err(err) => {
                    tracing::debug!(error = %err, "the published text commit is unreadable")
                }
            }
        }
        let text = maintain::open_text(
            &dir.join(TEXT_DIR),
            &store,
            &catalog,
            &counters,
            create,
            builder.config.fusion.patterns_in_text,
            &protected,
        )?;
        let mut catalog = catalog;
        crate::local::start_helper_for(&catalog);
        maintain::fill_tokens(&text, &mut catalog)?;
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "text index opened"
        );
        // What readers open: kept when it is this state's, whole and intact; published
        // again otherwise (an index of an earlier version, whose base readers could not
        // map, a crash between a commit and its publish, a damaged or missing file).
        // After the text index is caught up, so that a reader finds the text index of
        // the manifest's commit.
        let phase = std::time::Instant::now();
        let recorded_view = recorded.as_ref().and_then(|(_, view)| view.clone());
        let view = match recorded_view {
            Some(view)
                if view.seq == found.seq
                    && view.base.as_ref().is_some_and(|base| base.mapped)
                    // A base published while some entity lists were derived would not
                    // match the store, which keeps them now.
                    && derived.is_empty()
                    && publish::present(dir, &view) =>
            {
                view
            }
            stale => {
                // Its graph checkpoints stay valid (a graph covers a prefix of the
                // changes; the documents after it are scanned exactly).
                let present = |graphs: &[Option<view::ViewGraph>]| -> Vec<Option<view::ViewGraph>> {
                    graphs
                        .iter()
                        .map(|graph| {
                            graph.clone().filter(|graph| {
                                std::iter::once(&graph.manifest)
                                    .chain(&graph.files)
                                    .all(|file| publish::file_present(dir, file))
                            })
                        })
                        .collect()
                };
                let mut list = ViewList {
                    next_file: view::next_free_number(dir)
                        .max(stale.as_ref().map_or(0, |list| list.next_file)),
                    graphs: stale
                        .as_ref()
                        .map(|list| present(&list.graphs))
                        .unwrap_or_default(),
                    retired_graphs: stale
                        .as_ref()
                        .map(|list| present(&list.retired_graphs))
                        .unwrap_or_default(),
                    ..ViewList::default()
                };
                let tokens = |doc| catalog.get(doc).map_or([0, 0], |entry| entry.tokens);
                publish::publish_base(dir, &store, &mut list, &tokens)?;
                list
            }
        };
        let mut view = view;
        view.text = text_snapshot(&text, dir, view.seq);
        if recorded.as_ref() != Some(&(found, Some(view.clone()))) {
            manifest::write(dir, &found, Some(&view))?;
        }
        protect_snapshot(&text, dir, &view);
        view::remove_unlisted(dir, &view);
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "published view checked"
        );
        // The graphs load from their checkpoints in the background worker: until then,
        // the vector leg scans exactly what they do not cover (everything, at first).
        let vectors = VectorIndex::new(builder.config.vector.params());

        let local = LocalIndex::new(
            store,
            text,
            vectors,
            catalog,
            Some(view),
            None,
            &builder.config,
        );
        let inner = Arc::new(Inner {
            dir: dir.to_path_buf(),
            config: builder.config,
            local,
            embedders: RwLock::new(embedders),
            undecided: Mutex::new(undecided),
            pending: Mutex::new(Pending::default()),
            commit_lock: Mutex::new(()),
            counters,
            worker: WorkerSignal::starting(),
            id_key,
            feedback: Mutex::new(feedback),
            _lock_file: Some(lock_file),
            _temp_dir: temp_dir,
        });
        let worker = maintain::spawn_worker(Arc::clone(&inner))?;
        let verifier = publish::spawn_verifier(&inner)?;
        Ok(Engine {
            reader: Reader { inner },
            worker: Some(worker),
            verifier,
        })
    }

    /// Opens `dir` to read what its writer published ([`EngineBuilder::open_read_only`](crate::EngineBuilder::open_read_only)).
    pub(crate) fn open_reader(builder: EngineBuilder, dir: &Path) -> Result<Reader> {
        builder.config.validate()?;
        let phase = std::time::Instant::now();
        let patterns_in_text = builder.config.fusion.patterns_in_text;
        let (store, text, text_damaged) = read_published(dir, patterns_in_text)?;
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            "published view read"
        );
        let asks = embedders::Asks::of(&builder)?;
        let phase = std::time::Instant::now();
        // The published graphs are read and decoded while the catalog is built.
        let (opened, graphs) = std::thread::scope(|scope| {
            let graphs = scope.spawn(|| maintain::read_published_graphs(&store));
            let opened = load_with_embedders(&store, &asks, None);
            let graphs = graphs
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (opened, graphs)
        });
        let Opened {
            embedders,
            mut catalog,
            untokened,
            ..
        } = opened?;
        crate::local::start_helper_for(&catalog);
        // The catalog holds what searches need: the documents stay in their files.
        store.release_published();
        maintain::fill_tokens_of(&text, &mut catalog, untokened.as_deref())?;
        tracing::debug!(
            elapsed_ms = phase.elapsed().as_millis() as u64,
            docs = catalog.len(),
            "catalog loaded"
        );
        let meta = store.meta();
        let id_key = meta
            .id_key
            .ok_or_else(|| Error::corrupt("the published view has no query id key"))?;
        let feedback = feedback_windows(&store)?;
        let list = store.published_list();
        let local = LocalIndex::new(
            store,
            text,
            VectorIndex::new(builder.config.vector.params()),
            catalog,
            list,
            text_damaged,
            &builder.config,
        );
        let inner = Arc::new(Inner {
            dir: dir.to_path_buf(),
            config: builder.config,
            local,
            embedders: RwLock::new(embedders),
            undecided: Mutex::new(false),
            pending: Mutex::new(Pending::default()),
            commit_lock: Mutex::new(()),
            counters: Counters::default(),
            worker: WorkerSignal::starting(),
            id_key,
            feedback: Mutex::new(feedback),
            _lock_file: None,
            _temp_dir: None,
        });
        maintain::install_published_graphs(&inner, graphs);
        // Nothing read from the mapped base is used before its checksum is known.
        if let Some(view) = inner.local.store.published_view() {
            view.verified()?;
        }
        maintain::spawn_loader(&inner)?;
        Ok(Reader { inner })
    }

    /// Finishes the graphs, stores their checkpoints, flushes and closes the index.
    ///
    /// # Errors
    ///
    /// Storage errors; the index stays consistent (what was committed is kept).
    pub fn close(mut self) -> Result<()> {
        if let Some(verifier) = self.verifier.take() {
            // It has published again whatever was damaged when it returns.
            let _ = verifier.join();
        }
        self.inner.wait_for_worker();
        self.stop_worker();
        maintain::checkpoint_all(&self.inner, true)?;
        self.inner.local.store.flush()?;
        self.close_store()
    }

    /// Closes the store now when nothing else holds the engine, so that a failure of
    /// its last sync is this call's error rather than a log line at the last drop.
    pub(crate) fn close_store(&mut self) -> Result<()> {
        match Arc::get_mut(&mut self.reader.inner) {
            Some(inner) => inner.local.store.close(),
            None => Ok(()),
        }
    }

    /// Flushes and closes the index without finishing its graphs (a copy whose graphs
    /// its next open for writing builds).
    pub(crate) fn close_without_graphs(mut self) -> Result<()> {
        if let Some(verifier) = self.verifier.take() {
            let _ = verifier.join();
        }
        self.stop_worker();
        self.inner.local.store.flush()?;
        self.close_store()
    }

    pub(crate) fn stop_worker(&mut self) {
        self.inner.worker.request_stop();
        if let Some(worker) = self.worker.take() {
            // A panicking worker has already reported itself; the graph is derived data.
            let _ = worker.join();
        }
    }
}

impl Reader {
    /// Moves a reader to the last state its writer published; returns whether there
    /// was a newer one. A writer always sees its own commits: `Ok(false)`.
    ///
    /// # Errors
    ///
    /// As [`EngineBuilder::open_read_only`](crate::EngineBuilder::open_read_only); on error the engine keeps the state it had.
    pub fn refresh(&mut self) -> Result<bool> {
        if !self.is_read_only() {
            return Ok(false);
        }
        let current = self
            .inner
            .local
            .view
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let latest = manifest::read_with_view(&swap::Layout::of(&self.inner.dir).manifest)?
            .and_then(|(_, view)| view);
        if latest.is_none() || latest == current {
            return Ok(false);
        }
        let builder = EngineBuilder::default()
            .with_config(self.inner.config.clone())
            .embedders_of(self.inner.embedders());
        *self = Engine::open_reader(builder, &self.inner.dir.clone())?;
        Ok(true)
    }
}
