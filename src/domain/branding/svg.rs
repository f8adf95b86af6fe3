//! The sanitiser an SVG logo passes before it is stored: drawing only. Browsers run no
//! script in an SVG shown through `<img>`, and the logo's own URL is served with a
//! sandboxing CSP, but what is stored should not hold script, foreign content or
//! references to other resources in the first place.
//!
//! The file is parsed by a real XML parser (roxmltree): names are compared as
//! (namespace URI, local name) after prefixes are resolved (Namespaces in XML 1.0 §6),
//! and values after entities and character references are decoded (XML 1.0 §4.1), so
//! neither a prefix bound to the SVG namespace nor `u&#114;l(` passes unseen. A
//! document type is refused (no entity declarations), as are processing
//! instructions. Elements and attributes are an allow-list; the editors' metadata
//! (Inkscape, Sodipodi, RDF, Creative Commons, Dublin Core) is dropped, and the stored
//! logo is the allowed content written out again, nothing else.

use roxmltree::{Document, Node, NodeType};

const SVG_NS: &str = "http://www.w3.org/2000/svg";
const XLINK_NS: &str = "http://www.w3.org/1999/xlink";
const XML_NS: &str = "http://www.w3.org/XML/1998/namespace";

/// The editors' namespaces, whose elements and attributes are dropped: inert
/// bookkeeping that a browser never draws.
const EDITOR_NS: &[&str] = &[
    "http://www.inkscape.org/namespaces/inkscape",
    "http://sodipodi.sourceforge.net/DTD/sodipodi-0.dtd",
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "http://creativecommons.org/ns#",
    "http://web.resource.org/cc/",
    "http://purl.org/dc/elements/1.1/",
];

/// SVG elements a logo may use (local names in the SVG namespace).
#[rustfmt::skip]
const ELEMENTS: &[&str] = &[
    "svg", "g", "defs", "symbol", "use", "title", "desc", "metadata", "style", "path", "rect",
    "circle", "ellipse", "line", "polyline", "polygon", "text", "tspan", "textPath",
    "linearGradient", "radialGradient", "stop", "clipPath", "mask", "pattern", "filter",
    "feBlend", "feColorMatrix", "feComponentTransfer", "feComposite", "feFlood",
    "feGaussianBlur", "feMerge", "feMergeNode", "feOffset", "feFuncA", "feFuncR", "feFuncG",
    "feFuncB",
];

/// Attributes without a namespace a logo may carry: geometry, presentation (SVG 1.1
/// §6.4's property list), gradients, filters and text. Anything else is refused.
#[rustfmt::skip]
const ATTRIBUTES: &[&str] = &[
    "id", "class", "style", "version", "baseProfile", "viewBox", "preserveAspectRatio",
    "width", "height", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "fx",
    "fy", "fr", "d", "points", "pathLength", "transform", "href", "role", "aria-label",
    "aria-hidden", "lang", "alignment-baseline", "baseline-shift", "clip", "clip-path",
    "clip-rule", "color", "color-interpolation", "color-interpolation-filters",
    "color-rendering", "direction", "display", "dominant-baseline", "enable-background",
    "fill", "fill-opacity", "fill-rule", "filter", "flood-color", "flood-opacity", "font",
    "font-family", "font-size", "font-size-adjust", "font-stretch", "font-style",
    "font-variant", "font-weight", "image-rendering", "letter-spacing", "lighting-color",
    "marker-end", "marker-mid", "marker-start", "mask", "opacity", "overflow",
    "paint-order", "shape-rendering", "stop-color", "stop-opacity", "stroke",
    "stroke-dasharray", "stroke-dashoffset", "stroke-linecap", "stroke-linejoin",
    "stroke-miterlimit", "stroke-opacity", "stroke-width", "text-anchor",
    "text-decoration", "text-rendering", "unicode-bidi", "vector-effect", "visibility",
    "word-spacing", "writing-mode", "mix-blend-mode", "isolation", "offset",
    "gradientUnits", "gradientTransform", "spreadMethod", "patternUnits",
    "patternContentUnits", "patternTransform", "clipPathUnits", "maskUnits",
    "maskContentUnits", "filterUnits", "primitiveUnits", "in", "in2", "result", "mode",
    "operator", "k1", "k2", "k3", "k4", "values", "type", "tableValues", "slope",
    "intercept", "amplitude", "exponent", "stdDeviation", "edgeMode", "dx", "dy", "rotate",
    "textLength", "lengthAdjust", "startOffset", "method", "spacing", "side", "media",
];

const MAX_DEPTH: usize = 64;

