//! A player whose moves a running coordinator's workers search (rpc Search):
//! `book-tools match --coordinator` plays its games here and the cluster's
//! engines think, so a match of thousands of games takes the cluster's time, not
//! this machine's.
//!
//! The game stays here ([`stera_games::SearchPlayer`], the same player the
//! coordinator's learning games use): every request carries the start position
//! and all moves played, so any worker can answer any move and a worker lost
//! mid-game costs one search, not the game.

use std::path::PathBuf;

use anyhow::{Context, Result};
use stera_games::search_player::{MoveSearch, SearchAnswer, SearchQuery};
use stera_games::{Route, SearchPlayer};
use stera_proto::v1::coordinator_client::CoordinatorClient;
use tonic::transport::Channel;

/// Where the coordinator is and how to reach it (the flags of `match`).
#[derive(Debug, Clone, clap::Args)]
pub struct Cluster {
    /// Play the engines' moves through the workers of the coordinator at this URL
    /// (`http://host:50051`, `https://` with TLS) instead of local engines; the
    /// engine flags are then not used: the workers' engines play. The coordinator
    /// serves these searches before its own jobs. Given without a URL: the
    /// worker's and `remote`'s default, STERA_COORDINATOR, else
    /// http://127.0.0.1:50051. Default: local engines (the engine flags).
    #[arg(long, value_name = "URL", num_args = 0..=1, value_parser = stera_proto::coordinator_url)]
    pub coordinator: Option<Option<String>>,
    /// File holding the coordinator's bearer token (else STERA_TOKEN; neither: no
    /// token is sent).
    #[arg(long, value_name = "FILE", requires = "coordinator")]
    pub token_file: Option<PathBuf>,
    #[arg(long, value_name = "FILE", requires = "coordinator", help = stera_proto::TLS_CA_HELP)]
    pub tls_ca: Option<PathBuf>,
}

impl Cluster {
    /// The coordinator's URL: the one given, or for a bare `--coordinator` the
    /// default of the worker and `remote`; `None` without `--coordinator`.
    ///
    /// # Errors
    /// A STERA_COORDINATOR that is not a coordinator URL.
    pub fn url(&self) -> Result<Option<String>> {
        match &self.coordinator {
            None => Ok(None),
            Some(Some(url)) => Ok(Some(url.clone())),
            Some(None) => match std::env::var(stera_proto::COORDINATOR_ENV) {
                Ok(text) => stera_proto::coordinator_url(&text)
                    .map(Some)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", stera_proto::COORDINATOR_ENV)),
                Err(_) => Ok(Some(stera_proto::DEFAULT_COORDINATOR_URL.to_owned())),
            },
        }
    }
}

/// The searches of one side's engine in the cluster: its own connection and
/// runtime, so that game threads never wait on each other.
pub struct RemoteSearch {
    runtime: tokio::runtime::Runtime,
    client: CoordinatorClient<Channel>,
    token: Option<String>,
    url: String,
    /// The engine the workers connected at the start reported, before any answer.
    engine: Option<String>,
    /// Whether the user was told that searches wait (once per player).
    told_waiting: bool,
}

/// One side's engine in the cluster: the one search player over gRPC.
pub type RemotePlayer = SearchPlayer<RemoteSearch>;

/// A search unanswered this long is told about: a coordinator without workers
/// queues searches silently, and a match would look hung.
const WAIT_NOTE_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// Connects to the coordinator of `cluster`: a player whose searches the
/// workers of `route` answer.
///
/// # Errors
/// No coordinator URL, an unreadable token or CA file, no connection.
pub fn connect(cluster: &Cluster, route: Route) -> Result<RemotePlayer> {
    let url = cluster.url()?.context("no --coordinator given")?;
    let token = stera_proto::token::read_token(cluster.token_file.as_deref())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut client =
        runtime.block_on(crate::remote::connect_to(&url, cluster.tls_ca.as_deref()))?;
    // The engine is named before the first move (the match's header) by
    // the workers connected now; the first answer names it for good.
    let engine =
        crate::remote::with_token(token.as_deref(), stera_proto::v1::StatusRequest::default())
            .ok()
            .and_then(|request| runtime.block_on(client.status(request)).ok())
            .and_then(|reply| workers_engine(&reply.into_inner()));
    Ok(SearchPlayer::routed(
        RemoteSearch {
            runtime,
            client,
            token,
            url,
            engine,
            told_waiting: false,
        },
        route,
    ))
}

impl MoveSearch for RemoteSearch {
    fn search(&mut self, query: &SearchQuery<'_>) -> Result<SearchAnswer, String> {
        let message = stera_service::convert::search_request(query);
        let request = crate::remote::with_token(self.token.as_deref(), message)
            .map_err(|e| format!("{e:#}"))?;
        let Self {
            runtime,
            client,
            told_waiting,
            url,
            ..
        } = self;
        let reply = runtime
            .block_on(async {
                let search = client.search(request);
                tokio::pin!(search);
                if !*told_waiting {
                    tokio::select! {
                        answer = &mut search => return answer,
                        () = tokio::time::sleep(WAIT_NOTE_AFTER) => {
                            *told_waiting = true;
                            crate::tell!(
                                "waiting: the coordinator at {url} has answered no search for {} s; it serves them once a worker is connected (`book-tools remote status` lists its workers)",
                                WAIT_NOTE_AFTER.as_secs()
                            );
                        }
                    }
                }
                search.await
            })
            .map_err(|s| {
                format!(
                    "the coordinator refused the search ({:?}): {}",
                    s.code(),
                    s.message()
                )
            })?
            .into_inner();
        self.engine = Some(reply.engine.clone());
        Ok(stera_service::convert::search_answer(reply))
    }

    fn describe(&self) -> String {
        match &self.engine {
            Some(engine) => self.name_engine(engine),
            None => format!(
                "the engine of the workers of {} (none connected yet)",
                self.url
            ),
        }
    }

    fn name_engine(&self, engine: &str) -> String {
        format!("{engine} (on the workers of {})", self.url)
    }
}

/// The engines of the coordinator's connected workers, one name for each
/// kind (`A / B` when they differ); `None` without a worker.
fn workers_engine(reply: &stera_proto::v1::StatusReply) -> Option<String> {
    let mut engines: Vec<&str> = reply.workers.iter().map(|w| w.engine.as_str()).collect();
    engines.sort_unstable();
    engines.dedup();
    (!engines.is_empty()).then(|| engines.join(" / "))
}
