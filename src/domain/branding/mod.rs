//! The branding values an operator or administrator gives, checked before they are
//! stored or shown: a logo (a PNG, or an SVG the sanitiser `svg` writes again), an
//! accent colour and an extra stylesheet.

pub mod svg;

/// The largest logo accepted, in bytes.
pub const MAX_LOGO: usize = 256 * 1024;
/// The largest extra stylesheet accepted, in bytes.
pub const MAX_STYLESHEET: usize = 64 * 1024;

/// A logo as it is stored, and its media type, after checking its bytes: a PNG by its
/// signature, as it came; or an SVG as `svg::sanitise` writes it again.
pub fn check_logo(bytes: &[u8]) -> Result<(Vec<u8>, &'static str), String> {
    if bytes.is_empty() {
        return Err("the file is empty".into());
    }
    if bytes.len() > MAX_LOGO {
        return Err(format!("the file is larger than {} KiB", MAX_LOGO / 1024));
    }
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Ok((bytes.to_vec(), "image/png"));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "the file is neither a PNG nor an SVG".to_string())?;
    Ok((svg::sanitise(text)?.into_bytes(), "image/svg+xml"))
}

/// `#rgb` or `#rrggbb`, lowercased.
pub fn check_color(text: &str) -> Result<String, String> {
    let t = text.trim();
    let hex = t.strip_prefix('#').unwrap_or("");
    if (hex.len() == 3 || hex.len() == 6) && hex.chars().all(|c| c.is_ascii_hexdigit()) {
        Ok(t.to_ascii_lowercase())
    } else {
        Err("must be a colour as #rrggbb or #rgb".into())
    }
}

/// An extra stylesheet: UTF-8 text within `MAX_STYLESHEET`, with no `</` (it is only
/// ever served as `text/css`, but a stylesheet has no business holding markup).
pub fn check_stylesheet(text: &str) -> Result<(), String> {
    if text.len() > MAX_STYLESHEET {
        return Err(format!("is larger than {} KiB", MAX_STYLESHEET / 1024));
    }
    if text.contains("</") {
        return Err("must be CSS, not markup".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_logo_is_a_png_or_a_checked_svg_within_the_size_limit() {
        let png = b"\x89PNG\r\n\x1a\n....";
        assert_eq!(check_logo(png), Ok((png.to_vec(), "image/png")));
        let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><rect width="10" height="10" fill="#123"/></svg>"##;
        assert_eq!(
            check_logo(svg.as_bytes()),
            Ok((svg.as_bytes().to_vec(), "image/svg+xml"))
        );
        assert!(check_logo(b"").is_err());
        assert!(check_logo(b"GIF89a").is_err());
        assert!(check_logo(&vec![b' '; MAX_LOGO + 1]).is_err());
        assert!(check_logo(br#"<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>"#).is_err());
    }

    #[test]
    fn colours_are_hex_and_stylesheets_are_css() {
        assert_eq!(check_color(" #A1b2C3 "), Ok("#a1b2c3".into()));
        assert_eq!(check_color("#abc"), Ok("#abc".into()));
        for bad in ["red", "#abcd", "#ggg", "", "#12345g", "#fff; } body { x"] {
            assert!(check_color(bad).is_err(), "{bad}");
        }
        assert!(check_stylesheet("main { max-width: 30rem; }").is_ok());
        assert!(check_stylesheet("</style><script>").is_err());
        assert!(check_stylesheet(&"a".repeat(MAX_STYLESHEET + 1)).is_err());
    }
}
