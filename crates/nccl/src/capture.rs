//! Capturing collectives into CUDA graphs, one per stream, recorded on streams of the crate's own and keeping every buffer they use borrowed for as long as the graphs exist.

use crate::error::Error;
use crate::launch::{launch_calls, Calls};
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstream, CUstreamCaptureMode};
use cudarc::driver::{CudaGraph, CudaStream, DriverError};
use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

thread_local! {
    /// While [`capture`] records on this thread: each caller's stream and
    /// the capture's own stream that records the work meant for it.
    static RECORDING: RefCell<Vec<(CUstream, CUstream)>> = const { RefCell::new(Vec::new()) };
}

/// The stream recording the work meant for `stream`, while [`capture`]
/// records on this thread.
pub(crate) fn recording_stream(stream: CUstream) -> Option<CUstream> {
    RECORDING.with(|recording| {
        recording
            .borrow()
            .iter()
            .find(|(user, _)| *user == stream)
            .map(|&(_, own)| own)
    })
}

/// A CUDA driver error as this crate's, naming the call.
fn cuda(call: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| Error::Cuda {
        call,
        message: e.to_string(),
    }
}

/// What [`capture`]'s recording closure gets: launches whose calls go into
/// the graphs instead of running. It stays on the capturing thread.
pub struct Capture<'env> {
    _env: PhantomData<&'env mut &'env ()>,
    _not_send: PhantomData<*const ()>,
}

impl<'env> Capture<'env> {
    /// [`crate::launch`], recorded into the graphs. The regions given live
    /// for `'env`, as long as the graphs may.
    pub fn launch<T>(
        &mut self,
        issue: impl for<'c> FnOnce(&'c mut Calls<'env>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        launch_calls(crate::launch::Mode::Capture, issue)
    }
}

/// One instantiated graph per captured stream. It borrows the buffers its
/// calls use for `'env`, so none can be freed while it exists; dropping it
/// waits for its launches. A communicator cannot be destroyed while a graph
/// holding its calls exists (NCCL waits for the graph to go), so let the
/// graphs go first.
pub struct Graphs<'env> {
    /// Per captured stream: the caller's stream, the capture's own stream
    /// (where the graph runs), the graph.
    graphs: Vec<(Arc<CudaStream>, Arc<CudaStream>, CudaGraph)>,
    _buffers: PhantomData<&'env ()>,
}

impl Graphs<'_> {
    /// Uploads every graph to its GPU, so that the first launch is not
    /// slower. The upload runs on the graph's own stream; the stream it was
    /// captured for then waits for it, so waiting for that stream (before
    /// starting a clock, say) waits for the upload too.
    pub fn upload(&self) -> Result<(), Error> {
        for (user, own, graph) in &self.graphs {
            graph.upload().map_err(cuda("cuGraphUpload"))?;
            user.join(own).map_err(cuda("cuStreamWaitEvent"))?;
        }
        Ok(())
    }

    /// Lets the graphs go without waiting for their launches, for when a
    /// launch has hung: abort the communicators next (which ends NCCL's
    /// kernels), then free the buffers. Every launch already made the
    /// stream it was captured for wait for it, so work later queued on
    /// those streams, frees included, still runs after it; the graphs and
    /// their streams themselves are never destroyed (they may still be
    /// running), a small leak on a path that ends the run.
    pub fn abandon(mut self) {
        for (user, own, _) in &self.graphs {
            // Again, in case a launch failed before its own join: ordering
            // is what makes letting go safe. Without it, wait after all.
            if user.join(own).is_err() {
                if let Err(err) = own.synchronize() {
                    eprintln!("warning: waiting for CUDA graph launches: {err}");
                }
            }
        }
        std::mem::forget(std::mem::take(&mut self.graphs));
    }

    /// Launches every graph `times` times in a row, after the work already
    /// on the stream it was captured for, which then waits for them.
    pub fn launch(&self, times: u32) -> Result<(), Error> {
        let join = cuda("cuStreamWaitEvent");
        for (user, own, _) in &self.graphs {
            own.join(user).map_err(&join)?;
        }
        for _ in 0..times {
            for (_, _, graph) in &self.graphs {
                graph.launch().map_err(cuda("cuGraphLaunch"))?;
            }
        }
        for (user, own, _) in &self.graphs {
            user.join(own).map_err(&join)?;
        }
        Ok(())
    }
}

