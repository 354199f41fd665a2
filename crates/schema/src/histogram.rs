//! Distributions of iteration times in constant memory: HdrHistograms of
//! integer nanoseconds, their report encoding, merging and percentiles.
//!
//! Encoding in the report: standard base64 (padded) of HdrHistogram's V2
//! format, uncompressed (cookie `0x1c849313`), values in nanoseconds, three
//! significant digits: any percentile read back is within 0.1 % of the
//! recorded value it stands for. Every HdrHistogram implementation (Java,
//! C, Python `hdrh`, Rust) can decode it.
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;

/// Significant decimal digits kept: 3 bounds the relative error by 2^-10,
/// under 0.1 %.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Bytes of the V2 header before the counts: cookie, payload length,
/// normalizing offset, significant digits, lowest and highest trackable
/// values, conversion ratio.
const V2_HEADER_BYTES: usize = 40;

/// The most values one histogram (or a merge of several) may count: 2^53,
/// so counts and ranks stay exact in the f64 arithmetic of percentiles. At
/// one iteration a nanosecond that is over 100 days of a single size.
pub const MAX_COUNT: u64 = 1 << 53;

/// A histogram of iteration times, recorded in µs and stored in ns.
#[derive(Debug, Clone)]
pub struct Distribution(Histogram<u64>);

/// A serialized histogram that could not be read back.
#[derive(Debug, thiserror::Error)]
#[error("not a histogram (base64 of HdrHistogram V2): {0}")]
pub struct DecodeError(String);

impl Default for Distribution {
    fn default() -> Self {
        Self::new()
    }
}

impl Distribution {
    /// An empty histogram that grows to whatever value is recorded.
    pub fn new() -> Distribution {
        Distribution(
            Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits are within 0..=5"),
        )
    }

    /// The histogram of `samples_us`.
    pub fn from_us(samples_us: &[f64]) -> Distribution {
        let mut distribution = Distribution::new();
        for &us in samples_us {
            distribution.record_us(us);
        }
        distribution
    }

    /// Records one time in µs, rounded to the nanosecond. A negative or NaN
    /// time (which no clock gives) counts as 0; one over a century saturates.
    pub fn record_us(&mut self, us: f64) {
        let ns = (us * 1e3).round();
        let ns = if ns.is_nan() || ns < 0.0 {
            0
        } else {
            ns.min(3.2e18) as u64
        };
        self.0
            .record(ns)
            .expect("an auto-resizing histogram takes any u64 below 2^62");
    }

