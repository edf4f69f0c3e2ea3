//! The `edi-inbox` binary: `serve` (default), `migrate`, `openapi`, `relay`, `consume`, `export`,
//! `purge`, and the operator's `partner`, `quarantine`, `outbox` and `sns`.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};
use edi_inbox::app::{self, App};
use edi_inbox::as2::gateway::{GatewaySettings, Station};
use edi_inbox::config::{
    self, Cli, Command, DatabaseConfig, LogFormat, OperatorCommand, OutboxCommand, PartnerCommand,
    QuarantineCommand, ServerConfig, SnsCommand,
};
use edi_inbox::consumer;
use edi_inbox::http;
use edi_inbox::jobs::{export, purge};
use edi_inbox::operate::{self, Actor, operators, outbox, partners as admin, quarantine, sns};
use edi_inbox::partners::{CredentialKind, PartnerStatus};
use edi_inbox::store::{CommitNotices, OutboxFilter, QuarantineFilter, Store};

/// jemalloc: the request path allocates many small, short-lived buffers from several threads, where
/// glibc's allocator spent a sixth of the service's CPU and grew an arena per thread.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's default options (`_RJEM_MALLOC_CONF` overrides them): one arena. A large interchange
/// is parsed on the blocking pool and written from an async worker; with an arena per thread, what
/// parsing freed stayed resident beside what writing allocated (one 6.6 MB interchange of 19,828
/// invoices peaked at 54.4 MiB on SQLite, 47.5 MiB with one arena). The threads' caches still serve
/// the request path's small allocations: unique deliveries measured the same either way.
#[unsafe(export_name = "_rjem_malloc_conf")]
static JEMALLOC_OPTIONS: &[u8; 10] = b"narenas:1\0";

