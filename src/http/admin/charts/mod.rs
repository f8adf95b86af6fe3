//! The dashboard's charts as inline SVG: no script, no framework, written through
//! quick-xml's writer so that every label and attribute is escaped. Each chart has a
//! `viewBox` about as wide as a phone (so its text stays readable at 360 px and the
//! stylesheet caps how far it grows), `role="img"` with a title and an `aria-label`,
//! and a text summary that the page also shows beside it. Every bar carries its
//! figure in `data-count`, which the tests read back. Times are UTC. Words, numbers
//! and day names are in the language of the request (`crate::i18n::t()`); the
//! `data-*` figures stay plain digits.

use quick_xml::events::BytesText;
use quick_xml::Writer;

use crate::admin::overview::{Dashboard, HOURS};
use crate::i18n::t;

mod bars;
mod hourly;
#[cfg(test)]
mod tests;

pub use bars::{bars, grants, mail};
pub use hourly::{day_ticks, sign_ins};

/// The width of every chart in user units (about a phone's width, so that 1 unit is
/// about one CSS pixel there).
const WIDTH: f64 = 360.0;
/// Font sizes, as the stylesheet sets them (`.chart text`, `.chart .tick`).
const FONT: f64 = 13.0;
const TICK_FONT: f64 = 12.0;

/// One chart, ready for the page: `svg` is markup; `summary` is plain text.
#[derive(Debug, Clone)]
pub struct Chart {
    pub id: &'static str,
    pub heading: String,
    pub summary: String,
    pub svg: String,
}

/// One bar of a horizontal bar chart; `class` colours it (`bar-ok`, `bar-failed`).
#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub count: i64,
    pub class: &'static str,
}

type W = Writer<Vec<u8>>;
type Io = std::io::Result<()>;

/// The smallest of 1, 2 or 5 × 10ⁿ at or above `max`, so that the top gridline
/// has a round label.
pub fn nice_ceiling(max: i64) -> i64 {
    let mut step: i64 = 1;
    loop {
        for m in [1, 2, 5] {
            let v = step.saturating_mul(m);
            if v >= max {
                return v;
            }
        }
        if step > i64::MAX / 10 {
            return max;
        }
        step *= 10;
    }
}

/// A rough width of `text` in user units: what a proportional font takes for Latin
/// letters and digits, a full em for anything wider (CJK, emoji).
pub fn text_width(text: &str, font: f64) -> f64 {
    text.chars().map(|c| if c.is_ascii() { 0.6 } else { 1.0 }).sum::<f64>() * font
}

/// `text` cut to fit `max` user units, with an ellipsis when cut.
pub fn fit(text: &str, max: f64, font: f64) -> String {
    if text_width(text, font) <= max {
        return text.to_string();
    }
    let mut out = String::new();
    for c in text.chars() {
        let next = format!("{out}{c}…");
        if text_width(&next, font) > max {
            break;
        }
        out.push(c);
    }
    out.push('…');
    out
}

/// A coordinate with at most one decimal.
fn n(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// An hour of a day, for the summary and a bar's tooltip: `Wed 2 20:00`.
fn hour_of_day(unix: i64) -> String {
    format!("{} {}", t().weekday_day(unix), t().hour(unix))
}

/// `text` with every `{name}` of `values` filled in.
fn fill_all(text: &str, values: &[(&str, String)]) -> String {
    values
        .iter()
        .fold(text.to_string(), |out, (name, value)| t().fill(&out, name, value))
}

/// "4 sign-ins", "3 failed or refused", "3 failed", in the current language's plural.
fn sign_ins_n(n: i64) -> String {
    t().plural(n, t().adm_chart_signins_n_one, t().adm_chart_signins_n_other)
}

fn failed_refused_n(n: i64) -> String {
    t().plural(
        n,
        t().adm_chart_failed_refused_n_one,
        t().adm_chart_failed_refused_n_other,
    )
}

fn failed_n(n: i64) -> String {
    t().plural(n, t().adm_chart_failed_n_one, t().adm_chart_failed_n_other)
}

fn empty(w: &mut W, name: &str, attrs: &[(&str, &str)]) -> Io {
    w.create_element(name)
        .with_attributes(attrs.iter().copied())
        .write_empty()?;
    Ok(())
}

fn text(w: &mut W, name: &str, attrs: &[(&str, &str)], content: &str) -> Io {
    w.create_element(name)
        .with_attributes(attrs.iter().copied())
        .write_text_content(BytesText::new(content))?;
    Ok(())
}

/// The `<svg>` element around `body`, titled for screen readers.
fn svg(height: f64, label: &str, body: impl FnOnce(&mut W) -> Io) -> String {
    let mut w = Writer::new(Vec::new());
    let view = format!("0 0 {} {}", n(WIDTH), n(height));
    let written = w
        .create_element("svg")
        .with_attributes([
            ("xmlns", "http://www.w3.org/2000/svg"),
            ("class", "chart"),
            ("viewBox", view.as_str()),
            ("width", "100%"),
            ("role", "img"),
            ("aria-label", label),
        ])
        .write_inner_content(|w| {
            text(w, "title", &[], label)?;
            body(w)
        });
    match written {
        // Writing to memory cannot fail; a chart that did is left out, not a 500.
        Ok(_) => String::from_utf8(w.into_inner()).unwrap_or_default(),
        Err(e) => {
            tracing::error!(error = %e, "could not draw a chart");
            String::new()
        }
    }
}

fn no_data(w: &mut W, y: f64, message: &str) -> Io {
    let (x, y) = (n(WIDTH / 2.0), n(y));
    text(
        w,
        "text",
        &[("class", "empty"), ("x", &x), ("y", &y), ("text-anchor", "middle")],
        message,
    )
}

/// The dashboard's charts, in the order the page shows them: sign-ins per hour,
/// grants per client, and the mail queue when mail is on.
pub fn for_dashboard(d: &Dashboard) -> Vec<Chart> {
    let days = HOURS / 24;
    let mut charts = vec![
        sign_ins(d.from, &d.sign_ins, &d.failures),
        grants(&d.grants, d.other_clients, days),
    ];
    if let Some(m) = d.mail {
        charts.push(mail(m.pending, m.failed));
    }
    charts
}
