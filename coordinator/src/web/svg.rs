//! SVG drawings: the best-value-over-time plot, and the figures problems draw of their
//! solutions ([`grind_shared::drawing::Figure`]). Written with `maud` (escaped by construction), with explicit
//! closing tags so the same text is valid inside HTML and as a standalone XML document, and
//! without inline styles (sizes are attributes). Every drawing scales down with its
//! container (viewBox, `max-width: 100%`), so it stays readable on a phone.

use grind_shared::drawing::{Anchor, Figure, Shape};
use maud::{html, Markup};

use super::html::fmt_duration;

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

fn f1(x: f64) -> String {
    format!("{x:.1}")
}

/// A step plot of the best score over time, from `start_ms` (campaign creation) to `end_ms`.
pub fn best_over_time(points: &[Point], start_ms: i64, end_ms: i64) -> Markup {
    const W: f64 = 640.0;
    const H: f64 = 220.0;
    const LEFT: f64 = 64.0;
    const RIGHT: f64 = 12.0;
    const TOP: f64 = 12.0;
    const BOTTOM: f64 = 34.0;
    let view_box = format!("0 0 {W} {H}");
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return html! {
            svg.plot viewBox=(view_box) role="img" aria-label="best value over time"
                xmlns="http://www.w3.org/2000/svg" {
                text.muted x=(W / 2.0) y=(H / 2.0) text-anchor="middle" { "no improvement yet" }
            }
        };
    };
    let step = points.len().div_ceil(MAX_POINTS).max(1);
    let mut kept: Vec<Point> = points.iter().step_by(step).copied().collect();
    if kept.last() != Some(last) {
        kept.push(*last);
    }
    let t0 = start_ms.min(first.at_ms);
    let t1 = end_ms.max(last.at_ms).max(t0 + 1);
    let lo = kept.iter().map(|p| p.score).min().unwrap_or(0);
    let hi = kept.iter().map(|p| p.score).max().unwrap_or(0);
    let (lo_axis, hi_axis) = if lo == hi { (lo - 1, hi + 1) } else { (lo, hi) };
    let x = |t: i64| LEFT + (t - t0) as f64 / (t1 - t0) as f64 * (W - LEFT - RIGHT);
    let y = |s: i64| TOP + (hi_axis - s) as f64 / (hi_axis - lo_axis) as f64 * (H - TOP - BOTTOM);
    // The step line: flat until the next improvement, then up (or down).
    let mut path = String::new();
    for (i, p) in kept.iter().enumerate() {
        let (px, py) = (x(p.at_ms), y(p.score));
        if i == 0 {
            path += &format!("M{px:.1},{py:.1}");
        } else {
            path += &format!(" H{px:.1} V{py:.1}");
        }
    }
    path += &format!(" H{:.1}", x(t1));
    let (b, r, lx, bt) = (H - BOTTOM, W - RIGHT, LEFT - 6.0, H - BOTTOM + 16.0);
    html! {
        svg.plot viewBox=(view_box) role="img" aria-label="best value over time"
            xmlns="http://www.w3.org/2000/svg" {
            line.axis x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(b) {}
            line.axis x1=(LEFT) y1=(b) x2=(r) y2=(b) {}
            text.tick x=(lx) y=(TOP + 10.0) text-anchor="end" { (hi_axis) }
            text.tick x=(lx) y=(b) text-anchor="end" { (lo_axis) }
            text.tick x=(LEFT) y=(bt) { "0" }
            text.tick x=(r) y=(bt) text-anchor="end" { (fmt_duration((t1 - t0) as f64 / 1000.0)) }
            path.line d=(path) {}
            @for p in &kept {
                circle.dot cx=(f1(x(p.at_ms))) cy=(f1(y(p.score))) r="2.5" {
                    title { (p.score) " after " (fmt_duration((p.at_ms - t0) as f64 / 1000.0)) }
                }
            }
        }
    }
}

