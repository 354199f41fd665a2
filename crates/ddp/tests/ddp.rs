//! Integration tests of the `ddp` crate (one test binary; its modules are
//! below): the model against hand-computed answers on synthetic profiles, the
//! readers on fixtures in the real file formats, every malformed input, and
//! whole runs through `run_to`.
mod caps;
mod comm_points;
mod extrapolation;
mod malformed;
mod model;
mod pipeline;
mod plot;
mod readers;
mod runs;
mod shard;
mod util;
