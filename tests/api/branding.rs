//! Branding: the flags' logo, colour and stylesheet as resources of their own; the
//! admin page storing a name, colour, logo and stylesheet that take precedence, and an
//! application's logo on its own sign-in page only; SVGs that could run or load
//! anything refused; every node showing what one stored.

use crate::helpers::*;
use scraper::{Html, Selector};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00";
const SVG: &str =
    r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 8 8"><rect width="8" height="8" fill="#0a7f5a"/></svg>"##;

/// A `multipart/form-data` body of text fields and at most one file.
fn multipart(fields: &[(&str, &str)], file: Option<(&str, &str, &[u8])>) -> (String, Vec<u8>) {
    let boundary = "tesseraTestBoundary42";
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n").as_bytes(),
        );
    }
    if let Some((name, filename, bytes)) = file {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn upload(
    app: &TestApp,
    b: &reqwest::Client,
    path: &str,
    fields: &[(&str, &str)],
    file: Option<(&str, &str, &[u8])>,
) -> reqwest::Response {
    let (content_type, body) = multipart(fields, file);
    b.post(app.url(path))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap()
}

/// The `src` of the element with this id (or `href` of a stylesheet link).
fn attr(page: &str, selector: &str, name: &str) -> Option<String> {
    let doc = Html::parse_document(page);
    let sel = Selector::parse(selector).unwrap();
    doc.select(&sel)
        .next()
        .and_then(|e| e.value().attr(name).map(str::to_string))
}

async fn login_page(app: &TestApp, client: &str) -> String {
    let resp = browser().get(app.authorize_url(client, &[])).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

#[tokio::test]
async fn the_flags_brand_the_pages_through_resources_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let (logo, sheet) = (dir.path().join("logo.png"), dir.path().join("extra.css"));
    std::fs::write(&logo, PNG).unwrap();
    std::fs::write(&sheet, "h1 { letter-spacing: .02em; }").unwrap();
    let defaults = tessera::branding::Defaults::load(
        Some("#0A7F5A"),
        Some(logo.to_str().unwrap()),
        Some(sheet.to_str().unwrap()),
    )
    .unwrap();
    let app = spawn_with(|s| {
        s.branding = defaults;
        s.org_name = "Acme".into();
    })
    .await;
    app.add_client("rp", false).await;
    let page = login_page(&app, "rp").await;
    let theme = attr(&page, "link[href^='/branding/theme.css']", "href").expect("the theme is linked");
    let logo_url = attr(&page, "#brand-logo", "src").expect("the logo is shown");
    assert_eq!(attr(&page, "#brand-logo", "alt").as_deref(), Some("Acme"));
    assert!(!page.contains("<style"), "nothing is inlined");

    let css = plain_client().get(app.url(&theme)).send().await.unwrap();
    assert_eq!(css.status(), 200);
    assert!(css.headers()["content-type"].to_str().unwrap().starts_with("text/css"));
    let css = css.text().await.unwrap();
    assert!(css.starts_with(":root { --accent: #0a7f5a; }"), "{css}");
    assert!(css.contains("letter-spacing: .02em"), "{css}");

    let img = plain_client().get(app.url(&logo_url)).send().await.unwrap();
    assert_eq!(img.status(), 200);
    assert_eq!(img.headers()["content-type"], "image/png");
    assert_eq!(img.headers()["x-content-type-options"], "nosniff");
    assert!(img.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("sandbox"));
    assert_eq!(img.bytes().await.unwrap().as_ref(), PNG);
}

#[test]
fn a_bad_flag_file_stops_the_start_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let evil = dir.path().join("evil.svg");
    std::fs::write(&evil, r#"<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>"#).unwrap();
    let err = tessera::branding::Defaults::load(None, Some(evil.to_str().unwrap()), None).unwrap_err();
    assert_eq!(err.0, "logo");
    assert!(err.1.contains("event attribute"), "{}", err.1);
    assert_eq!(
        tessera::branding::Defaults::load(Some("blue"), None, None)
            .unwrap_err()
            .0,
        "accent_color"
    );
    let missing = dir.path().join("none.css");
    assert_eq!(
        tessera::branding::Defaults::load(None, None, Some(missing.to_str().unwrap()))
            .unwrap_err()
            .0,
        "stylesheet"
    );
}

#[tokio::test]
async fn the_admin_page_stores_branding_that_takes_precedence_on_each_backend() {
    for backend in backends() {
        let app = spawn_on(&backend).await;
        app.add_client("rp", false).await;
        app.add_client("other", false).await;
        let (b, csrf) = app.admin_browser().await;
        let page = b.get(app.url("/admin/branding")).send().await.unwrap();
        assert_eq!(page.status(), 200);
        assert!(login_page(&app, "rp").await.find("brand-logo").is_none(), "no logo yet");
        let logo = store_branding(&app, &b, &csrf).await;
        refuse_bad_branding(&app, &b, &csrf, &logo).await;
        show_a_client_logo_on_its_page_only(&app, &b, &csrf).await;
        clear_branding(&app, &b, &csrf).await;
        let events: Vec<String> = app.audit().await.into_iter().map(|(e, _, _)| e).collect();
        assert!(events.iter().any(|e| e == "admin.branding_changed"), "{events:?}");
        assert!(events.iter().any(|e| e == "admin.client_logo_changed"), "{events:?}");
    }
}

/// A name, colour, stylesheet and logo stored and shown on the sign-in and account
/// pages; the logo's address.
async fn store_branding(app: &TestApp, b: &reqwest::Client, csrf: &str) -> String {
    let saved = upload(
        app,
        b,
        "/admin/branding",
        &[
            ("csrf", csrf),
            ("org_name", "Acme Cooperative"),
            ("accent_color", "#123abc"),
            ("stylesheet", "main { border-top: 4px solid var(--accent); }"),
        ],
        Some(("logo", "acme.svg", SVG.as_bytes())),
    )
    .await;
    assert_eq!(saved.status(), 302, "{}", saved.text().await.unwrap());
    let page = login_page(app, "rp").await;
    let logo = attr(&page, "#brand-logo", "src").expect("the stored logo");
    assert_eq!(attr(&page, "#brand-logo", "alt").as_deref(), Some("Acme Cooperative"));
    let img = plain_client().get(app.url(&logo)).send().await.unwrap();
    assert_eq!(img.headers()["content-type"], "image/svg+xml");
    assert_eq!(img.text().await.unwrap(), SVG);
    let theme = attr(&page, "link[href^='/branding/theme.css']", "href").unwrap();
    let css = app.get_text(&theme).await;
    assert!(css.contains("--accent: #123abc") && css.contains("border-top"), "{css}");
    // The account's own sign-in names the stored organisation.
    let portal = app.get_text("/account").await;
    assert!(portal.contains("your Acme Cooperative account"), "{portal}");
    logo
}

/// A scripted drawing, a bad colour and a form without CSRF change nothing.
async fn refuse_bad_branding(app: &TestApp, b: &reqwest::Client, csrf: &str, logo: &str) {
    // A drawing that would run script is refused, and nothing changes.
    let evil = r#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#;
    let refused = upload(
        app,
        b,
        "/admin/branding",
        &[("csrf", csrf)],
        Some(("logo", "x.svg", evil.as_bytes())),
    )
    .await;
    assert_eq!(refused.status(), 400);
    let text = refused.text().await.unwrap();
    assert!(text_of(&text, "logo-error").is_some(), "{text}");
    assert_eq!(
        attr(&login_page(app, "rp").await, "#brand-logo", "src"),
        Some(logo.to_string())
    );
    let bad_colour = upload(
        app,
        b,
        "/admin/branding",
        &[("csrf", csrf), ("accent_color", "red")],
        None,
    )
    .await;
    assert_eq!(bad_colour.status(), 400);
    // Without the CSRF token, nothing is stored.
    let forged = upload(app, b, "/admin/branding", &[("org_name", "Evil")], None).await;
    assert_eq!(forged.status(), 403);
}

/// An application's logo shows on its sign-in page, not on another's.
async fn show_a_client_logo_on_its_page_only(app: &TestApp, b: &reqwest::Client, csrf: &str) {
    let set = upload(
        app,
        b,
        "/admin/branding/client-logo",
        &[("csrf", csrf), ("client_id", "rp")],
        Some(("logo", "rp.png", PNG)),
    )
    .await;
    assert_eq!(set.status(), 302);
    let page = login_page(app, "rp").await;
    let client_logo = attr(&page, "#client-logo", "src").expect("rp's own logo");
    let img = plain_client().get(app.url(&client_logo)).send().await.unwrap();
    assert_eq!(img.bytes().await.unwrap().as_ref(), PNG);
    assert!(attr(&login_page(app, "other").await, "#client-logo", "src").is_none());
    let unknown = upload(
        app,
        b,
        "/admin/branding/client-logo",
        &[("csrf", csrf), ("client_id", "nobody")],
        Some(("logo", "rp.png", PNG)),
    )
    .await;
    assert_eq!(unknown.status(), 404);
}

/// Emptied fields fall back to the defaults; removing the logo removes it.
async fn clear_branding(app: &TestApp, b: &reqwest::Client, csrf: &str) {
    let cleared = upload(
        app,
        b,
        "/admin/branding",
        &[
            ("csrf", csrf),
            ("org_name", ""),
            ("accent_color", ""),
            ("stylesheet", ""),
            ("remove_logo", "on"),
        ],
        None,
    )
    .await;
    assert_eq!(cleared.status(), 302);
    let page = login_page(app, "rp").await;
    assert!(attr(&page, "#brand-logo", "src").is_none());
    assert!(attr(&page, "link[href^='/branding/theme.css']", "href").is_none());
    let gone = plain_client().get(app.url("/branding/logo")).send().await.unwrap();
    assert_eq!(gone.status(), 404);
}

#[tokio::test]
async fn every_node_shows_what_one_node_stored() {
    let Some(url) = required_cluster("multi-node") else {
        return;
    };
    let nodes = spawn_nodes(&url, 2).await;
    nodes[0].add_client("rp", false).await;
    let (b, csrf) = nodes[0].admin_browser().await;
    let saved = upload(
        &nodes[0],
        &b,
        "/admin/branding",
        &[("csrf", &csrf), ("org_name", "Shared")],
        Some(("logo", "l.png", PNG)),
    )
    .await;
    assert_eq!(saved.status(), 302);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(tessera::branding::TTL as u64 + 3);
    loop {
        let page = login_page(&nodes[1], "rp").await;
        if attr(&page, "#brand-logo", "alt").as_deref() == Some("Shared") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the other node never showed the branding"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    let img = plain_client().get(nodes[1].url("/branding/logo")).send().await.unwrap();
    assert_eq!(img.bytes().await.unwrap().as_ref(), PNG);
}

/// An SVG logo as Inkscape saves it: its editors' namespaces, a layer, a gradient.
const INKSCAPE_SVG: &str = r##"<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!-- Created with Inkscape (http://www.inkscape.org/) -->
<svg width="64mm" height="32mm" viewBox="0 0 64 32" version="1.1" id="svg5"
   inkscape:version="1.2.2 (b0a8486541, 2022-12-01)" sodipodi:docname="acme.svg"
   xmlns:inkscape="http://www.inkscape.org/namespaces/inkscape"
   xmlns:sodipodi="http://sodipodi.sourceforge.net/DTD/sodipodi-0.dtd"
   xmlns="http://www.w3.org/2000/svg" xmlns:svg="http://www.w3.org/2000/svg"
   xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
   xmlns:cc="http://creativecommons.org/ns#" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <sodipodi:namedview id="namedview7" pagecolor="#ffffff" inkscape:document-units="mm"/>
  <metadata id="metadata5"><rdf:RDF><cc:Work rdf:about=""><dc:format>image/svg+xml</dc:format>
    <dc:type rdf:resource="http://purl.org/dc/dcmitype/StillImage"/></cc:Work></rdf:RDF></metadata>
  <g inkscape:label="Layer 1" inkscape:groupmode="layer" id="layer1">
    <path style="fill:#0a7f5a;stroke:none" d="M 2,2 H 30 V 30 H 2 Z" id="path1" sodipodi:nodetypes="ccccc"/>
  </g>
</svg>
"##;

#[tokio::test]
async fn svg_logos_are_judged_by_namespace_and_decoded_value_and_stored_sanitised() {
    let app = spawn_app().await;
    app.add_client("rp", false).await;
    let (b, csrf) = app.admin_browser().await;
    let bypasses = [
        r#"<svg xmlns="http://www.w3.org/2000/svg"><inkscape:script xmlns:inkscape="http://www.w3.org/2000/svg">alert(1)</inkscape:script></svg>"#,
        r#"<svg xmlns="http://www.w3.org/2000/svg"><rect width="8" height="8" style="fill: u&#114;l(https://evil.example/p)"/></svg>"#,
        r#"<svg xmlns="http://www.w3.org/2000/svg"><style>@&#105;mport "https://evil.example/a.css";</style></svg>"#,
    ];
    for evil in bypasses {
        let refused = upload(
            &app,
            &b,
            "/admin/branding",
            &[("csrf", &csrf)],
            Some(("logo", "x.svg", evil.as_bytes())),
        )
        .await;
        assert_eq!(refused.status(), 400, "{evil}");
        let text = refused.text().await.unwrap();
        assert!(text_of(&text, "logo-error").is_some(), "{evil}: {text}");
        assert!(
            attr(&login_page(&app, "rp").await, "#brand-logo", "src").is_none(),
            "{evil} stored"
        );
        let none = plain_client().get(app.url("/branding/logo")).send().await.unwrap();
        assert_eq!(none.status(), 404, "{evil} served");
    }
    let refused = upload(
        &app,
        &b,
        "/admin/branding",
        &[("csrf", &csrf)],
        Some(("logo", "x.svg", bypasses[0].as_bytes())),
    )
    .await;
    let why = text_of(&refused.text().await.unwrap(), "logo-error").unwrap();
    assert!(why.contains("<script>"), "the message names the element: {why}");

    // A real editor's file is accepted, its metadata dropped, its drawing kept.
    let saved = upload(
        &app,
        &b,
        "/admin/branding",
        &[("csrf", &csrf)],
        Some(("logo", "acme.svg", INKSCAPE_SVG.as_bytes())),
    )
    .await;
    assert_eq!(saved.status(), 302, "{}", saved.text().await.unwrap());
    let logo = attr(&login_page(&app, "rp").await, "#brand-logo", "src").expect("the stored logo");
    let img = plain_client().get(app.url(&logo)).send().await.unwrap();
    assert_eq!(img.headers()["content-type"], "image/svg+xml");
    let csp = img.headers()["content-security-policy"].to_str().unwrap().to_string();
    assert!(csp.contains("sandbox") && csp.contains("default-src 'none'"), "{csp}");
    let served = img.text().await.unwrap();
    assert!(
        served.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" width="64mm""#),
        "{served}"
    );
    assert!(served.contains(r#"d="M 2,2 H 30 V 30 H 2 Z""#), "{served}");
    for dropped in ["inkscape", "sodipodi", "rdf:", "purl.org", "<?xml", "<!--"] {
        assert!(!served.contains(dropped), "{dropped} in {served}");
    }
}
