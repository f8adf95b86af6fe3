//! The admin dashboard's charts: real sign-ins, failures and token grants drawn as
//! well-formed SVG with the expected figures per hour and per client, labels escaped,
//! and the mail and replication figures shown only when those are on; on SQLite and
//! on PostgreSQL.

use quick_xml::events::Event;
use quick_xml::Reader;

use crate::helpers::*;

/// One element of a chart: its name and attributes (unescaped).
type Element = (String, Vec<(String, String)>);

/// Each `<svg>…</svg>` on the page, parsed as XML (a malformed one fails the test),
/// with the id of the figure around it.
fn charts(html: &str) -> Vec<(String, Vec<Element>)> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg") {
        let end = rest[start..].find("</svg>").expect("a closed <svg>") + start + "</svg>".len();
        let figure = rest[..start].rfind("<figure").expect("a chart in a figure");
        let id = rest[figure..]
            .split("id=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap()
            .to_string();
        out.push((id, parse(&rest[start..end])));
        rest = &rest[end..];
    }
    out
}

fn parse(svg: &str) -> Vec<Element> {
    let mut reader = Reader::from_str(svg);
    let mut out = Vec::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => {
                let attrs = e
                    .attributes()
                    .map(|a| {
                        let a = a.expect("a well-formed attribute");
                        let key = String::from_utf8(a.key.as_ref().to_vec()).unwrap();
                        (key, a.unescape_value().unwrap().to_string())
                    })
                    .collect();
                out.push((String::from_utf8(e.name().as_ref().to_vec()).unwrap(), attrs));
            }
            Ok(Event::Eof) => return out,
            Ok(_) => {}
            Err(e) => panic!("not well-formed SVG: {e}\n{svg}"),
        }
    }
}

fn attr<'a>(el: &'a Element, key: &str) -> Option<&'a str> {
    el.1.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn chart<'a>(all: &'a [(String, Vec<Element>)], id: &str) -> &'a [Element] {
    &all.iter()
        .find(|(i, _)| i == id)
        .unwrap_or_else(|| panic!("no chart {id}"))
        .1
}

/// `(data-label, data-count)` of each row of a bar chart.
fn rows(chart: &[Element]) -> Vec<(String, String)> {
    chart
        .iter()
        .filter(|e| attr(e, "class") == Some("row"))
        .map(|e| {
            (
                attr(e, "data-label").unwrap().into(),
                attr(e, "data-count").unwrap().into(),
            )
        })
        .collect()
}

/// `(data-ok, data-failed)` of the hour starting at `start`, if it has a bucket.
fn hour(chart: &[Element], start: i64) -> Option<(String, String)> {
    let start = start.to_string();
    chart
        .iter()
        .find(|e| attr(e, "class") == Some("bucket") && attr(e, "data-start") == Some(&start))
        .map(|e| {
            (
                attr(e, "data-ok").unwrap().into(),
                attr(e, "data-failed").unwrap().into(),
            )
        })
}

async fn wrong_password(app: &TestApp, client: &str) {
    let b = browser();
    let fields = app.open_login(&b, &app.authorize_url(client, &[])).await;
    let resp = app.submit_login(&b, fields, "ada", "not the password").await;
    assert_eq!(resp.status(), 401, "the form again, with an error");
}