#[tokio::main]
async fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    init_tracing(cli.server.log_format);
    match run(cli, &matches).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error}");
            eprintln!("edi-inbox: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run(mut cli: Cli, matches: &clap::ArgMatches) -> Result<(), Box<dyn std::error::Error>> {
    match cli.command.unwrap_or(Command::Serve) {
        Command::Config => println!("{}", pretty(&config::effective(matches))),
        Command::Probe { url } => {
            let url = url.unwrap_or_else(|| cli.server.readiness_url());
            let client = reqwest::Client::builder().timeout(std::time::Duration::from_secs(5)).build()?;
            let status = client.get(&url).send().await?.status();
            if !status.is_success() {
                return Err(format!("{url} answered {status}").into());
            }
        }
        Command::Openapi => print!("{}", http::openapi::to_json(&http::openapi_document())),
        Command::Migrate => {
            app::open_store(&cli.database).await?;
            tracing::info!("migrations applied");
        }
        Command::Relay => {
            let store = app::open_store(&cli.database).await?;
            let Some(relay) = app::relay(store.clone(), &cli.accounting)? else {
                return Err("`relay` needs the accounting API's URL: set EDI_INBOX_ACCOUNTING_URL".into());
            };
            let (stop, stopped) = tokio::sync::watch::channel(false);
            let relaying = tokio::spawn(relay.run(stopped));
            shutdown_signal().await;
            let _ = stop.send(true);
            relaying.await?;
            store.close().await;
        }
        Command::Consume(consume) => {
            let retention = cli.database.retention()?;
            let store = app::open_store(&cli.database).await?;
            let purger = tokio::spawn(purge::purge_periodically(store.clone(), retention));
            let partner_auth = consume.consume_auth == config::ConsumeAuth::Partners;
            let options = cli.server.ingest_options(cli.accounting.accounting_url.is_some(), partner_auth);
            let ingest = app::ingest(store.clone(), options);
            let relay = match cli.accounting.relay {
                true => app::relay(store.clone(), &cli.accounting)?,
                false => None,
            };
            let (stop, stopped) = tokio::sync::watch::channel(false);
            let relaying = relay.map(|relay| tokio::spawn(relay.run(stopped)));
            let consumer = consumer::Consumer::new(ingest, &consume);
            consumer::run(consumer, &consume, shutdown_signal()).await.map_err(|error| error.to_string())?;
            let _ = stop.send(true);
            if let Some(relaying) = relaying {
                relaying.await?;
            }
            purger.abort();
            store.close().await;
        }
        Command::Export => {
            let Some(dir) = &cli.accounting.export_dir else {
                return Err("`export` needs a directory: set EDI_INBOX_EXPORT_DIR or --export-dir".into());
            };
            let store = app::open_store(&cli.database).await?;
            let exported = export::export(&store, dir, cli.accounting.export_max_invoices).await?;
            println!("{}", pretty(&exported));
            store.close().await;
        }
        Command::Purge { dry_run } => {
            let retention = cli.database.retention()?;
            let store = app::open_store(&cli.database).await?;
            let purged = purge::purge(&store, retention, dry_run).await?;
            println!("{}", pretty(&purged));
            store.close().await;
        }
        Command::Partner { action } => {
            let store = app::open_store(&cli.database).await?;
            partner_command(&store, action, &mut cli.server, &cli.database).await?;
        }
        Command::Quarantine { action } => {
            let store = app::open_store(&cli.database).await?;
            let options = cli.server.ingest_options(cli.accounting.accounting_url.is_some(), false);
            let ingest = app::ingest(store.clone(), options);
            let entry = match action {
                QuarantineCommand::List { status, limit, cursor } => {
                    let filter = QuarantineFilter { status, cursor, limit };
                    println!("{}", pretty(&store.quarantined(&filter).await?));
                    return Ok(());
                }
                QuarantineCommand::Release { id, release_as } => {
                    quarantine::release(&ingest, id, release_as, &Actor::command_line()).await?
                }
                QuarantineCommand::Discard { id } => {
                    quarantine::discard(&store, id, &Actor::command_line()).await?
                }
            };
            println!("{}", pretty(&entry));
        }
        Command::Outbox { action } => {
            let store = app::open_store(&cli.database).await?;
            let message = match action {
                OutboxCommand::List { status, limit, cursor } => {
                    let filter = OutboxFilter { status, cursor, limit };
                    println!("{}", pretty(&store.outbox(&filter).await?));
                    return Ok(());
                }
                OutboxCommand::Retry { id } => outbox::retry(&store, id, &Actor::command_line()).await?,
                OutboxCommand::Discard { id } => outbox::discard(&store, id, &Actor::command_line()).await?,
            };
            println!("{}", pretty(&message));
        }
        Command::Sns { action } => {
            let store = app::open_store(&cli.database).await?;
            match action {
                SnsCommand::List { limit, cursor } => {
                    println!("{}", pretty(&store.sns_subscriptions(cursor, limit).await?))
                }
                SnsCommand::Confirm { id } => {
                    println!("{}", pretty(&sns::confirm(&store, id, &Actor::command_line()).await?))
                }
            }
        }
        Command::Operator { action } => {
            let store = app::open_store(&cli.database).await?;
            operator_command(&store, action).await?;
        }
        Command::Serve => {
            let retention = cli.database.retention()?;
            let store = app::open_store(&cli.database).await?;
            tracing::info!(backend = store.backend(), "database ready");
            let purger = tokio::spawn(purge::purge_periodically(store.clone(), retention));
            cli.server.adopt_generated_as2_key(&cli.database)?;
            let app = App::bind(store.clone(), &cli.server, &cli.accounting).await?;
            tracing::info!(address = %app.local_addr()?, "listening");
            app.serve(shutdown_signal()).await?;
            purger.abort();
            store.close().await;
            tracing::info!("stopped");
        }
    }
    Ok(())
}

