//! The one error of every request to the dispatcher: it is gone, because the
//! coordinator is shutting down. A module of its own so that the handle (which
//! returns it) and the maintenance folder (whose errors wrap it) need not import
//! each other.

/// The dispatcher is gone: the coordinator is shutting down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the coordinator is shutting down")]
pub struct Closed;

impl From<Closed> for tonic::Status {
    fn from(closed: Closed) -> Self {
        tonic::Status::unavailable(closed.to_string())
    }
}
