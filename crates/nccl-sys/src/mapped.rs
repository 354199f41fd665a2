//! Which file a loaded library came from, read from the process's memory map.
use std::path::{Path, PathBuf};

/// The file of the first mapping in `maps` (the text of `/proc/self/maps`)
/// whose file name starts with `prefix`.
pub fn file_in_maps(maps: &str, prefix: &str) -> Option<PathBuf> {
    maps.lines()
        // The path is the rest of the line from its first '/'; anonymous
        // mappings ([heap], [stack]) have none.
        .filter_map(|line| line.find('/').map(|i| line[i..].trim_end()))
        .map(Path::new)
        .find(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_library_among_mappings() {
        let maps = "\
55d0c0a00000-55d0c0a2c000 r--p 00000000 08:01 1311 /usr/bin/collbench
7f1c2a000000-7f1c2a021000 rw-p 00000000 00:00 0 
7f1c2b000000-7f1c2b400000 r--p 00000000 08:01 2211 /opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
7f1c2c000000-7f1c2c100000 r--p 00000000 08:01 2212 /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd1a000000-7ffd1a021000 rw-p 00000000 00:00 0                          [stack]
";
        assert_eq!(
            file_in_maps(maps, "libnccl"),
            Some(PathBuf::from(
                "/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"
            ))
        );
        assert_eq!(file_in_maps(maps, "libcudart"), None);
        assert_eq!(file_in_maps("", "libnccl"), None);
    }
}
