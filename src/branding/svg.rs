//! The check an SVG logo passes before it is stored: drawing only. Browsers run no
//! script in an SVG shown through `<img>`, and the logo's own URL is served with a
//! sandboxing CSP, but what is stored should not hold script, foreign content or
//! references to other resources in the first place: the elements are an allowlist
//! of shapes, text, gradients, filters and the editors' metadata, event attributes
//! are refused, and links and `url()` may point only inside the file.

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

/// SVG elements a logo may use (local names).
const ELEMENTS: &[&str] = &[
    "svg",
    "g",
    "defs",
    "symbol",
    "use",
    "title",
    "desc",
    "metadata",
    "style",
    "path",
    "rect",
    "circle",
    "ellipse",
    "line",
    "polyline",
    "polygon",
    "text",
    "tspan",
    "textPath",
    "linearGradient",
    "radialGradient",
    "stop",
    "clipPath",
    "mask",
    "pattern",
    "filter",
    "feBlend",
    "feColorMatrix",
    "feComponentTransfer",
    "feComposite",
    "feFlood",
    "feGaussianBlur",
    "feMerge",
    "feMergeNode",
    "feOffset",
    "feFuncA",
    "feFuncR",
    "feFuncG",
    "feFuncB",
];

/// Prefixes of the editors' own elements (Inkscape, Sodipodi, RDF metadata), inert.
const EDITOR_PREFIXES: &[&str] = &["sodipodi", "inkscape", "rdf", "cc", "dc"];

const MAX_DEPTH: usize = 64;

/// `Ok` when `text` is an SVG document of drawing only; else why not.
pub fn check(text: &str) -> Result<(), String> {
    let mut reader = Reader::from_str(text);
    let mut depth = 0usize;
    let mut seen_root = false;
    let mut in_style = false;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("the SVG cannot be read: {e}"))?;
        match event {
            Event::Start(e) => {
                element(&e, &mut seen_root, depth)?;
                in_style = e.local_name().as_ref() == b"style";
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err("the SVG nests too deeply".into());
                }
            }
            Event::Empty(e) => element(&e, &mut seen_root, depth)?,
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                in_style = false;
            }
            Event::Text(t) if in_style => css(&String::from_utf8_lossy(t.as_ref()))?,
            Event::CData(t) => {
                if !in_style {
                    return Err("the SVG holds character data outside a style".into());
                }
                css(&String::from_utf8_lossy(t.as_ref()))?;
            }
            Event::DocType(_) => return Err("the SVG has a document type (entities are not accepted)".into()),
            Event::PI(_) => return Err("the SVG has a processing instruction".into()),
            Event::Eof => break,
            _ => {}
        }
    }
    if !seen_root {
        return Err("the file is not an SVG".into());
    }
    Ok(())
}

fn element(e: &BytesStart<'_>, seen_root: &mut bool, depth: usize) -> Result<(), String> {
    let qname = String::from_utf8_lossy(e.name().as_ref()).into_owned();
    let (prefix, local) = qname
        .split_once(':')
        .map_or((None, qname.as_str()), |(p, l)| (Some(p), l));
    if depth == 0 {
        if *seen_root || local != "svg" || prefix.is_some() {
            return Err("the file is not one SVG document".into());
        }
        *seen_root = true;
    }
    let allowed = match prefix {
        None | Some("svg") => ELEMENTS.contains(&local),
        Some(p) => EDITOR_PREFIXES.contains(&p),
    };
    if !allowed {
        return Err(format!("the SVG uses <{qname}>, which a logo does not need"));
    }
    for attr in e.attributes() {
        let attr = attr.map_err(|e| format!("the SVG has a broken attribute: {e}"))?;
        let key = String::from_utf8_lossy(attr.key.as_ref()).to_ascii_lowercase();
        let local_key = key.rsplit(':').next().unwrap_or(&key);
        let value = String::from_utf8_lossy(&attr.value).into_owned();
        let compact: String = value
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        if local_key.starts_with("on") {
            return Err(format!("the SVG has an event attribute ({key})"));
        }
        if local_key == "href" && !value.trim_start().starts_with('#') {
            return Err("the SVG links outside itself".into());
        }
        if compact.contains("javascript:") || compact.contains("http://www.w3.org/1999/xhtml") {
            return Err("the SVG holds script or HTML".into());
        }
        if external_url(&compact) {
            return Err("the SVG refers to another resource".into());
        }
    }
    Ok(())
}