/// An administrator's browser on the dashboard: the page's HTML.
async fn dashboard(app: &TestApp) -> String {
    let admin = app.add_user("boss").await;
    app.make_admin(admin.id).await;
    let b = browser();
    app.portal_login(&b, "boss", PASSWORD).await;
    let resp = b.get(app.url("/admin")).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

#[tokio::test]
async fn the_charts_show_sign_ins_failures_and_grants_per_hour_and_client() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        // A minute past a whole hour: the events below cannot straddle an hour.
        let now = app.clock.now();
        app.clock.advance(3600 - now.rem_euclid(3600) + 60);
        let first_hour = app.clock.now() / 3600 * 3600;
        app.add_user("ada").await;
        let rp = app.add_client("rp", false).await.unwrap();
        let xss = app
            .add_client_with("xss", false, |c| c.name = "<script>alert(1)</script>".into())
            .await
            .unwrap();

        // Two hours ago: two sign-ins with tokens for `rp`, one wrong password.
        app.tokens("rp", &rp, "ada").await;
        app.tokens("rp", &rp, "ada").await;
        wrong_password(&app, "rp").await;
        // Now: one sign-in with a token for the other client, two wrong passwords, and
        // the administrator's own sign-in.
        app.clock.advance(2 * 3600);
        app.tokens("xss", &xss, "ada").await;
        wrong_password(&app, "xss").await;
        wrong_password(&app, "xss").await;
        let html = dashboard(&app).await;

        assert!(!html.contains("<script>alert"), "a client's name is escaped");
        let all = charts(&html);
        let ids: Vec<_> = all.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["chart-signins", "chart-grants"], "no mail chart with mail off");
        assert!(
            !html.contains("stat-replication-lag"),
            "no replication figure when it is off"
        );

        let signins = chart(&all, "chart-signins");
        assert_eq!(attr(&signins[0], "role"), Some("img"));
        assert!(attr(&signins[0], "aria-label")
            .unwrap()
            .contains("4 sign-ins, 3 failed"));
        assert_eq!(hour(signins, first_hour), Some(("2".into(), "1".into())));
        assert_eq!(hour(signins, first_hour + 3600), None, "an hour without events");
        assert_eq!(hour(signins, first_hour + 7200), Some(("2".into(), "2".into())));
        let current = (first_hour + 7200).to_string();
        let bars: Vec<_> = signins
            .iter()
            .skip_while(|e| attr(e, "data-start") != Some(&current))
            .filter(|e| e.0 == "rect")
            .take(2)
            .map(|e| (attr(e, "class").unwrap(), attr(e, "data-count").unwrap()))
            .collect();
        assert_eq!(bars, [("bar-ok", "2"), ("bar-failed", "2")], "the current hour's bars");

        let grants = chart(&all, "chart-grants");
        assert_eq!(
            rows(grants),
            [
                ("rp app".into(), "2".into()),
                ("<script>alert(1)</script>".into(), "1".into())
            ]
        );
        // The text beside each chart says the same for screen readers.
        assert!(html.contains("Tokens issued in the last 7 days: rp app 2, &lt;script&gt;alert(1)&lt;/script&gt; 1."));

        let security = text_of(&html, "security").expect("the security events");
        assert_eq!(security.matches("login.failed").count(), 3, "{security}");
        assert_eq!(text_of(&html, "stat-locked").as_deref(), Some("0"));
    }
}

#[tokio::test]
async fn an_empty_log_draws_charts_that_say_so() {
    let app = spawn_app().await;
    let html = dashboard(&app).await;
    let all = charts(&html);
    assert_eq!(all.len(), 2);
    assert!(rows(chart(&all, "chart-grants")).is_empty());
    assert!(html.contains("No tokens issued in the last 7 days"));
    // The administrator's own sign-in is the only event.
    let now = app.clock.now() / 3600 * 3600;
    assert_eq!(hour(chart(&all, "chart-signins"), now), Some(("1".into(), "0".into())));
    assert!(html.contains("id=\"security-none\""));
}

#[tokio::test]
async fn the_mail_queue_is_charted_when_mail_is_on() {
    // Mail to a port nobody listens on stays queued, retried later.
    let app = spawn_with(|s| {
        s.smtp = Some(tessera::config::smtp::Smtp::parse("smtp://127.0.0.1:9", None, Some(MAIL_FROM)).unwrap());
    })
    .await;
    app.add_user("ada").await;
    let resp = plain_client()
        .post(app.url("/password/forgot"))
        .form(&[("who", "ada")])
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success() || resp.status().is_redirection());
    let html = dashboard(&app).await;
    let all = charts(&html);
    let mail = rows(chart(&all, "chart-mail"));
    assert_eq!(mail[0], ("Waiting".into(), "1".into()), "{mail:?}");
    assert_eq!(mail[1], ("Given up".into(), "0".into()));
}

#[tokio::test]
async fn replication_lag_is_shown_when_replication_is_on() {
    let target = tempfile::tempdir().unwrap();
    let path = target.path().to_path_buf();
    let app = spawn_sqlite_with(move |s| s.replicate_to = Some(tessera::replica::Target::Dir(path))).await;
    let html = dashboard(&app).await;
    let lag = text_of(&html, "stat-replication-lag").expect("the replication figure");
    assert!(
        lag.ends_with(" s") && lag.trim_end_matches(" s").parse::<f64>().is_ok(),
        "{lag}"
    );
}
