//! Building the application from Settings: storage, keys, the hashing pool and the
//! HTTP server. Binds before anything else so tests can ask for port 0.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Instant;

use std::time::Duration;

use actix_web::dev::{Server, Service, ServiceResponse};
use actix_web::http::header;
use actix_web::HttpMessage;
use actix_web::{web, App, HttpServer};

use crate::clock::Clock;
use crate::config::{self, ConfigError, Settings};
use crate::crypto::password::Hasher;
use crate::crypto::KeyStore;
use crate::db::{self, Db, DbError};
use crate::state::AppState;
use crate::{http, oidc};

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("database: {0}")]
    Db(#[from] DbError),
    #[error("cannot reach the database {0}; check that it is running and the URL is right")]
    Unreachable(String),
    #[error("signing keys: {0}")]
    Keys(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("--apply: {0}")]
    Apply(String),
    #[error("replication: {0}")]
    Replication(String),
}

pub struct Application {
    port: u16,
    server: Server,
    state: AppState,
}

/// Largest request body any endpoint accepts; protocol forms are a few hundred bytes.
const MAX_BODY: usize = 64 * 1024;

impl Application {
    pub async fn build(settings: Settings, clock: Clock) -> Result<Self, StartupError> {
        let listener = TcpListener::bind(settings.listen).map_err(|source| StartupError::Bind {
            addr: settings.listen.to_string(),
            source,
        })?;
        let addr = listener.local_addr()?;
        let issuer = match &settings.issuer {
            Some(url) => url.clone(),
            None => config::default_issuer(addr)?,
        };
        let mut settings = settings;
        if settings.replicate_to.is_some() {
            // Checkpoints become the shipper's, which runs them only on shipped frames.
            settings.sqlite.autocheckpoint = false;
        }
        let db = open_database(&settings, Open::Create).await?;
        let replication = start_replication(&settings, &db, &clock)?;
        let keys = signing_keys(&settings, &db, &clock).await?;
        let hasher = Hasher::start(settings.hash_threads, settings.bcrypt_cost)?;
        let limits = crate::auth::limits::RateLimits::new(settings.rate_limit);
        fill_skeletons(&db).await;
        let log_key = log_key(&db).await?;
        let clients = crate::oidc::client_cache::ClientCache::new(&settings);
        let dpop_nonces = dpop_nonce_key(&db).await?;
        let branding = crate::branding::Cache::new(&settings);
        let state = AppState {
            issuer: Arc::from(config::issuer_text(&issuer)),
            settings: Arc::new(settings),
            db,
            keys,
            hasher,
            clock,
            logout_wakeup: Arc::new(tokio::sync::Notify::new()),
            mail_wakeup: Arc::new(tokio::sync::Notify::new()),
            clients,
            limits,
            metrics: Default::default(),
            log_key,
            dpop_nonces,
            node: Arc::from(crate::crypto::random::random_id()),
            upstreams: Arc::new(crate::federation::Upstreams::new()),
            forward_auth: Arc::default(),
            replication,
            backups: Arc::default(),
            branding,
        };
        if let Some(path) = state.settings.apply_file.clone() {
            apply_at_start(&state, &path).await?;
        }
        spawn_background(&state);
        let server = server(listener, state.clone())?;
        Ok(Self {
            port: addr.port(),
            server,
            state,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until SIGINT/SIGTERM, lets in-flight requests finish, then flushes the
    /// writer so nothing acknowledged is left in its queue.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        self.state.db.shutdown();
        if let Some(shipper) = &self.state.replication {
            // After the writer's last commit: that is shipped too.
            shipper.stop();
        }
        result
    }
}

/// The replication thread, when `--replicate-to` is set.
fn start_replication(
    settings: &Settings,
    db: &Db,
    clock: &Clock,
) -> Result<Option<Arc<crate::replica::shipper::Shipper>>, StartupError> {
    let Some(target) = &settings.replicate_to else {
        return Ok(None);
    };
    let store = target.open(&settings.s3).map_err(StartupError::Replication)?;
    let key = settings
        .master_key
        .as_ref()
        .map(crate::replica::format::ObjectKey::from_master);
    let shipper = crate::replica::shipper::Shipper::start(db, store, key, settings.replicate_retention, clock.clone())
        .map_err(StartupError::Replication)?;
    Ok(Some(Arc::new(shipper)))
}

/// The signing keys (made on first start), with clients' and upstreams' secrets
/// sealed under the master key when one is set.
async fn signing_keys(settings: &Settings, db: &Db, clock: &Clock) -> Result<KeyStore, StartupError> {
    let keep = oidc::keys::keep_retired(&settings.lifetimes);
    let keys = oidc::keys::ensure(db, clock, keep, settings.master_key.as_ref())
        .await
        .map_err(|e| StartupError::Keys(e.to_string()))?;
    oidc::keys::seal_client_secrets(db, settings.master_key.as_ref())
        .await
        .map_err(|e| StartupError::Keys(e.to_string()))?;
    crate::federation::seal_secrets(db, settings.master_key.as_ref())
        .await
        .map_err(StartupError::Keys)?;
    Ok(KeyStore::new(keys))
}

/// Applies `--apply` before the listener serves: the first request already sees the
/// file's clients and groups. A bad file stops the start, as a bad setting does.
async fn apply_at_start(state: &AppState, path: &std::path::Path) -> Result<(), StartupError> {
    let report = crate::apply::apply_file(&state.ctx(), &state.upstreams, path, crate::apply::Mode::default())
        .await
        .map_err(StartupError::Apply)?;
    // Standard output, like the setup link: a generated client secret or a
    // set-password link must not reach the log.
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "applied {}:", path.display());
    let _ = out.write_all(report.as_bytes());
    Ok(())
}

/// The server's background tasks: backups, purging, limit pruning, key reloading,
/// back-channel logout and mail delivery.
fn spawn_background(state: &AppState) {
    if let Some(schedule) = state.settings.backups.clone() {
        crate::replica::backups::spawn(state.db.clone(), state.clock.clone(), schedule, state.backups.clone());
    }
    spawn_purger(state.clone());
    spawn_limit_pruner(state.clone());
    oidc::keys::spawn_reloader(state.clone());
    oidc::logout::spawn_deliverer(state.clone());
    crate::lifecycle::spawn_mailer(state.clone(), |s| *s.ctx());
}

/// The state administration commands act through: the same operations as the admin
/// pages, on a database that must already exist (only `init` and `serve` create one),
/// without a listener or background tasks. Back-channel logouts they queue are sent
/// by the running server's deliverer.
pub async fn command_state(settings: Settings) -> Result<AppState, StartupError> {
    let issuer = match &settings.issuer {
        Some(url) => url.clone(),
        None => config::default_issuer(settings.listen)?,
    };
    let db = open_database(&settings, Open::Existing).await?;
    let clock = Clock::system();
    // Commands sign nothing (the server signs logout tokens when it sends them), so
    // they need neither the signing keys nor the master key that opens them.
    let keys = crate::crypto::keys::KeySet::from_records(&[], clock.now(), 0)
        .map_err(|e| StartupError::Keys(e.to_string()))?;
    let hasher = Hasher::start(1, settings.bcrypt_cost)?;
    fill_skeletons(&db).await;
    let log_key = log_key(&db).await?;
    let branding = crate::branding::Cache::new(&settings);
    Ok(AppState {
        issuer: Arc::from(config::issuer_text(&issuer)),
        limits: crate::auth::limits::RateLimits::new(false),
        settings: Arc::new(settings),
        db,
        keys: KeyStore::new(keys),
        hasher,
        clock,
        logout_wakeup: Arc::new(tokio::sync::Notify::new()),
        mail_wakeup: Arc::new(tokio::sync::Notify::new()),
        clients: Default::default(),
        metrics: Default::default(),
        log_key,
        // Commands check no DPoP proofs, so their nonce key is never used.
        dpop_nonces: crate::crypto::dpop::NonceKey::generate(),
        node: Arc::from(crate::crypto::random::random_id()),
        upstreams: Arc::new(crate::federation::Upstreams::new()),
        forward_auth: Arc::default(),
        replication: None,
        backups: Arc::default(),
        branding,
    })
}

/// `tessera init`: creates the database (owner-only) or brings it up to date, and
/// makes sure it has signing keys.
pub async fn init_database(settings: Settings) -> Result<(), StartupError> {
    let db = open_database(&settings, Open::Create).await?;
    let keep = oidc::keys::keep_retired(&settings.lifetimes);
    oidc::keys::ensure(&db, &Clock::system(), keep, settings.master_key.as_ref())
        .await
        .map_err(|e| StartupError::Keys(e.to_string()))?;
    db.shutdown();
    Ok(())
}

/// `tessera check`, read-only: SQLite's integrity and foreign-key problems, or
/// PostgreSQL's schema version, unvalidated constraints and invalid indexes.
pub async fn check_database(settings: &Settings) -> Result<Vec<String>, StartupError> {
    match &settings.database_url {
        None => Ok(db::check_file(&settings.db_path, &settings.sqlite)?),
        Some(url) => {
            let db = Db::open_postgres(url.expose(), 1, false).await?;
            Ok(db.check().await?)
        }
    }
}

/// `tessera migrate`: the schema brought up to date, and its version.
pub async fn migrate_database(settings: &Settings) -> Result<(), StartupError> {
    let db = open_database(settings, Open::Create).await?;
    db.migrate().await?;
    db.shutdown();
    Ok(())
}

/// Whether a command may create the database or needs one already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// `serve`, `init`, `migrate`: a SQLite file is created if missing.
    Create,
    /// Administration commands: a mistyped `--db` is an error, never a new file.
    Existing,
}

