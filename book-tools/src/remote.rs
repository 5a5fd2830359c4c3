//! `book-tools remote`: talk to a running coordinator over its gRPC API. A book
//! maker gets a fresh book while generation goes on for months (`remote
//! export`), or a one-screen summary of the run (`remote status`).

mod status;

use std::path::PathBuf;

use anyhow::{Context, Result};
use stera_proto::token::read_token;
use stera_proto::v1::StatusRequest;
use stera_proto::v1::coordinator_client::CoordinatorClient;
use stera_service::export::{ExportFlags, RemoteExport};
use stera_service::status::StatusDocument;
use tonic::metadata::MetadataValue;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct Connection {
    #[arg(
        long,
        env = stera_proto::COORDINATOR_ENV,
        value_name = "URL",
        default_value = stera_proto::DEFAULT_COORDINATOR_URL,
        value_parser = stera_proto::coordinator_url,
        help = stera_proto::COORDINATOR_URL_HELP
    )]
    coordinator: String,
    /// File holding the bearer token (else STERA_TOKEN; none for a coordinator
    /// without authentication).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    #[arg(long, value_name = "FILE", help = stera_proto::TLS_CA_HELP)]
    tls_ca: Option<PathBuf>,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Ask the running coordinator to write a tera-shock book of its live book.
    /// The file is written on the coordinator's machine (atomically), from a
    /// snapshot of the book: generation goes on meanwhile.
    Export {
        #[command(flatten)]
        connection: Connection,
        /// Path of the book file on the coordinator's machine, inside its
        /// --export-dir (a relative path is taken from there). Its extension
        /// chooses the format unless --export-format says otherwise: `.ybb` a binary
        /// book, anything else YaneuraOu's text book. Formerly `--out`.
        #[arg(long = "export", alias = "out", value_name = "FILE")]
        out: String,
        // `--export-format`, `--export-shrink`, `--export-raw`, `--export-propagation`,
        // `--export-temperature`, `--export-weights`: declared once for the three
        // export front ends.
        #[command(flatten)]
        export: ExportFlags<RemoteExport>,
    },
    /// Ask the running coordinator to copy its store into a new store directory
    /// on its machine (inside its --export-dir), consistent and restorable: the
    /// copy is written under a temporary name (`OUT.stera-partial-<pid>.<n>`, which
    /// no open takes for a store) and renamed to OUT when complete. Restore
    /// by pointing a coordinator's --db at the copy.
    Backup {
        #[command(flatten)]
        connection: Connection,
        /// Directory to create on the coordinator's machine.
        #[arg(long)]
        out: String,
    },
    /// Print the run's progress as the coordinator reports it: book size,
    /// positions thought per second, jobs in flight, the connected workers with
    /// their job slots, games, exports and backups (the last one's time), each
    /// root's principal variation, and since when the coordinator runs.
    Status {
        #[command(flatten)]
        connection: Connection,
        /// Write the status document to FILE (`-`, or no value: standard output)
        /// instead of the summary for a person: one JSON object, the same as the
        /// coordinator's `/api/status` (`version`: the schema version, 2; every
        /// key is listed in the README, "The status document"), as `match --json`
        /// takes it. Default: the summary.
        #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
        json: Option<PathBuf>,
    },
}

