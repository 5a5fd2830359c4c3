//! What the status RPC, the dashboard and the metrics read without going through the
//! dispatcher: connected workers (a concurrent map) and counters.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dashmap::DashMap;
use stera_proto::v1::WorkerStatus;

use crate::dispatcher::StreamId;

/// One connected worker stream.
#[derive(Debug, Clone)]
pub struct WorkerEntry {
    pub worker_id: String,
    pub engine: String,
    pub slots: u32,
    pub in_flight: u32,
    pub completed: u64,
    pub connected: Instant,
}

/// Monotonic counters since start.
#[derive(Debug, Default)]
pub struct Counters {
    pub thought: AtomicU64,
    pub rejected: AtomicU64,
    pub requeued: AtomicU64,
    pub expired: AtomicU64,
    pub quarantined: AtomicU64,
    pub selections: AtomicU64,
    pub selected_leaves: AtomicU64,
    /// Sum of selection latencies in microseconds.
    pub selection_micros: AtomicU64,
    pub book_nodes: AtomicU64,
    pub in_flight: AtomicU64,
}

#[derive(Debug, Default)]
pub struct Registry {
    pub workers: DashMap<StreamId, WorkerEntry>,
    pub counters: Counters,
    /// (time, thought) samples for rates, one every few seconds.
    samples: Mutex<Vec<(Instant, u64)>>,
}

impl Registry {
    pub fn record_selection(&self, took: Duration, leaves: usize) {
        self.counters.selections.fetch_add(1, Ordering::Relaxed);
        self.counters
            .selected_leaves
            .fetch_add(leaves as u64, Ordering::Relaxed);
        self.counters.selection_micros.fetch_add(
            u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    pub fn set_book(&self, nodes: u64, in_flight: u64) {
        self.counters.book_nodes.store(nodes, Ordering::Relaxed);
        self.counters.in_flight.store(in_flight, Ordering::Relaxed);
        let now = Instant::now();
        let thought = self.counters.thought.load(Ordering::Relaxed);
        if let Ok(mut s) = self.samples.lock()
            && s.last()
                .is_none_or(|(t, _)| now.duration_since(*t) >= Duration::from_secs(2))
        {
            s.push((now, thought));
            if s.len() > 64 {
                s.remove(0);
            }
        }
    }

    /// Thought positions per second over the last minute or so.
    pub fn thought_rate(&self) -> f64 {
        let Ok(s) = self.samples.lock() else {
            return 0.0;
        };
        let now_thought = self.counters.thought.load(Ordering::Relaxed);
        let Some((t0, n0)) = s
            .iter()
            .rev()
            .find(|(t, _)| t.elapsed() >= Duration::from_secs(60))
            .or_else(|| s.first())
        else {
            return 0.0;
        };
        let secs = t0.elapsed().as_secs_f64();
        if secs <= 0.0 {
            0.0
        } else {
            (now_thought.saturating_sub(*n0)) as f64 / secs
        }
    }

    pub fn worker_status(&self) -> Vec<WorkerStatus> {
        let mut out: Vec<WorkerStatus> = self
            .workers
            .iter()
            .map(|w| {
                let secs = w.connected.elapsed().as_secs_f64();
                WorkerStatus {
                    worker_id: w.worker_id.clone(),
                    engine: w.engine.clone(),
                    slots: w.slots,
                    in_flight: w.in_flight,
                    completed: w.completed,
                    results_per_second: if secs > 0.0 {
                        w.completed as f64 / secs
                    } else {
                        0.0
                    },
                }
            })
            .collect();
        out.sort_by(|a, b| a.worker_id.cmp(&b.worker_id));
        out
    }
}
