//! The gRPC server's start and stop, the lease clock's ticks, and the end of a
//! run: the limits reached, or a signal that drains (a second one cuts the drain
//! short).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use stera_proto::v1::coordinator_server::CoordinatorServer;
use tokio::sync::watch;

use crate::cli::CoordinatorArgs;
use crate::dispatcher::{Event, Progress};
use crate::handle::DispatcherHandle;
use crate::local_workers::LocalWorkers;
use crate::registry::Registry;
use crate::service::{CoordinatorService, TokenCheck};

/// The TLS identity of `--tls-cert` and `--tls-key`, if given.
pub(crate) fn tls_config(
    args: &CoordinatorArgs,
) -> Result<Option<tonic::transport::ServerTlsConfig>> {
    let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) else {
        return Ok(None);
    };
    let cert = stera_proto::pem::read_pem("certificate", cert)?;
    let key = stera_proto::pem::read_pem("key", key)?;
    Ok(Some(
        tonic::transport::ServerTlsConfig::new()
            .identity(tonic::transport::Identity::from_pem(cert, key)),
    ))
}

/// Waits for the next SIGTERM (on `term`, registered at start) or Ctrl-C.
pub(crate) async fn terminated(term: &mut Option<tokio::signal::unix::Signal>) {
    match term {
        Some(t) => tokio::select! { _ = tokio::signal::ctrl_c() => {}, _ = t.recv() => {} },
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Ticks the dispatcher (lease expiry) four times a second.
pub(crate) fn start_ticker(dispatcher: DispatcherHandle) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tick.tick().await;
            if dispatcher.send(Event::Tick).is_err() {
                break;
            }
        }
    })
}

pub(crate) type ServerTask = tokio::task::JoinHandle<Result<(), tonic::transport::Error>>;

/// Binds `--listen` and serves the gRPC service until `stopped` turns true.
pub(crate) async fn start_server(
    args: &CoordinatorArgs,
    tls: Option<tonic::transport::ServerTlsConfig>,
    token: &Option<String>,
    dispatcher: &DispatcherHandle,
    registry: &Arc<Registry>,
    ledger: stera_book::ExportLedger,
    mut stopped: watch::Receiver<bool>,
) -> Result<(ServerTask, SocketAddr)> {
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "listening");
    let service = CoordinatorServer::with_interceptor(
        CoordinatorService::new(dispatcher.clone(), registry.clone(), stopped.clone())
            .with_export_paths(args.db.clone(), args.export_dir.clone())
            .with_export_ledger(ledger),
        TokenCheck::new(token.clone()),
    );
    let mut builder = tonic::transport::Server::builder();
    if let Some(tls) = tls {
        builder = builder
            .tls_config(tls)
            .context("invalid TLS certificate or key")?;
    }
    let server = tokio::spawn(builder.add_service(service).serve_with_incoming_shutdown(
        connections(listener),
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        },
    ));
    Ok((server, addr))
}

/// The accepted connections of `listener`, Nagle's algorithm off.
///
/// Each job and acknowledgement is a small write on a long-lived stream: with
/// Nagle's algorithm on (tonic sets no option on a listener it is given) a write
/// waits for the peer's delayed ACK, up to 40 ms, which made each learning
/// move's round trip 10-20 times its search.
fn connections(listener: tokio::net::TcpListener) -> tonic::transport::server::TcpIncoming {
    tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true))
}

