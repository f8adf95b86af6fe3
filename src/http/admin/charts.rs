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

/// Geometry of the hourly chart.
const H_HEIGHT: f64 = 190.0;
const H_LEFT: f64 = 30.0;
const H_RIGHT: f64 = 4.0;
const H_TOP: f64 = 28.0;
const H_BOTTOM: f64 = 22.0;

/// Where the hourly chart's day labels go: (x, text) at each UTC midnight that
/// leaves room for its label.
pub fn day_ticks(from: i64, hours: usize) -> Vec<(f64, String)> {
    let slot = (WIDTH - H_LEFT - H_RIGHT) / hours.max(1) as f64;
    (0..hours)
        .map(|i| (i, from + i as i64 * 3600))
        .filter(|(_, t)| t.rem_euclid(86_400) == 0)
        .map(|(i, at)| (H_LEFT + i as f64 * slot, t().weekday_day(at)))
        .filter(|(x, label)| x + text_width(label, TICK_FONT) <= WIDTH)
        .collect()
}

/// Sign-ins (`ok`) and failed or refused attempts (`failed`) per hour from `from`
/// (a whole hour), as stacked bars, one per hour.
pub fn sign_ins(from: i64, ok: &[i64], failed: &[i64]) -> Chart {
    let hours = ok.len().min(failed.len());
    let (total_ok, total_failed): (i64, i64) = (ok.iter().sum(), failed.iter().sum());
    let busiest = (0..hours).max_by_key(|&i| (ok[i] + failed[i], i));
    let peak = busiest.map(|i| ok[i] + failed[i]).unwrap_or(0);
    let days = hours / 24;
    let summary = match busiest.filter(|_| peak > 0) {
        None => t().fill(t().adm_chart_signins_none, "days", t().number(days as i64)),
        Some(i) => fill_all(
            t().adm_chart_signins_summary,
            &[
                ("days", t().number(days as i64)),
                ("signins", sign_ins_n(total_ok)),
                ("failed", failed_refused_n(total_failed)),
                ("hour", hour_of_day(from + i as i64 * 3600)),
                ("hour_signins", sign_ins_n(ok[i])),
                ("hour_failed", failed_n(failed[i])),
            ],
        ),
    };
    let top = nice_ceiling(peak.max(1));
    let plot_h = H_HEIGHT - H_TOP - H_BOTTOM;
    let base = H_TOP + plot_h;
    let slot = (WIDTH - H_LEFT - H_RIGHT) / hours.max(1) as f64;
    let height_of = |v: i64| {
        if v > 0 {
            (v as f64 / top as f64 * plot_h).max(1.0)
        } else {
            0.0
        }
    };
    let label = t().fill(t().adm_chart_signins_label, "summary", &summary);
    let svg = svg(H_HEIGHT, &label, |w| {
        legend(
            w,
            &[
                ("bar-ok", t().adm_chart_legend_signins),
                ("bar-failed", t().adm_chart_legend_failed),
            ],
        )?;
        let mut lines = vec![(top, H_TOP)];
        if top % 2 == 0 {
            lines.push((top / 2, H_TOP + plot_h / 2.0));
        }
        for (v, y) in lines {
            let (x1, x2, lx, ty, y) = (n(H_LEFT), n(WIDTH - H_RIGHT), n(H_LEFT - 4.0), n(y + 4.0), n(y));
            empty(
                w,
                "line",
                &[("class", "grid"), ("x1", &x1), ("y1", &y), ("x2", &x2), ("y2", &y)],
            )?;
            text(
                w,
                "text",
                &[("class", "tick"), ("x", &lx), ("y", &ty), ("text-anchor", "end")],
                &t().number(v),
            )?;
        }
        let zero_y = n(base + 4.0);
        text(
            w,
            "text",
            &[
                ("class", "tick"),
                ("x", &n(H_LEFT - 4.0)),
                ("y", &zero_y),
                ("text-anchor", "end"),
            ],
            "0",
        )?;
        for i in (0..hours).filter(|&i| ok[i] + failed[i] > 0) {
            let start = from + i as i64 * 3600;
            let (x, wd) = (n(H_LEFT + i as f64 * slot), n(slot));
            let (h_ok, h_failed) = (height_of(ok[i]), height_of(failed[i]));
            let (c_ok, c_failed, s) = (ok[i].to_string(), failed[i].to_string(), start.to_string());
            let tip = fill_all(
                t().adm_chart_signins_tip,
                &[
                    ("hour", hour_of_day(start)),
                    ("signins", sign_ins_n(ok[i])),
                    ("failed", failed_n(failed[i])),
                ],
            );
            w.create_element("g")
                .with_attributes([
                    ("class", "bucket"),
                    ("data-start", s.as_str()),
                    ("data-ok", &c_ok),
                    ("data-failed", &c_failed),
                ])
                .write_inner_content(|w| {
                    text(w, "title", &[], &tip)?;
                    for (class, h, y, count) in [
                        ("bar-ok", h_ok, base - h_ok, &c_ok),
                        ("bar-failed", h_failed, base - h_ok - h_failed, &c_failed),
                    ] {
                        if h > 0.0 {
                            let attrs = [
                                ("class", class),
                                ("x", &x),
                                ("y", &n(y)),
                                ("width", &wd),
                                ("height", &n(h)),
                                ("data-count", count),
                            ];
                            empty(w, "rect", &attrs)?;
                        }
                    }
                    Ok(())
                })?;
        }
        let (x1, x2, y) = (n(H_LEFT), n(WIDTH - H_RIGHT), n(base));
        empty(
            w,
            "line",
            &[("class", "axis"), ("x1", &x1), ("y1", &y), ("x2", &x2), ("y2", &y)],
        )?;
        for (x, day) in day_ticks(from, hours) {
            let (x, y1, y2, ty) = (n(x), n(base), n(base + 5.0), n(base + 17.0));
            empty(
                w,
                "line",
                &[("class", "axis"), ("x1", &x), ("y1", &y1), ("x2", &x), ("y2", &y2)],
            )?;
            text(w, "text", &[("class", "tick"), ("x", &x), ("y", &ty)], &day)?;
        }
        if peak == 0 {
            let none = t().fill(t().adm_chart_signins_empty, "days", t().number(days as i64));
            no_data(w, H_TOP + plot_h / 2.0, &none)?;
        }
        Ok(())
    });
    Chart {
        id: "chart-signins",
        heading: t().adm_chart_signins_heading.into(),
        summary,
        svg,
    }
}

