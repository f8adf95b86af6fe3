//! The `tessera` command: `serve` (the default) and the administration commands.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};
use tessera::cli::{
    self, AppCommand, ClientCommand, KeysCommand, MailCommand, ProviderCommand, ResourceCommand, UserCommand,
};
use tessera::clock::Clock;
use tessera::config::{LogFormat, RawSettings, Settings};
use tessera::startup::Application;

#[derive(Parser)]
#[command(
    name = "tessera",
    // The commit comes from build.rs (`unknown` outside a git checkout).
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("TESSERA_COMMIT"), ")"),
    about = "A single-binary OpenID Connect provider on SQLite (or PostgreSQL, for several nodes)"
)]
struct Cli {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: Option<Command>,
}

/// Options every command understands.
#[derive(Args)]
struct Common {
    /// TOML file with settings (flags and environment override it)
    #[arg(long, global = true, env = "TESSERA_CONFIG", value_name = "FILE")]
    config: Option<PathBuf>,
    /// SQLite database file [default: ./tessera.db]
    #[arg(long, global = true, env = "TESSERA_DB", value_name = "PATH")]
    db: Option<String>,
    /// PostgreSQL instead of the SQLite file: postgres://user:pass@host:5432/db
    /// [?sslmode=disable|prefer|require|verify-full&sslrootcert=CA.pem]
    #[arg(long, global = true, env = "TESSERA_DATABASE_URL", value_name = "URL")]
    database_url: Option<String>,
    /// bcrypt cost for password hashes, 4-31 [default: 10]
    #[arg(long, global = true, env = "TESSERA_BCRYPT_COST", value_name = "N")]
    bcrypt_cost: Option<String>,
    /// Use SQLite's write-ahead log; false selects the rollback journal [default: true]
    #[arg(long, global = true, env = "TESSERA_SQLITE_WAL", value_name = "true|false")]
    sqlite_wal: Option<String>,
    /// File holding the base64 master key that encrypts signing keys at rest
    /// (or set TESSERA_MASTER_KEY to the key itself)
    #[arg(long, global = true, env = "TESSERA_MASTER_KEY_FILE", value_name = "FILE")]
    master_key_file: Option<String>,
    /// SMTP relay for mail: smtps://user:pass@host:465, smtp://user:pass@host:587?tls=starttls,
    /// or smtp://127.0.0.1:25 (plain only to a loopback host)
    #[arg(long, global = true, env = "TESSERA_SMTP_URL", value_name = "URL")]
    smtp_url: Option<String>,
    /// File holding the SMTP password (instead of one in --smtp-url)
    #[arg(long, global = true, env = "TESSERA_SMTP_PASSWORD_FILE", value_name = "FILE")]
    smtp_password_file: Option<String>,
    /// Sender of Tessera's mail, as "Name <address>"
    #[arg(long, global = true, env = "TESSERA_SMTP_FROM", value_name = "ADDRESS")]
    smtp_from: Option<String>,
    /// Who may create an account: off, invite (invited people), or open (anyone) [default: off]
    #[arg(long, global = true, env = "TESSERA_SIGNUP", value_name = "off|invite|open")]
    signup: Option<String>,
    /// Email domains open sign-up accepts, comma-separated (any when unset)
    #[arg(long, global = true, env = "TESSERA_SIGNUP_DOMAINS", value_name = "DOMAINS")]
    signup_domains: Option<String>,
    /// The organisation's name, shown in mail and on pages [default: Tessera]
    #[arg(long, global = true, env = "TESSERA_ORG_NAME", value_name = "NAME")]
    org_name: Option<String>,
    /// The language of pages and mail when neither the application nor the browser asks for one Tessera speaks: en, de, fr, es, it, nl or pt [default: en]
    #[arg(long, global = true, env = "TESSERA_DEFAULT_LOCALE", value_name = "TAG")]
    default_locale: Option<String>,
    /// What access tokens are signed with: RS256, ES256 or EdDSA (ES256 and EdDSA cost a fraction of RS256) [default: as the client's ID tokens, RS256 unless the client chose another]
    #[arg(
        long,
        global = true,
        env = "TESSERA_ACCESS_TOKEN_ALG",
        value_name = "RS256|ES256|EdDSA"
    )]
    access_token_alg: Option<String>,
    /// A logo for the pages, PNG or SVG, at most 256 KiB (the admin page's takes precedence)
    #[arg(long, global = true, env = "TESSERA_LOGO", value_name = "FILE")]
    logo: Option<String>,
    /// The pages' accent colour, #rrggbb (the admin page's takes precedence)
    #[arg(long, global = true, env = "TESSERA_ACCENT_COLOR", value_name = "COLOR")]
    accent_color: Option<String>,
    /// An extra stylesheet for the pages, served as its own resource (the admin page's takes precedence)
    #[arg(long, global = true, env = "TESSERA_STYLESHEET", value_name = "FILE")]
    stylesheet: Option<String>,
    /// Mails one account or address may be sent per hour [default: 5]
    #[arg(long, global = true, env = "TESSERA_MAIL_PER_HOUR", value_name = "N")]
    mail_per_hour: Option<String>,
    /// Whether people delete their own accounts (self) or an administrator approves (approval) [default: self]
    #[arg(long, global = true, env = "TESSERA_ACCOUNT_DELETION", value_name = "self|approval")]
    account_deletion: Option<String>,
    /// How the login page offers passkeys: offer (username and password together, passkeys in the username's autofill and a button) username-first (the username, then the account's passkey or its password) or passkey-only (username-first, and new accounts and resets get a passkey instead of a password) [default: offer]
    #[arg(
        long,
        global = true,
        env = "TESSERA_PASSKEY_MODE",
        value_name = "offer|username-first|passkey-only"
    )]
    passkey_mode: Option<String>,
    /// SQLite's automatic checkpoints; false leaves them to a sidecar such as Litestream
    /// (then set it for every tessera command, e.g. in the environment) [default: true]
    #[arg(
        long,
        global = true,
        env = "TESSERA_SQLITE_AUTOCHECKPOINT",
        value_name = "true|false"
    )]
    sqlite_autocheckpoint: Option<String>,
    /// Endpoint of S3-compatible storage for s3:// targets [default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, AWS]
    #[arg(long, global = true, env = "TESSERA_S3_ENDPOINT", value_name = "URL")]
    s3_endpoint: Option<String>,
    /// Region of s3:// targets [default: AWS_REGION, AWS_DEFAULT_REGION, us-east-1]
    #[arg(long, global = true, env = "TESSERA_S3_REGION", value_name = "REGION")]
    s3_region: Option<String>,
    /// Path-style S3 addressing [default: true with --s3-endpoint, false for AWS]
    #[arg(long, global = true, env = "TESSERA_S3_PATH_STYLE", value_name = "true|false")]
    s3_path_style: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the provider (the default command)
    Serve(Box<ServeArgs>),
    /// Manage users
    #[command(subcommand)]
    User(UserCommand),
    /// Manage relying parties (clients)
    #[command(subcommand)]
    Client(ClientCommand),
    /// Manage upstream identity providers people sign in with (OpenID Connect, GitHub)
    #[command(subcommand)]
    Provider(ProviderCommand),
    /// Manage applications protected through forward-auth at a reverse proxy
    #[command(subcommand)]
    App(AppCommand),
    /// Manage signing keys
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Manage resource servers access tokens may be restricted to (RFC 8707)
    #[command(subcommand)]
    Resource(ResourceCommand),
    /// Check the mail set-up
    #[command(subcommand)]
    Mail(MailCommand),
    /// Write a consistent copy of the database to PATH while the server runs, or
    /// `backup verify FILE|TARGET`: a restore drill
    Backup(BackupArgs),
    /// Rebuild a SQLite database from a replica (`serve --replicate-to`), at its latest
    /// state or at a point in time
    Restore {
        /// The replica: a directory, file:///path or s3://bucket/prefix
        #[arg(long, value_name = "TARGET")]
        from: String,
        /// The new database file (never overwritten)
        #[arg(long, value_name = "PATH")]
        to: PathBuf,
        /// Restore the state as of this time (RFC 3339, e.g. 2026-12-01T14:30:00Z)
        #[arg(long, value_name = "RFC3339")]
        at: Option<String>,
    },
    /// Inspect a replica
    #[command(subcommand)]
    Replica(ReplicaCommand),
    /// Make clients, groups, apps, providers and users match a TOML file
    Apply {
        file: PathBuf,
        /// Print what would change and change nothing
        #[arg(long)]
        dry_run: bool,
        /// Also remove what the file does not declare (never the last administrator)
        #[arg(long)]
        prune: bool,
    },
    /// Write the current clients, groups, apps and providers as a file for `apply`
    DumpConfig,
    /// Check the database's integrity and foreign keys (read-only)
    Check,
    /// Write the whole database as one JSON document to a new FILE (`-`: standard
    /// output), to move it to another database with `import`
    Export { file: PathBuf },
    /// Load an export into a new, empty database (migrated first; `-`: standard input)
    Import { file: PathBuf },
    /// Create the database (or bring it up to date) and its signing keys, then exit
    Init,
    /// Apply the schema migrations this binary knows, then exit
    Migrate,
    /// Print a fresh one-time link to create the first administrator (while there is none)
    SetupLink {
        /// Issuer URL the link starts with, as people reach the provider [default: http://127.0.0.1:9000]
        #[arg(long, env = "TESSERA_ISSUER", value_name = "URL")]
        issuer: Option<String>,
    },
    /// Print the shell completion script for SHELL (reads no settings, opens no database)
    Completions {
        #[arg(value_enum, value_name = "SHELL")]
        shell: cli::Shell,
    },
    /// Print the manual page, tessera(1), as roff: `tessera man | man -l -`
    Man,
}

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
struct BackupArgs {
    #[command(subcommand)]
    command: Option<BackupCommand>,
    /// The new file the copy is written to
    path: Option<PathBuf>,
}

