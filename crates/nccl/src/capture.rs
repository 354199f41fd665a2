//! Capturing collectives into CUDA graphs, one per stream, that keep every buffer they use borrowed for as long as the graphs exist.

use crate::error::Error;
use crate::launch::{launch_calls, Calls};
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstream, CUstreamCaptureMode};
use cudarc::driver::{CudaGraph, CudaStream, DriverError};
use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

thread_local! {
    /// The streams [`capture`] is recording on this thread (thread-local
    /// capture mode: only this thread's calls join them).
    static RECORDING: RefCell<Vec<CUstream>> = const { RefCell::new(Vec::new()) };
}

/// Whether [`capture`] is recording `stream` on this thread.
pub(crate) fn records(stream: CUstream) -> bool {
    RECORDING.with(|recording| recording.borrow().contains(&stream))
}

/// A CUDA driver error as this crate's, naming the call.
fn cuda(call: &'static str) -> impl Fn(DriverError) -> Error {
    move |e| Error::Cuda {
        call,
        message: e.to_string(),
    }
}

/// What [`capture`]'s recording closure gets: launches whose calls go into
/// the graphs instead of running.
pub struct Capture<'env> {
    _env: PhantomData<&'env mut &'env ()>,
}

impl<'env> Capture<'env> {
    /// [`crate::launch`], recorded into the graphs. The regions given live
    /// for `'env`, as long as the graphs may.
    pub fn launch<T>(
        &mut self,
        issue: impl for<'c> FnOnce(&'c mut Calls<'env>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        launch_calls(true, issue)
    }
}

/// One instantiated graph per captured stream. It borrows the buffers its
/// calls use for `'env`, so none can be freed while it could still be
/// launched.
pub struct Graphs<'env> {
    graphs: Vec<CudaGraph>,
    _buffers: PhantomData<&'env ()>,
}

impl Graphs<'_> {
    /// Uploads every graph to its GPU, so that the first launch is not slower.
    pub fn upload(&self) -> Result<(), Error> {
        self.graphs
            .iter()
            .try_for_each(|graph| graph.upload().map_err(cuda("cuGraphUpload")))
    }

    /// Launches every graph once, each on the stream it was captured from.
    pub fn launch(&self) -> Result<(), Error> {
        self.graphs
            .iter()
            .try_for_each(|graph| graph.launch().map_err(cuda("cuGraphLaunch")))
    }
}

/// Records what `record` launches on `streams` into one CUDA graph per
/// stream (thread-local capture), instantiated but not run. Every capture
/// is ended, even when `record` fails. Refused while this thread records
/// another capture or has an NCCL group open.
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
    let mut begun = Vec::with_capacity(streams.len());
    let mut result = Ok(());
    for stream in streams {
        match stream.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) {
            Ok(()) => begun.push(*stream),
            Err(e) => {
                result = Err(cuda("cuStreamBeginCapture")(e));
                break;
            }
        }
    }
    if result.is_ok() {
        RECORDING.with(|recording| {
            *recording.borrow_mut() = begun.iter().map(|s| s.cu_stream()).collect();
        });
        result = record(&mut Capture { _env: PhantomData });
        RECORDING.with(|recording| recording.borrow_mut().clear());
    }
    let mut graphs = Vec::with_capacity(begun.len());
    for stream in begun {
        let ended = stream
            .end_capture(CUgraphInstantiate_flags(0))
            .map_err(cuda("cuStreamEndCapture"));
        match ended {
            Ok(Some(graph)) => graphs.push(graph),
            Ok(None) => {
                result = result.and(Err(Error::Cuda {
                    call: "cuStreamEndCapture",
                    message: "the capture recorded no graph".to_string(),
                }))
            }
            Err(e) => result = result.and(Err(e)),
        }
    }
    result?;
    Ok(Graphs {
        graphs,
        _buffers: PhantomData,
    })
}
