//! The SVG sanitiser's cases: drawings kept, editors' metadata dropped, and every way
//! of smuggling script or an outside reference refused, the known bypasses included.

use super::sanitise;

const HEAD: &str =
    r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" viewBox="0 0 40 40">"#;

fn svg(body: &str) -> String {
    format!("{HEAD}{body}</svg>")
}

/// A logo as Inkscape 1.x saves it ("Inkscape SVG"), metadata and all.
const INKSCAPE: &str = r##"<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!-- Created with Inkscape (http://www.inkscape.org/) -->

<svg
   width="64mm"
   height="32mm"
   viewBox="0 0 64 32"
   version="1.1"
   id="svg5"
   inkscape:version="1.2.2 (b0a8486541, 2022-12-01)"
   sodipodi:docname="acme.svg"
   xmlns:inkscape="http://www.inkscape.org/namespaces/inkscape"
   xmlns:sodipodi="http://sodipodi.sourceforge.net/DTD/sodipodi-0.dtd"
   xmlns:xlink="http://www.w3.org/1999/xlink"
   xmlns="http://www.w3.org/2000/svg"
   xmlns:svg="http://www.w3.org/2000/svg"
   xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
   xmlns:cc="http://creativecommons.org/ns#"
   xmlns:dc="http://purl.org/dc/elements/1.1/">
  <sodipodi:namedview
     id="namedview7"
     pagecolor="#ffffff"
     bordercolor="#666666"
     inkscape:pageshadow="2"
     inkscape:document-units="mm" />
  <defs
     id="defs2">
    <linearGradient
       inkscape:collect="always"
       id="linearGradient1">
      <stop
         style="stop-color:#0a7f5a;stop-opacity:1;"
         offset="0"
         id="stop1" />
    </linearGradient>
    <linearGradient
       xlink:href="#linearGradient1"
       id="linearGradient2"
       x1="0" y1="0" x2="64" y2="0"
       gradientUnits="userSpaceOnUse" />
  </defs>
  <metadata
     id="metadata5">
    <rdf:RDF>
      <cc:Work
         rdf:about="">
        <dc:format>image/svg+xml</dc:format>
        <dc:type
           rdf:resource="http://purl.org/dc/dcmitype/StillImage" />
      </cc:Work>
    </rdf:RDF>
  </metadata>
  <g
     inkscape:label="Layer 1"
     inkscape:groupmode="layer"
     id="layer1">
    <path
       style="fill:url(#linearGradient2);stroke:none"
       d="M 2,2 H 30 V 30 H 2 Z"
       id="path1"
       sodipodi:nodetypes="ccccc" />
    <text
       xml:space="preserve"
       style="font-size:10px;font-family:sans-serif"
       x="34" y="20"
       id="text1"><tspan
         sodipodi:role="line"
         id="tspan1"
         x="34" y="20">Acme &amp; Co</tspan></text>
  </g>
</svg>
"##;

