//! A checked stretch of device memory the collectives may use: where it starts, how many bytes follow, and the one stream that orders every use of it.

use crate::error::Error;
use cudarc::driver::sys::{CUdeviceptr, CUstream};
use cudarc::driver::{CudaSlice, CudaStream};

/// Bytes `[start, start + len)` of a live device allocation, borrowed from
/// it for `'a`, used only on the allocation's own stream.
///
/// Regions come from [`crate::Memory::region`] or [`Region::of_cuda`], so
/// their bounds are the allocation's; [`Region::skip`] only shrinks them.
/// Every call checks that a region holds what NCCL will touch, so a wrong
/// count is an error, never a write past the end. The borrow keeps the
/// allocation alive while a region exists; [`crate::launch`] and
/// [`crate::capture`] extend it to everything NCCL may still do with it.
#[derive(Clone, Copy, Debug)]
pub struct Region<'a> {
    start: CUdeviceptr,
    len: usize,
    stream: &'a CudaStream,
}

impl<'a> Region<'a> {
    /// The whole of a cudarc buffer. Its context must have cudarc's event
    /// tracking off (`disable_event_tracking`): the collectives order their
    /// work by the buffer's stream alone and record no cudarc events, so a
    /// tracked buffer's other streams would not wait for them.
    pub fn of_cuda(slice: &'a CudaSlice<u8>) -> Result<Region<'a>, Error> {
        if slice.context().is_managing_stream_synchronization() {
            return Err(Error::Usage {
                call: "Region::of_cuda",
                problem: "the buffer's context tracks events; NCCL work is ordered by the \
                          buffer's stream only, so open the context with event tracking off"
                    .to_string(),
            });
        }
        let stream = slice.stream();
        // The guard would record a read event, which an untracked context
        // never does: dropping it at once changes nothing.
        let (start, _no_event) = cudarc::driver::DevicePtr::device_ptr(slice, stream);
        Ok(Region {
            start,
            len: slice.len(),
            stream,
        })
    }

    /// A region of a live allocation that `'a` borrows; only the crate
    /// builds one, from an allocation it knows the size of.
    pub(crate) fn new(start: CUdeviceptr, len: usize, stream: &'a CudaStream) -> Region<'a> {
        Region { start, len, stream }
    }

    /// The same region without its first `bytes`; an error past its end.
    pub fn skip(self, bytes: usize) -> Result<Region<'a>, Error> {
        if bytes > self.len {
            return Err(Error::Argument {
                call: "Region::skip",
                what: "offset",
                value: bytes,
                expected: format!("at most the region's {} bytes", self.len),
            });
        }
        Ok(Region {
            start: self.start + bytes as CUdeviceptr,
            len: self.len - bytes,
            stream: self.stream,
        })
    }

    /// Bytes from the start to the end of the allocation.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no byte is left.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The stream every use of the region is ordered on.
    pub fn stream(&self) -> &'a CudaStream {
        self.stream
    }

    pub(crate) fn cu_stream(&self) -> CUstream {
        self.stream.cu_stream()
    }

    /// This region's start, once it is known to hold `needed` bytes for
    /// `call`'s `role` (the send or receive buffer).
    pub(crate) fn holding(
        &self,
        call: &'static str,
        role: &'static str,
        needed: Option<usize>,
    ) -> Result<CUdeviceptr, Error> {
        match needed {
            Some(needed) if needed <= self.len => Ok(self.start),
            _ => Err(Error::Argument {
                call,
                what: role,
                value: self.len,
                expected: match needed {
                    Some(needed) => format!("at least the {needed} bytes the call uses"),
                    None => "a byte count that fits in memory".to_string(),
                },
            }),
        }
    }
}
