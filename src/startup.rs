//! What rank 0 says before a sweep starts (how many sizes, the memory each rank will hold, how a size with a unit spelled in bytes, 8GB or 8GiB, was read), and the flag value a memory refusal suggests.
use schema::units::{format_bytes, size_reading};
use schema::Backend;

use crate::plan::Resolved;

/// `note: -e/--max-bytes 8GB read as 8000000000 bytes (7.5 GiB): …`, for
/// a size written with a unit that spells its bytes (`8GB`, `8GiB`): a
/// bare `8G` is read as nccl-tests reads it, and the start-up line shows it.
pub fn reading(flag: &str, text: &str) -> Option<String> {
    let spelled = text.trim().to_ascii_lowercase();
    let unit_in_bytes = spelled.ends_with('b')
        && !spelled[..spelled.len() - 1].ends_with(|c: char| c.is_ascii_digit() || c == '.');
    if !unit_in_bytes {
        return None;
    }
    size_reading(text).map(|r| format!("note: {flag} {r}"))
}

/// One line before the run: the sizes measured, from which to which, and
/// the memory each rank holds for its send and receive buffers.
pub fn start_line(resolved: &Resolved, world_size: u32) -> String {
    let plan = &resolved.plan;
    let buffer = plan.max_buffer_count() * plan.dtype.size_bytes();
    let memory = match plan.backend {
        Backend::Nccl => "GPU memory per GPU",
        _ => "host memory",
    };
    let sizes: Vec<u64> = plan
        .cases
        .iter()
        .map(|c| c.chunking.map_or(c.bytes, |chunking| chunking.chunk_bytes))
        .collect();
    let what = match (plan.total_bytes.is_some(), sizes.len() == 1) {
        (true, true) => "chunk size",
        (true, false) => "chunk sizes",
        (false, true) => "size",
        (false, false) => "sizes",
    };
    let range = match (sizes.first(), sizes.last()) {
        (Some(first), Some(last)) if first != last => {
            format!(" from {} to {}", format_bytes(*first), format_bytes(*last))
        }
        (Some(only), _) => format!(" of {}", format_bytes(*only)),
        _ => String::new(),
    };
    let step = if plan.default_step && sizes.len() > 1 {
        " (1 MiB apart: without -f or -i the sweep adds 1 MiB a step; -f 2 doubles)"
    } else {
        ""
    };
    format!(
        "note: {} {what}{range}{step} on {world_size} rank{}; each rank holds {} of {memory} for its send and receive buffers (2 × {})",
        sizes.len(),
        if world_size == 1 { "" } else { "s" },
        format_bytes(2 * buffer),
        format_bytes(buffer),
    )
}

/// The largest power-of-two size a buffer may have within `bytes`, written
/// as a flag takes it (`8G`, `512M`, `64K`, `16`); `None` below one byte.
pub fn largest_fitting(bytes: u64) -> Option<String> {
    let power = bytes.checked_ilog2()?;
    let value = 1u64 << power;
    Some(match power {
        40.. => format!("{}T", value >> 40),
        30.. => format!("{}G", value >> 30),
        20.. => format!("{}M", value >> 20),
        10.. => format!("{}K", value >> 10),
        _ => value.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::tests::plan_of;

    #[test]
    fn a_sweep_without_f_says_its_sizes_and_memory_before_starting() {
        let resolved = plan_of("all-reduce --backend mpi -d f64 -b 1M -e 8G")
            .unwrap()
            .for_world(2)
            .unwrap();
        assert_eq!(
            start_line(&resolved, 2),
            "note: 8192 sizes from 1 MiB to 8 GiB (1 MiB apart: without -f or -i the sweep adds 1 MiB a step; -f 2 doubles) on 2 ranks; each rank holds 16 GiB of host memory for its send and receive buffers (2 × 8 GiB)"
        );
        let resolved = plan_of("all-gather --backend nccl -b 1M -e 8GB -f 2")
            .unwrap()
            .for_world(4)
            .unwrap();
        assert_eq!(
            start_line(&resolved, 4),
            "note: 13 sizes from 1 MiB to 4 GiB on 4 ranks; each rank holds 8 GiB of GPU memory per GPU for its send and receive buffers (2 × 4 GiB)"
        );
        assert_eq!(
            resolved.plan.size_readings,
            ["note: -e/--max-bytes 8GB read as 8000000000 bytes (7.5 GiB): GB is 10^9 bytes (GiB, or G alone, 2^30)"]
        );
        // A bare suffix is nccl-tests' binary one, said by the line itself.
        let plan = plan_of("all-reduce --backend mpi -b 8 -e 8G -f 2").unwrap();
        assert!(plan.size_readings.is_empty());
    }

    #[test]
    fn the_size_that_fits_is_a_power_of_two_written_as_a_flag_takes_it() {
        assert_eq!(largest_fitting(22 << 30).as_deref(), Some("16G"));
        assert_eq!(largest_fitting((1 << 20) + 5).as_deref(), Some("1M"));
        assert_eq!(largest_fitting(1000).as_deref(), Some("512"));
        assert_eq!(largest_fitting(0), None);
    }
}
