//! Horizontal bar charts: grants per client and the mail queue.

use super::*;

/// Geometry of a horizontal bar chart.
pub(super) const ROW: f64 = 26.0;
pub(super) const LABEL_W: f64 = 120.0;
pub(super) const BAR_X: f64 = 126.0;
pub(super) const VALUE_W: f64 = 44.0;

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