/// The database the settings name: the SQLite file, or PostgreSQL (migrated on open
/// unless `--no-migrate`; administration commands never migrate it, so that an older
/// binary cannot be pointed at a cluster and change its schema by accident).
pub async fn open_database(settings: &Settings, open: Open) -> Result<Db, StartupError> {
    match (&settings.database_url, open) {
        (Some(url), _) => {
            let db = Db::open_postgres(url.expose(), settings.pg_pool, settings.migrate)
                .await
                .map_err(|e| match e {
                    DbError::Busy => StartupError::Unreachable(settings.database_label()),
                    other => other.into(),
                })?;
            // A command, or a server starting without migrating, has not talked to the
            // database yet: one read says at once whether it is there.
            if db.ping().await.is_err() {
                return Err(StartupError::Unreachable(settings.database_label()));
            }
            Ok(db)
        }
        (None, Open::Create) => Ok(Db::open(&settings.db_path, &settings.sqlite)?),
        (None, Open::Existing) => Ok(Db::open_existing(&settings.db_path, &settings.sqlite)?),
    }
}

/// The look-alike skeletons of accounts made before they were stored. A failure (two
/// nodes filling look-alike rows at once) leaves the rest for the next start rather
/// than stopping this one: new names are still checked against every filled row.
async fn fill_skeletons(db: &Db) {
    match db.write(db::users::fill_skeletons).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(accounts = n, "stored the look-alike skeletons of existing usernames"),
        Err(e) => tracing::warn!(error = %e, "could not store the look-alike skeletons of existing usernames"),
    }
}