#[test]
fn drawings_pass_as_they_were() {
    let ok = [
        svg(
            r##"<defs><linearGradient id="g"><stop offset="0" stop-color="#fff"/></linearGradient></defs><circle r="9" fill="url(#g)"/>"##,
        ),
        svg(r#"<g transform="translate(2 2)"><path d="M0 0h10v10z"/><text x="1" y="9">Acme</text></g>"#),
        svg(r##"<style>.a { fill: #0a7; }</style><rect class="a" width="4" height="4"/><use href="#x"/>"##),
        svg(r##"<use xlink:href="#x"/><title>Acme</title>"##),
    ];
    // The XLink namespace is declared again only where an attribute uses it.
    let unlinked = |s: &str| s.replace(r#" xmlns:xlink="http://www.w3.org/1999/xlink""#, "");
    for s in ok {
        let expected = if s.contains("xlink:href") {
            s.clone()
        } else {
            unlinked(&s)
        };
        assert_eq!(sanitise(&s), Ok(expected), "{s}");
    }
    let declared = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><!-- made by hand -->{}"#,
        svg("<title>A</title>")
    );
    assert_eq!(sanitise(&declared), Ok(unlinked(&svg("<title>A</title>"))));
}

#[test]
fn an_inkscape_logo_keeps_its_drawing_and_loses_the_editors_metadata() {
    let out = sanitise(INKSCAPE).unwrap();
    for kept in [
        r#"<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="64mm""#,
        r##"xlink:href="#linearGradient1""##,
        r##"style="fill:url(#linearGradient2);stroke:none""##,
        r#"xml:space="preserve""#,
        "Acme &amp; Co</tspan>",
        r#"<metadata id="metadata5">"#,
    ] {
        assert!(out.contains(kept), "{kept} missing in {out}");
    }
    for dropped in ["inkscape", "sodipodi", "rdf", "dc:", "cc:", "purl.org", "<!--", "<?xml"] {
        assert!(!out.contains(dropped), "{dropped} kept in {out}");
    }
    // What is stored passes again unchanged.
    assert_eq!(sanitise(&out), Ok(out.clone()));
}

#[test]
fn prefixes_entities_and_escapes_do_not_hide_what_a_value_or_element_is() {
    let bypasses = [
        // An editor's prefix bound to the SVG namespace: this is an SVG <script>.
        svg(r#"<inkscape:script xmlns:inkscape="http://www.w3.org/2000/svg">alert(1)</inkscape:script>"#),
        svg(r#"<svg:script xmlns:svg="http://www.w3.org/2000/svg">alert(1)</svg:script>"#),
        // Character references decoded before the value is read.
        svg(r#"<rect style="fill: u&#114;l(https://evil.example/p)"/>"#),
        svg(r#"<rect fill="u&#x72;l(https://evil.example/p)"/>"#),
        svg(r#"<style>@&#105;mport "https://evil.example/a.css";</style>"#),
        svg(r#"<use href="&#104;ttps://evil.example/x.svg#a"/>"#),
        // CSS's own escapes and comments.
        svg(r#"<style>rect { fill: u\72l(https://evil.example/p) }</style>"#),
        svg(r#"<style>@im/**/port "https://evil.example/a.css";</style>"#),
        svg(r#"<rect style="width: expression(alert(1))"/>"#),
    ];
    for s in bypasses {
        assert!(sanitise(&s).is_err(), "accepted: {s}");
    }
    let named = sanitise(&svg(
        r#"<inkscape:script xmlns:inkscape="http://www.w3.org/2000/svg"/>"#,
    ));
    assert_eq!(named, Err("the SVG uses <script>, which a logo does not need".into()));
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
        svg(r#"<rect x:onclick="a()" xmlns:x="http://example.org/x"/>"#),
        svg(r#"<rect data-x="1"/>"#),
        svg(r#"<?xml-stylesheet href="https://evil.example/a.css"?><rect/>"#),
        format!(r#"<?xml-stylesheet href="https://evil.example/a.css"?>{}"#, svg("")),
        r#"<!DOCTYPE svg [<!ENTITY x "y">]><svg xmlns="http://www.w3.org/2000/svg">&x;</svg>"#.to_string(),
        r#"<!DOCTYPE svg SYSTEM "https://evil.example/svg.dtd"><svg xmlns="http://www.w3.org/2000/svg"/>"#.to_string(),
        r#"<html><svg xmlns="http://www.w3.org/2000/svg"/></html>"#.to_string(),
        r#"<svg><rect/></svg>"#.to_string(),
        format!("{}{}", svg(""), svg("")),
        "just text".to_string(),
        "<svg".to_string(),
    ];
    for s in bad {
        assert!(sanitise(&s).is_err(), "accepted: {s}");
    }
    let doctype = r#"<!DOCTYPE svg [<!ENTITY x "y">]><svg xmlns="http://www.w3.org/2000/svg"/>"#;
    assert!(sanitise(doctype).unwrap_err().contains("document type"));
}
