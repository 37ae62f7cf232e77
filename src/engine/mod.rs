//! The scheduling engine: sampling, the parallel filter and score passes, host selection.

pub mod batch;
pub mod cycle;
pub mod memo;
pub mod sampling;

pub use crate::framework::profile;
pub use batch::{BatchCx, BatchStats, OpportunisticBatch};
pub use cycle::{CycleResult, Diagnosis, Engine, Failures, NodeFailure, ScoreTable};
pub use sampling::num_feasible_nodes_to_find;