/// The database's pseudonym key, made on first start.
async fn log_key(db: &Db) -> Result<crate::crypto::random::LogKey, StartupError> {
    let fresh = crate::crypto::random::LogKey::generate();
    let stored = db
        .write(move |c| db::secrets::get_or_create(c, "log_key", fresh.as_bytes()))
        .await?;
    crate::crypto::random::LogKey::from_bytes(&stored)
        .ok_or_else(|| StartupError::Db(DbError::Corrupt("the stored log key is not 32 bytes".into())))
}

/// The key of DPoP nonces (RFC 9449 §8), made on first start and shared by every
/// node, so a nonce one node hands out is accepted by all.
async fn dpop_nonce_key(db: &Db) -> Result<crate::crypto::dpop::NonceKey, StartupError> {
    let fresh = crate::crypto::dpop::NonceKey::generate();
    let stored = db
        .write(move |c| db::secrets::get_or_create(c, "dpop_nonce_key", fresh.as_bytes()))
        .await?;
    crate::crypto::dpop::NonceKey::from_bytes(&stored)
        .ok_or_else(|| StartupError::Db(DbError::Corrupt("the stored DPoP nonce key is not 32 bytes".into())))
}

/// How long the node that purges holds the job before another may take it.
const PURGE_LEASE: i64 = 120;

