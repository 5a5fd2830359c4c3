//! What the dispatcher is told at start.

use std::time::Duration;

use stera_proto::v1::Limits;

use crate::play::PlaySettings;

/// Dispatcher settings.
#[derive(Debug, Clone)]
pub struct DispatchConfig {
    /// A lease is void this long after it was handed out or last renewed.
    pub lease: Duration,
    /// Workers are asked to send heartbeats this often.
    pub heartbeat: Duration,
    /// Evaluation limits sent with every job.
    pub limits: Limits,
    /// Stop handing out jobs once this many positions were thought in this run.
    pub think_limit: Option<u64>,
    /// A position whose evaluations fail this many times, on more than one
    /// worker, is quarantined (see `blame`).
    pub max_failures: u32,
    /// A worker whose jobs fail this many times in a row is refused.
    pub max_worker_failures: u32,
    /// The coordinator's version, sent in Welcome.
    pub version: String,
    /// Games: share of the slots, target, limits, rules.
    pub play: PlaySettings,
    /// Learning games this run counts, and the share of think jobs for where they
    /// left the book (see `learn`).
    pub learn: LearnConfig,
    /// Admit workers whose engine or budget differs from the store's
    /// (`--allow-mixed-engines`); by default they are refused at Hello, unless
    /// the run thinks nothing (`think_limit` 0: their engines only play).
    pub allow_mixed_engines: bool,
    /// The store's secret, which signs lease ids (see `lease_id`).
    pub lease_secret: [u8; stera_book::SECRET_BYTES],
}

/// What the dispatcher needs of the learning flags.
#[derive(Debug, Clone, Default)]
pub struct LearnConfig {
    /// Learning games this run counts before it ends (0: none).
    pub games: u64,
    /// Share of the think jobs given to queued exits of learning games.
    pub grow_share: f64,
    /// The engines learning opponents name (`--engine-id`): their workers
    /// answer searches only.
    pub opponent_engines: Vec<String>,
}
