//! The hourly chart of sign-ins and failures over the dashboard's days.

use super::*;

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
    let busiest = (0..hours).max_by_key(|&i| (ok[i] + failed[i], i));
    let peak = busiest.map(|i| ok[i] + failed[i]).unwrap_or(0);
    let days = hours / 24;
    let summary = summary(from, ok, failed, busiest.filter(|_| peak > 0), days);
    let scale = Scale::new(from, hours, peak);
    let label = t().fill(t().adm_chart_signins_label, "summary", &summary);
    let svg = svg(H_HEIGHT, &label, |w| {
        legend(
            w,
            &[
                ("bar-ok", t().adm_chart_legend_signins),
                ("bar-failed", t().adm_chart_legend_failed),
            ],
        )?;
        gridlines(w, &scale)?;
        for i in (0..hours).filter(|&i| ok[i] + failed[i] > 0) {
            bucket(w, &scale, i, ok[i], failed[i])?;
        }
        day_axis(w, &scale, hours)?;
        if peak == 0 {
            let none = t().fill(t().adm_chart_signins_empty, "days", t().number(days as i64));
            no_data(w, H_TOP + scale.plot_h / 2.0, &none)?;
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

/// The chart in words: the totals over the `days`, and the `busiest` hour if any
/// hour saw an attempt.
fn summary(from: i64, ok: &[i64], failed: &[i64], busiest: Option<usize>, days: usize) -> String {
    let (total_ok, total_failed): (i64, i64) = (ok.iter().sum(), failed.iter().sum());
    match busiest {
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
    }
}

/// Where figures and hours go: `top` (a round figure at or above the busiest hour) at
/// the top of the plot, 0 on its `base` line, one `slot` of width per hour from `from`.
struct Scale {
    from: i64,
    top: i64,
    plot_h: f64,
    base: f64,
    slot: f64,
}

impl Scale {
    fn new(from: i64, hours: usize, peak: i64) -> Self {
        let plot_h = H_HEIGHT - H_TOP - H_BOTTOM;
        Scale {
            from,
            top: nice_ceiling(peak.max(1)),
            plot_h,
            base: H_TOP + plot_h,
            slot: (WIDTH - H_LEFT - H_RIGHT) / hours.max(1) as f64,
        }
    }

    /// The height of a bar for `v`: at least 1 unit when `v` is not 0, so it shows.
    fn height_of(&self, v: i64) -> f64 {
        if v > 0 {
            (v as f64 / self.top as f64 * self.plot_h).max(1.0)
        } else {
            0.0
        }
    }
}

/// The gridlines at the top figure and (when it halves evenly) half of it, and the 0
/// at the base line.
fn gridlines(w: &mut W, scale: &Scale) -> Io {
    let (top, plot_h) = (scale.top, scale.plot_h);
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
    let zero_y = n(scale.base + 4.0);
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
    )
}

/// Hour `i`: its tooltip and its two stacked bars, failures on top of sign-ins.
fn bucket(w: &mut W, scale: &Scale, i: usize, ok: i64, failed: i64) -> Io {
    let start = scale.from + i as i64 * 3600;
    let (x, wd) = (n(H_LEFT + i as f64 * scale.slot), n(scale.slot));
    let (h_ok, h_failed) = (scale.height_of(ok), scale.height_of(failed));
    let (c_ok, c_failed, s) = (ok.to_string(), failed.to_string(), start.to_string());
    let base = scale.base;
    let tip = fill_all(
        t().adm_chart_signins_tip,
        &[
            ("hour", hour_of_day(start)),
            ("signins", sign_ins_n(ok)),
            ("failed", failed_n(failed)),
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
    Ok(())
}

/// The base line, with a tick and a label at each day's start.
fn day_axis(w: &mut W, scale: &Scale, hours: usize) -> Io {
    let base = scale.base;
    let (x1, x2, y) = (n(H_LEFT), n(WIDTH - H_RIGHT), n(base));
    empty(
        w,
        "line",
        &[("class", "axis"), ("x1", &x1), ("y1", &y), ("x2", &x2), ("y2", &y)],
    )?;
    for (x, day) in day_ticks(scale.from, hours) {
        let (x, y1, y2, ty) = (n(x), n(base), n(base + 5.0), n(base + 17.0));
        empty(
            w,
            "line",
            &[("class", "axis"), ("x1", &x), ("y1", &y1), ("x2", &x), ("y2", &y2)],
        )?;
        text(w, "text", &[("class", "tick"), ("x", &x), ("y", &ty)], &day)?;
    }
    Ok(())
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
