//! The charts read back: their figures, labels and escaping.

use super::bars::{BAR_X, LABEL_W, VALUE_W};
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
