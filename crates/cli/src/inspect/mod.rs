//! `ruche inspect`: a local web page that shows why the engine answers as it does.
//!
//! Read-only (the index is opened with `open_read_only` and refreshed to the last
//! published commit on each request), on 127.0.0.1 only, GET only, no scripts and no
//! external resources: pages are rendered on the server (maud), charts are inline SVG
//! (plotters). A URL never names a file: the Evaluate page reads only the judged files
//! given on the command line, regular files of bounded size, read before the engine is
//! taken; a long evaluation shares the engine with the other pages instead of holding it.

mod chart;
mod explain;
mod form;
mod pages;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, PoisonError, RwLock, TryLockError};

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use maud::{Markup, html};
use ruchedb::{Config, DEFAULT_TENANT, Document, Kind, Reader};

use crate::args::InspectArgs;
use crate::eval::{Evaluation, Outcome};
use explain::{Explained, ExplainedTurn};
use form::{Form, Shown, given};
use pages::Site;

/// At most this many score curves in an evaluation report (wrong answers and refusals).
const REPORT_CURVES: usize = 50;

/// The largest judged file the Evaluate page reads (64 MiB).
const JUDGED_FILE_LIMIT: u64 = 64 << 20;

/// What the handlers share.
struct App {
    /// Pages read it together; only moving it to a newer commit takes it alone.
    engine: RwLock<Reader>,
    dir: String,
    /// The `Host` headers accepted (a page on another name is a DNS-rebinding attempt).
    hosts: [String; 2],
    /// The Evaluate page's files, from the command line only.
    judged: Option<Judged>,
}

/// The judged messages' files the user named at start (`--queries`, `--qrels`).
struct Judged {
    queries: PathBuf,
    qrels: PathBuf,
}

impl Judged {
    /// The files as given, each checked once now: a regular file within the limit.
    fn from_args(args: &InspectArgs) -> Result<Option<Judged>> {
        let (Some(queries), Some(qrels)) = (&args.queries, &args.qrels) else {
            return Ok(None);
        };
        for (flag, path) in [("--queries", queries), ("--qrels", qrels)] {
            crate::input::read_regular_file(path, JUDGED_FILE_LIMIT)
                .with_context(|| format!("{flag} {}", path.display()))?;
        }
        Ok(Some(Judged {
            queries: queries.clone(),
            qrels: qrels.clone(),
        }))
    }

    /// Reads and parses both files as they are now (each a regular file within the
    /// limit: a file replaced by a FIFO or a device since the start is refused, not
    /// waited on).
    fn read(
        &self,
        defaults: &crate::input::QueryDefaults,
    ) -> Result<Vec<(String, ruchedb::SearchRequest, ruchedb::eval::Qrels)>> {
        let queries = crate::input::read_regular_file(&self.queries, JUDGED_FILE_LIMIT)?;
        let qrels = crate::input::read_regular_file(&self.qrels, JUDGED_FILE_LIMIT)?;
        let lines = crate::input::read_numbered_from(&queries[..], &self.queries)?
            .into_iter()
            .map(|(_, line)| line)
            .collect();
        let judgements = crate::eval::read_qrels_from(&qrels[..], &self.qrels)?;
        crate::eval::pair_judged(lines, &judgements, &self.queries, &self.qrels, defaults)
    }
}