    /// Adds every value of `other` to this one; refused (and nothing added)
    /// when the two together would count more than [`MAX_COUNT`] values.
    pub fn merge(&mut self, other: &Distribution) -> Result<(), DecodeError> {
        let total = self.count().checked_add(other.count());
        if total.is_none_or(|t| t > MAX_COUNT) {
            return Err(DecodeError(format!(
                "merged, {} and {} values count past {MAX_COUNT} (2^53)",
                self.count(),
                other.count()
            )));
        }
        self.0
            .add(&other.0)
            .expect("an auto-resizing histogram takes any other's values");
        Ok(())
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// The value at percentile `p` (0–100) in µs: the smallest recorded value
    /// with at least `p` % of the values at or below it, as the report's
    /// nearest-rank percentiles, within 0.05 % (the middle of its bucket).
    /// 0 when empty.
    pub fn percentile_us(&self, p: f64) -> f64 {
        self.us(self.0.value_at_percentile(p))
    }

    /// Smallest and largest recorded values in µs (within 0.05 %).
    pub fn min_us(&self) -> f64 {
        self.us(self.0.min())
    }
    pub fn max_us(&self) -> f64 {
        self.us(self.0.max())
    }

    /// A recorded value's bucket, read as its middle, in µs.
    fn us(&self, ns: u64) -> f64 {
        self.0.median_equivalent(ns) as f64 / 1e3
    }

    /// Mean of the recorded values in µs (each value taken at its bucket's
    /// midpoint, so within 0.1 %).
    pub fn mean_us(&self) -> f64 {
        self.0.mean() / 1e3
    }

    /// The V2 encoding's bytes, appended to `out`.
    pub fn write_v2(&self, out: &mut Vec<u8>) {
        V2Serializer::new()
            .serialize(&self.0, out)
            .expect("writing to a Vec cannot fail and a u64 histogram fits V2");
    }

    /// Reads the V2 encoding (as [`Distribution::write_v2`] writes it)
    /// within the bytes given: a header that claims more payload than
    /// follows it, more significant digits than collbench writes, counts
    /// past [`MAX_COUNT`] is refused before (or instead
    /// of) allocating what it claims. (A time of 0 ns is read: the analysis
    /// refuses it, with the file and the row.)
    pub fn read_v2(bytes: &[u8]) -> Result<Distribution, DecodeError> {
        check_v2_header(bytes)?;
        let mut reader = bytes;
        let histogram: Histogram<u64> = Deserializer::new()
            .deserialize(&mut reader)
            .map_err(|e| DecodeError(format!("{e:?}")))?;
        if !reader.is_empty() {
            return Err(DecodeError(format!(
                "{} bytes after the histogram",
                reader.len()
            )));
        }
        let mut total: u64 = 0;
        for value in histogram.iter_recorded() {
            total = total
                .checked_add(value.count_at_value())
                .filter(|t| *t <= MAX_COUNT)
                .ok_or_else(|| {
                    DecodeError(format!("its counts sum past {MAX_COUNT} (2^53) values"))
                })?;
        }
        let mut histogram = histogram;
        histogram.auto(true);
        Ok(Distribution(histogram))
    }

    /// The report's form: base64 of the V2 encoding.
    pub fn encode(&self) -> String {
        let mut bytes = Vec::new();
        self.write_v2(&mut bytes);
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads the report's form.
    pub fn decode(text: &str) -> Result<Distribution, DecodeError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text.trim())
            .map_err(|e| DecodeError(e.to_string()))?;
        Distribution::read_v2(&bytes)
    }
}

