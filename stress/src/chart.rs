//! An SVG chart of a report: p95 latency per step for each VU level (log scale) over
//! iterations per second.

use std::fmt::Write;

use crate::stats::{Level, Report};

const W: f64 = 760.0;
const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 40.0;
const SPLIT: f64 = 270.0;
const BOTTOM: f64 = 380.0;
const COLOURS: &[(&str, &str)] = &[
    ("authorize", "#7f8c8d"),
    ("login", "#c0392b"),
    ("token", "#2980b9"),
    ("introspect", "#27ae60"),
    ("refresh", "#8e44ad"),
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

pub fn svg(report: &Report) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(out, r##"<rect width="{W}" height="{H}" fill="#fff"/>"##);
    let _ = write!(
        out,
        r#"<text x="{LEFT}" y="22" font-size="15">Tessera — {} (p95 latency per step, iterations/s)</text>"#,
        escape(&report.scenario)
    );
    let levels = &report.levels;
    if !levels.is_empty() {
        latency(&mut out, levels);
        throughput(&mut out, levels);
    }
    out.push_str("</svg>");
    out
}

/// The x of the middle of level `i` of `n`.
fn level_x(i: usize, n: usize) -> f64 {
    LEFT + (W - LEFT - RIGHT) * (i as f64 + 0.5) / n as f64
}

/// The upper panel: a line per step through its p95 at each level, log10 scale from
/// 0.1 ms to the largest p95, with a gridline per decade and a legend at the right.
fn latency(out: &mut String, levels: &[Level]) {
    let x = |i: usize| level_x(i, levels.len());
    let max_ms = levels
        .iter()
        .flat_map(|l| l.steps.iter().map(|s| s.p95_ms))
        .fold(1.0_f64, f64::max);
    let (lo, hi) = (0.1_f64.log10(), (max_ms * 1.5).log10());
    let y = |ms: f64| SPLIT - (SPLIT - TOP) * ((ms.max(0.1).log10() - lo) / (hi - lo));
    for decade in [0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0, 100000.0] {
        if decade > max_ms * 1.5 {
            break;
        }
        let yy = y(decade);
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{decade} ms</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            yy + 4.0
        );
    }
    for (legend, (step, colour)) in COLOURS.iter().enumerate() {
        let points: Vec<String> = levels
            .iter()
            .enumerate()
            .filter_map(|(i, l)| {
                l.steps
                    .iter()
                    .find(|s| s.step == *step)
                    .map(|s| format!("{:.1},{:.1}", x(i), y(s.p95_ms)))
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
            points.join(" ")
        );
        let ly = TOP + 16.0 * legend as f64;
        let _ = write!(
            out,
            r#"<rect x="{}" y="{:.1}" width="12" height="3" fill="{colour}"/><text x="{}" y="{:.1}">{step} p95</text>"#,
            W - RIGHT + 12.0,
            ly,
            W - RIGHT + 30.0,
            ly + 5.0
        );
    }
}

/// The lower panel: a bar per level, its height the iterations per second.
fn throughput(out: &mut String, levels: &[Level]) {
    let x = |i: usize| level_x(i, levels.len());
    let max_it = levels.iter().map(|l| l.iterations_per_second).fold(1.0_f64, f64::max);
    let bar_w = (W - LEFT - RIGHT) / levels.len() as f64 * 0.5;
    for (i, l) in levels.iter().enumerate() {
        let h = (BOTTOM - SPLIT - 25.0) * l.iterations_per_second / max_it;
        let _ = write!(
            out,
            r##"<rect x="{:.1}" y="{:.1}" width="{bar_w:.1}" height="{h:.1}" fill="#34495e"/><text x="{:.1}" y="{:.1}" text-anchor="middle">{:.1}/s</text><text x="{:.1}" y="{:.1}" text-anchor="middle">{} VUs</text>"##,
            x(i) - bar_w / 2.0,
            BOTTOM - h,
            x(i),
            BOTTOM - h - 4.0,
            l.iterations_per_second,
            x(i),
            BOTTOM + 16.0,
            l.vus
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{Level, StepStats};

    #[test]
    fn draws_one_bar_per_level_and_a_line_per_step() {
        let step = |name: &str, p95: f64| StepStats {
            step: name.into(),
            count: 1,
            p50_ms: p95,
            p95_ms: p95,
            p99_ms: p95,
            max_ms: p95,
            per_second: 1.0,
        };
        let report = Report {
            scenario: "flow <x>".into(),
            levels: vec![
                Level {
                    vus: 20,
                    seconds: 1.0,
                    iterations_per_second: 10.0,
                    steps: vec![step("login", 80.0), step("token", 2.0)],
                    rss_peak_mb: None,
                },
                Level {
                    vus: 100,
                    seconds: 1.0,
                    iterations_per_second: 30.0,
                    steps: vec![step("login", 3000.0), step("token", 3.0)],
                    rss_peak_mb: None,
                },
            ],
            ..Default::default()
        };
        let svg = svg(&report);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        assert_eq!(svg.matches("VUs</text>").count(), 2);
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains("flow &lt;x&gt;"), "text is escaped");
    }
}