/// A style sheet inside the SVG: no imports, no resources from outside.
fn css(text: &str) -> Result<(), String> {
    let compact: String = text
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    if compact.contains("@import") || external_url(&compact) || compact.contains("javascript:") {
        return Err("the SVG's style refers to another resource".into());
    }
    Ok(())
}

/// Whether a `url(…)` in `compact` (whitespace removed, lowercase) points anywhere but
/// inside the document (`url(#id)`).
fn external_url(compact: &str) -> bool {
    compact.match_indices("url(").any(|(i, _)| {
        let rest = compact[i + 4..].trim_start_matches(['"', '\'']);
        !rest.starts_with('#')
    })
}

#[cfg(test)]
mod tests {
    use super::check;

    const HEAD: &str =
        r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 40 40">"#;

    fn svg(body: &str) -> String {
        format!("{HEAD}{body}</svg>")
    }

    #[test]
    fn drawings_pass() {
        let ok = [
            svg(
                r##"<defs><linearGradient id="g"><stop offset="0" stop-color="#fff"/></linearGradient></defs><circle r="9" fill="url(#g)"/>"##,
            ),
            svg(r#"<g transform="translate(2 2)"><path d="M0 0h10v10z"/><text x="1" y="9">Acme</text></g>"#),
            svg(r##"<style>.a { fill: #0a7; }</style><rect class="a" width="4" height="4"/><use href="#x"/>"##),
            format!(
                r#"<?xml version="1.0" encoding="UTF-8"?><!-- made by hand -->{}"#,
                svg("<title>Acme</title>")
            ),
            svg(
                r##"<sodipodi:namedview xmlns:sodipodi="http://sodipodi.sourceforge.net/DTD/sodipodi-0.dtd" pagecolor="#fff"/>"##,
            ),
        ];
        for s in ok {
            assert_eq!(check(&s), Ok(()), "{s}");
        }
    }

    #[test]
    fn script_foreign_content_and_outside_references_are_refused() {
        let bad = [
            svg("<script>alert(1)</script>"),
            svg(r#"<rect onload="alert(1)" width="1" height="1"/>"#),
            svg(r#"<rect ONCLICK="x()"/>"#),
            svg(r#"<foreignObject><div xmlns="http://www.w3.org/1999/xhtml">x</div></foreignObject>"#),
            svg(r#"<a href="javascript:alert(1)"><rect/></a>"#),
            svg(r#"<use xlink:href="https://evil.example/x.svg#a"/>"#),
            svg(r#"<image href="https://evil.example/t.png"/>"#),
            svg(r#"<rect style="fill: url( 'https://evil.example/p' )"/>"#),
            svg(r#"<style>@import url(https://evil.example/a.css);</style>"#),
            svg(r#"<style><![CDATA[ rect { fill: url(http://x/) } ]]></style>"#),
            svg(r#"<animate attributeName="href" to="javascript:alert(1)"/>"#),
            svg(r#"<x:script xmlns:x="http://www.w3.org/1999/xhtml">alert(1)</x:script>"#),
            r#"<!DOCTYPE svg [<!ENTITY x "y">]><svg xmlns="http://www.w3.org/2000/svg">&x;</svg>"#.to_string(),
            r#"<html><svg xmlns="http://www.w3.org/2000/svg"/></html>"#.to_string(),
            format!("{}{}", svg(""), svg("")),
            "just text".to_string(),
            "<svg".to_string(),
        ];
        for s in bad {
            assert!(check(&s).is_err(), "accepted: {s}");
        }
    }
}