fn legend(w: &mut W, items: &[(&str, &str)]) -> Io {
    let mut x = H_LEFT;
    for (class, label) in items {
        let (rx, tx) = (n(x), n(x + 14.0));
        empty(
            w,
            "rect",
            &[
                ("class", class),
                ("x", &rx),
                ("y", "6"),
                ("width", "10"),
                ("height", "10"),
            ],
        )?;
        text(w, "text", &[("x", &tx), ("y", "15")], label)?;
        x += 14.0 + text_width(label, FONT) + 16.0;
    }
    Ok(())
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

/// Geometry of a horizontal bar chart.
const ROW: f64 = 26.0;
const LABEL_W: f64 = 120.0;
const BAR_X: f64 = 126.0;
const VALUE_W: f64 = 44.0;

/// Horizontal bars, one row each, scaled to the largest; `none` is drawn when there
/// are no rows.
pub fn bars(id: &'static str, heading: &str, summary: String, rows: &[Bar], none: &str) -> Chart {
    let height = if rows.is_empty() {
        48.0
    } else {
        8.0 + rows.len() as f64 * ROW
    };
    let max = rows.iter().map(|r| r.count).max().unwrap_or(0).max(1);
    let span = WIDTH - BAR_X - VALUE_W;
    let label = t().fill2(t().adm_chart_label, "heading", heading, "summary", &summary);
    let svg = svg(height, &label, |w| {
        if rows.is_empty() {
            return no_data(w, height / 2.0 + 4.0, none);
        }
        for (i, row) in rows.iter().enumerate() {
            let y0 = 4.0 + i as f64 * ROW;
            let width = if row.count > 0 {
                (row.count as f64 / max as f64 * span).max(1.0)
            } else {
                0.0
            };
            let count = row.count.to_string();
            let shown = t().number(row.count);
            let tip = t().fill2(t().adm_chart_label, "heading", &row.label, "summary", &shown);
            w.create_element("g")
                .with_attributes([
                    ("class", "row"),
                    ("data-label", row.label.as_str()),
                    ("data-count", &count),
                ])
                .write_inner_content(|w| {
                    text(w, "title", &[], &tip)?;
                    let ty = n(y0 + 17.0);
                    text(w, "text", &[("x", "0"), ("y", &ty)], &fit(&row.label, LABEL_W, FONT))?;
                    let attrs = [
                        ("class", row.class),
                        ("x", &n(BAR_X)),
                        ("y", &n(y0 + 4.0)),
                        ("width", &n(width)),
                        ("height", "18"),
                        ("data-count", &count),
                    ];
                    empty(w, "rect", &attrs)?;
                    text(
                        w,
                        "text",
                        &[("class", "value"), ("x", &n(BAR_X + width + 4.0)), ("y", &ty)],
                        &shown,
                    )
                })?;
        }
        Ok(())
    });
    Chart {
        id,
        heading: heading.into(),
        summary,
        svg,
    }
}

/// Tokens issued per client, most first; the last row sums `others` clients when
/// there are any.
pub fn grants(rows: &[(String, i64)], others: usize, days: i64) -> Chart {
    let named: Vec<Bar> = rows
        .iter()
        .enumerate()
        .map(|(i, (name, count))| Bar {
            label: if others > 0 && i + 1 == rows.len() {
                let others = i64::try_from(others).unwrap_or(i64::MAX);
                t().plural(
                    others,
                    t().adm_chart_grants_others_one,
                    t().adm_chart_grants_others_other,
                )
            } else {
                name.clone()
            },
            count: *count,
            class: "bar-ok",
        })
        .collect();
    let summary = if named.is_empty() {
        t().fill(t().adm_chart_grants_none_summary, "days", t().number(days))
    } else {
        let parts: Vec<String> = named
            .iter()
            .map(|b| format!("{} {}", b.label, t().number(b.count)))
            .collect();
        t().fill2(
            t().adm_chart_grants_summary,
            "days",
            t().number(days),
            "list",
            parts.join(", "),
        )
    };
    let none = t().fill(t().adm_chart_grants_none, "days", t().number(days));
    bars("chart-grants", t().adm_chart_grants_heading, summary, &named, &none)
}

/// The mail outbox: messages waiting and messages given up on.
pub fn mail(pending: i64, failed: i64) -> Chart {
    let rows = [
        Bar {
            label: t().adm_chart_mail_waiting.into(),
            count: pending,
            class: "bar-ok",
        },
        Bar {
            label: t().adm_chart_mail_given_up.into(),
            count: failed,
            class: "bar-failed",
        },
    ];
    let summary = t().fill2(
        t().adm_chart_mail_summary,
        "waiting",
        t().plural(
            pending,
            t().adm_chart_mail_waiting_n_one,
            t().adm_chart_mail_waiting_n_other,
        ),
        "given_up",
        t().plural(
            failed,
            t().adm_chart_mail_given_up_n_one,
            t().adm_chart_mail_given_up_n_other,
        ),
    );
    bars("chart-mail", t().adm_chart_mail_heading, summary, &rows, "")
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(svg: &str) -> Vec<(String, Vec<(String, String)>)> {
        let mut reader = quick_xml::Reader::from_str(svg);
        let mut out = Vec::new();
        loop {
            match reader.read_event().expect("well-formed SVG") {
                quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => {
                    let attrs = e
                        .attributes()
                        .map(|a| {
                            let a = a.unwrap();
                            let v = a.unescape_value().unwrap().to_string();
                            (String::from_utf8(a.key.as_ref().to_vec()).unwrap(), v)
                        })
                        .collect();
                    out.push((String::from_utf8(e.name().as_ref().to_vec()).unwrap(), attrs));
                }
                quick_xml::events::Event::Eof => return out,
                _ => {}
            }
        }
    }

    fn attr<'a>(el: &'a (String, Vec<(String, String)>), k: &str) -> Option<&'a str> {
        el.1.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn nice_ceilings_are_round() {
        let got: Vec<i64> = [0, 1, 2, 3, 6, 10, 11, 45, 99, 101]
            .iter()
            .map(|&v| nice_ceiling(v))
            .collect();
        assert_eq!(got, [1, 1, 2, 5, 10, 10, 20, 50, 100, 200]);
        assert_eq!(nice_ceiling(i64::MAX), i64::MAX);
    }

    #[test]
    fn hourly_bars_stack_and_scale_to_a_round_top() {
        let from = 1_700_000_000 / 3600 * 3600;
        let (mut ok, mut failed) = (vec![0; 168], vec![0; 168]);
        ok[167] = 3;
        failed[167] = 1;
        ok[10] = 8;
        let chart = sign_ins(from, &ok, &failed);
        let els = parse(&chart.svg);
        let buckets: Vec<_> = els.iter().filter(|e| attr(e, "class") == Some("bucket")).collect();
        assert_eq!(buckets.len(), 2, "only hours with events are drawn");
        let last = buckets
            .iter()
            .find(|b| attr(b, "data-start") == Some(&(from + 167 * 3600).to_string()));
        assert_eq!(last.and_then(|b| attr(b, "data-ok")), Some("3"));
        let bars: Vec<_> = els
            .iter()
            .filter(|e| e.0 == "rect" && attr(e, "data-count").is_some())
            .collect();
        let heights: Vec<(String, f64)> = bars
            .iter()
            .map(|b| {
                (
                    attr(b, "data-count").unwrap().to_string(),
                    attr(b, "height").unwrap().parse().unwrap(),
                )
            })
            .collect();
        // Top of the scale is 10 (the busiest hour has 8); the plot is 140 units high.
        assert_eq!(heights, [("8".into(), 112.0), ("3".into(), 42.0), ("1".into(), 14.0)]);
        // The failure sits on top of the sign-ins of its hour.
        let y = |i: usize| attr(bars[i], "y").unwrap().parse::<f64>().unwrap();
        assert_eq!(y(2) + 14.0, y(1));
        assert!(
            chart.summary.contains("11 sign-ins, 1 failed or refused"),
            "{}",
            chart.summary
        );
        let svg = &els[0];
        assert_eq!(attr(svg, "role"), Some("img"));
        assert!(attr(svg, "aria-label").unwrap().contains("11 sign-ins"));
        assert_eq!(attr(svg, "viewBox"), Some("0 0 360 190"));
    }

    #[test]
    fn day_labels_do_not_overlap() {
        for offset in [0, 1, 7, 23] {
            let from = (1_700_006_400 / 86_400 * 86_400) + offset * 3600;
            let ticks = day_ticks(from, 168);
            assert!(ticks.len() >= 6, "{ticks:?}");
            for pair in ticks.windows(2) {
                assert!(pair[0].0 + text_width(&pair[0].1, TICK_FONT) < pair[1].0, "{ticks:?}");
            }
            assert!(ticks.iter().all(|(x, l)| x + text_width(l, TICK_FONT) <= WIDTH));
        }
    }

    #[test]
    fn no_data_is_said_in_words() {
        let chart = sign_ins(0, &[0; 168], &[0; 168]);
        assert!(chart.svg.contains("No sign-ins in the last 7 days"));
        assert!(chart.summary.starts_with("No sign-ins"));
        assert!(!chart.svg.contains("class=\"bucket\""));
        parse(&chart.svg);
        let grants = grants(&[], 0, 7);
        assert!(grants.svg.contains("No tokens issued in the last 7 days"));
        parse(&grants.svg);
    }

    #[test]
    fn labels_are_escaped_and_cut_to_fit() {
        let rows = vec![
            ("<script>alert(1)</script>".to_string(), 4),
            ("a \"quoted\" & long name that goes on".to_string(), 2),
            ("rest".to_string(), 9),
        ];
        let chart = grants(&rows, 3, 7);
        assert!(!chart.svg.contains("<script"), "{}", chart.svg);
        assert!(chart.svg.contains("&lt;script&gt;"));
        let els = parse(&chart.svg);
        let labels: Vec<_> = els
            .iter()
            .filter(|e| attr(e, "class") == Some("row"))
            .map(|e| attr(e, "data-label").unwrap())
            .collect();
        assert_eq!(
            labels,
            [
                "<script>alert(1)</script>",
                "a \"quoted\" & long name that goes on",
                "3 other clients"
            ]
        );
        let cut = fit("a \"quoted\" & long name that goes on", LABEL_W, FONT);
        assert!(cut.ends_with('…') && text_width(&cut, FONT) <= LABEL_W, "{cut}");
        assert_eq!(fit("short", LABEL_W, FONT), "short");
        let widths: Vec<f64> = els
            .iter()
            .filter(|e| e.0 == "rect")
            .map(|e| attr(e, "width").unwrap().parse().unwrap())
            .collect();
        assert_eq!(widths[2], WIDTH - BAR_X - VALUE_W, "the largest bar fills the span");
        assert!(widths[0] > widths[1]);
    }

    #[test]
    fn mail_shows_both_rows_even_when_zero() {
        let chart = mail(0, 2);
        let els = parse(&chart.svg);
        let counts: Vec<_> = els
            .iter()
            .filter(|e| attr(e, "class") == Some("row"))
            .map(|e| attr(e, "data-count").unwrap())
            .collect();
        assert_eq!(counts, ["0", "2"]);
    }
}