/// A problem's figure ([`grind_shared::drawing::Figure`]) as inline SVG (class `figure` and
/// the figure's own style): each shape an element with the figure's class names, hover titles as `<title>` children.
pub fn figure(figure: &Figure) -> Markup {
    let view_box = format!("0 0 {} {}", figure.width, figure.height);
    html! {
        svg class={"figure " (figure.style)} viewBox=(view_box) width=(figure.shown_width) role="img"
            aria-label=(figure.label) xmlns="http://www.w3.org/2000/svg" {
            @for shape in &figure.shapes { (self::shape(shape)) }
        }
    }
}

fn shape(shape: &Shape) -> Markup {
    html! {
        @match shape {
            Shape::Rect { x, y, width, height, rx, style, title } => {
                rect class=(style.join(" ")) x=(x) y=(y) width=(width) height=(height) rx=(rx) {
                    @if let Some(title) = title { title { (title) } }
                }
            }
            Shape::Text { x, y, anchor, style, text } => {
                @let anchor = match anchor {
                    Anchor::Start => None,
                    Anchor::Middle => Some("middle"),
                    Anchor::End => Some("end"),
                };
                text class=(style) x=(x) y=(y) text-anchor=[anchor] { (text) }
            }
            Shape::Line { from, to, style } => {
                line class=(style) x1=(from.0) y1=(from.1) x2=(to.0) y2=(to.1) {}
            }
            Shape::Circle { at, r, style, title } => {
                circle class=(style) cx=(at.0) cy=(at.1) r=(r) {
                    @if let Some(title) = title { title { (title) } }
                }
            }
        }
    }
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
        let svg = best_over_time(&points, 0, 4_000).into_string();
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert!(best_over_time(&[], 0, 1)
            .into_string()
            .contains("no improvement yet"));
    }

    #[test]
    fn figures_close_every_element_and_escape_text() {
        let drawn = Figure {
            style: "deck",
            width: 40,
            height: 20,
            shown_width: 40,
            label: "a <card>".into(),
            shapes: vec![
                Shape::Rect {
                    x: 0,
                    y: 0,
                    width: 18,
                    height: 18,
                    rx: 3,
                    style: vec!["card", "flip"],
                    title: Some("position 1".into()),
                },
                Shape::Text {
                    x: 9,
                    y: 15,
                    anchor: Anchor::Middle,
                    style: "cardtext",
                    text: "<2>".into(),
                },
                Shape::Text {
                    x: 9,
                    y: 15,
                    anchor: Anchor::Start,
                    style: "tick",
                    text: "note".into(),
                },
                Shape::Line {
                    from: (0, 0),
                    to: (4, 5),
                    style: "walk",
                },
                Shape::Circle {
                    at: (3, 4),
                    r: 7,
                    style: "start",
                    title: None,
                },
            ],
        };
        let svg = figure(&drawn).into_string();
        assert!(
            svg.starts_with("<svg class=\"figure deck\" viewBox=\"0 0 40 20\" width=\"40\""),
            "{svg}"
        );
        assert!(svg.contains("aria-label=\"a &lt;card&gt;\""), "{svg}");
        assert!(svg.contains("<rect class=\"card flip\" x=\"0\" y=\"0\" width=\"18\" height=\"18\" rx=\"3\"><title>position 1</title></rect>"), "{svg}");
        assert!(
            svg.contains("text-anchor=\"middle\">&lt;2&gt;</text>"),
            "{svg}"
        );
        assert!(
            svg.contains("<text class=\"tick\" x=\"9\" y=\"15\">note</text>"),
            "{svg}"
        );
        assert!(
            svg.contains("<line class=\"walk\" x1=\"0\" y1=\"0\" x2=\"4\" y2=\"5\"></line>"),
            "{svg}"
        );
        assert!(
            svg.contains("<circle class=\"start\" cx=\"3\" cy=\"4\" r=\"7\"></circle>"),
            "{svg}"
        );
        assert!(svg.ends_with("</svg>"));
    }
}
