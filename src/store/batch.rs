//! Group commit: deliveries are queued for writer tasks that take whatever is queued at that moment
//! (up to [`MAX_BATCH`]) and record it with one transaction, one round trip per statement for the
//! whole batch, and one commit. Each delivery keeps its own outcome; every reply goes out after the
//! commit; the queue is FIFO, so waiting is fair.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{Mutex, mpsc, oneshot};

use uuid::Uuid;

use super::rows::AuditRow;
use super::{FirstAttempt, StoreError};
use crate::inbox::{Delivery, Outcome};

/// Deliveries waiting for a writer before senders wait for room.
const QUEUE: usize = 1024;
/// Deliveries committed together at most.
pub(super) const MAX_BATCH: usize = 128;

/// One delivery waiting to be recorded.
pub(super) struct Job {
    pub delivery: Arc<Delivery>,
    pub first: FirstAttempt,
    reply: oneshot::Sender<Result<Outcome, StoreError>>,
}

impl Job {
    /// The audit row a first delivery writes with itself.
    pub(super) fn audit_row(&self, transport_reused: bool) -> AuditRow<'_> {
        AuditRow {
            id: Uuid::now_v7(),
            inbox_id: Some(self.delivery.id()),
            key: self.delivery.key(),
            outcome: self.first.outcome,
            status: self.first.status,
            facts: &self.first.facts,
            at: self.delivery.received_at(),
            transport_reused,
        }
    }
}

/// The sending side, held by every clone of the store.
#[derive(Clone)]
pub(super) struct Queue {
    jobs: mpsc::Sender<Job>,
}

impl Queue {
    /// Starts `writers` tasks, each recording the batches it takes with `commit`, which returns one
    /// outcome per job, in order; each batch is timed in `edi_inbox_db_batch_duration_seconds`
    /// under `backend`. The tasks end when every clone of the queue is gone.
    pub(super) fn start<W, F>(backend: &'static str, writers: usize, commit: W) -> Queue
    where
        W: Fn(Vec<Job>) -> F + Clone + Send + 'static,
        F: Future<Output = (Vec<Job>, Vec<Result<Outcome, StoreError>>)> + Send,
    {
        let (jobs, queue) = mpsc::channel(QUEUE);
        let queue = Arc::new(Mutex::new(queue));
        for _ in 0..writers.max(1) {
            let (queue, commit) = (Arc::clone(&queue), commit.clone());
            tokio::spawn(async move {
                loop {
                    let mut batch = Vec::with_capacity(MAX_BATCH);
                    if queue.lock().await.recv_many(&mut batch, MAX_BATCH).await == 0 {
                        return;
                    }
                    let started = std::time::Instant::now();
                    let (batch, outcomes) = commit(batch).await;
                    metrics::histogram!("edi_inbox_db_batch_duration_seconds", "backend" => backend)
                        .record(started.elapsed().as_secs_f64());
                    for (job, outcome) in batch.into_iter().zip(outcomes) {
                        // A sender that gave up (timeout) finds its delivery committed when it retries.
                        let _ = job.reply.send(outcome);
                    }
                }
            });
        }
        Queue { jobs }
    }

    /// Queues a delivery and waits for its committed outcome.
    pub(super) async fn record(
        &self,
        delivery: Arc<Delivery>,
        first: FirstAttempt,
    ) -> Result<Outcome, StoreError> {
        let (reply, answer) = oneshot::channel();
        let stopped = || StoreError::Unavailable(sqlx::Error::PoolClosed);
        self.jobs.send(Job { delivery, first, reply }).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

/// The same error for every job of a batch that could not be committed.
pub(super) fn all_failed(batch: &[Job], error: &StoreError) -> Vec<Result<Outcome, StoreError>> {
    batch
        .iter()
        .map(|_| {
            Err(StoreError::Unavailable(sqlx::Error::Protocol(format!("the group commit failed: {error}"))))
        })
        .collect()
}