/// The logo as it is stored: the allowed content of `text` written out again; else
/// why it is refused, naming what a logo may not hold.
pub fn sanitise(text: &str) -> Result<String, String> {
    let doc = Document::parse(text).map_err(|e| match e {
        roxmltree::Error::DtdDetected => "the SVG has a document type (entities are not accepted)".to_string(),
        e => format!("the SVG cannot be read: {e}"),
    })?;
    for node in doc.root().children() {
        if node.node_type() == NodeType::PI {
            return Err("the SVG has a processing instruction".into());
        }
    }
    let root = doc.root_element();
    if root.tag_name().namespace() != Some(SVG_NS) || root.tag_name().name() != "svg" {
        return Err("the file is not an SVG".into());
    }
    let mut out = String::with_capacity(text.len());
    let xlink = root
        .descendants()
        .any(|n| n.attributes().any(|a| a.namespace() == Some(XLINK_NS)));
    let extra = if xlink {
        format!(" xmlns=\"{SVG_NS}\" xmlns:xlink=\"{XLINK_NS}\"")
    } else {
        format!(" xmlns=\"{SVG_NS}\"")
    };
    write_element(root, &extra, 0, &mut out)?;
    Ok(out)
}

/// Writes `node` (an element) and what it holds, or says why it may not be stored.
fn write_element(node: Node<'_, '_>, extra: &str, depth: usize, out: &mut String) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err("the SVG nests too deeply".into());
    }
    let name = node.tag_name();
    let local = name.name();
    let ns = name.namespace();
    if ns.is_some_and(|n| EDITOR_NS.contains(&n)) {
        return Ok(());
    }
    if ns != Some(SVG_NS) || !ELEMENTS.contains(&local) {
        return Err(match ns {
            Some(SVG_NS) => format!("the SVG uses <{local}>, which a logo does not need"),
            Some(other) => format!("the SVG uses <{local}> of {other}, which a logo does not need"),
            None => format!("the SVG uses <{local}> outside the SVG namespace"),
        });
    }
    out.push('<');
    out.push_str(local);
    out.push_str(extra);
    for attr in node.attributes() {
        let Some(written) = attribute(attr.namespace(), attr.name(), attr.value())? else {
            continue;
        };
        out.push(' ');
        out.push_str(&written);
        out.push_str("=\"");
        escape(attr.value(), true, out);
        out.push('"');
    }
    if !node.has_children() {
        out.push_str("/>");
        return Ok(());
    }
    out.push('>');
    for child in node.children() {
        match child.node_type() {
            NodeType::Element => write_element(child, "", depth + 1, out)?,
            NodeType::Text => {
                let text = child.text().unwrap_or_default();
                if local == "style" {
                    css(text)?;
                }
                escape(text, false, out);
            }
            NodeType::PI => return Err("the SVG has a processing instruction".into()),
            NodeType::Comment | NodeType::Root => {}
        }
    }
    out.push_str("</");
    out.push_str(local);
    out.push('>');
    Ok(())
}

/// The name an attribute is written with, `None` when it is dropped (an editor's), or
/// why it is refused. `value` is already decoded.
fn attribute(ns: Option<&str>, local: &str, value: &str) -> Result<Option<String>, String> {
    let written = match ns {
        Some(n) if EDITOR_NS.contains(&n) => return Ok(None),
        None if local.to_ascii_lowercase().starts_with("on") => {
            return Err(format!("the SVG has an event attribute ({local})"))
        }
        None if ATTRIBUTES.contains(&local) => local.to_string(),
        Some(XLINK_NS) if local == "href" || local == "title" => format!("xlink:{local}"),
        Some(XML_NS) if local == "space" || local == "lang" => format!("xml:{local}"),
        Some(other) => {
            return Err(format!(
                "the SVG has an attribute {local} of {other}, which a logo does not need"
            ))
        }
        None => return Err(format!("the SVG has an attribute {local}, which a logo does not need")),
    };
    if local == "href" && !value.trim_start().starts_with('#') {
        return Err("the SVG links outside itself".into());
    }
    css(value)?;
    Ok(Some(written))
}

/// A style sheet, a `style` attribute or any value, decoded: nothing that imports,
/// loads from outside the file (`url(#id)` only) or runs. CSS escapes (`u\72l(`) and
/// comments (`@im/**/port`) could hide those words from this check, so a backslash is
/// refused and comments are read as nothing.
fn css(text: &str) -> Result<(), String> {
    if text.contains('\\') {
        return Err("the SVG's style has a CSS escape (\\), which a logo does not need".into());
    }
    let mut plain = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        plain.push_str(&rest[..start]);
        rest = rest[start + 2..].split_once("*/").map_or("", |(_, after)| after);
    }
    plain.push_str(rest);
    let compact: String = plain
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    if compact.contains("javascript:") || compact.contains("expression(") {
        return Err("the SVG holds script".into());
    }
    if compact.contains("@import") || external_url(&compact) {
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

/// Text or an attribute value, escaped for XML 1.0 §2.4 (and `"` in a value).
fn escape(text: &str, in_attribute: bool, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if in_attribute => out.push_str("&quot;"),
            '\n' | '\t' | '\r' if in_attribute => out.push_str(&format!("&#{};", c as u32)),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
#[path = "svg_tests.rs"]
mod tests;
