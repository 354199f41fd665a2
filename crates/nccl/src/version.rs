//! NCCL's version number, decoded from the integer `ncclGetVersion` returns.

use std::fmt;

/// An NCCL version such as 2.32.3; ordered, so `v >= Version::new(2, 18, 0)` works.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    pub const fn new(major: u32, minor: u32, patch: u32) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// Decodes `NCCL_VERSION_CODE`: `X*10000 + Y*100 + Z` since 2.9, and
    /// `X*1000 + Y*100 + Z` up to 2.8 (whose codes are all below 10000).
    /// A negative code, which NCCL never returns, reads as 0.0.0.
    pub fn from_code(code: i32) -> Version {
        let code = u32::try_from(code).unwrap_or(0);
        let major_unit = if code >= 10_000 { 10_000 } else { 1_000 };
        Version {
            major: code / major_unit,
            minor: code % major_unit / 100,
            patch: code % 100,
        }
    }
}

impl Version {
    /// The `NCCL_VERSION_CODE` of this version: `X*10000 + Y*100 + Z`
    /// since 2.9, `X*1000 + Y*100 + Z` before ([`Version::from_code`]'s
    /// inverse).
    pub const fn code(self) -> u32 {
        let major_unit = if self.major > 2 || (self.major == 2 && self.minor >= 9) {
            10_000
        } else {
            1_000
        };
        self.major * major_unit + self.minor * 100 + self.patch
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_style_codes() {
        assert_eq!(Version::from_code(23203), Version::new(2, 32, 3));
        assert_eq!(Version::from_code(21801), Version::new(2, 18, 1));
        assert_eq!(Version::from_code(20906), Version::new(2, 9, 6));
        assert_eq!(Version::from_code(22703).to_string(), "2.27.3");
    }

    #[test]
    fn old_style_codes() {
        assert_eq!(Version::from_code(2804), Version::new(2, 8, 4));
        assert_eq!(Version::from_code(2408), Version::new(2, 4, 8));
        assert_eq!(Version::from_code(2804).to_string(), "2.8.4");
    }

    #[test]
    fn the_header_code_decodes_to_the_header_numbers() {
        let code = i32::try_from(nccl_sys::NCCL_VERSION_CODE).unwrap();
        let expected = Version::new(
            nccl_sys::NCCL_MAJOR,
            nccl_sys::NCCL_MINOR,
            nccl_sys::NCCL_PATCH,
        );
        assert_eq!(Version::from_code(code), expected);
    }

    #[test]
    fn codes_round_trip() {
        for code in [23203, 21801, 20906, 2804, 2408] {
            assert_eq!(Version::from_code(code).code(), code as u32);
        }
    }

    #[test]
    fn ordering_and_nonsense() {
        assert!(Version::from_code(21801) >= Version::new(2, 18, 0));
        assert!(Version::from_code(2804) < Version::new(2, 9, 0));
        assert_eq!(Version::from_code(-1), Version::new(0, 0, 0));
    }
}
