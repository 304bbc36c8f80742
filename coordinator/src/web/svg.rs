//! SVG drawings: the best-value-over-time plot, a Topswops game (a deck and its flips), and a
//! walk on a grid of cities. Written with `maud` (escaped by construction), with explicit
//! closing tags so the same text is valid inside HTML and as a standalone XML document, and
//! without inline styles (sizes are attributes). Every drawing scales down with its
//! container (viewBox, `max-width: 100%`), so it stays readable on a phone.

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

/// Most flips drawn (a longer game is cut, with a note).
pub const MAX_FLIPS_DRAWN: usize = 400;
/// Largest deck drawn flip by flip; larger decks are drawn as rows of cards.
pub const MAX_CARDS_PER_FLIP_ROW: usize = 24;

/// Whether `deck` is a permutation of 1..=n.
pub fn is_deck(deck: &[u64]) -> bool {
    let n = deck.len();
    let mut seen = vec![false; n + 1];
    n > 0
        && deck.iter().all(|&c| {
            let ok = c >= 1 && c as usize <= n && !seen[c as usize];
            if ok {
                seen[c as usize] = true;
            }
            ok
        })
}

/// A Topswops game drawn flip by flip: one row per deck state, the cards about to be
/// reversed highlighted. `None` unless `deck` is a permutation of at most
/// [`MAX_CARDS_PER_FLIP_ROW`] cards.
pub fn topswops(deck: &[u64]) -> Option<Markup> {
    let n = deck.len();
    if !is_deck(deck) || n > MAX_CARDS_PER_FLIP_ROW {
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
    let label = format!("Topswops deck and its {} flips", states.len() - 1);
    Some(html! {
        svg.deck viewBox=(format!("0 0 {w} {h}")) width=(w) role="img" aria-label=(label)
            xmlns="http://www.w3.org/2000/svg" {
            @for (row, state) in states.iter().enumerate() {
                @let y = row * CELL;
                @let flip = if state[0] != 1 { state[0] as usize } else { 0 };
                text.tick x=(LABEL - 6) y=(y + 15) text-anchor="end" { (row) }
                @for (col, card) in state.iter().enumerate() {
                    @let x = LABEL + col * CELL;
                    rect.card.flip[col < flip] x=(x) y=(y) width=(CELL - 2) height=(CELL - 2) rx="3" {}
                    text.cardtext x=(x + (CELL - 2) / 2) y=(y + 15) text-anchor="middle" { (card) }
                }
            }
            @if cut {
                text.tick x=(LABEL) y=(h - 6) { "… (first " (MAX_FLIPS_DRAWN) " flips shown)" }
            }
        }
    })
}

/// Cards (or steps) per row when a long sequence is wrapped.
pub const PER_ROW: usize = 10;

/// A long deck wrapped in rows of [`PER_ROW`] cards, each row labelled with the position of
/// its first card (1 = top), the first flip's cards highlighted. `None` unless `deck` is a
/// permutation.
pub fn deck_rows(deck: &[u64]) -> Option<Markup> {
    if !is_deck(deck) {
        return None;
    }
    const CELL: usize = 30;
    const LABEL: usize = 44;
    let rows = deck.len().div_ceil(PER_ROW);
    let cols = deck.len().min(PER_ROW);
    let (w, h) = (LABEL + cols * CELL + 2, rows * CELL + 2);
    let flip = if deck[0] != 1 { deck[0] as usize } else { 0 };
    let label = format!("Topswops deck of {} cards, top first", deck.len());
    Some(html! {
        svg.deck viewBox=(format!("0 0 {w} {h}")) width=(w) role="img" aria-label=(label)
            xmlns="http://www.w3.org/2000/svg" {
            @for (row, cards) in deck.chunks(PER_ROW).enumerate() {
                @let y = row * CELL;
                text.tick x=(LABEL - 6) y=(y + 19) text-anchor="end" { (row * PER_ROW + 1) }
                @for (col, card) in cards.iter().enumerate() {
                    @let x = LABEL + col * CELL;
                    @let position = row * PER_ROW + col;
                    rect.card.flip[position < flip] x=(x) y=(y) width=(CELL - 2) height=(CELL - 2) rx="3" {
                        title { "position " (position + 1) ": card " (card) }
                    }
                    text.cardtext x=(x + (CELL - 2) / 2) y=(y + 19) text-anchor="middle" { (card) }
                }
            }
        }
    })
}

/// A walk on an `n` x `n` grid of cities (city index `r * n + c`), drawn over the grid: the
/// start in green, the end in red, each crossing as a segment (reused bridges look darker).
pub fn grid_walk(n: usize, walk: &[usize]) -> Option<Markup> {
    if n == 0 || n > 200 || walk.iter().any(|&c| c >= n * n) {
        return None;
    }
    let (&start, &end) = (walk.first()?, walk.last()?);
    const GAP: usize = 36;
    const PAD: usize = 18;
    let size = PAD * 2 + (n - 1) * GAP;
    let at = |city: usize| (PAD + (city % n) * GAP, PAD + (city / n) * GAP);
    let ((sx, sy), (ex, ey)) = (at(start), at(end));
    let label = format!("walk over {} cities", n * n);
    Some(html! {
        svg.grid viewBox=(format!("0 0 {size} {size}")) width=(size.max(240)) role="img"
            aria-label=(label) xmlns="http://www.w3.org/2000/svg" {
            @for r in 0..n {
                @for c in 0..n {
                    @let (x, y) = at(r * n + c);
                    @if c + 1 < n { line.bridge x1=(x) y1=(y) x2=(x + GAP) y2=(y) {} }
                    @if r + 1 < n { line.bridge x1=(x) y1=(y) x2=(x) y2=(y + GAP) {} }
                }
            }
            @for pair in walk.windows(2) {
                @let ((x1, y1), (x2, y2)) = (at(pair[0]), at(pair[1]));
                line.walk x1=(x1) y1=(y1) x2=(x2) y2=(y2) {}
            }
            @for city in 0..n * n {
                @let (x, y) = at(city);
                circle.city cx=(x) cy=(y) r="4" {}
            }
            circle.start cx=(sx) cy=(sy) r="7" { title { "start" } }
            circle.end cx=(ex) cy=(ey) r="7" { title { "end" } }
        }
    })
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
    fn topswops_rows_follow_the_flips() {
        // 3 1 4 5 2 takes 7 flips: 8 rows of 5 cards.
        let svg = topswops(&[3, 1, 4, 5, 2]).unwrap().into_string();
        assert_eq!(svg.matches("<rect").count(), 8 * 5);
        assert!(topswops(&[1, 1]).is_none());
        assert!(topswops(&[]).is_none());
        // Every element is closed: the plot is well-formed as a standalone SVG document.
        assert_eq!(svg.matches("<rect").count(), svg.matches("</rect>").count());
    }

    #[test]
    fn long_decks_wrap_in_rows_with_positions() {
        let deck: Vec<u64> = (1..=97).rev().collect();
        assert!(topswops(&deck).is_none(), "too wide to draw flip by flip");
        let svg = deck_rows(&deck).unwrap().into_string();
        assert_eq!(svg.matches("<rect").count(), 97);
        // Ten rows, labelled with the position of their first card.
        for first in [1, 11, 91] {
            assert!(
                svg.contains(&format!("\"end\">{first}</text>")),
                "row {first}"
            );
        }
        // The first flip reverses all 97 cards: every card is highlighted.
        assert_eq!(svg.matches("class=\"card flip\"").count(), 97);
        assert!(svg.contains("<title>position 97: card 1</title>"));
        assert!(deck_rows(&[2, 2]).is_none());
    }

    #[test]
    fn grid_walk_draws_each_crossing() {
        let svg = grid_walk(3, &[6, 7, 8, 7, 4, 1, 0, 3, 4, 5, 2])
            .unwrap()
            .into_string();
        assert_eq!(svg.matches("class=\"walk\"").count(), 10);
        assert!(grid_walk(3, &[9]).is_none());
    }
}
