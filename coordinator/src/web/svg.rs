//! SVG drawings, written as text: the best-value-over-time plot, a Topswops deck and its
//! flips, and a walk on a grid of cities. Every drawing scales with its container (viewBox
//! plus `width: 100%` in the stylesheet), so it stays readable on a phone.

use std::fmt::Write;

use super::html::{esc, fmt_duration};

/// One improvement: when (ms since the epoch) and the score it reached.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// When, in milliseconds since the epoch.
    pub at_ms: i64,
    /// The campaign's best score from then on.
    pub score: i64,
}

/// Most points drawn; longer histories are thinned evenly (the last point is always kept).
const MAX_POINTS: usize = 2000;

/// A step plot of the best score over time, from `start_ms` (campaign creation) to `end_ms`.
pub fn best_over_time(points: &[Point], start_ms: i64, end_ms: i64) -> String {
    const W: f64 = 640.0;
    const H: f64 = 220.0;
    const LEFT: f64 = 64.0;
    const RIGHT: f64 = 12.0;
    const TOP: f64 = 12.0;
    const BOTTOM: f64 = 34.0;
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"plot\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"best value over time\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    if points.is_empty() {
        let _ = write!(
            out,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"muted\">no improvement yet</text></svg>",
            W / 2.0,
            H / 2.0
        );
        return out;
    }
    let step = points.len().div_ceil(MAX_POINTS).max(1);
    let mut kept: Vec<Point> = points.iter().step_by(step).copied().collect();
    if kept.last() != points.last() {
        kept.push(*points.last().expect("not empty"));
    }
    let t0 = start_ms.min(kept[0].at_ms);
    let t1 = end_ms
        .max(kept.last().expect("not empty").at_ms)
        .max(t0 + 1);
    let lo = kept.iter().map(|p| p.score).min().expect("not empty");
    let hi = kept.iter().map(|p| p.score).max().expect("not empty");
    let (lo_axis, hi_axis) = if lo == hi { (lo - 1, hi + 1) } else { (lo, hi) };
    let x = |t: i64| LEFT + (t - t0) as f64 / (t1 - t0) as f64 * (W - LEFT - RIGHT);
    let y = |s: i64| TOP + (hi_axis - s) as f64 / (hi_axis - lo_axis) as f64 * (H - TOP - BOTTOM);
    // Axes and labels.
    let _ = write!(
        out,
        "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{b}\"/>\
         <line class=\"axis\" x1=\"{LEFT}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\"/>\
         <text class=\"tick\" x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{hi_axis}</text>\
         <text class=\"tick\" x=\"{lx}\" y=\"{b}\" text-anchor=\"end\">{lo_axis}</text>\
         <text class=\"tick\" x=\"{LEFT}\" y=\"{bt}\">0</text>\
         <text class=\"tick\" x=\"{r}\" y=\"{bt}\" text-anchor=\"end\">{span}</text>",
        b = H - BOTTOM,
        r = W - RIGHT,
        lx = LEFT - 6.0,
        ty = TOP + 10.0,
        bt = H - BOTTOM + 16.0,
        span = esc(&fmt_duration((t1 - t0) as f64 / 1000.0)),
    );
    // The step line: flat until the next improvement, then up (or down).
    let mut path = String::new();
    for (i, p) in kept.iter().enumerate() {
        let (px, py) = (x(p.at_ms), y(p.score));
        if i == 0 {
            let _ = write!(path, "M{px:.1},{py:.1}");
        } else {
            let _ = write!(path, " H{px:.1} V{py:.1}");
        }
    }
    let _ = write!(path, " H{:.1}", x(t1));
    let _ = write!(out, "<path class=\"line\" d=\"{path}\"/>");
    for p in &kept {
        let _ = write!(
            out,
            "<circle class=\"dot\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"2.5\"><title>{} after {}</title></circle>",
            x(p.at_ms),
            y(p.score),
            p.score,
            esc(&fmt_duration((p.at_ms - t0) as f64 / 1000.0))
        );
    }
    out.push_str("</svg>");
    out
}

/// Most flips drawn (a longer game is cut, with a note).
const MAX_FLIPS_DRAWN: usize = 400;