/// Checks what the V2 header claims against the bytes that hold it.
fn check_v2_header(bytes: &[u8]) -> Result<(), DecodeError> {
    let Some(header) = bytes.get(..V2_HEADER_BYTES) else {
        return Err(DecodeError(format!(
            "{} bytes, shorter than the {V2_HEADER_BYTES}-byte V2 header",
            bytes.len()
        )));
    };
    let word = |at: usize| {
        u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let payload = word(4) as usize;
    let follows = bytes.len() - V2_HEADER_BYTES;
    if payload > follows {
        return Err(DecodeError(format!(
            "its header claims a {payload}-byte payload but {follows} bytes follow it"
        )));
    }
    let digits = word(12);
    if digits > u32::from(SIGNIFICANT_DIGITS) {
        return Err(DecodeError(format!(
            "{digits} significant digits (collbench writes {SIGNIFICANT_DIGITS})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Summary;

    #[test]
    fn percentiles_stay_within_a_thousandth_of_the_exact_ones() {
        // A skewed distribution over four decades: 2 µs to 20 ms.
        let samples: Vec<f64> = (0..10_000)
            .map(|i| 2.0 * 10f64.powf(4.0 * (i as f64 / 10_000.0).powi(3)))
            .collect();
        let exact = Summary::from_samples(&samples).unwrap();
        let h = Distribution::from_us(&samples);
        assert_eq!(h.count(), 10_000);
        for (p, want) in [(50.0, exact.p50), (95.0, exact.p95), (99.0, exact.p99)] {
            let got = h.percentile_us(p);
            assert!(
                (got - want).abs() <= want * 1e-3,
                "p{p}: {got} against {want}"
            );
        }
        assert!((h.max_us() - exact.max).abs() <= exact.max * 1e-3);
        assert!((h.min_us() - exact.min).abs() <= exact.min * 1e-3);
        assert!((h.mean_us() - exact.mean).abs() <= exact.mean * 1e-3);
    }

    #[test]
    fn round_trips_through_the_report_encoding() {
        let h = Distribution::from_us(&[1.5, 2.25, 3.0, 1000.0, 0.001]);
        let text = h.encode();
        let back = Distribution::decode(&text).unwrap();
        assert_eq!(back.count(), 5);
        assert_eq!(back.percentile_us(100.0), h.percentile_us(100.0));
        assert!((back.percentile_us(50.0) - 2.25).abs() <= 2.25e-3);
        // The first four bytes are the V2 cookie.
        let raw = base64::engine::general_purpose::STANDARD
            .decode(&text)
            .unwrap();
        assert_eq!(&raw[..4], &[0x1c, 0x84, 0x93, 0x13]);
    }

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let a: Vec<f64> = (1..=500).map(f64::from).collect();
        let b: Vec<f64> = (1..=500).map(|i| f64::from(i) * 37.0).collect();
        let mut merged = Distribution::from_us(&a);
        merged.merge(&Distribution::from_us(&b)).unwrap();
        let all = Distribution::from_us(&[a, b].concat());
        assert_eq!(merged.count(), 1000);
        for p in [1.0, 50.0, 90.0, 99.9, 100.0] {
            assert_eq!(merged.percentile_us(p), all.percentile_us(p));
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for text in [
            "",
            "not base64!",
            "AAAA",
            "HISTFAAAACB4nJNpmSzMwMDAxAABzFCaEUzMmsgCk2ZmAgARiAHB",
        ] {
            assert!(Distribution::decode(text).is_err(), "{text:?}");
        }
        let mut bytes = Vec::new();
        Distribution::from_us(&[1.0]).write_v2(&mut bytes);
        bytes.truncate(bytes.len() - 1);
        assert!(Distribution::read_v2(&bytes).is_err());
        bytes.extend_from_slice(&[0, 0]);
        assert!(Distribution::read_v2(&bytes).is_err());
    }

    /// The V2 bytes of `values_ns` (each once) with `edit` applied.
    fn v2_with(values_ns: &[u64], edit: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
        let mut h = Histogram::<u64>::new(SIGNIFICANT_DIGITS).unwrap();
        for &v in values_ns {
            h.record(v).unwrap();
        }
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(&h, &mut bytes).unwrap();
        edit(&mut bytes);
        bytes
    }

    #[test]
    fn a_header_claiming_more_than_its_field_is_refused_without_allocating_it() {
        let claims_2gb = v2_with(&[1000], |b| {
            b[4..8].copy_from_slice(&0x7fff_ffffu32.to_be_bytes())
        });
        let err = Distribution::read_v2(&claims_2gb).unwrap_err().to_string();
        assert!(err.contains("claims a 2147483647-byte payload"), "{err}");
        let five_digits = v2_with(&[1000], |b| b[12..16].copy_from_slice(&5u32.to_be_bytes()));
        let err = Distribution::read_v2(&five_digits).unwrap_err().to_string();
        assert!(err.contains("5 significant digits"), "{err}");
        let err = Distribution::read_v2(&[0x1c, 0x84])
            .unwrap_err()
            .to_string();
        assert!(err.contains("shorter than the 40-byte"), "{err}");
    }

    #[test]
    fn counts_past_two_to_the_53_are_refused_on_reading_and_merging() {
        let mut h = Histogram::<u64>::new(SIGNIFICANT_DIGITS).unwrap();
        h.record_n(1000, 1 << 52).unwrap();
        h.record_n(2000, 1 << 52).unwrap();
        h.record_n(3000, 1).unwrap();
        let mut bytes = Vec::new();
        V2Serializer::new().serialize(&h, &mut bytes).unwrap();
        let err = Distribution::read_v2(&bytes).unwrap_err().to_string();
        assert!(err.contains("sum past"), "{err}");
        // Merging refuses what reading would.
        let mut big = Distribution::new();
        big.0.record_n(1000, MAX_COUNT).unwrap();
        let one = Distribution::from_us(&[1.0]);
        assert!(big.merge(&one).is_err());
        assert_eq!(big.count(), MAX_COUNT);
    }

    #[test]
    fn impossible_times_do_not_panic() {
        let h = Distribution::from_us(&[f64::NAN, -1.0, f64::INFINITY, 1e300]);
        assert_eq!(h.count(), 4);
        assert_eq!(h.min_us(), 0.0);
    }
}