#[derive(Subcommand)]
enum BackupCommand {
    /// Restore a backup file or a replica to a temporary file and check it
    Verify {
        /// A backup file, or a replica (directory, file:///path, s3://bucket/prefix)
        #[arg(value_name = "FILE|TARGET")]
        what: String,
    },
}

#[derive(Subcommand)]
enum ReplicaCommand {
    /// Last shipped position, lag, size and restore window of a replica
    Status {
        #[arg(value_name = "TARGET")]
        target: String,
        /// One JSON document instead of text
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Default)]
struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:9000]
    #[arg(long, env = "TESSERA_LISTEN", value_name = "ADDR")]
    listen: Option<String>,
    /// Issuer URL as relying parties see it [default: http://LISTEN]
    #[arg(long, env = "TESSERA_ISSUER", value_name = "URL")]
    issuer: Option<String>,
    /// SQLite synchronous mode: normal, or full for power-loss durability [default: normal]
    #[arg(long, env = "TESSERA_SQLITE_SYNCHRONOUS", value_name = "normal|full")]
    sqlite_synchronous: Option<String>,
    /// Log format: text or json [default: text]
    #[arg(long, env = "TESSERA_LOG_FORMAT", value_name = "text|json")]
    log_format: Option<String>,
    /// Threads verifying passwords [default: number of cores]
    #[arg(long, env = "TESSERA_HASH_THREADS", value_name = "N")]
    hash_threads: Option<String>,
    /// HTTP worker threads [default: number of cores]
    #[arg(long, env = "TESSERA_WORKERS", value_name = "N")]
    workers: Option<String>,
    /// PostgreSQL connections this node keeps at most [default: 16]
    #[arg(long, env = "TESSERA_PG_POOL", value_name = "N")]
    pg_pool: Option<String>,
    /// Rate limits per address and account; false only for load tests [default: true]
    #[arg(long, env = "TESSERA_RATE_LIMIT", value_name = "true|false")]
    rate_limit: Option<String>,
    /// Lock accounts after repeated failed passwords; false only for load tests [default: true]
    #[arg(long, env = "TESSERA_LOCKOUT", value_name = "true|false")]
    lockout: Option<String>,
    /// Days the audit log keeps an entry; 0 keeps everything [default: 90]
    #[arg(long, env = "TESSERA_AUDIT_RETENTION_DAYS", value_name = "DAYS")]
    audit_retention_days: Option<String>,
    /// Comma-separated proxy addresses/CIDRs whose X-Forwarded-For is believed
    #[arg(long, env = "TESSERA_TRUSTED_PROXIES", value_name = "CIDR,…")]
    trusted_proxies: Option<String>,
    /// The header trusted proxies set with the client's address [default: x-forwarded-for]
    #[arg(long, env = "TESSERA_FORWARDED_HEADER", value_name = "x-forwarded-for|forwarded")]
    forwarded_header: Option<String>,
    /// Domain the forward-auth cookie is set on, covering the protected apps' hosts (example.org)
    #[arg(long, env = "TESSERA_FORWARD_AUTH_COOKIE_DOMAIN", value_name = "DOMAIN")]
    forward_auth_cookie_domain: Option<String>,
    /// Require `Authorization: Bearer TOKEN` on /metrics [default: open, restrict at the proxy]
    #[arg(long, env = "TESSERA_METRICS_TOKEN", value_name = "TOKEN")]
    metrics_token: Option<String>,
    /// File holding the /metrics bearer token (instead of --metrics-token, which argv shows)
    #[arg(
        long,
        env = "TESSERA_METRICS_TOKEN_FILE",
        value_name = "FILE",
        conflicts_with = "metrics_token"
    )]
    metrics_token_file: Option<String>,
    /// Do not apply schema migrations on start (run `tessera migrate` first)
    #[arg(long)]
    no_migrate: bool,
    /// Ship every commit to a replica: a directory, file:///path or s3://bucket/prefix
    #[arg(long, env = "TESSERA_REPLICATE_TO", value_name = "TARGET")]
    replicate_to: Option<String>,
    /// How long the replica keeps history for point-in-time restores [default: 7d]
    #[arg(long, env = "TESSERA_REPLICATE_RETENTION", value_name = "INTERVAL")]
    replicate_retention: Option<String>,
    /// Write a consistent copy of the database into DIR on a schedule
    #[arg(long, env = "TESSERA_BACKUP_DIR", value_name = "DIR")]
    backup_dir: Option<String>,
    /// Time between scheduled copies (30s, 10m, 1h) [default: 1h]
    #[arg(long, env = "TESSERA_BACKUP_EVERY", value_name = "INTERVAL")]
    backup_every: Option<String>,
    /// Scheduled copies kept; older ones are deleted [default: 48]
    #[arg(long, env = "TESSERA_BACKUP_KEEP", value_name = "N")]
    backup_keep: Option<String>,
    /// Apply this declarative configuration (see `tessera apply`) at start
    #[arg(long, env = "TESSERA_APPLY", value_name = "FILE")]
    apply: Option<PathBuf>,
    /// Accept authorization requests only through PAR (RFC 9126) [default: false]
    #[arg(long, env = "TESSERA_REQUIRE_PAR", value_name = "true|false")]
    require_par: Option<String>,
    /// Dynamic client registration (RFC 7591): off, token (initial access token) or
    /// open (also public loopback/native clients without one) [default: token]
    #[arg(long, env = "TESSERA_REGISTRATION", value_name = "off|token|open")]
    registration: Option<String>,
    /// Accept https client_ids naming a client ID metadata document [default: false]
    #[arg(long, env = "TESSERA_CLIENT_ID_DOCUMENTS", value_name = "true|false")]
    client_id_documents: Option<String>,
    /// Let outbound fetches of caller-chosen URLs (metadata documents, jwks_uri,
    /// registered logos, self-registered clients' back-channel logout) reach loopback
    /// and private addresses; for tests only [default: false]
    #[arg(long, env = "TESSERA_FETCH_PRIVATE_ADDRESSES", value_name = "true|false")]
    fetch_private_addresses: Option<String>,
    /// Require a server nonce in DPoP proofs (RFC 9449 §8) [default: false]
    #[arg(long, env = "TESSERA_DPOP_NONCE", value_name = "true|false")]
    dpop_nonce: Option<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, None | Some(Command::Serve(_))) {
        // A command reports its outcome itself; the log adds the cause of a failure
        // (a storage error is logged where it is converted, and only there).
        init_logging(LogFormat::Text, "warn");
    }
    let serve = match cli.command {
        None => ServeArgs::default(),
        // Generated from the definition above alone: no settings, no database.
        Some(Command::Completions { shell }) => return finish(cli::completions(Cli::command(), shell)),
        Some(Command::Man) => return finish(cli::man(Cli::command())),
        Some(Command::Serve(args)) => *args,
        Some(Command::User(cmd)) => return finish(settings(&cli.common, None).and_then(|s| cli::user(&s, cmd))),
        Some(Command::Client(cmd)) => return finish(settings(&cli.common, None).and_then(|s| cli::client(&s, cmd))),
        Some(Command::Provider(cmd)) => {
            return finish(settings(&cli.common, None).and_then(|s| cli::provider(&s, cmd)))
        }
        Some(Command::App(cmd)) => return finish(settings(&cli.common, None).and_then(|s| cli::app(&s, cmd))),
        Some(Command::Keys(cmd)) => return finish(settings(&cli.common, None).and_then(|s| cli::keys(&s, cmd))),
        Some(Command::Resource(cmd)) => {
            return finish(settings(&cli.common, None).and_then(|s| cli::resource(&s, cmd)))
        }
        Some(Command::Mail(cmd)) => return finish(settings(&cli.common, None).and_then(|s| cli::mail(&s, cmd))),
        Some(Command::Backup(args)) => {
            let run = |s: Settings| match (args.command, args.path) {
                (Some(BackupCommand::Verify { what }), _) => cli::backup_verify(&s, &what),
                (None, Some(path)) => cli::backup(&s, &path),
                (None, None) => {
                    Err("name the new file: tessera backup PATH (or tessera backup verify FILE|TARGET)".into())
                }
            };
            return finish(settings(&cli.common, None).and_then(run));
        }
        Some(Command::Restore { from, to, at }) => {
            return finish(settings(&cli.common, None).and_then(|s| cli::restore(&s, &from, &to, at.as_deref())))
        }
        Some(Command::Replica(ReplicaCommand::Status { target, json })) => {
            return finish(settings(&cli.common, None).and_then(|s| cli::replica_status(&s, &target, json)))
        }
        Some(Command::Apply { file, dry_run, prune }) => {
            return finish(settings(&cli.common, None).and_then(|s| cli::apply(&s, &file, dry_run, prune)))
        }
        Some(Command::DumpConfig) => return finish(settings(&cli.common, None).and_then(|s| cli::dump_config(&s))),
        Some(Command::Check) => return finish(settings(&cli.common, None).and_then(|s| cli::check(&s))),
        Some(Command::Export { file }) => {
            return finish(settings(&cli.common, None).and_then(|s| cli::export(&s, &file)))
        }
        Some(Command::Import { file }) => {
            return finish(settings(&cli.common, None).and_then(|s| cli::import(&s, &file)))
        }
        Some(Command::Init) => return finish(settings(&cli.common, None).and_then(|s| cli::init(&s))),
        Some(Command::Migrate) => return finish(settings(&cli.common, None).and_then(|s| cli::migrate(&s))),
        Some(Command::SetupLink { issuer }) => {
            let args = ServeArgs {
                issuer,
                ..Default::default()
            };
            return finish(settings(&cli.common, Some(&args)).and_then(|s| cli::setup_link(&s)));
        }
    };
    let settings = match settings(&cli.common, Some(&serve)) {
        Ok(s) => s,
        Err(e) => return finish(Err(e)),
    };
    init_logging(settings.log_format, "info");
    finish(serve_forever(settings))
}