/// A Topswops deck and every flip until card 1 reaches the top: one row per deck state, the
/// cards about to be reversed highlighted.
pub fn topswops(deck: &[u64]) -> Option<String> {
    let n = deck.len();
    let valid = n > 0
        && n <= 64
        && deck.iter().all(|&c| c >= 1 && c as usize <= n)
        && (1..=n as u64).all(|c| deck.contains(&c));
    if !valid {
        return None;
    }
    let mut states = vec![deck.to_vec()];
    let mut d = deck.to_vec();
    while d[0] != 1 && states.len() <= MAX_FLIPS_DRAWN {
        let k = d[0] as usize;
        d[..k].reverse();
        states.push(d.clone());
    }
    let cut = d[0] != 1;
    const CELL: usize = 22;
    const LABEL: usize = 40;
    let w = LABEL + n * CELL + 4;
    let h = states.len() * CELL + if cut { CELL } else { 4 };
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"deck\" viewBox=\"0 0 {w} {h}\" style=\"max-width:{w}px\" role=\"img\" aria-label=\"Topswops deck and its {} flips\" xmlns=\"http://www.w3.org/2000/svg\">",
        states.len() - 1
    );
    for (row, state) in states.iter().enumerate() {
        let y = row * CELL;
        let flip = if state[0] != 1 { state[0] as usize } else { 0 };
        let _ = write!(
            out,
            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{row}</text>",
            LABEL - 6,
            y + 15
        );
        for (col, card) in state.iter().enumerate() {
            let class = if col < flip { "card flip" } else { "card" };
            let x = LABEL + col * CELL;
            let _ = write!(
                out,
                "<rect class=\"{class}\" x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{}\" rx=\"3\"/>\
                 <text class=\"cardtext\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{card}</text>",
                CELL - 2,
                CELL - 2,
                x + (CELL - 2) / 2,
                y + 15
            );
        }
    }
    if cut {
        let _ = write!(
            out,
            "<text class=\"tick\" x=\"{LABEL}\" y=\"{}\">… (first {MAX_FLIPS_DRAWN} flips shown)</text>",
            h - 6
        );
    }
    out.push_str("</svg>");
    Some(out)
}

/// A walk on an `n` x `n` grid of cities (city index `r * n + c`), drawn over the grid: the
/// start in green, the end in red, each crossing as a segment (reused bridges look darker).
pub fn grid_walk(n: usize, walk: &[usize]) -> Option<String> {
    if n == 0 || n > 200 || walk.is_empty() || walk.iter().any(|&c| c >= n * n) {
        return None;
    }
    const GAP: usize = 36;
    const PAD: usize = 18;
    let size = PAD * 2 + (n - 1) * GAP;
    let at = |city: usize| (PAD + (city % n) * GAP, PAD + (city / n) * GAP);
    let mut out = String::new();
    let _ = write!(
        out,
        "<svg class=\"grid\" viewBox=\"0 0 {size} {size}\" style=\"max-width:{}px\" role=\"img\" aria-label=\"walk over {} cities\" xmlns=\"http://www.w3.org/2000/svg\">",
        size.max(240),
        n * n
    );
    for r in 0..n {
        for c in 0..n {
            let (x, y) = at(r * n + c);
            if c + 1 < n {
                let _ = write!(
                    out,
                    "<line class=\"bridge\" x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>",
                    x + GAP
                );
            }
            if r + 1 < n {
                let _ = write!(
                    out,
                    "<line class=\"bridge\" x1=\"{x}\" y1=\"{y}\" x2=\"{x}\" y2=\"{}\"/>",
                    y + GAP
                );
            }
        }
    }
    for pair in walk.windows(2) {
        let ((x1, y1), (x2, y2)) = (at(pair[0]), at(pair[1]));
        let _ = write!(
            out,
            "<line class=\"walk\" x1=\"{x1}\" y1=\"{y1}\" x2=\"{x2}\" y2=\"{y2}\"/>"
        );
    }
    for city in 0..n * n {
        let (x, y) = at(city);
        let _ = write!(
            out,
            "<circle class=\"city\" cx=\"{x}\" cy=\"{y}\" r=\"4\"/>"
        );
    }
    let (sx, sy) = at(walk[0]);
    let (ex, ey) = at(*walk.last().expect("not empty"));
    let _ = write!(
        out,
        "<circle class=\"start\" cx=\"{sx}\" cy=\"{sy}\" r=\"7\"><title>start</title></circle>\
         <circle class=\"end\" cx=\"{ex}\" cy=\"{ey}\" r=\"7\"><title>end</title></circle></svg>"
    );
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_draws_every_improvement() {
        let points = [
            Point {
                at_ms: 1_000,
                score: 3,
            },
            Point {
                at_ms: 2_000,
                score: 7,
            },
        ];
        let svg = best_over_time(&points, 0, 4_000);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(best_over_time(&[], 0, 1).contains("no improvement yet"));
    }

    #[test]
    fn topswops_rows_follow_the_flips() {
        // 3 1 4 5 2 takes 7 flips: 8 rows of 5 cards.
        let svg = topswops(&[3, 1, 4, 5, 2]).unwrap();
        assert_eq!(svg.matches("<rect").count(), 8 * 5);
        assert!(topswops(&[1, 1]).is_none());
        assert!(topswops(&[]).is_none());
    }

    #[test]
    fn grid_walk_draws_each_crossing() {
        let svg = grid_walk(3, &[6, 7, 8, 7, 4, 1, 0, 3, 4, 5, 2]).unwrap();
        assert_eq!(svg.matches("class=\"walk\"").count(), 10);
        assert!(grid_walk(3, &[9]).is_none());
    }
}
