//! `collbench replay`: a job's traced collectives issued again. The traces
//! (one per rank, every rank reading them all) become per-rank lists of
//! [`calls::Call`]s; [`schedule`] checks them against each other and the
//! world and matches each group's calls across its ranks; [`issue`] makes
//! the groups' communicators and issues and times this rank's calls;
//! [`report`] sets the times beside the recorded ones.
pub mod calls;
pub mod issue;
pub mod plan;
pub mod read;
pub mod report;
pub mod run;
pub mod schedule;