/// The background tasks of `oidc` (key reloader, back-channel deliverer) hold the
/// state and make a fresh context from it each pass.
impl oidc::context::MakeCtx for AppState {
    fn ctx(&self) -> oidc::Ctx<'_> {
        AppState::ctx(self)
    }
}

/// Every minute, deletes expired rows batch by batch until none are left.
fn spawn_purger(state: AppState) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
        let retention = state.settings.audit_retention_days * 24 * 3600;
        loop {
            tick.tick().await;
            // One node purges at a time: the lease is renewed each minute by its
            // holder and taken over by another node two minutes after it stops.
            let now = state.clock.now();
            let node = state.node.clone();
            match state
                .db
                .write(move |c| db::purge::take_lease(c, "purge", &node, now, now + PURGE_LEASE))
                .await
            {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot take the purge lease; will retry");
                    continue;
                }
            }
            loop {
                let now = state.clock.now();
                match state
                    .db
                    .write(move |c| db::purge::purge_expired(c, now, retention))
                    .await
                {
                    Ok(n) if n > 0 => tokio::task::yield_now().await,
                    Ok(_) => break,
                    Err(e) => {
                        tracing::warn!(error = %e, "purging expired rows failed; will retry");
                        break;
                    }
                }
            }
        }
    });
}

fn spawn_limit_pruner(state: AppState) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(60));
        loop {
            tick.tick().await;
            state.limits.prune();
        }
    });
}

fn server(listener: TcpListener, state: AppState) -> Result<Server, StartupError> {
    let workers = state.settings.workers;
    let data = web::Data::new(state);
    let server = HttpServer::new(move || {
        let state = data.clone();
        App::new()
            .app_data(data.clone())
            .app_data(web::PayloadConfig::new(MAX_BODY))
            .wrap_fn(move |req, srv| {
                let started = Instant::now();
                let method = req.method().clone();
                let state = state.clone();
                let (locale, source) = http::lang::choose(&state, &req);
                let path = req.path().to_string();
                let call = match http::guard::upgrade_refused(req.request()) {
                    Some(refused) => Err(req.into_response(refused)),
                    None => Ok(srv.call(req)),
                };
                async move {
                    let mut res = match call {
                        Ok(fut) => {
                            let page = http::branding::scope(&state, &path, fut);
                            crate::i18n::scope(locale, source, page).await?.map_into_boxed_body()
                        }
                        Err(refused) => refused,
                    };
                    http::cors::decorate(&state, &mut res).await;
                    observe(&state, &method, &mut res, started.elapsed());
                    Ok(res)
                }
            })
            .configure(http::routes)
    })
    .workers(workers)
    // Slow or idle clients are cut off instead of holding connections open.
    .keep_alive(Duration::from_secs(30))
    .client_request_timeout(Duration::from_secs(10))
    .client_disconnect_timeout(Duration::from_secs(2))
    .max_connections(4096)
    .backlog(1024)
    .shutdown_timeout(10)
    .listen(listener)?
    .run();
    Ok(server)
}

/// One log line and the metrics for every request; HSTS on https issuers. The route
/// is the matched pattern, never the raw path, and no query, form or header is logged.
fn observe(state: &AppState, method: &actix_web::http::Method, res: &mut ServiceResponse, took: Duration) {
    let route = res.request().match_pattern().unwrap_or_else(|| "unmatched".to_string());
    let status = res.status().as_u16();
    state.metrics.request(&route, status, took);
    if tracing::enabled!(tracing::Level::INFO) {
        let extensions = res.request().extensions();
        let client_id = extensions.get::<http::guard::ClientTag>().map(|t| t.0.as_str());
        tracing::info!(
            method = %method,
            route = %route,
            status,
            latency_ms = took.as_secs_f64() * 1000.0,
            client_id = client_id.unwrap_or("-"),
            "request"
        );
    }
    if state.secure_cookies() {
        res.headers_mut().insert(
            header::STRICT_TRANSPORT_SECURITY,
            header::HeaderValue::from_static("max-age=31536000; includeSubDomains"),
        );
    }
}