/// Runs until the limits are reached, or a signal asks to drain (then waits up to
/// `--drain-secs` for jobs in flight).
///
/// # Errors
/// Every local worker ended while no other worker is connected: the run cannot
/// think any more (it is drained, and the caller exits non-zero with the reason).
pub(crate) async fn wait_for_the_end(
    args: &CoordinatorArgs,
    dispatcher: &DispatcherHandle,
    registry: &Registry,
    local: &mut LocalWorkers,
    progress: &mut watch::Receiver<Progress>,
    term: &mut Option<tokio::signal::unix::Signal>,
) -> Result<()> {
    let mut watch_local = true;
    let signalled = loop {
        tokio::select! {
            _ = progress.wait_for(|p| p.finished) => break false,
            () = terminated(term) => break true,
            why = local.all_ended(), if watch_local => {
                let others = remote_workers(registry, args.local_workers);
                if others == 0 {
                    let _ = dispatcher.drain("every local worker ended");
                    anyhow::bail!(
                        "{why}; no other worker is connected, so nothing can think: stopping (fix the engine flags the local workers were given)"
                    );
                }
                tracing::warn!(
                    remote_workers = others,
                    "{why}; going on with the other workers"
                );
                watch_local = false;
            }
        }
    };
    if signalled {
        // A normal stop (an upgrade, a move): told at INFO. Only what goes
        // wrong on the way (a second signal, the export abandoned) warns.
        tracing::info!(
            drain_secs = args.drain_secs,
            "stopping: no new jobs, waiting for jobs in flight"
        );
        let _ = dispatcher.drain("the coordinator is shutting down");
        tokio::select! {
            _ = tokio::time::timeout(
                Duration::from_secs(args.drain_secs),
                progress.wait_for(|p| p.in_flight == 0),
            ) => {}
            () = terminated(term) => {
                tracing::warn!("second signal: drain cut short; results still in flight are given up (their positions are thought again next run)");
            }
        }
    } else if progress.borrow().stalled {
        tracing::warn!(
            thought = progress.borrow().thought,
            "stopping: no position can be thought any more"
        );
        let _ = dispatcher.drain("no position can be thought any more");
    } else {
        // A run ends at the limits it was given: the think limit, the games
        // target, the learning games, or several (a run of games or learning
        // only, `--think-limit 0`, thinks nothing).
        let thought = progress.borrow().thought;
        // The workers are told every limit that ended the run.
        let reason = progress.borrow().end_reason(crate::progress::RunLimits {
            thinks: args.think_limit != Some(0),
            games_target: args.play.games.is_some(),
            learn_games: args.learn.learn_games,
        });
        if args.learn.learn_games > 0 {
            // Fewer than --learn-games when the key positions settled first.
            tracing::info!(
                games = progress.borrow().learning_games,
                target = args.learn.learn_games,
                "learning games counted"
            );
        }
        let thinks = args.think_limit != Some(0);
        match (thinks, args.play.games) {
            (false, Some(games)) => tracing::info!(games, "games target reached"),
            (true, Some(games)) => {
                tracing::info!(thought, games, "think limit and games target reached");
            }
            // A learning run said so above.
            (false, None) if args.learn.learn_games > 0 => {}
            (_, None) => tracing::info!(thought, "think limit reached"),
        }
        tracing::info!(%reason, "the run ends: the workers are drained");
        let _ = dispatcher.drain(&reason);
    }
    Ok(())
}

/// Workers connected now that are not this run's `local` local workers (named
/// `local-0`, `local-1`, ...).
fn remote_workers(registry: &Registry, local: u32) -> usize {
    let local: std::collections::HashSet<String> =
        (0..local).map(|i| format!("local-{i}")).collect();
    registry
        .worker_status()
        .iter()
        .filter(|w| !local.contains(&w.worker_id))
        .count()
}

/// Streams end with the stop signal; a connection that still does not close is cut
/// after a grace period, so shutdown never waits on a peer.
pub(crate) async fn close_server(mut server: ServerTask) {
    if tokio::time::timeout(SERVER_GRACE, &mut server)
        .await
        .is_err()
    {
        tracing::warn!("connections still open after {SERVER_GRACE:?}; closing them");
        server.abort();
    }
}

/// How long the gRPC server may take to close its connections at shutdown.
const SERVER_GRACE: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use tokio_stream::StreamExt;

    #[tokio::test]
    async fn accepted_connections_send_small_writes_at_once() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut incoming = super::connections(listener);
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let accepted = incoming.next().await.unwrap().unwrap();
        assert!(accepted.nodelay().unwrap(), "Nagle's algorithm is on");
    }
}
