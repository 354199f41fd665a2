//! One α–β line fitted by least squares on relative error.
//!
//! One α–β line fitted by least squares on relative error: minimising
//! Σ ((α + β·s − t) / t)², which is linear in (α, β), with α ≥ 0 and β at
//! least a given floor (bandwidth at most a given peak).

/// The sums of one set of points that the fit needs, with u = 1/t and
/// v = s/t: the residual of a point is α·u + β·v − 1.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Sums {
    n: f64,
    u: f64,
    v: f64,
    uu: f64,
    uv: f64,
    vv: f64,
}

impl Sums {
    pub fn add(&mut self, bytes: f64, time_us: f64) {
        let u = 1.0 / time_us;
        let v = bytes / time_us;
        self.n += 1.0;
        self.u += u;
        self.v += v;
        self.uu += u * u;
        self.uv += u * v;
        self.vv += v * v;
    }

    pub fn plus(self, o: Sums) -> Sums {
        Sums {
            n: self.n + o.n,
            u: self.u + o.u,
            v: self.v + o.v,
            uu: self.uu + o.uu,
            uv: self.uv + o.uv,
            vv: self.vv + o.vv,
        }
    }

    pub fn minus(self, o: Sums) -> Sums {
        Sums {
            n: self.n - o.n,
            u: self.u - o.u,
            v: self.v - o.v,
            uu: self.uu - o.uu,
            uv: self.uv - o.uv,
            vv: self.vv - o.vv,
        }
    }

    /// Σ (α·u + β·v − 1)², never negative.
    fn cost(&self, line: Line) -> f64 {
        let (a, b) = (line.alpha_us, line.beta_us_per_byte);
        let cost = a * a * self.uu + 2.0 * a * b * self.uv + b * b * self.vv
            - 2.0 * a * self.u
            - 2.0 * b * self.v
            + self.n;
        cost.max(0.0)
    }
}

/// t(s) = α + β·s, in µs and µs per byte.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Line {
    pub alpha_us: f64,
    pub beta_us_per_byte: f64,
}

/// The best line with α ≥ 0 and β ≥ `beta_min` (the segment may not be
/// faster than the measured peak allows), and its cost (sum of squared
/// relative residuals). The cost is convex, so the optimum is the
/// unconstrained one if that is feasible, else the best point on one of the
/// two bounds, else their corner: the least-cost feasible candidate.
pub(crate) fn fit_line(s: &Sums, beta_min: f64) -> (Line, f64) {
    let mut candidates = Vec::with_capacity(4);
    // Normal equations scaled to unit diagonal, so that sizes from bytes to
    // gigabytes do not ruin the conditioning.
    let (d1, d2) = (s.uu.sqrt(), s.vv.sqrt());
    if d1 > 0.0 && d2 > 0.0 {
        let r = s.uv / (d1 * d2);
        let det = 1.0 - r * r;
        if det > 1e-13 {
            let (b1, b2) = (s.u / d1, s.v / d2);
            let x1 = (b1 - r * b2) / det;
            let x2 = (b2 - r * b1) / det;
            candidates.push(Line {
                alpha_us: x1 / d1,
                beta_us_per_byte: x2 / d2,
            });
        }
    }
    if s.uu > 0.0 {
        // β on its bound, the best α for it.
        candidates.push(Line {
            alpha_us: ((s.u - beta_min * s.uv) / s.uu).max(0.0),
            beta_us_per_byte: beta_min,
        });
    }
    if s.vv > 0.0 {
        // α on its bound, the best β for it.
        candidates.push(Line {
            alpha_us: 0.0,
            beta_us_per_byte: (s.v / s.vv).max(beta_min),
        });
    }
    candidates.push(Line {
        alpha_us: 0.0,
        beta_us_per_byte: beta_min,
    });
    candidates
        .into_iter()
        .filter(|l| l.alpha_us >= 0.0 && l.beta_us_per_byte >= beta_min)
        .map(|line| (line, s.cost(line)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("the corner of the bounds is always feasible")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sums(points: &[(f64, f64)]) -> Sums {
        let mut s = Sums::default();
        for &(b, t) in points {
            s.add(b, t);
        }
        s
    }

    #[test]
    fn two_points_give_the_line_through_them() {
        // 5 µs + 1000 B at 1 GB/s (1 ns per byte).
        let (line, cost) = fit_line(&sums(&[(0.0, 5.0), (1000.0, 6.0)]), 0.0);
        assert!((line.alpha_us - 5.0).abs() < 1e-12);
        assert!((line.beta_us_per_byte - 0.001).abs() < 1e-15);
        assert!(cost < 1e-20);
    }

    #[test]
    fn relative_weighting_hand_computed() {
        // A flat pair at 10 µs and one point at 20 µs for the same size: the
        // relative-error optimum of a constant is Σ(1/t)/Σ(1/t²) = 0.25/0.0225.
        let (line, _) = fit_line(&sums(&[(8.0, 10.0), (8.0, 10.0), (8.0, 20.0)]), 0.0);
        let expected = 0.25 / 0.0225;
        let at8 = line.alpha_us + 8.0 * line.beta_us_per_byte;
        assert!((at8 - expected).abs() < 1e-9, "{at8} vs {expected}");
    }

    #[test]
    fn bounds_hold() {
        // Time falling with size would need β < 0: β is held at its floor.
        let (line, _) = fit_line(&sums(&[(8.0, 10.0), (1e6, 5.0)]), 1e-4);
        assert_eq!(line.beta_us_per_byte, 1e-4);
        // A line through the origin would need α < 0: α is held at 0.
        let (line, _) = fit_line(&sums(&[(1e3, 1.0), (2e3, 3.0)]), 0.0);
        assert_eq!(line.alpha_us, 0.0);
        assert!(line.beta_us_per_byte > 0.0);
        // Faster than the floor allows: β is held there, α takes the rest.
        // 10 µs + 1 ns/B asks for β = 1e-3; the floor 2e-3 wins.
        let (line, _) = fit_line(&sums(&[(1e3, 11.0), (1e4, 20.0), (1e5, 110.0)]), 2e-3);
        assert_eq!(line.beta_us_per_byte, 2e-3);
        // Both bounds at once.
        let (line, _) = fit_line(&sums(&[(1e3, 1.0), (2e3, 3.0)]), 1.0);
        assert_eq!((line.alpha_us, line.beta_us_per_byte), (0.0, 1.0));
    }

    #[test]
    fn sums_subtract() {
        // Powers of two keep every sum exact.
        let a = sums(&[(8.0, 4.0)]);
        let b = sums(&[(64.0, 16.0)]);
        let both = a.plus(b);
        assert_eq!(both.minus(a), b);
    }
}