/// Runs one `edi-inbox partner …` command, printing JSON. A partner added with an AS2 name comes
/// with what its gateway must be configured with (`as2_gateway`), the certificate included: the
/// key `serve` will use, generated now where `serve` would generate it.
async fn partner_command(
    store: &Store,
    action: PartnerCommand,
    server: &mut ServerConfig,
    database: &DatabaseConfig,
) -> Result<(), Box<dyn std::error::Error>> {
    match action {
        PartnerCommand::Add(new) => {
            let (partner, secrets) = admin::register(store, &new, &Actor::command_line()).await?;
            let mut added = serde_json::json!({ "partner": partner, "secrets": secrets });
            if !partner.as2_ids.is_empty() {
                server.adopt_generated_as2_key(database)?;
                let identities = server.as2_identities()?;
                let station = Station {
                    base_url: &format!("http://{}", server.bind),
                    receiver_ids: &server.as2_receiver_ids,
                    identity: identities.first(),
                };
                let gateway = GatewaySettings::new(
                    &station,
                    &partner.as2_ids,
                    partner.as2_security,
                    &partner.as2_mdn_urls,
                )?;
                added["as2_gateway"] = serde_json::to_value(gateway)?;
            }
            println!("{}", pretty(&added));
            eprintln!("edi-inbox: the secrets above are shown only now; store them safely");
        }
        PartnerCommand::List => println!("{}", pretty(&store.partners().await?)),
        PartnerCommand::Show { id } => match store.partner(&id).await? {
            Some(partner) => println!("{}", pretty(&partner)),
            None => return Err(operate::Error::NotFound(format!("no partner {id:?}")).into()),
        },
        PartnerCommand::Update { id, changes } => {
            println!("{}", pretty(&admin::update(store, &id, *changes, &Actor::command_line()).await?))
        }
        PartnerCommand::Suspend { id } => {
            println!(
                "{}",
                pretty(
                    &admin::set_status(store, &id, PartnerStatus::Suspended, &Actor::command_line()).await?
                )
            )
        }
        PartnerCommand::Activate { id } => {
            println!(
                "{}",
                pretty(&admin::set_status(store, &id, PartnerStatus::Active, &Actor::command_line()).await?)
            )
        }
        PartnerCommand::RotateKey { id, webhook_secret } => {
            let kind = if webhook_secret { CredentialKind::WebhookSecret } else { CredentialKind::ApiKey };
            println!("{}", pretty(&admin::rotate(store, &id, kind, &Actor::command_line()).await?));
            eprintln!(
                "edi-inbox: the secret above is shown only now; the previous ones stay valid until revoked"
            );
        }
        PartnerCommand::RevokeKey { id, credential } => {
            admin::revoke(store, &id, credential, &Actor::command_line()).await?;
            eprintln!("edi-inbox: credential {credential} of {id} revoked");
        }
    }
    Ok(())
}

/// Runs one `edi-inbox operator …` command, printing the operator (or the list) as JSON.
async fn operator_command(store: &Store, action: OperatorCommand) -> Result<(), Box<dyn std::error::Error>> {
    let actor = Actor::command_line();
    let changed = match action {
        OperatorCommand::Add { name, role, password_stdin } => {
            operators::add(store, &name, role, &password(password_stdin)?, &actor).await?
        }
        OperatorCommand::List => {
            println!("{}", pretty(&store.operators().await?));
            return Ok(());
        }
        OperatorCommand::Disable { name } => operators::disable(store, &name, &actor).await?,
        OperatorCommand::Enable { name } => operators::enable(store, &name, &actor).await?,
        OperatorCommand::Reset { name, password_stdin } => {
            operators::reset(store, &name, &password(password_stdin)?, &actor).await?
        }
    };
    println!("{}", pretty(&changed));
    Ok(())
}

/// A new password: the first line of standard input, or typed twice on the terminal (not echoed).
fn password(from_stdin: bool) -> Result<String, Box<dyn std::error::Error>> {
    if from_stdin {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        return Ok(line.trim_end_matches(['\r', '\n']).to_owned());
    }
    let first = rpassword::prompt_password("Password: ")?;
    if rpassword::prompt_password("Again: ")? != first {
        return Err("the two passwords differ".into());
    }
    Ok(first)
}

fn pretty(value: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// Resolves on SIGINT or SIGTERM; in-flight requests are then finished before exit.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutdown requested; finishing requests in flight");
}

/// Logs as `RUST_LOG` says (info, sqlx warnings by default), in `format`; PostgreSQL's notices
/// that a commit did not wait for the synchronous standby reach the store whatever it says.
fn init_tracing(format: LogFormat) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let registry = tracing_subscriber::registry().with(CommitNotices::filtered());
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    match format {
        LogFormat::Json => registry.with(logs.json().with_filter(filter)).init(),
        LogFormat::Pretty => registry.with(logs.with_filter(filter)).init(),
    }
}
