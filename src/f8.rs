//! The 8-bit floats NCCL moves (`f8e4m3`, `f8e5m2`) as host values: their
//! bits, and conversions to and from f64 (round to nearest, ties to even,
//! saturating at the largest finite value), so the check can fill inputs
//! and compute what a collective must return.

/// An 8-bit float with `E` exponent and `M` mantissa bits, as its bits.
macro_rules! eight_bit_float {
    ($name:ident, $exponent_bits:expr, $mantissa_bits:expr, $largest:expr, $doc:literal) => {
        #[doc = $doc]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
        #[repr(transparent)]
        pub struct $name(pub u8);

        impl $name {
            const FORMAT: Format = Format {
                exponent_bits: $exponent_bits,
                mantissa_bits: $mantissa_bits,
                largest_bits: $largest,
            };

            pub fn to_f64(self) -> f64 {
                Self::FORMAT.decode(self.0)
            }

            pub fn from_f64(value: f64) -> Self {
                $name(Self::FORMAT.encode(value))
            }

            pub fn to_bits(self) -> u8 {
                self.0
            }
        }
    };
}

eight_bit_float!(
    F8E4M3,
    4,
    3,
    0x7e,
    "OCP FP8 E4M3 (NCCL's ncclFloat8e4m3): bias 7, no infinities, largest 448."
);
eight_bit_float!(
    F8E5M2,
    5,
    2,
    0x7b,
    "OCP FP8 E5M2 (NCCL's ncclFloat8e5m2): bias 15, IEEE-like, largest 57344."
);

/// The layout of one 8-bit format.
struct Format {
    exponent_bits: u32,
    mantissa_bits: u32,
    /// The bits of the largest finite value.
    largest_bits: u8,
}

impl Format {
    fn bias(&self) -> i32 {
        (1 << (self.exponent_bits - 1)) - 1
    }

    fn decode(&self, bits: u8) -> f64 {
        let sign = if bits & 0x80 != 0 { -1.0 } else { 1.0 };
        let magnitude = bits & 0x7f;
        if magnitude > self.largest_bits {
            // E4M3's one NaN; E5M2's infinities and NaNs (never made by the check).
            return f64::NAN;
        }
        let exponent = i32::from(magnitude >> self.mantissa_bits);
        let mantissa = f64::from(magnitude & ((1 << self.mantissa_bits) - 1));
        let scale = f64::from(1u32 << self.mantissa_bits);
        let value = if exponent == 0 {
            mantissa / scale * 2f64.powi(1 - self.bias())
        } else {
            (1.0 + mantissa / scale) * 2f64.powi(exponent - self.bias())
        };
        sign * value
    }

    fn encode(&self, value: f64) -> u8 {
        let sign = if value.is_sign_negative() { 0x80 } else { 0 };
        let magnitude = value.abs();
        if value.is_nan() {
            return 0x7f;
        }
        if magnitude >= self.decode(self.largest_bits) {
            return sign | self.largest_bits;
        }
        // The step between neighbours at this magnitude, then the nearest
        // multiple of it (ties to even), re-encoded.
        let smallest_exponent = 1 - self.bias();
        let exponent = if magnitude > 0.0 {
            (magnitude.log2().floor() as i32).max(smallest_exponent)
        } else {
            smallest_exponent
        };
        let step = 2f64.powi(exponent - self.mantissa_bits as i32);
        let rounded = (magnitude / step).round_ties_even() * step;
        // Search the finite encodings for it: 127 at most, exact.
        (0..=self.largest_bits)
            .find(|&bits| self.decode(bits) == rounded)
            .map_or(sign | self.largest_bits, |bits| sign | bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_encode_and_decode() {
        assert_eq!(F8E4M3::from_f64(1.0).to_bits(), 0x38);
        assert_eq!(F8E4M3::from_f64(448.0).to_bits(), 0x7e);
        assert_eq!(F8E4M3::from_f64(1e6).to_bits(), 0x7e, "saturates");
        assert_eq!(F8E4M3(0x01).to_f64(), 2f64.powi(-9));
        assert!(F8E4M3(0x7f).to_f64().is_nan());
        assert_eq!(F8E5M2::from_f64(1.0).to_bits(), 0x3c);
        assert_eq!(F8E5M2::from_f64(57344.0).to_bits(), 0x7b);
        assert_eq!(F8E5M2::from_f64(-2.0).to_bits(), 0xc0);
        assert_eq!(F8E5M2(0x01).to_f64(), 2f64.powi(-16));
    }

    #[test]
    fn every_finite_value_round_trips_and_ties_go_to_even() {
        for bits in 0..=0xffu8 {
            let e4 = F8E4M3(bits);
            if e4.to_f64().is_finite() && (bits & 0x7f) != 0 {
                assert_eq!(F8E4M3::from_f64(e4.to_f64()), e4, "{bits:#x}");
            }
            let e5 = F8E5M2(bits);
            if e5.to_f64().is_finite() && (bits & 0x7f) != 0 {
                assert_eq!(F8E5M2::from_f64(e5.to_f64()), e5, "{bits:#x}");
            }
        }
        // 17 lies halfway between 16 and 18 in E4M3: the even mantissa (16).
        assert_eq!(F8E4M3::from_f64(17.0).to_f64(), 16.0);
        assert_eq!(F8E4M3::from_f64(19.0).to_f64(), 20.0);
        // Small integers are exact.
        for n in 0..=16 {
            assert_eq!(F8E4M3::from_f64(f64::from(n)).to_f64(), f64::from(n));
        }
        for n in 0..=8 {
            assert_eq!(F8E5M2::from_f64(f64::from(n)).to_f64(), f64::from(n));
        }
    }
}
