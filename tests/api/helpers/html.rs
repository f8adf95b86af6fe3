//! Reading pages and redirects: form fields, inputs, element text, Location, JWT parts.

use std::collections::HashMap;

use reqwest::header::LOCATION;
use scraper::{Html, Selector};
use url::Url;

use super::REDIRECT;

/// The hidden and text inputs of the first form on a page.
pub fn form_fields(html: &str) -> HashMap<String, String> {
    let doc = Html::parse_document(html);
    let input = Selector::parse("form input").unwrap();
    doc.select(&input)
        .filter_map(|i| {
            let name = i.value().attr("name")?;
            Some((
                name.to_string(),
                i.value().attr("value").unwrap_or_default().to_string(),
            ))
        })
        .collect()
}

pub fn location(resp: &reqwest::Response) -> String {
    resp.headers()
        .get(LOCATION)
        .unwrap_or_else(|| panic!("no Location header (status {})", resp.status()))
        .to_str()
        .unwrap()
        .to_string()
}

/// The query of a redirect to the client, after checking it goes where it should.
pub fn redirect_params(resp: &reqwest::Response) -> HashMap<String, String> {
    let loc = location(resp);
    assert!(loc.starts_with(REDIRECT), "redirected to {loc}");
    Url::parse(&loc).unwrap().query_pairs().into_owned().collect()
}

/// Decodes a JWT's header and claims without verifying (the RP tests verify).
pub fn jwt_parts(token: &str) -> (serde_json::Value, serde_json::Value) {
    use base64::Engine;
    let mut parts = token.split('.');
    let mut decode = || {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts.next().unwrap())
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    };
    (decode(), decode())
}

/// The value of one input on a page (first match by name).
pub fn input_value(html: &str, name: &str) -> Option<String> {
    let doc = Html::parse_document(html);
    let sel = Selector::parse(&format!("input[name=\"{name}\"]")).unwrap();
    doc.select(&sel)
        .next()
        .and_then(|i| i.value().attr("value"))
        .map(str::to_string)
}

/// The text of the element with this id.
pub fn text_of(html: &str, id: &str) -> Option<String> {
    let doc = Html::parse_document(html);
    let sel = Selector::parse(&format!("#{id}")).unwrap();
    doc.select(&sel)
        .next()
        .map(|e| e.text().collect::<String>().trim().to_string())
}
