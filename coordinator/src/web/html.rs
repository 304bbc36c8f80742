//! HTML building blocks: number and time formatting, and the page layout every page shares
//! (header, navigation, the live-update script). HTML is written with `maud`, which escapes
//! every interpolated value: no text reaches a page unescaped unless wrapped in
//! `PreEscaped` (which nothing here does).

use maud::{html, Markup, DOCTYPE};

/// A duration for people: `850 ms`, `42 s`, `3 min 20 s`, `5 h 02 min`, `3 d 4 h`.
pub fn fmt_duration(seconds: f64) -> String {
    if !seconds.is_finite() || seconds < 0.0 {
        return "?".into();
    }
    if seconds < 1.0 {
        return format!("{:.0} ms", seconds * 1000.0);
    }
    let s = seconds.round() as u64;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min {:02} s", s / 60, s % 60),
        3600..=86_399 => format!("{} h {:02} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// A rate with a sensible number of digits.
pub fn fmt_rate(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else if value >= 1.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.3}")
    }
}

/// Milliseconds since the epoch as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn fmt_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm), proleptic Gregorian calendar.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Which page is shown (for the navigation's highlight).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    /// The campaigns list and campaign pages.
    Campaigns,
    /// The workers page.
    Workers,
}

/// Wraps a page body in the shared layout. `api` is the JSON behind the page (linked in the
/// footer); the body sits in `<main id="live">`, which the script swaps for a fresh render
/// whenever the coordinator reports a change. No inline script or style: the
/// `Content-Security-Policy` allows only the served assets.
pub fn layout(title: &str, nav: Nav, api: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · grind" }
                link rel="stylesheet" href="/static/grind.css";
            }
            body {
                header {
                    a.brand href="/" { "grind" }
                    nav {
                        a href="/" class=[(nav == Nav::Campaigns).then_some("on")] { "Campaigns" }
                        a href="/workers" class=[(nav == Nav::Workers).then_some("on")] { "Workers" }
                        a href="/metrics" { "Metrics" }
                    }
                    span.live #live-state title="live updates" { "●" }
                }
                main #live { (body) }
                footer { "JSON: " a href=(api) { (api) } " · grind " (grind_shared::VERSION) }
                script src="/static/grind.js" {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_escapes_its_title() {
        let page = layout(
            "<script>alert(1)</script>",
            Nav::Workers,
            "/api/\"x",
            html! { p { "body" } },
        )
        .into_string();
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt; · grind"));
        assert!(page.contains("href=\"/api/&quot;x\""), "{page}");
        assert!(
            page.contains("<a href=\"/workers\" class=\"on\">"),
            "{page}"
        );
    }

    #[test]
    fn formats_durations_and_times() {
        assert_eq!(fmt_duration(0.25), "250 ms");
        assert_eq!(fmt_duration(42.0), "42 s");
        assert_eq!(fmt_duration(200.0), "3 min 20 s");
        assert_eq!(fmt_duration(3.0 * 86_400.0 + 7200.0), "3 d 2 h");
        assert_eq!(fmt_time(0), "1970-01-01 00:00:00");
        assert_eq!(fmt_time(1_700_000_000_000), "2023-11-14 22:13:20");
    }
}
