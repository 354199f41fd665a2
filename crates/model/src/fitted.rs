//! The piecewise α–β fit (crate `fit`) as a communication model: what the
//! `alpha-beta` model predicts everywhere and `interp` beyond the measured
//! sizes.
use crate::comm::CommModel;

impl CommModel for fit::PiecewiseFit {
    fn time_s(&self, bytes: u64) -> f64 {
        self.predict_us(bytes as f64) * 1e-6
    }

    fn describe(&self) -> Option<String> {
        let segments: Vec<String> = self
            .segments
            .iter()
            .map(|s| {
                format!(
                    "{}-{} B: alpha {:.2} us, {:.2} GB/s",
                    s.min_bytes, s.max_bytes, s.alpha_us, s.algbw_gbps
                )
            })
            .collect();
        Some(format!(
            "piecewise alpha-beta fit ({})",
            segments.join("; ")
        ))
    }
}

/// Fits all-reduce points `(bytes, time in µs)`, the segments chosen by
/// cross-validation, as a model answering in seconds.
pub(crate) fn fit_comm(points: &[(u64, f64)]) -> Result<Box<dyn CommModel>, fit::FitError> {
    Ok(Box::new(fit::fit_points(points, fit::Segments::Auto)?))
}

/// The communication model of `kind` over measured `points`: the
/// log-log interpolation with the α–β fit beyond them, or the fit alone.
pub fn model_of(
    points: &crate::comm::CommPoints,
    kind: crate::options::CommModelKind,
) -> Result<Box<dyn CommModel>, fit::FitError> {
    let fitted = fit_comm(&points.points)?;
    Ok(match kind {
        crate::options::CommModelKind::Interp => {
            Box::new(crate::comm::Interp::new(&points.points, fitted))
        }
        crate::options::CommModelKind::AlphaBeta => fitted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_answers_in_seconds_and_names_its_segments() {
        // 10 µs + 1 GB/s, exactly, at 1 KiB .. 1 MiB.
        let points: Vec<(u64, f64)> = (10..=20)
            .map(|p| (1u64 << p, 10.0 + (1u64 << p) as f64 / 1e3))
            .collect();
        let model = fit_comm(&points).unwrap();
        let time = model.time_s(1 << 30);
        assert!((time - (10e-6 + (1u64 << 30) as f64 / 1e9)).abs() < 1e-9 * time.max(1.0));
        assert_eq!(
            model.describe().unwrap(),
            "piecewise alpha-beta fit (1024-1048576 B: alpha 10.00 us, 1.00 GB/s)"
        );
    }
}