pub fn run(config: &Config, args: &InspectArgs) -> Result<ExitCode> {
    let judged = Judged::from_args(args)?;
    let engine = open(config, &args.dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the HTTP server's runtime")?;
    runtime.block_on(async {
        let address = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .with_context(|| format!("--port {}: cannot listen on {address}", args.port))?;
        let address = listener.local_addr()?;
        let app = Arc::new(App {
            engine: RwLock::new(engine),
            dir: args.dir.display().to_string(),
            hosts: [
                format!("127.0.0.1:{}", address.port()),
                format!("localhost:{}", address.port()),
            ],
            judged,
        });
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "ruche inspect: http://{address}/")?;
        stdout.flush()?;
        drop(stdout);
        crate::progress::note("read-only; Ctrl-C stops");
        axum::serve(listener, router(app))
            .with_graceful_shutdown(stopped())
            .await
            .context("the HTTP server failed")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// Opens the index read-only: the inspector never writes it.
fn open(config: &Config, dir: &Path) -> Result<Reader> {
    if crate::milvus::is_milvus(dir) {
        bail!(
            "{}: `ruche inspect` works on a local index directory",
            dir.display()
        );
    }
    match crate::commands::builder(config).open_read_only(dir) {
        Ok(engine) => Ok(engine),
        Err(err) if matches!(err.kind(), ruchedb::ErrorKind::NotPublished { .. }) => Err(err)
            .context(
                "`ruche inspect` opens the index read-only and writes nothing: run `ruche stats DIR` once to publish it",
            ),
        Err(err) => Err(err.into()),
    }
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM.
async fn stopped() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/", get(playground))
        .route("/rules", get(rules))
        .route("/chunks", get(chunks))
        .route("/scenarios", get(scenarios))
        .route("/tools", get(tools))
        .route("/doc", get(document))
        .route("/eval", get(evaluate))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// Refuses a request for another host name (DNS rebinding), and tells the browser to run
/// no script and fetch nothing: the pages need neither.
async fn guard(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    if let Some(host) = request.headers().get(header::HOST)
        && !app.hosts.iter().any(|h| h.as_bytes() == host.as_bytes())
    {
        return (
            StatusCode::FORBIDDEN,
            "ruche inspect answers on 127.0.0.1 and localhost only\n",
        )
            .into_response();
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// A page's status, title and body.
type Page = (StatusCode, String, Markup);

fn failed(status: StatusCode, message: impl std::fmt::Display) -> Page {
    (
        status,
        "Error".into(),
        pages::error_box(&message.to_string()),
    )
}

/// Renders a page on a blocking thread, with the engine refreshed to the last commit
/// its writer published (unless another page is reading it: then this page shows the
/// commit that one reads, rather than wait for it).
async fn render<F>(app: Arc<App>, current: &'static str, page: F) -> Response
where
    F: FnOnce(&App, &Reader) -> Page + Send + 'static,
{
    let rendered = tokio::task::spawn_blocking(move || {
        let stale = match app.engine.try_write() {
            Ok(mut engine) => engine.refresh().err(),
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner().refresh().err(),
            Err(TryLockError::WouldBlock) => None,
        }
        .map(|err| {
            tracing::warn!(error = %err, "could not move to the last published commit");
            err.to_string()
        });
        let engine = app.engine.read().unwrap_or_else(PoisonError::into_inner);
        let (status, title, body) = page(&app, &engine);
        let stats = engine.stats();
        let site = Site {
            dir: &app.dir,
            stats: &stats,
            current,
            stale: stale.as_deref(),
        };
        (
            status,
            pages::layout(&title, Some(&site), body).into_string(),
        )
    })
    .await;
    match rendered {
        Ok((status, html)) => (status, Html(html)).into_response(),
        Err(err) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the page failed: {err}\n"),
        )
            .into_response(),
    }
}

async fn playground(State(app): State<Arc<App>>, Query(form): Query<Form>) -> Response {
    render(app, "/", move |_, engine| {
        let result = if form.is_turn() {
            match form.turn_request() {
                Err(err) => Some(Err(format!("{err:#}"))),
                Ok(None) => None,
                Ok(Some(request)) => Some(
                    ExplainedTurn::run(engine, &request)
                        .map(|turn| Shown::Turn(Box::new(turn)))
                        .map_err(|err| err.to_string()),
                ),
            }
        } else {
            match form.request() {
                Err(err) => Some(Err(format!("{err:#}"))),
                Ok(None) => None,
                Ok(Some(request)) => Some(
                    Explained::run(engine, &request)
                        .map(|explained| Shown::Search(Box::new(explained)))
                        .map_err(|err| err.to_string()),
                ),
            }
        };
        let status = if matches!(result, Some(Err(_))) {
            StatusCode::BAD_REQUEST
        } else {
            StatusCode::OK
        };
        let title = given(&form.q).unwrap_or("Playground").to_string();
        match pages::playground(&form, result) {
            Ok(body) => (status, title, body),
            Err(err) => failed(StatusCode::INTERNAL_SERVER_ERROR, err),
        }
    })
    .await
}

/// Every document of a kind, in every tenant.
fn export(engine: &Reader, kind: Kind) -> Result<Vec<Document>, Page> {
    engine
        .export(kind, None)
        .map_err(|err| failed(StatusCode::INTERNAL_SERVER_ERROR, err))
}

async fn rules(State(app): State<Arc<App>>) -> Response {
    render(app, "/rules", |_, engine| {
        match export(engine, Kind::Rule) {
            Ok(docs) => {
                let rules: Vec<ruchedb::Rule> = docs
                    .into_iter()
                    .filter_map(|doc| match doc {
                        Document::Rule(rule) => Some(rule),
                        _ => None,
                    })
                    .collect();
                (StatusCode::OK, "Rules".into(), pages::rules(&rules))
            }
            Err(page) => page,
        }
    })
    .await
}

#[derive(serde::Deserialize)]
struct ChunksQuery {
    context: Option<String>,
}

async fn chunks(State(app): State<Arc<App>>, Query(query): Query<ChunksQuery>) -> Response {
    render(app, "/chunks", move |_, engine| {
        match export(engine, Kind::Chunk) {
            Ok(docs) => {
                let chunks: Vec<ruchedb::Chunk> = docs
                    .into_iter()
                    .filter_map(|doc| match doc {
                        Document::Chunk(chunk) => Some(chunk),
                        _ => None,
                    })
                    .collect();
                let body = pages::chunks(&chunks, query.context.as_deref());
                (StatusCode::OK, "Chunks".into(), body)
            }
            Err(page) => page,
        }
    })
    .await
}

async fn scenarios(State(app): State<Arc<App>>) -> Response {
    catalog(app, "/scenarios", Kind::Scenario).await
}

async fn tools(State(app): State<Arc<App>>) -> Response {
    catalog(app, "/tools", Kind::Tool).await
}

async fn catalog(app: Arc<App>, current: &'static str, kind: Kind) -> Response {
    render(app, current, move |_, engine| match export(engine, kind) {
        Ok(docs) => (
            StatusCode::OK,
            pages::capitalised(kind.plural()),
            pages::catalog(kind, &docs),
        ),
        Err(page) => page,
    })
    .await
}

#[derive(serde::Deserialize)]
struct DocQuery {
    kind: Option<String>,
    id: Option<String>,
    tenant: Option<String>,
}

async fn document(State(app): State<Arc<App>>, Query(query): Query<DocQuery>) -> Response {
    render(app, "", move |_, engine| {
        let kind = match given(&query.kind).map(str::parse::<Kind>) {
            Some(Ok(kind)) => kind,
            Some(Err(err)) => return failed(StatusCode::BAD_REQUEST, err),
            None => return failed(StatusCode::BAD_REQUEST, "give a kind and an id"),
        };
        let Some(id) = query.id.as_deref() else {
            return failed(StatusCode::BAD_REQUEST, "give a kind and an id");
        };
        let tenant = given(&query.tenant).unwrap_or(DEFAULT_TENANT);
        let doc = match engine.get(kind, tenant, id) {
            Ok(Some(doc)) => doc,
            Ok(None) => {
                return failed(
                    StatusCode::NOT_FOUND,
                    format!("no {kind} with id `{id}` in tenant `{tenant}`"),
                );
            }
            Err(err) => return failed(StatusCode::INTERNAL_SERVER_ERROR, err),
        };
        match explain::check_examples(engine, &doc) {
            Ok(checks) => (
                StatusCode::OK,
                format!("{kind} {id}"),
                pages::document(&doc, &checks),
            ),
            Err(err) => failed(StatusCode::INTERNAL_SERVER_ERROR, err),
        }
    })
    .await
}

#[derive(serde::Deserialize)]
struct EvalQuery {
    /// Refused when given: a URL names no file (any page a browser visits could send
    /// one); the files come from the command line.
    queries: Option<String>,
    qrels: Option<String>,
    kind: Option<String>,
    tenant: Option<String>,
}

async fn evaluate(State(app): State<Arc<App>>, Query(query): Query<EvalQuery>) -> Response {
    let kind = given(&query.kind).map(str::parse::<Kind>).transpose();
    let tenant = given(&query.tenant).unwrap_or(DEFAULT_TENANT).to_string();
    let named_files = query.queries.is_some() || query.qrels.is_some();
    // The files are read before the engine is taken: a slow disk delays this page only.
    let reading = app.clone();
    let read_tenant = tenant.clone();
    let read = tokio::task::spawn_blocking(move || {
        let judged = match (&reading.judged, &kind) {
            (Some(judged), Ok(given)) if !named_files => {
                let defaults = crate::input::QueryDefaults {
                    kind: Some(given.unwrap_or(Kind::Rule)),
                    tenant: Some(read_tenant),
                    ..Default::default()
                };
                Some(judged.read(&defaults).map_err(|err| format!("{err:#}")))
            }
            _ => None,
        };
        (kind, judged)
    })
    .await;
    let (kind, judged) = match read {
        Ok(read) => read,
        Err(err) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the page failed: {err}\n"),
            )
                .into_response();
        }
    };
    render(app, "/eval", move |app, engine| {
        let kind = match kind {
            Ok(kind) => kind.unwrap_or(Kind::Rule),
            Err(err) => return failed(StatusCode::BAD_REQUEST, err),
        };
        let files = app.judged.as_ref().map(|j| (&j.queries, &j.qrels));
        let form = pages::eval_form(files, kind, &tenant);
        if named_files {
            let body = html! {
                (form)
                (pages::error_box("The Evaluate page reads only the files given on the command line: `ruche inspect DIR --queries FILE --qrels FILE`. A URL cannot name a file."))
            };
            return (StatusCode::BAD_REQUEST, "Evaluate".into(), body);
        }
        let Some(judged) = judged else {
            let body = html! {
                (form)
                p { "Judged messages: start the inspector with " code { "--queries FILE --qrels FILE" } ", as " code { "ruche eval" } " takes them." }
            };
            return (StatusCode::OK, "Evaluate".into(), body);
        };
        let shown = judged
            .map_err(anyhow::Error::msg)
            .and_then(|judged| crate::eval::evaluate(engine, judged))
            .and_then(|e| pages::evaluation(&e, true, &BTreeMap::new()));
        match shown {
            Ok(body) => (
                StatusCode::OK,
                "Evaluate".into(),
                html! { (form) (body) },
            ),
            Err(err) => {
                let body = html! { (form) (pages::error_box(&format!("{err:#}"))) };
                (StatusCode::BAD_REQUEST, "Evaluate".into(), body)
            }
        }
    })
    .await
}

async fn not_found() -> Response {
    let body = html! {
        h1 { "Not found" }
        p { "The inspector has no such page: " a href="/" { "the playground" } "." }
    };
    (
        StatusCode::NOT_FOUND,
        Html(pages::layout("Not found", None, body).into_string()),
    )
        .into_response()
}

/// `ruche eval --report`: the evaluation as one self-contained HTML file, with the score
/// curves of the messages answered wrong or refused.
pub fn report(engine: &Reader, evaluation: &Evaluation, dir: &Path) -> Result<String> {
    let mut curves = BTreeMap::new();
    for judged in evaluation
        .queries
        .iter()
        .filter(|q| q.outcome() != Outcome::Right)
        .take(REPORT_CURVES)
    {
        let explained = Explained::run(engine, &judged.request)?;
        curves.insert(judged.id.clone(), pages::curve(&explained)?);
    }
    let body = html! {
        h1 { "Evaluation of " (dir.display()) }
        p {
            "Written by " code { "ruche eval --report" } ". Each message answered wrong or refused has its score curve"
            @if evaluation.queries.iter().filter(|q| q.outcome() != Outcome::Right).count() > REPORT_CURVES {
                " (the first " (REPORT_CURVES) ")"
            }
            ": every candidate by score, the gate's threshold on relevance and the selection's cut on score; "
            code { "ruche inspect" } " shows each in its playground."
        }
        (pages::evaluation(evaluation, false, &curves)?)
    };
    Ok(pages::layout("Evaluation", None, body).into_string())
}