pub fn run(args: &Args) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        match &args.command {
            Command::Export {
                connection,
                out,
                export,
            } => {
                // A format the path contradicts is refused before connecting.
                export.choice().format_for(std::path::Path::new(out))?;
                let mut client = connect(connection).await?;
                let request = authorized(connection, export.choice().to_request(out.clone()))?;
                let reply = client
                    .export(request)
                    .await
                    .map_err(|s| refused("export", &s))?
                    .into_inner();
                crate::say!(
                    "wrote {} entries, {} moves to {} on the coordinator in {:.1} s \
                     (a snapshot of {} positions: `book-tools export --first-positions {}` writes it again)",
                    reply.entries,
                    reply.moves,
                    reply.path,
                    f64::from(reply.elapsed_ms) / 1000.0,
                    reply.nodes,
                    reply.nodes
                );
                Ok(())
            }
            Command::Backup { connection, out } => {
                let mut client = connect(connection).await?;
                let request = authorized(
                    connection,
                    stera_proto::v1::BackupRequest { path: out.clone() },
                )?;
                let reply = client
                    .backup(request)
                    .await
                    .map_err(|s| refused("backup", &s))?
                    .into_inner();
                crate::say!(
                    "backed up {} positions ({} entries) to {} on the coordinator in {:.1} s",
                    reply.nodes,
                    reply.entries,
                    reply.path,
                    f64::from(reply.elapsed_ms) / 1000.0
                );
                Ok(())
            }
            Command::Status { connection, json } => {
                let mut client = connect(connection).await?;
                let mut reply = client
                    .status(authorized(connection, StatusRequest::default())?)
                    .await
                    .map_err(|s| refused("status", &s))?
                    .into_inner();
                if reply.now_unix_ms == 0 {
                    // A coordinator older than the status document does not say
                    // when it answered: the uptime is then counted to now here.
                    reply.now_unix_ms = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                }
                let doc = StatusDocument::from_reply(reply);
                if let Some(path) = json {
                    let line = status::json(&doc).context("cannot write the status as JSON")?;
                    if path.as_os_str() == "-" {
                        crate::say!("{line}");
                    } else {
                        let target =
                            stera_book::store_path::BoundTarget::open(path, None).map_err(|e| anyhow::anyhow!("bad --json: {e}"))?;
                        std::fs::write(target.write_path(), format!("{line}\n"))
                            .with_context(|| format!("cannot write {}", path.display()))?;
                    }
                } else {
                    let text = status::text(&doc);
                    crate::common::to_stdout(|out| out.write_all(text.as_bytes()))?;
                }
                Ok(())
            }
        }
    })
}

async fn connect(c: &Connection) -> Result<CoordinatorClient<Channel>> {
    connect_to(&c.coordinator, c.tls_ca.as_deref()).await
}

/// A client of the coordinator at `url`, with TLS for `https://` (the CA in
/// `tls_ca`, else the system's roots).
pub(crate) async fn connect_to(
    url: &str,
    tls_ca: Option<&std::path::Path>,
) -> Result<CoordinatorClient<Channel>> {
    let endpoint = Endpoint::from_shared(url.to_owned())
        .with_context(|| format!("bad coordinator URL `{url}`"))?;
    let tls = match tls_ca {
        Some(path) => {
            let pem = stera_proto::pem::read_pem("CA file", path)?;
            Some(ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)))
        }
        None if url.starts_with("https://") => Some(ClientTlsConfig::new().with_native_roots()),
        None => None,
    };
    let endpoint = match tls {
        Some(tls) => endpoint.tls_config(tls).context("TLS set-up failed")?,
        None => endpoint,
    };
    let channel = endpoint
        .connect()
        .await
        .with_context(|| format!("cannot connect to the coordinator at {url}"))?;
    Ok(CoordinatorClient::new(channel))
}

/// The request with the bearer token, if one is configured.
fn authorized<T>(c: &Connection, message: T) -> Result<tonic::Request<T>> {
    // Long analyses of a big book: no client-side deadline.
    with_token(read_token(c.token_file.as_deref())?.as_deref(), message)
}

/// `message` as a request carrying the bearer `token`, if there is one.
pub(crate) fn with_token<T>(token: Option<&str>, message: T) -> Result<tonic::Request<T>> {
    let mut request = tonic::Request::new(message);
    if let Some(token) = token {
        let value: MetadataValue<_> = format!("Bearer {token}")
            .parse()
            .context("the token contains characters that cannot be sent in a header")?;
        request.metadata_mut().insert("authorization", value);
    }
    Ok(request)
}

fn refused(what: &str, status: &tonic::Status) -> anyhow::Error {
    anyhow::anyhow!(
        "the coordinator refused the {what} request ({:?}): {}",
        status.code(),
        status.message()
    )
}
