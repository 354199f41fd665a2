//! One size, measured: the two references (one pinned host-to-GPU copy,
//! one GPU-to-GPU peer copy), then every row of the size: warm-up, timed
//! deliveries (host wall time, start until every GPU holds the buffer),
//! then checked deliveries into cleared buffers.
use anyhow::Context;
use schema::{
    units, Delivery, DeliveryStrategy, HostMemory, LinkReference, PeerAccess, Summary, TimeStats,
};
use std::time::Instant;

use super::devices::Fleet;
use super::plan::{HostBroadcastPlan, RowSpec};
use super::strategies;
use crate::failure::{Classify, Failure};
use crate::watchdog::Watchdog;

/// Who measures: the process's rank and node, as rows name them.
pub struct Measurer<'a> {
    pub plan: &'a HostBroadcastPlan,
    pub fleet: &'a mut Fleet,
    pub watchdog: &'a Watchdog,
    pub rank: u32,
    pub host: &'a str,
}

/// The references of one size, shared by its rows.
#[derive(Debug, Clone, Copy)]
struct References {
    host_to_gpu: LinkReference,
    gpu_to_gpu: Option<LinkReference>,
}

impl Measurer<'_> {
    /// Every row of a buffer of `size` bytes, in the plan's order.
    pub fn measure_size(&mut self, size: u64) -> anyhow::Result<Vec<Delivery>> {
        let what = format!("size {}", units::format_bytes(size));
        let len = usize::try_from(size).context("a size beyond this machine's addresses")?;
        self.watchdog
            .arm(|| format!("{what}: the reference copies"));
        let references = self.references(len).with_context(|| what.clone())?;
        let mut rows = Vec::new();
        for spec in self.plan.rows_for(size) {
            let label = format!("{what}, {}", row_name(&spec));
            rows.push(
                self.measure_row(len, &spec, references, &label)
                    .with_context(|| label.clone())?,
            );
        }
        self.watchdog.disarm();
        Ok(rows)
    }

    /// One pinned copy to GPU 0, and one peer copy from GPU 0 to GPU 1.
    fn references(&mut self, len: usize) -> anyhow::Result<References> {
        let plan = self.plan;
        let gpus = &mut self.fleet.gpus;
        let source = self.fleet.hosts.source(HostMemory::Pinned, len);
        let mut times = Vec::with_capacity(plan.iters as usize);
        time_each(plan.warmup_iters, plan.iters, &mut times, || {
            let stream = &gpus.streams[0];
            stream.memcpy_htod(source, &mut gpus.buffers[0].slice_mut(..len))?;
            stream.synchronize()
        })
        .classify(Failure::Communication)?;
        let host_to_gpu = link_reference(len, &mut times);
        let gpu_to_gpu = if gpus.count() > 1 {
            time_each(plan.warmup_iters, plan.iters, &mut times, || {
                let stream = &gpus.streams[1];
                let (first, others) = gpus.buffers.split_at_mut(1);
                let from = first[0].slice(..len);
                gpu::peer::copy_async(stream, &from, &mut others[0].slice_mut(..len))?;
                stream.synchronize()
            })
            .classify(Failure::Communication)?;
            Some(link_reference(len, &mut times))
        } else {
            None
        };
        Ok(References {
            host_to_gpu,
            gpu_to_gpu,
        })
    }

    fn measure_row(
        &mut self,
        len: usize,
        spec: &RowSpec,
        references: References,
        label: &str,
    ) -> anyhow::Result<Delivery> {
        let plan = self.plan;
        let watchdog = self.watchdog;
        let gpus = &mut self.fleet.gpus;
        let count = gpus.count();
        let source = self.fleet.hosts.source(spec.host_memory, len);
        let staged = spec.host_memory == HostMemory::Pageable;
        let delivery =
            strategies::Delivery::new(spec.strategy, len, spec.chunk_bytes, count, staged);
        let step = |what: &str| format!("{label}: {what}");
        watchdog.arm(|| step("warm-up and timed deliveries"));
        let mut times = Vec::with_capacity(plan.iters as usize);
        time_each(plan.warmup_iters, plan.iters, &mut times, || {
            delivery.run(gpus, source)
        })?;
        let measured_at = crate::provenance::utc_now();
        let wrong_bytes = if plan.check_iters > 0 {
            watchdog.arm(|| step("checked deliveries"));
            let mut wrong = 0;
            for _ in 0..plan.check_iters {
                gpus.clear(len).classify(Failure::Communication)?;
                delivery.run(gpus, source)?;
                wrong += gpus.count_wrong(len).classify(Failure::Communication)?;
            }
            Some(wrong)
        } else {
            None
        };
        let time_us = summary_of(&times);
        let peer_access = match spec.strategy {
            DeliveryStrategy::Relay | DeliveryStrategy::Pipelined => gpus.peer_access.clone(),
            _ => Vec::new(),
        };
        let chunks = spec
            .chunk_bytes
            .map(|c| super::schedule::chunk_count(len, c as usize) as u64);
        Ok(Delivery {
            rank: self.rank,
            host: self.host.to_string(),
            strategy: spec.strategy,
            host_memory: spec.host_memory,
            bytes: len as u64,
            gpus: count as u32,
            chunk_bytes: spec.chunk_bytes,
            chunks,
            delivered_gbps: units::gbps((len as u64).saturating_mul(count as u64), time_us.mean),
            time_us,
            iteration_us: times,
            host_to_gpu: references.host_to_gpu,
            gpu_to_gpu: references.gpu_to_gpu,
            note: note(spec.strategy, count, chunks, &peer_access),
            peer_access,
            wrong_bytes,
            measured_at: Some(measured_at),
        })
    }
}