impl Drop for Graphs<'_> {
    fn drop(&mut self) {
        for (_, own, _) in &self.graphs {
            if let Err(err) = own.synchronize() {
                eprintln!("warning: waiting for CUDA graph launches: {err}");
            }
        }
    }
}

/// Ends every capture still under way and forgets the recording streams,
/// also when the recording closure panics.
struct Recording {
    own: Vec<Arc<CudaStream>>,
}

impl Recording {
    /// Ends each capture; the graphs, or the first error.
    fn finish(mut self) -> Result<Vec<CudaGraph>, Error> {
        RECORDING.with(|recording| recording.borrow_mut().clear());
        let mut graphs = Vec::with_capacity(self.own.len());
        let mut result = Ok(());
        for stream in std::mem::take(&mut self.own) {
            match stream.end_capture(CUgraphInstantiate_flags(0)) {
                Ok(Some(graph)) => graphs.push(graph),
                Ok(None) => {
                    result = result.and(Err(Error::Cuda {
                        call: "cuStreamEndCapture",
                        message: "the capture recorded no graph".to_string(),
                    }))
                }
                Err(e) => result = result.and(Err(cuda("cuStreamEndCapture")(e))),
            }
        }
        result.map(|()| graphs)
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        RECORDING.with(|recording| recording.borrow_mut().clear());
        for stream in &self.own {
            // Discarded: only `finish` hands graphs out.
            let _ = stream.end_capture(CUgraphInstantiate_flags(0));
        }
    }
}

/// Records what `record` launches for `streams` into one CUDA graph per
/// stream, instantiated but not run. The work is recorded on a stream of
/// this crate's for each (thread-local capture), so nothing else can end
/// the capture and keep a graph that outlives the buffers. Refused while
/// this thread records another capture or has an NCCL group open.
pub fn capture<'env>(
    streams: &[&Arc<CudaStream>],
    record: impl for<'c> FnOnce(&'c mut Capture<'env>) -> Result<(), Error>,
) -> Result<Graphs<'env>, Error> {
    crate::group::refuse_inside_group("nccl::capture")?;
    if RECORDING.with(|recording| !recording.borrow().is_empty()) {
        return Err(Error::Usage {
            call: "nccl::capture",
            problem: "this thread is already capturing; captures do not nest".to_string(),
        });
    }
    let own = streams
        .iter()
        .map(|stream| stream.context().new_stream())
        .collect::<Result<Vec<_>, _>>()
        .map_err(cuda("cuStreamCreate"))?;
    let mut recording = Recording {
        own: Vec::with_capacity(own.len()),
    };
    for stream in &own {
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(cuda("cuStreamBeginCapture"))?;
        recording.own.push(Arc::clone(stream));
    }
    RECORDING.with(|map| {
        *map.borrow_mut() = streams
            .iter()
            .zip(&own)
            .map(|(user, own)| (user.cu_stream(), own.cu_stream()))
            .collect();
    });
    let recorded = record(&mut Capture {
        _env: PhantomData,
        _not_send: PhantomData,
    });
    let graphs = recording.finish();
    recorded?;
    let graphs = graphs?;
    Ok(Graphs {
        graphs: streams
            .iter()
            .zip(own)
            .zip(graphs)
            .map(|((user, own), graph)| (Arc::clone(user), own, graph))
            .collect(),
        _buffers: PhantomData,
    })
}