fn settings(common: &Common, serve: Option<&ServeArgs>) -> Result<Settings, String> {
    let serve = serve.map(|s| RawSettings {
        listen: s.listen.clone(),
        issuer: s.issuer.clone(),
        sqlite_synchronous: s.sqlite_synchronous.clone(),
        log_format: s.log_format.clone(),
        hash_threads: s.hash_threads.clone(),
        workers: s.workers.clone(),
        pg_pool: s.pg_pool.clone(),
        rate_limit: s.rate_limit.clone(),
        lockout: s.lockout.clone(),
        audit_retention_days: s.audit_retention_days.clone(),
        trusted_proxies: s.trusted_proxies.clone(),
        forwarded_header: s.forwarded_header.clone(),
        forward_auth_cookie_domain: s.forward_auth_cookie_domain.clone(),
        metrics_token: s.metrics_token.clone(),
        metrics_token_file: s.metrics_token_file.clone(),
        no_migrate: s.no_migrate,
        replicate_to: s.replicate_to.clone(),
        replicate_retention: s.replicate_retention.clone(),
        backup_dir: s.backup_dir.clone(),
        backup_every: s.backup_every.clone(),
        backup_keep: s.backup_keep.clone(),
        apply: s.apply.clone(),
        require_par: s.require_par.clone(),
        registration: s.registration.clone(),
        client_id_documents: s.client_id_documents.clone(),
        fetch_private_addresses: s.fetch_private_addresses.clone(),
        dpop_nonce: s.dpop_nonce.clone(),
        ..Default::default()
    });
    let raw = RawSettings {
        config: common.config.clone(),
        db: common.db.clone(),
        database_url: common.database_url.clone().filter(|v| !v.is_empty()),
        bcrypt_cost: common.bcrypt_cost.clone(),
        sqlite_wal: common.sqlite_wal.clone(),
        master_key: std::env::var("TESSERA_MASTER_KEY").ok().filter(|v| !v.is_empty()),
        master_key_file: common.master_key_file.clone(),
        smtp_url: common.smtp_url.clone().filter(|v| !v.is_empty()),
        smtp_password_file: common.smtp_password_file.clone(),
        smtp_from: common.smtp_from.clone(),
        signup: common.signup.clone(),
        signup_domains: common.signup_domains.clone(),
        org_name: common.org_name.clone(),
        default_locale: common.default_locale.clone(),
        access_token_alg: common.access_token_alg.clone(),
        logo: common.logo.clone(),
        accent_color: common.accent_color.clone(),
        stylesheet: common.stylesheet.clone(),
        mail_per_hour: common.mail_per_hour.clone(),
        account_deletion: common.account_deletion.clone(),
        passkey_mode: common.passkey_mode.clone(),
        sqlite_autocheckpoint: common.sqlite_autocheckpoint.clone(),
        s3_endpoint: common.s3_endpoint.clone(),
        s3_region: common.s3_region.clone(),
        s3_path_style: common.s3_path_style.clone(),
        ..serve.unwrap_or_default()
    };
    cli::load_settings(&raw)
}

fn finish(result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(format: LogFormat, default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    use std::io::IsTerminal;
    // Colour only for a person at a terminal; files and collectors get plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn serve_forever(settings: Settings) -> Result<(), String> {
    actix_web::rt::System::new().block_on(async move {
        let app = Application::build(settings, Clock::system())
            .await
            .map_err(|e| e.to_string())?;
        cli::print_banner(app.state()).await.map_err(|e| e.to_string())?;
        app.run_until_stopped().await.map_err(|e| e.to_string())
    })
}
