//! The bytes every delivery carries, and their check: a pseudo-random
//! pattern with no zero byte, so that a GPU buffer cleared to zeros before
//! a checked delivery shows every byte that did not arrive. Any byte of the
//! pattern is computed from its offset alone, so a buffer can be filled and
//! checked piece by piece.

/// The pattern's 8 bytes at word `word` (offsets `8 × word ..`), with
/// zeros replaced: SplitMix64 of the word number.
fn word_bytes(word: u64) -> [u8; 8] {
    let mut z = word.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    z.to_le_bytes().map(|b| if b == 0 { 0xa5 } else { b })
}

/// The pattern's byte at `offset`.
pub fn byte_at(offset: u64) -> u8 {
    word_bytes(offset / 8)[(offset % 8) as usize]
}

/// Fills `buffer` with the pattern's bytes from `offset` on.
pub fn fill(buffer: &mut [u8], offset: u64) {
    for_each_expected(buffer.len(), offset, |i, expected| buffer[i] = expected);
}

/// How many bytes of `buffer` differ from the pattern's bytes from
/// `offset` on. Whole words are compared at once (a GiB per GPU is read
/// back per checked delivery), bytes only where a word differs.
pub fn count_wrong(buffer: &[u8], offset: u64) -> u64 {
    // Up to the first word boundary, byte by byte.
    let head = ((8 - offset % 8) % 8).min(buffer.len() as u64) as usize;
    let mut wrong = 0;
    for_each_expected(head, offset, |i, expected| {
        wrong += u64::from(buffer[i] != expected);
    });
    let words = buffer[head..].chunks_exact(8);
    let tail = words.remainder();
    let first_word = (offset + head as u64) / 8;
    for (w, actual) in words.enumerate() {
        let expected = word_bytes(first_word + w as u64);
        if actual != expected {
            wrong += actual.iter().zip(&expected).filter(|(a, e)| a != e).count() as u64;
        }
    }
    let tail_at = buffer.len() - tail.len();
    for_each_expected(tail.len(), offset + tail_at as u64, |i, expected| {
        wrong += u64::from(tail[i] != expected);
    });
    wrong
}

/// Calls `visit(i, pattern byte at offset + i)` for i in 0..len, one word
/// computed per 8 bytes.
fn for_each_expected(len: usize, offset: u64, mut visit: impl FnMut(usize, u8)) {
    let mut i = 0;
    while i < len {
        let at = offset + i as u64;
        let word = word_bytes(at / 8);
        let first = (at % 8) as usize;
        let take = (8 - first).min(len - i);
        for (k, &expected) in word[first..first + take].iter().enumerate() {
            visit(i + k, expected);
        }
        i += take;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_byte_is_zero_and_the_pattern_varies() {
        let mut buffer = vec![0u8; 1 << 16];
        fill(&mut buffer, 0);
        assert!(buffer.iter().all(|&b| b != 0));
        let distinct: std::collections::BTreeSet<u8> = buffer.iter().copied().collect();
        assert_eq!(distinct.len(), 255, "every non-zero byte value occurs");
        assert_ne!(buffer[..8], buffer[8..16]);
    }

    #[test]
    fn pieces_at_any_offset_agree_with_the_whole() {
        let mut whole = vec![0u8; 1000];
        fill(&mut whole, 0);
        for (start, len) in [(0, 1), (3, 5), (7, 9), (8, 8), (13, 987), (999, 1)] {
            let mut piece = vec![0u8; len];
            fill(&mut piece, start as u64);
            assert_eq!(piece, whole[start..start + len], "{start}+{len}");
            assert_eq!(count_wrong(&whole[start..start + len], start as u64), 0);
            assert_eq!(piece[0], byte_at(start as u64));
        }
    }

    /// The word-at-a-time check agrees with a byte-by-byte one at every
    /// alignment and length.
    #[test]
    fn the_fast_check_counts_as_the_plain_one() {
        let mut whole = vec![0u8; 200];
        fill(&mut whole, 0);
        for (i, b) in whole.iter_mut().enumerate() {
            if i % 7 == 3 {
                *b ^= 0x10;
            }
        }
        for start in 0..17 {
            for len in [0, 1, 5, 8, 9, 16, 23, 64, 183 - start] {
                let piece = &whole[start..start + len];
                let plain = (0..len)
                    .filter(|&i| piece[i] != byte_at((start + i) as u64))
                    .count() as u64;
                assert_eq!(count_wrong(piece, start as u64), plain, "{start}+{len}");
            }
        }
    }

    #[test]
    fn planted_errors_are_all_found() {
        let mut buffer = vec![0u8; 4099];
        fill(&mut buffer, 40);
        assert_eq!(count_wrong(&buffer, 40), 0);
        // A flipped bit, a byte that never arrived (still zero), the last byte.
        buffer[0] ^= 1;
        buffer[2048] = 0;
        buffer[4098] = buffer[4098].wrapping_add(1);
        assert_eq!(count_wrong(&buffer, 40), 3);
        // Right bytes at the wrong place: the same data shifted by one.
        let mut shifted = vec![0u8; 64];
        fill(&mut shifted, 41);
        assert!(count_wrong(&shifted, 40) > 50);
        // A cleared buffer is wrong everywhere.
        assert_eq!(count_wrong(&[0u8; 100], 7), 100);
    }
}
