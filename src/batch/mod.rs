//! Batch de-identification of files (`phiflow batch deidentify`): Parquet, NDJSON and CSV in,
//! Parquet out, one atomically written part per shard, through the same core as the HTTP
//! routes. `inputs` lists, checks and reads the files; `shard` decides which rows a shard
//! owns; `output` writes the part; `progress` reports on stderr; `command` runs it all.

mod command;
mod error;
mod inputs;
mod output;
mod progress;
mod shard;

pub use command::{BatchArgs, BatchCommand, DeidentifyArgs, OptionArgs, Summary, run};
pub use error::BatchRunError;
pub use shard::Shard;