/// `pipelined 4 MiB chunks from pageable memory`.
fn row_name(spec: &RowSpec) -> String {
    let chunks = spec.chunk_bytes.map_or(String::new(), |c| {
        format!(" {} chunks", units::format_bytes(c))
    });
    format!(
        "{}{chunks} from {} memory",
        super::plan::cli_name(spec.strategy),
        spec.host_memory
    )
}

/// Runs `once` `warmup` times untimed, then `iters` times timed into
/// `times` (µs, emptied first).
fn time_each<E>(
    warmup: u32,
    iters: u32,
    times: &mut Vec<f64>,
    mut once: impl FnMut() -> Result<(), E>,
) -> Result<(), E> {
    times.clear();
    for _ in 0..warmup {
        once()?;
    }
    for _ in 0..iters {
        let start = Instant::now();
        once()?;
        times.push(crate::timing::micros(start.elapsed()));
    }
    Ok(())
}

fn summary_of(times: &[f64]) -> TimeStats {
    Summary::from_samples(times).map_or(TimeStats::mean_only(0.0), Summary::to_time_stats)
}

fn link_reference(len: usize, times: &mut [f64]) -> LinkReference {
    let time_us = Summary::from_unsorted_in_place(times)
        .map_or(TimeStats::mean_only(0.0), Summary::to_time_stats);
    LinkReference {
        gbps: units::gbps(len as u64, time_us.mean),
        time_us,
    }
}

/// What a row measured when it is less than its name says, or how its
/// peer copies went when some were staged through the host.
pub fn note(
    strategy: DeliveryStrategy,
    gpus: usize,
    chunks: Option<u64>,
    peer_access: &[PeerAccess],
) -> Option<String> {
    if gpus == 1 {
        return match strategy {
            DeliveryStrategy::Direct => None,
            DeliveryStrategy::DirectConcurrent => Some("one GPU: the same as direct".into()),
            DeliveryStrategy::Relay => {
                Some("one GPU: host to GPU 0 only, nothing to forward".into())
            }
            DeliveryStrategy::Pipelined => {
                Some("one GPU: chunked host to GPU 0 only, nothing to forward".into())
            }
            DeliveryStrategy::Nccl => {
                Some("one GPU: host to GPU 0, then a broadcast to no other GPU".into())
            }
        };
    }
    let staged: Vec<String> = peer_access
        .iter()
        .filter(|p| !p.direct)
        .map(|p| p.to_gpu.to_string())
        .collect();
    let mut notes = Vec::new();
    if chunks == Some(1) {
        notes.push("one chunk: nothing overlaps (the relay's work)".to_string());
    }
    if !staged.is_empty() {
        notes.push(format!(
            "GPU 0 -> GPU {} staged through host memory (no peer access)",
            staged.join(", ")
        ));
    }
    (!notes.is_empty()).then(|| notes.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(to: u32, direct: bool) -> PeerAccess {
        PeerAccess {
            from_gpu: 0,
            to_gpu: to,
            direct,
        }
    }

    #[test]
    fn one_gpu_rows_say_what_they_measured() {
        assert_eq!(note(DeliveryStrategy::Direct, 1, None, &[]), None);
        for strategy in [
            DeliveryStrategy::DirectConcurrent,
            DeliveryStrategy::Relay,
            DeliveryStrategy::Pipelined,
            DeliveryStrategy::Nccl,
        ] {
            let text = note(strategy, 1, Some(4), &[]).unwrap();
            assert!(text.starts_with("one GPU: "), "{text}");
        }
    }

    #[test]
    fn staged_pairs_and_single_chunks_are_named() {
        let access = [pair(1, true), pair(2, false), pair(3, false)];
        assert_eq!(
            note(DeliveryStrategy::Relay, 4, None, &access).unwrap(),
            "GPU 0 -> GPU 2, 3 staged through host memory (no peer access)"
        );
        assert_eq!(note(DeliveryStrategy::Relay, 4, None, &access[..1]), None);
        assert_eq!(
            note(DeliveryStrategy::Pipelined, 2, Some(1), &access[..1]).unwrap(),
            "one chunk: nothing overlaps (the relay's work)"
        );
    }

    #[test]
    fn rows_are_named_by_strategy_chunk_and_memory() {
        let spec = RowSpec {
            host_memory: HostMemory::Pageable,
            strategy: DeliveryStrategy::Pipelined,
            chunk_bytes: Some(4 << 20),
        };
        assert_eq!(
            row_name(&spec),
            "pipelined 4 MiB chunks from pageable memory"
        );
    }

    #[test]
    fn references_summarise_their_copies() {
        let mut times = vec![4.0, 2.0, 3.0];
        let r = link_reference(3000, &mut times);
        assert_eq!(r.time_us.mean, 3.0);
        assert_eq!(r.time_us.min, Some(2.0));
        assert_eq!(r.gbps, 1.0);
    }
}
