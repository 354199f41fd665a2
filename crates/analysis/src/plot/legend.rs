//! Where the legend goes: the first corner of the plotting area where its
//! box covers no measured point and no model line. When every corner is
//! taken, the caller raises the value axis so the top is free.
//!
//! Text is measured by estimate (no fonts are loaded): 0.6 em per
//! character is wider than most sans-serif faces, so the box errs large.

/// Font size of legend entries, px.
pub(crate) const FONT_PX: f64 = 15.0;
/// Height of one entry, px.
pub(crate) const ROW_PX: f64 = 21.0;
/// Width of an entry's symbol (marker and line sample), px.
pub(crate) const SYMBOL_PX: f64 = 30.0;
/// Padding inside the box, px.
pub(crate) const PAD_PX: f64 = 10.0;
/// Gap between the box and the plotting area's edges, px.
pub(crate) const INSET_PX: f64 = 10.0;
/// Points this close to the box count as covered, px.
const CLEARANCE_PX: f64 = 6.0;

/// A corner of the plotting area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Corner {
    UpperLeft,
    LowerRight,
    UpperRight,
    LowerLeft,
}

/// A rectangle in pixels, y growing downwards as in SVG.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    fn contains_near(&self, (x, y): (f64, f64), clearance: f64) -> bool {
        x >= self.x0 - clearance
            && x <= self.x1 + clearance
            && y >= self.y0 - clearance
            && y <= self.y1 + clearance
    }
}

/// Width and height of a legend of these labels, px.
pub(crate) fn size(labels: &[&str]) -> (f64, f64) {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let width = PAD_PX * 2.0 + SYMBOL_PX + 8.0 + longest as f64 * 0.6 * FONT_PX;
    let height = PAD_PX * 2.0 + labels.len() as f64 * ROW_PX;
    (width, height)
}

/// The box of a legend of `size` in `corner` of a plotting `area`.
pub(crate) fn place(corner: Corner, (width, height): (f64, f64), area: &Rect) -> Rect {
    let left = matches!(corner, Corner::UpperLeft | Corner::LowerLeft);
    let upper = matches!(corner, Corner::UpperLeft | Corner::UpperRight);
    let x0 = if left {
        area.x0 + INSET_PX
    } else {
        area.x1 - INSET_PX - width
    };
    let y0 = if upper {
        area.y0 + INSET_PX
    } else {
        area.y1 - INSET_PX - height
    };
    Rect {
        x0,
        y0,
        x1: x0 + width,
        y1: y0 + height,
    }
}

/// The first corner (upper left, lower right, upper right, lower left) whose
/// box covers none of `points` (pixels), or `None` if every one does or the
/// box does not fit in the area.
pub(crate) fn free_corner(points: &[(f64, f64)], size: (f64, f64), area: &Rect) -> Option<Corner> {
    if size.0 + 2.0 * INSET_PX > area.x1 - area.x0 || size.1 + 2.0 * INSET_PX > area.y1 - area.y0 {
        return None;
    }
    [
        Corner::UpperLeft,
        Corner::LowerRight,
        Corner::UpperRight,
        Corner::LowerLeft,
    ]
    .into_iter()
    .find(|&corner| {
        let rect = place(corner, size, area);
        !points.iter().any(|&p| rect.contains_near(p, CLEARANCE_PX))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const AREA: Rect = Rect {
        x0: 100.0,
        y0: 50.0,
        x1: 900.0,
        y1: 550.0,
    };

    #[test]
    fn boxes_grow_with_labels_and_entries() {
        let (w, h) = size(&["nccl 8 ranks · in-place", "fitted α–β model"]);
        assert_eq!(h, 2.0 * PAD_PX + 2.0 * ROW_PX);
        assert!((w - (2.0 * PAD_PX + SYMBOL_PX + 8.0 + 23.0 * 9.0)).abs() < 1e-9);
    }

    #[test]
    fn a_rising_curve_leaves_the_upper_left_free() {
        // Bandwidth rising from lower left to upper right.
        let points: Vec<(f64, f64)> = (0..50)
            .map(|i| (110.0 + 16.0 * i as f64, 540.0 - 9.0 * i as f64))
            .collect();
        assert_eq!(
            free_corner(&points, (200.0, 80.0), &AREA),
            Some(Corner::UpperLeft)
        );
    }

    #[test]
    fn a_plateau_across_the_top_pushes_the_legend_down() {
        // Flat along the top: the lower corners are free.
        let points: Vec<(f64, f64)> = (0..50).map(|i| (110.0 + 16.0 * i as f64, 70.0)).collect();
        assert_eq!(
            free_corner(&points, (200.0, 80.0), &AREA),
            Some(Corner::LowerRight)
        );
    }

    #[test]
    fn no_corner_when_every_one_is_covered_or_the_box_is_too_big() {
        let corners = [(120.0, 70.0), (880.0, 70.0), (120.0, 530.0), (880.0, 530.0)];
        assert_eq!(free_corner(&corners, (200.0, 80.0), &AREA), None);
        assert_eq!(free_corner(&[], (900.0, 80.0), &AREA), None);
    }
}
